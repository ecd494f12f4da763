"""kube-apiserver's rules for the workload kinds beside Jobs (pkg/apis/apps/validation,
pkg/apis/batch/validation for CronJob, pkg/apis/scheduling/validation, the Pod create rules
of pkg/apis/core/validation), and the defaults their strategies write, with kube-apiserver's
field paths and words. :mod:`hub.kubeapi.updaterules` merges the tables.

- ``apps/v1`` Deployment, ReplicaSet, StatefulSet, on every write: ``spec.replicas`` and
  ``minReadySeconds`` not negative, a non-empty selector that selects the template's labels,
  pods that restart ``Always`` and have no ``activeDeadlineSeconds``; StatefulSet's
  ``podManagementPolicy`` OrderedReady or Parallel and ``updateStrategy`` RollingUpdate or
  OnDelete. On update: a ReplicaSet's selector is immutable; a StatefulSet may change only
  ``replicas``, ``template``, ``updateStrategy`` (and, as today's API server, ``minReadySeconds``,
  ``persistentVolumeClaimRetentionPolicy``, ``ordinals``, ``revisionHistoryLimit``).
- ``apps/v1`` Deployment, on every write: a ``strategy`` of type RollingUpdate or Recreate (no
  ``rollingUpdate`` with Recreate, not both ``maxSurge`` and ``maxUnavailable`` 0),
  ``progressDeadlineSeconds`` above ``minReadySeconds``, ``revisionHistoryLimit`` not negative.
- ``batch/v1`` CronJob: a name of at most 52 characters (the Job names get 11 more), pods of
  the Job template that restart OnFailure or Never, a schedule that parses (:mod:`hub.api.cron`, the parser's message) without ``TZ=`` when
  ``timeZone`` is set, a known ``timeZone``, ``concurrencyPolicy`` Allow, Forbid or Replace,
  non-negative deadlines and history limits.
- ``scheduling.k8s.io/v1`` PriorityClass: ``value`` at most 1e9 unless a ``system-`` class
  (whose names are reserved), ``value`` and ``preemptionPolicy`` immutable.
- ``admissionregistration.k8s.io/v1`` ValidatingAdmissionPolicy: ``matchConstraints`` with
  ``resourceRules``, at least one validation or audit annotation, each with an expression (CEL is
  neither compiled nor run); its Binding: a ``policyName`` and validation actions among Audit,
  Deny and Warn (not Deny with Warn).
- ``v1`` Pod create: ``spec.nodeName`` may not be set while ``schedulingGates`` remain, gate
  names unique (removals only, afterwards: :mod:`hub.kubeapi.updaterules`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from hub.api import cron
from hub.api.errors import FieldError
from hub.api.selectors import LabelSelectorError, selector_matches

from .jobrules import IMMUTABLE, _normal

Obj = Mapping[str, Any]
HIGHEST_USER_PRIORITY = 1_000_000_000
CRONJOB_NAME_MAX = 52
_NONNEGATIVE = "must be greater than or equal to 0"
_ADMISSION = "admissionregistration.k8s.io"


def _map(obj: Any, key: str) -> dict[str, Any]:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, dict) else {}


def _nonnegative(node: Mapping[str, Any], key: str, path: str) -> list[FieldError]:
    value = node.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [FieldError(path, _NONNEGATIVE, value, True)]
    return []


def _workload_errors(obj: Obj, empty_message: str, *, template_required: bool) -> list[FieldError]:
    """The checks Deployments, ReplicaSets and StatefulSets share (ValidateDeploymentSpec,
    ValidateReplicaSetSpec, ValidateStatefulSetSpec)."""
    spec = _map(obj, "spec")
    template = spec.get("template")
    errs = _nonnegative(spec, "replicas", "spec.replicas") + _nonnegative(spec, "minReadySeconds", "spec.minReadySeconds")
    selector = spec.get("selector")
    if selector is None:
        errs.append(FieldError("spec.selector", "Required value"))
    elif isinstance(selector, dict) and not (selector.get("matchLabels") or selector.get("matchExpressions")):
        errs.append(FieldError("spec.selector", empty_message, selector, True))
    elif isinstance(selector, dict) and isinstance(template, dict):
        labels = _map(_map(template, "metadata"), "labels")
        try:
            selected = selector_matches(selector, {str(k): str(v) for k, v in labels.items()})
        except LabelSelectorError:
            errs.append(FieldError("spec.selector", "invalid label selector", selector, True))
        else:
            if not selected:
                errs.append(FieldError("spec.template.metadata.labels", "`selector` does not match template `labels`",
                                       labels, True))
    if not isinstance(template, dict):
        if template_required:
            errs.append(FieldError("spec.template", "Required value"))
        return errs
    pod = _map(template, "spec")
    policy = pod.get("restartPolicy")
    if policy not in (None, "", "Always"):
        errs.append(FieldError("spec.template.spec.restartPolicy",
                               f'Unsupported value: {json.dumps(policy)}: supported values: "Always"'))
    if pod.get("activeDeadlineSeconds") is not None:
        errs.append(FieldError("spec.template.spec.activeDeadlineSeconds", "must not be specified",
                               pod["activeDeadlineSeconds"], True))
    return errs


def _int_or_percent(value: Any) -> bool:
    """A zero IntOrString: 0 or "0%"."""
    return bool(value == 0 or value == "0%")


def deployment_errors(obj: Obj) -> list[FieldError]:
    """ValidateDeploymentSpec: the shared rules, the strategy's and the deadlines'."""
    spec = _map(obj, "spec")
    errs = _workload_errors(obj, "empty selector is invalid for deployment", template_required=True)
    errs += _nonnegative(spec, "revisionHistoryLimit", "spec.revisionHistoryLimit")
    strategy = _map(spec, "strategy")
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate" and rolling is not None:
        errs.append(FieldError("spec.strategy.rollingUpdate",
                               "Forbidden: may not be specified when strategy `type` is 'Recreate'"))
    elif kind not in (None, "", "Recreate", "RollingUpdate"):
        errs.append(FieldError("spec.strategy.type",
                               f'Unsupported value: {json.dumps(kind)}: supported values: "Recreate", "RollingUpdate"'))
    if isinstance(rolling, dict) and kind != "Recreate":
        surge, unavailable = rolling.get("maxSurge", "25%"), rolling.get("maxUnavailable", "25%")
        if _int_or_percent(surge) and _int_or_percent(unavailable):
            errs.append(FieldError("spec.strategy.rollingUpdate.maxUnavailable", "may not be 0 when `maxSurge` is 0",
                                   unavailable, True))
    deadline, min_ready = spec.get("progressDeadlineSeconds"), spec.get("minReadySeconds") or 0
    if isinstance(deadline, int) and isinstance(min_ready, int) and deadline <= min_ready:
        errs.append(FieldError("spec.progressDeadlineSeconds", "must be greater than minReadySeconds", deadline, True))
    return errs


def replicaset_errors(obj: Obj) -> list[FieldError]:
    return _workload_errors(obj, "empty selector is invalid for deployment", template_required=False)


def statefulset_errors(obj: Obj) -> list[FieldError]:
    spec = _map(obj, "spec")
    errs = _workload_errors(obj, "empty selector is not valid for statefulset.", template_required=True)
    policy = spec.get("podManagementPolicy")
    if policy not in (None, "", "OrderedReady", "Parallel"):
        errs.append(FieldError("spec.podManagementPolicy", "must be 'OrderedReady' or 'Parallel'", policy, True))
    strategy = _map(spec, "updateStrategy")
    kind = strategy.get("type")
    if kind == "OnDelete" and strategy.get("rollingUpdate") is not None:
        errs.append(FieldError("spec.updateStrategy.rollingUpdate", "only allowed for updateStrategy 'RollingUpdate'",
                               strategy["rollingUpdate"], True))
    elif kind not in (None, "", "OnDelete", "RollingUpdate"):
        errs.append(FieldError("spec.updateStrategy", "must be 'RollingUpdate' or 'OnDelete'", strategy, True))
    errs += _nonnegative(_map(strategy, "rollingUpdate"), "partition", "spec.updateStrategy.rollingUpdate.partition")
    errs += _nonnegative(_map(spec, "ordinals"), "start", "spec.ordinals.start")
    return errs


def replicaset_update_errors(stored: Obj, new: Obj) -> list[FieldError]:
    old, now = _map(stored, "spec").get("selector"), _map(new, "spec").get("selector")
    return [] if _normal(old) == _normal(now) else [FieldError("spec.selector", IMMUTABLE, now, True)]


_STS_MUTABLE = ("replicas", "template", "updateStrategy", "minReadySeconds", "persistentVolumeClaimRetentionPolicy",
                "ordinals", "revisionHistoryLimit")


def statefulset_update_errors(stored: Obj, new: Obj) -> list[FieldError]:
    old = {k: v for k, v in _map(stored, "spec").items() if k not in _STS_MUTABLE}
    now = {k: v for k, v in _map(new, "spec").items() if k not in _STS_MUTABLE}
    if _normal(old) == _normal(now):
        return []
    return [FieldError("spec", "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                               "'template', 'updateStrategy', 'revisionHistoryLimit', "
                               "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")]


def cronjob_errors(obj: Obj) -> list[FieldError]:
    """ValidateCronJobCreate/Update (ValidateCronJobSpec, validateScheduleFormat, validateTimeZone)."""
    errs: list[FieldError] = []
    name = str(_map(obj, "metadata").get("name") or "")
    if len(name) > CRONJOB_NAME_MAX:
        errs.append(FieldError("metadata.name", f"must be no more than {CRONJOB_NAME_MAX} characters", name, True))
    spec = _map(obj, "spec")
    schedule, zone = spec.get("schedule"), spec.get("timeZone")
    if not schedule:
        errs.append(FieldError("spec.schedule", "Required value"))
    elif isinstance(schedule, str):
        try:
            cron.parse(schedule)
        except cron.CronError as exc:
            errs.append(FieldError("spec.schedule", str(exc), schedule, True))
        if "TZ" in schedule and zone is not None:
            errs.append(FieldError("spec.schedule", "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                                   schedule, True))
    if isinstance(zone, str) and cron.time_zone(zone) is None:
        errs.append(FieldError("spec.timeZone", f"unknown time zone {zone}", zone, True))
    policy = spec.get("concurrencyPolicy")
    if policy not in (None, "", "Allow", "Forbid", "Replace"):
        errs.append(FieldError("spec.concurrencyPolicy",
                               f'Unsupported value: {json.dumps(policy)}: supported values: "Allow", "Forbid", "Replace"'))
    for key in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        errs += _nonnegative(spec, key, f"spec.{key}")
    # ValidateJobTemplateSpec: the Job's pods (defaulted to restart Always) must restart OnFailure or Never.
    pod = _map(_map(_map(_map(spec, "jobTemplate"), "spec"), "template"), "spec")
    restart = pod.get("restartPolicy") or "Always"
    if restart not in ("OnFailure", "Never"):
        errs.append(FieldError("spec.jobTemplate.spec.template.spec.restartPolicy",
                               f'Unsupported value: {json.dumps(restart)}: supported values: "OnFailure", "Never"'))
    return errs


def priorityclass_errors(obj: Obj) -> list[FieldError]:
    """ValidatePriorityClass: user classes at most HighestUserDefinablePriority; ``system-`` is reserved."""
    errs: list[FieldError] = []
    name = str(_map(obj, "metadata").get("name") or "")
    value = obj.get("value")
    if name.startswith("system-"):
        if name not in ("system-node-critical", "system-cluster-critical"):
            errs.append(FieldError("metadata.name", "priority class names with 'system-' prefix are reserved", name, True))
    elif isinstance(value, int) and value > HIGHEST_USER_PRIORITY:
        errs.append(FieldError("value", f"Forbidden: maximum allowed value of a user defined priority is "
                                        f"{HIGHEST_USER_PRIORITY}"))
    policy = obj.get("preemptionPolicy")
    if policy not in (None, "PreemptLowerPriority", "Never"):
        errs.append(FieldError("preemptionPolicy",
                               f'Unsupported value: {json.dumps(policy)}: supported values: "Never", "PreemptLowerPriority"'))
    return errs


def priorityclass_update_errors(stored: Obj, new: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    if stored.get("value") != new.get("value"):
        errs.append(FieldError("value", "Forbidden: may not be changed in an update."))
    if _normal(stored.get("preemptionPolicy")) != _normal(new.get("preemptionPolicy")):
        errs.append(FieldError("preemptionPolicy", IMMUTABLE, new.get("preemptionPolicy"), True))
    return errs


def pod_create_errors(obj: Obj) -> list[FieldError]:
    """ValidatePodCreate's scheduling-gate rules (the rest of a Pod is checked by its schema)."""
    spec = _map(obj, "spec")
    gates = spec.get("schedulingGates") or []
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, gate in enumerate(gates if isinstance(gates, list) else []):
        gate_name = str(gate.get("name") or "") if isinstance(gate, dict) else ""
        if not gate_name:
            errs.append(FieldError(f"spec.schedulingGates[{i}].name", "Required value"))
        elif gate_name in seen:
            errs.append(FieldError(f"spec.schedulingGates[{i}]", "Duplicate value", gate_name, True))
        seen.add(gate_name)
    if gates and spec.get("nodeName"):
        errs.append(FieldError("spec.nodeName", "Forbidden: cannot be set until all schedulingGates have been cleared"))
    if not spec.get("containers"):
        errs.append(FieldError("spec.containers", "Required value"))
    return errs


def _supported(value: Any, allowed: tuple[str, ...]) -> str:
    return f"Unsupported value: {json.dumps(value)}: supported values: " + ", ".join(f'"{a}"' for a in allowed)


def policy_errors(obj: Obj) -> list[FieldError]:
    """validateValidatingAdmissionPolicySpec, without compiling CEL."""
    spec = _map(obj, "spec")
    errs: list[FieldError] = []
    failure = spec.get("failurePolicy")
    if failure not in (None, "Fail", "Ignore"):
        errs.append(FieldError("spec.failurePolicy", _supported(failure, ("Fail", "Ignore"))))
    match = spec.get("matchConstraints")
    if not isinstance(match, dict):
        errs.append(FieldError("spec.matchConstraints", "Required value"))
    elif not match.get("resourceRules"):
        errs.append(FieldError("spec.matchConstraints.resourceRules", "Required value"))
    validations, audits = spec.get("validations") or [], spec.get("auditAnnotations") or []
    if not validations and not audits:
        for key in ("validations", "auditAnnotations"):
            errs.append(FieldError(f"spec.{key}", "Required value: validations or auditAnnotations must contain at least one item"))
    for i, v in enumerate(validations if isinstance(validations, list) else []):
        if isinstance(v, dict) and not str(v.get("expression") or "").strip():
            errs.append(FieldError(f"spec.validations[{i}].expression", "Required value: expression is not specified"))
    return errs


def binding_errors(obj: Obj) -> list[FieldError]:
    """validateValidatingAdmissionPolicyBindingSpec: a policy and its validation actions."""
    spec = _map(obj, "spec")
    errs: list[FieldError] = []
    if not spec.get("policyName"):
        errs.append(FieldError("spec.policyName", "Required value"))
    actions = spec.get("validationActions") or []
    seen: set[str] = set()
    for i, action in enumerate(actions if isinstance(actions, list) else []):
        if action not in ("Audit", "Deny", "Warn"):
            errs.append(FieldError(f"spec.validationActions[{i}]", _supported(action, ("Audit", "Deny", "Warn"))))
        elif action in seen:
            errs.append(FieldError(f"spec.validationActions[{i}]", "Duplicate value", action, True))
        seen.add(str(action))
    if {"Deny", "Warn"} <= seen:
        errs.append(FieldError("spec.validationActions", "must not contain both Deny and Warn (repeating the same "
                               "validation failure information in the API response and headers serves no purpose)",
                               actions, True))
    if not seen:
        errs.append(FieldError("spec.validationActions", "Required value: at least one validation action is required"))
    return errs


def _default_match(match: Any) -> None:
    if isinstance(match, dict):
        match.setdefault("matchPolicy", "Equivalent")
        match.setdefault("namespaceSelector", {})
        match.setdefault("objectSelector", {})


def create_errors(group: str, kind: str, obj: Obj) -> list[FieldError]:
    """What kube-apiserver refuses in a create only (beyond :data:`OBJECT_RULES`)."""
    return pod_create_errors(obj) if (group, kind) == ("", "Pod") else []


def _qos_class(spec: Mapping[str, Any]) -> str:
    """GetPodQOS, for cpu and memory: Guaranteed when every container limits both and requests
    what it limits, BestEffort when none asks for anything, else Burstable."""
    containers = [c for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
                  if isinstance(c, dict)]
    guaranteed, anything = True, False
    for c in containers:
        res = _map(c, "resources")
        limits, requests = _map(res, "limits"), {**_map(res, "limits"), **_map(res, "requests")}
        if any(k in ("cpu", "memory") for k in (*limits, *requests)):
            anything = True
        if not all(k in limits and str(requests.get(k)) == str(limits[k]) for k in ("cpu", "memory")):
            guaranteed = False
    if not anything:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def default_pod(obj: dict[str, Any]) -> None:
    """SetDefaults_PodSpec on create: a pod restarts ``Always`` unless it says otherwise."""
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("schedulerName", "default-scheduler")


def new_pod_status(obj: Obj) -> dict[str, Any]:
    """PodStrategy.PrepareForCreate: a created Pod's status is Pending with its QoS class."""
    return {"phase": "Pending", "qosClass": _qos_class(_map(obj, "spec"))}


# ------------------------------------------------------------------ defaults (the types' SetDefaults_*)


def _default_workload(spec: dict[str, Any]) -> None:
    spec.setdefault("replicas", 1)
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        template["spec"].setdefault("restartPolicy", "Always")


def prepare(group: str, kind: str, obj: dict[str, Any]) -> None:
    """The defaults kube-apiserver writes into this module's kinds on every write (in place)."""
    spec = obj.get("spec")
    if (group, kind) == ("scheduling.k8s.io", "PriorityClass"):
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
        return
    if not isinstance(spec, dict):
        return
    if (group, kind) == ("apps", "Deployment"):
        _default_workload(spec)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        strategy = spec.setdefault("strategy", {"type": "RollingUpdate"})
        if isinstance(strategy, dict) and strategy.get("type", "RollingUpdate") == "RollingUpdate":
            strategy.setdefault("type", "RollingUpdate")
            strategy.setdefault("rollingUpdate", {"maxUnavailable": "25%", "maxSurge": "25%"})
    elif (group, kind) == ("apps", "ReplicaSet"):
        _default_workload(spec)
    elif (group, kind) == ("apps", "StatefulSet"):
        _default_workload(spec)
        spec.setdefault("podManagementPolicy", "OrderedReady")
        spec.setdefault("revisionHistoryLimit", 10)
        strategy = spec.setdefault("updateStrategy", {"type": "RollingUpdate"})
        if isinstance(strategy, dict) and strategy.get("type", "RollingUpdate") == "RollingUpdate":
            strategy.setdefault("type", "RollingUpdate")
            strategy.setdefault("rollingUpdate", {"partition": 0})
        spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})
    elif (group, kind) == (_ADMISSION, "ValidatingAdmissionPolicy"):
        spec.setdefault("failurePolicy", "Fail")
        _default_match(spec.get("matchConstraints"))
    elif (group, kind) == (_ADMISSION, "ValidatingAdmissionPolicyBinding"):
        _default_match(spec.get("matchResources"))
    elif (group, kind) == ("batch", "CronJob"):
        spec.setdefault("concurrencyPolicy", "Allow")
        spec.setdefault("suspend", False)
        spec.setdefault("successfulJobsHistoryLimit", 3)
        spec.setdefault("failedJobsHistoryLimit", 1)


OBJECT_RULES: dict[tuple[str, str], Callable[[Obj], list[FieldError]]] = {
    ("apps", "Deployment"): deployment_errors,
    ("apps", "ReplicaSet"): replicaset_errors,
    ("apps", "StatefulSet"): statefulset_errors,
    ("batch", "CronJob"): cronjob_errors,
    ("scheduling.k8s.io", "PriorityClass"): priorityclass_errors,
    (_ADMISSION, "ValidatingAdmissionPolicy"): policy_errors,
    (_ADMISSION, "ValidatingAdmissionPolicyBinding"): binding_errors,
}
UPDATE_RULES: dict[tuple[str, str], Callable[[Obj, Obj], list[FieldError]]] = {
    ("apps", "ReplicaSet"): replicaset_update_errors,
    ("apps", "StatefulSet"): statefulset_update_errors,
    ("scheduling.k8s.io", "PriorityClass"): priorityclass_update_errors,
}
