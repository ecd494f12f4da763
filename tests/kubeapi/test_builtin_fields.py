"""fieldValidation inside built-in kinds, as kube-apiserver does it: a Job's spec and pod template
are checked field by field (Strict refuses, Warn warns, the default prunes), and every field
Kubernetes defines is known: the schemas are compared with the official client's models (generated
from Kubernetes' OpenAPI), so a field Kubernetes has is never refused."""

from __future__ import annotations

import json
import re
from typing import Any

import kubernetes.client as k8s
import pytest

from hub.kubeapi.openapi import schema_for

from .conftest import Env

JOBS = "/apis/batch/v1/namespaces/default/jobs"
_LIST = re.compile(r"^list\[(.+)\]$", re.IGNORECASE)
_DICT = re.compile(r"^dict\[str, (.+)\]$", re.IGNORECASE)


def _missing(model: str, schema: dict[str, Any], path: str, out: list[str], seen: set[str]) -> None:
    """Fields of a client model (and the models it holds) the schema does not declare."""
    if schema.get("x-kubernetes-preserve-unknown-fields") or "properties" not in schema or model in seen:
        return  # kept whole, or an object without declared properties: nothing in it is unknown
    cls = getattr(k8s, model, None)
    if cls is None:
        return  # str, int, datetime, object...
    seen = seen | {model}
    props = schema.get("properties") or {}
    for attr, type_name in cls.openapi_types.items():
        field = cls.attribute_map[attr]
        where = f"{path}.{field}" if path else field
        if field not in props:
            out.append(where)
            continue
        child = props[field]
        inner = type_name
        if (m := _LIST.match(type_name)) is not None:
            inner, child = m.group(1), child.get("items") or {}
        elif (m := _DICT.match(type_name)) is not None:
            inner, child = m.group(1), child.get("additionalProperties") or {}
        if isinstance(child, dict):
            _missing(inner, child, where, out, seen)


_RBAC = "rbac.authorization.k8s.io"


@pytest.mark.parametrize(("group", "kind", "model"), [
    ("batch", "Job", "V1Job"), ("", "Namespace", "V1Namespace"), ("", "Event", "CoreV1Event"),
    ("coordination.k8s.io", "Lease", "V1Lease"), ("apps", "Deployment", "V1Deployment"),
    ("", "ConfigMap", "V1ConfigMap"), ("", "Secret", "V1Secret"), ("", "ServiceAccount", "V1ServiceAccount"),
    ("", "Service", "V1Service"), (_RBAC, "ClusterRole", "V1ClusterRole"), (_RBAC, "Role", "V1Role"),
    (_RBAC, "RoleBinding", "V1RoleBinding"), (_RBAC, "ClusterRoleBinding", "V1ClusterRoleBinding"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration", "V1MutatingWebhookConfiguration"),
    ("apiextensions.k8s.io", "CustomResourceDefinition", "V1CustomResourceDefinition"),
    ("apps", "ReplicaSet", "V1ReplicaSet"), ("apps", "StatefulSet", "V1StatefulSet"), ("batch", "CronJob", "V1CronJob"),
    ("scheduling.k8s.io", "PriorityClass", "V1PriorityClass"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy", "V1ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding", "V1ValidatingAdmissionPolicyBinding"),
])
def test_every_field_kubernetes_defines_is_declared(group: str, kind: str, model: str) -> None:
    schema = schema_for(group, "v1", kind)
    assert schema is not None
    missing: list[str] = []
    _missing(model, schema, "", missing, set())
    assert missing == [], f"{kind}: fields Kubernetes defines that would be refused: {missing}"


def _job(name: str, **spec: Any) -> dict[str, Any]:
    pod = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": pod}, **spec}}


def test_strict_refuses_unknown_fields_inside_a_job(env: Env) -> None:
    job = _job("strict", bogusField=1)
    job["spec"]["template"]["spec"]["containerz"] = []
    job["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyz"] = "x"
    status, _, out = env.raw("POST", JOBS, job, query=[("fieldValidation", "Strict")])
    assert status == 400 and out["reason"] == "BadRequest", out
    assert out["message"].startswith("strict decoding error: ")
    for path in ("spec.bogusField", "spec.template.spec.containerz", "spec.template.spec.containers[0].imagePullPolicyz"):
        assert f'unknown field "{path}"' in out["message"], out["message"]
    assert env.store.get("Job", "default", "strict") is None


def test_warn_keeps_the_request_and_the_default_prunes(env: Env) -> None:
    status, headers, out = env.raw("POST", JOBS, _job("warned", bogusField=1), query=[("fieldValidation", "Warn")])
    assert status == 201 and 'unknown field \\"spec.bogusField\\"' in headers.get("Warning", "")
    assert "bogusField" not in out["spec"]
    status, _, out = env.raw("POST", JOBS, _job("pruned", bogusField=1))
    stored = env.store.get("Job", "default", "pruned")
    assert status == 201 and stored is not None and "bogusField" not in stored["spec"]


def test_a_job_using_many_real_fields_passes_strict_unchanged(env: Env) -> None:
    pod: dict[str, Any] = {
        "restartPolicy": "Never", "hostIPC": False, "setHostnameAsFQDN": False, "os": {"name": "linux"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {
                "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "x"}}}}]}},
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}],
        "securityContext": {"runAsNonRoot": True, "fsGroup": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
        "dnsConfig": {"options": [{"name": "ndots", "value": "2"}]},
        "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1Gi"}},
                    {"name": "p", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
                    {"name": "d", "downwardAPI": {"items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels"}}]}}],
        "containers": [{"name": "c", "image": "busybox", "stdinOnce": False,
                        "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                        "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}},
                        "lifecycle": {"preStop": {"sleep": {"seconds": 1}}},
                        "securityContext": {"capabilities": {"drop": ["ALL"]}, "allowPrivilegeEscalation": False},
                        "volumeMounts": [{"name": "v", "mountPath": "/v"}],
                        "startupProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1}}],
    }
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "full"}, "spec": {
        "completionMode": "Indexed", "completions": 2, "parallelism": 2, "backoffLimitPerIndex": 1,
        "maxFailedIndexes": 1, "podReplacementPolicy": "Failed", "ttlSecondsAfterFinished": 60,
        "successPolicy": {"rules": [{"succeededCount": 1}]},
        "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                                       {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [42]}}]},
        "template": {"metadata": {"labels": {"app": "x"}}, "spec": pod}}}
    status, headers, out = env.raw("POST", JOBS, json.dumps(job), query=[("fieldValidation", "Strict")])
    assert status == 201, out
    assert "unknown field" not in headers.get("Warning", "")
    assert out["spec"]["template"]["spec"] == pod and out["spec"]["podFailurePolicy"] == job["spec"]["podFailurePolicy"]


@pytest.mark.parametrize(("pod", "field", "reason"), [
    ({"volumes": [{"name": "v", "configMap": "x"}]}, "spec.template.spec.volumes[0].configMap", "must be of type object"),
    ({"affinity": []}, "spec.template.spec.affinity", "must be of type object"),
    ({"nodeSelector": {"zone": 1}}, "spec.template.spec.nodeSelector.zone", "must be of type string"),
    ({"tolerations": [{"tolerationSeconds": "soon"}]}, "spec.template.spec.tolerations[0].tolerationSeconds",
     "must be of type integer"),
])
def test_a_wrong_type_deep_in_a_job_is_refused_naming_the_field(env: Env, pod: dict[str, Any], field: str, reason: str) -> None:
    job = _job("typed")
    job["spec"]["template"]["spec"].update(pod)
    status, _, out = env.raw("POST", JOBS, job)
    assert status == 422 and out["reason"] == "Invalid", out
    assert f"{field}: Invalid value" in out["message"] and reason in out["message"], out["message"]
    assert env.store.get("Job", "default", "typed") is None
