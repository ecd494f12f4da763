"""CustomResourceDefinitions of the pod-based frameworks Kueue's docs run through its plain-Pod
(or Job) integration: Tekton Pipelines (``tekton.dev/v1`` Task, Pipeline, PipelineRun, TaskRun),
Argo Workflows (``argoproj.io/v1alpha1`` Workflow), agent-sandbox (``agents.x-k8s.io/v1alpha1``
Sandbox) and the Flux Operator (``flux-framework.org/v1alpha1`` MiniCluster).

Our own minimal structural schemas: the fields the simulated controllers (:mod:`.tekton`,
:mod:`.argo`, :mod:`.sandbox_flux`) read are named, everything else is kept as sent
(``x-kubernetes-preserve-unknown-fields``, as these projects' own CRDs mostly do). Installed with
the other operators' CRDs (:func:`hub.devcluster.operators.install`), left out by
``--without-operators``.
"""

from __future__ import annotations

from typing import Any

from hub.store.interface import Object

from .operators import _ANY, _CONDITIONS, _INT, _STR, _column, _crd, _list, _obj

TEKTON_GROUP, TEKTON_VERSION = "tekton.dev", "v1"
TEKTON_API_VERSION = f"{TEKTON_GROUP}/{TEKTON_VERSION}"
ARGO_API_VERSION = "argoproj.io/v1alpha1"
SANDBOX_API_VERSION = "agents.x-k8s.io/v1alpha1"
FLUX_API_VERSION = "flux-framework.org/v1alpha1"

# A spec or status the controllers read a few fields of; the rest is the project's and kept whole.
_OPEN: dict[str, Any] = {"x-kubernetes-preserve-unknown-fields": True}


def _open(properties: dict[str, Any]) -> dict[str, Any]:
    return _obj(properties, **_OPEN)


_PARAMS = _list(_open({"name": _STR, "value": dict(_OPEN)}))  # a string, an array or an object
_SUCCEEDED = '.status.conditions[?(@.type=="Succeeded")]'


def _tekton(kind: str, plural: str, spec: dict[str, Any], status: dict[str, Any], columns: list[dict[str, Any]],
            short: list[str]) -> Object:
    return _crd(TEKTON_GROUP, TEKTON_VERSION, kind, plural, spec, status, columns, {"status": {}}, short)


def tekton_crds() -> list[Object]:
    age = _column("Age", "date", ".metadata.creationTimestamp")
    run_columns = [_column("Succeeded", "string", f"{_SUCCEEDED}.status"),
                   _column("Reason", "string", f"{_SUCCEEDED}.reason"),
                   _column("StartTime", "date", ".status.startTime"),
                   _column("CompletionTime", "date", ".status.completionTime")]
    run_status = _open({"conditions": _CONDITIONS, "startTime": _STR, "completionTime": _STR, "podName": _STR,
                        "childReferences": _list(_ANY)})
    return [
        _tekton("Task", "tasks", _open({"params": _list(_ANY), "steps": _list(_open({"name": _STR, "image": _STR,
                                                                                      "script": _STR}))}),
                _open({}), [age], []),
        _tekton("Pipeline", "pipelines", _open({"params": _list(_ANY), "tasks": _list(_open({
            "name": _STR, "taskRef": _open({"name": _STR}), "runAfter": _list(_STR), "params": _PARAMS}))}),
                _open({}), [age], []),
        _tekton("PipelineRun", "pipelineruns", _open({"pipelineRef": _open({"name": _STR}), "params": _PARAMS,
                                                      "managedBy": _STR}),
                run_status, run_columns, ["pr", "prs"]),
        _tekton("TaskRun", "taskruns", _open({"taskRef": _open({"name": _STR}), "params": _PARAMS}),
                run_status, run_columns, ["tr", "trs"]),
    ]


def workflow_crd() -> Object:
    spec = _open({"entrypoint": _STR, "templates": _list(_open({"name": _STR})), "podMetadata": _ANY})
    status = _open({"phase": _STR, "startedAt": _STR, "finishedAt": _STR, "progress": _STR, "nodes": _ANY,
                    "message": _STR})
    group, _, version = ARGO_API_VERSION.partition("/")
    return _crd(group, version, "Workflow", "workflows", spec, status, [
        _column("Status", "string", ".status.phase", "Status of the workflow"),
        _column("Age", "date", ".status.startedAt", "When the workflow was started"),
    ], {}, ["wf"])


def sandbox_crd() -> Object:
    spec = _open({"podTemplate": _open({"metadata": _ANY, "spec": _ANY})})
    group, _, version = SANDBOX_API_VERSION.partition("/")
    return _crd(group, version, "Sandbox", "sandboxes", spec, _open({"conditions": _CONDITIONS}),
                [_column("Age", "date", ".metadata.creationTimestamp")], {"status": {}}, [])


def minicluster_crd() -> Object:
    spec = _open({"size": {**_INT, "default": 1, "minimum": 1}, "jobLabels": {"type": "object",
                                                                                "additionalProperties": _STR},
                  "containers": _list(_open({"image": _STR, "command": _STR, "name": _STR, "resources": _ANY}))})
    group, _, version = FLUX_API_VERSION.partition("/")
    return _crd(group, version, "MiniCluster", "miniclusters", spec, _open({"conditions": _CONDITIONS, "size": _INT}),
                [_column("Age", "date", ".metadata.creationTimestamp")], {"status": {}}, [])


def podbased_crds() -> list[Object]:
    return [*tekton_crds(), workflow_crd(), sandbox_crd(), minicluster_crd()]
