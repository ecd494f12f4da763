"""The CustomResourceDefinition of the dev-cluster's simulated Spark operator (:mod:`.sparkapps`):
``sparkapplications.sparkoperator.k8s.io``, our own minimal schema (the spec kept whole but for the
fields the operator's CRD constrains and Kueue reads)."""

from __future__ import annotations

from typing import Any

from hub.store.interface import Object

_STR = {"type": "string"}
_ANY = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def spark_crd() -> Object:
    """Served v1beta2 with the status subresource, short name ``sparkapp`` and the operator's columns."""
    spec = {**_ANY, "required": ["type", "sparkVersion"], "properties": {
        "type": {**_STR, "enum": ["Java", "Python", "Scala", "R"]},
        "mode": {**_STR, "enum": ["cluster", "client", "in-cluster-client"]},
        "sparkVersion": _STR, "suspend": {"type": "boolean"},
        "driver": _ANY, "executor": {**_ANY, "properties": {"instances": {"type": "integer", "format": "int32",
                                                                           "minimum": 0}}},
    }}
    schema = {"type": "object", "properties": {"apiVersion": _STR, "kind": _STR, "metadata": {"type": "object"},
                                               "spec": spec, "status": _ANY}}

    def column(name: str, path: str, type_: str = "string") -> dict[str, Any]:
        return {"name": name, "type": type_, "jsonPath": path}

    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "sparkapplications.sparkoperator.k8s.io",
                     "labels": {"app.kubernetes.io/managed-by": "mkhub-dev-cluster"}},
        "spec": {
            "group": "sparkoperator.k8s.io", "scope": "Namespaced",
            "names": {"plural": "sparkapplications", "singular": "sparkapplication", "kind": "SparkApplication",
                      "listKind": "SparkApplicationList", "shortNames": ["sparkapp"]},
            "versions": [{"name": "v1beta2", "served": True, "storage": True, "subresources": {"status": {}},
                          "additionalPrinterColumns": [
                              column("Status", ".status.applicationState.state"),
                              column("Attempts", ".status.submissionAttempts", "integer"),
                              column("Start", ".status.lastSubmissionAttemptTime"),
                              column("Finish", ".status.terminationTime"),
                              column("Age", ".metadata.creationTimestamp", "date")],
                          "schema": {"openAPIV3Schema": schema}}],
        },
    }
