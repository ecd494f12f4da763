"""kube-apiserver's update rules for ``batch/v1`` Jobs (pkg/apis/batch/validation).

The dev-cluster must refuse what a real API server refuses, or a controller that
works against it crash-loops on a real cluster. The rules kept here:

- ``spec.template`` is immutable, except its scheduling directives (nodeSelector,
  tolerations, schedulingGates, node affinity, template labels and annotations) while
  the Job is suspended and has never started (``status.startTime`` unset), judged on
  the stored Job (JobMutableNodeSchedulingDirectives, GA);
- ``spec.completions`` is immutable, except for an Indexed Job (ElasticIndexedJob,
  GA) whose new completions equal its new parallelism;
- ``spec.selector``, ``completionMode``, ``podFailurePolicy``, ``backoffLimitPerIndex``,
  ``managedBy`` and ``successPolicy`` are immutable;
- a status write may change a set ``status.startTime`` only while the Job is
  suspended (RejectStartTimeUpdateForUnsuspendedJob): Kueue clears it after
  suspending, before it restores the template.

Each refusal is a :class:`FieldError` worded as kube-apiserver words it; the caller
answers 422 Invalid.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hub.api.conversion import json_copy
from hub.api.errors import FieldError

IMMUTABLE = "field is immutable"
_OTHER_IMMUTABLE = ("selector", "completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy")


def _spec(job: Mapping[str, Any]) -> dict[str, Any]:
    spec = job.get("spec")
    return spec if isinstance(spec, dict) else {}


def _status(job: Mapping[str, Any]) -> dict[str, Any]:
    status = job.get("status")
    return status if isinstance(status, dict) else {}


def scheduling_directives_mutable(stored: Mapping[str, Any]) -> bool:
    """The stored Job is suspended and never started: its template's scheduling directives may change."""
    return _spec(stored).get("suspend") is True and not _status(stored).get("startTime")


def _with_directives_of(old: Any, new: Any) -> Any:
    """``old`` template with ``new``'s scheduling directives, as kube-apiserver compares them."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return old
    out = json_copy(old)
    new_meta: dict[str, Any] = new["metadata"] if isinstance(new.get("metadata"), dict) else {}
    new_pod: dict[str, Any] = new["spec"] if isinstance(new.get("spec"), dict) else {}
    meta = out.setdefault("metadata", {})
    pod = out.setdefault("spec", {})
    if not isinstance(meta, dict) or not isinstance(pod, dict):
        return old
    for name, node, source in (
        ("labels", meta, new_meta),
        ("annotations", meta, new_meta),
        ("nodeSelector", pod, new_pod),
        ("tolerations", pod, new_pod),
        ("schedulingGates", pod, new_pod),
    ):
        if name in source:
            node[name] = json_copy(source[name])
        else:
            node.pop(name, None)
    old_affinity = pod.get("affinity") if isinstance(pod.get("affinity"), dict) else None
    new_affinity = new_pod.get("affinity") if isinstance(new_pod.get("affinity"), dict) else None
    # Node affinity may be added, changed or removed; the other affinities stay immutable.
    if new_affinity is None and old_affinity is not None:
        rest = {k: v for k, v in old_affinity.items() if k != "nodeAffinity"}
        if rest:
            pod["affinity"] = rest
        else:
            pod.pop("affinity", None)
    elif new_affinity is not None:
        merged = {k: v for k, v in (old_affinity or {}).items() if k != "nodeAffinity"}
        if "nodeAffinity" in new_affinity:
            merged["nodeAffinity"] = json_copy(new_affinity["nodeAffinity"])
        pod["affinity"] = merged
    return out


def _normal(node: Any) -> Any:
    """Empty maps, lists and nulls dropped at every level: Go's zero values, which a client may
    send or omit alike (kube-apiserver compares decoded structs, where they are the same)."""
    if isinstance(node, dict):
        out = {k: _normal(v) for k, v in node.items()}
        return {k: v for k, v in out.items() if v not in ({}, [], None)}
    if isinstance(node, list):
        return [_normal(v) for v in node]
    return node


def update_errors(stored: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
    """What kube-apiserver refuses in an update of ``stored`` to ``new`` (spec rules)."""
    old_spec, new_spec = _spec(stored), _spec(new)
    errs: list[FieldError] = []
    errs.extend(_completions_errors(old_spec, new_spec))
    for name in _OTHER_IMMUTABLE[:1]:
        if old_spec.get(name) != new_spec.get(name):
            errs.append(FieldError(f"spec.{name}", IMMUTABLE, new_spec.get(name), True))
    old_template = old_spec.get("template")
    new_template = new_spec.get("template")
    # An unchanged template (most writes: suspend, labels) needs neither the directives' copy nor normalizing.
    if old_template != new_template and scheduling_directives_mutable(stored):
        old_template = _with_directives_of(old_template, new_template)
    if old_template != new_template and _normal(old_template) != _normal(new_template):
        errs.append(FieldError("spec.template", IMMUTABLE, new_template, True))
    for name in _OTHER_IMMUTABLE[1:]:
        if old_spec.get(name) != new_spec.get(name):
            errs.append(FieldError(f"spec.{name}", IMMUTABLE, new_spec.get(name), True))
    return errs


def _completions_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> list[FieldError]:
    old, new = old_spec.get("completions"), new_spec.get("completions")
    if old == new:
        return []
    if new_spec.get("completionMode") != "Indexed":
        return [FieldError("spec.completions", IMMUTABLE, new, True)]
    if new is None:
        return []  # an Indexed Job without completions is refused by the create-time rules
    if new != new_spec.get("parallelism"):
        return [FieldError("spec.completions", "can only be modified in tandem with spec.parallelism", new, True)]
    return []


def status_update_errors(stored: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
    """What kube-apiserver refuses in a status write of ``stored`` to ``new``."""
    old_start = _status(stored).get("startTime")
    new_start = _status(new).get("startTime")
    if old_start and new_start != old_start and _spec(new).get("suspend") is not True:
        return [FieldError("status.startTime", "Required value: startTime cannot be removed for unsuspended job")]
    return []
