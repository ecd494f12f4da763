"""``apps/v1`` Deployment, ReplicaSet, StatefulSet and ``batch/v1`` CronJob in the embedded hub.

The embedded hub (``mkhub serve`` over SQLite) stores them for ``mkhub apply``/``get``/``delete``
and runs them with the dev-cluster's simulated controllers (:mod:`hub.service.embedded_operators`);
Kueue queues their Pods (Deployment, StatefulSet: the pod integration) or Jobs (CronJob: the Job
integration). The spec is kept as written; the checks are the parts of kube-apiserver's validation
(``pkg/apis/apps/validation``, ``pkg/apis/batch/validation``) a manifest most often gets wrong: the
replicas, a selector that selects the template's labels, a pod template with containers, a
CronJob's schedule and time zone. Kueue's webhooks for Deployments and StatefulSets
(:mod:`hub.api.jobkinds.serving`) check the queue labels and a managed StatefulSet's replicas.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import cron
from .errors import FieldErrors
from .jobkinds.pod import SUSPENDED_BY_PARENT_ANNOTATION
from .jobkinds.serving import DEPLOYMENT, STATEFULSET
from .jobkinds.serving import validate as serving_validate
from .meta import ObjectMeta
from .reader import Reader
from .validation import validate_name

APPS_VERSIONS = ("apps/v1",)
CRONJOB_VERSIONS = ("batch/v1",)
MAX_INT32 = 2**31 - 1
_FRAMEWORK = {"Deployment": DEPLOYMENT, "StatefulSet": STATEFULSET}


@dataclass(slots=True)
class Workload:
    """An object stored as written, spec whole: a Deployment, ReplicaSet, StatefulSet or CronJob here,
    the pod-based frameworks' kinds in :mod:`.podbased_kind`."""

    meta: ObjectMeta
    kind: str
    spec: dict[str, Any] = field(default_factory=dict)
    status: dict[str, Any] = field(default_factory=dict)


def _raw(r: Reader, key: str) -> dict[str, Any]:
    raw = r.raw(key)
    return dict(raw) if isinstance(raw, dict) else {}


def spec_reader(kind: str) -> Callable[[Reader, ObjectMeta], Workload]:
    """A reader keeping ``spec`` and ``status`` as written (an object for a spec, or refused)."""
    def read(r: Reader, meta: ObjectMeta) -> Workload:
        if r.has("spec") and not isinstance(r.raw("spec"), dict):
            r.errors.invalid("spec", r.raw("spec"), "must be an object")
        return Workload(meta, kind, _raw(r, "spec"), _raw(r, "status"))

    return read


read_deployment, read_replicaset, read_statefulset, read_cronjob = (
    spec_reader(k) for k in ("Deployment", "ReplicaSet", "StatefulSet", "CronJob"))


def _manifest(obj: Workload) -> dict[str, Any]:
    meta = {"name": obj.meta.name, "namespace": obj.meta.namespace, "labels": obj.meta.labels}
    return {"metadata": meta, "spec": obj.spec, "status": obj.status}


def _template_errors(template: Any, path: str, errs: FieldErrors) -> dict[str, Any]:
    """A pod template with at least one container; returns its labels."""
    if not isinstance(template, dict):
        errs.required(path)
        return {}
    spec = template.get("spec")
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list) or not containers:
        errs.required(f"{path}.spec.containers")
    meta = template.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else {}


def _replicas_errors(spec: dict[str, Any], errs: FieldErrors) -> None:
    value = spec.get("replicas")
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_INT32):
        errs.invalid("spec.replicas", value, "must be greater than or equal to 0")


def _selector_errors(spec: dict[str, Any], labels: dict[str, Any], errs: FieldErrors) -> None:
    """apps/v1 requires a selector, and it must select the template's labels (matchLabels)."""
    selector = spec.get("selector")
    if not isinstance(selector, dict) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        errs.required("spec.selector")
        return
    wanted = selector.get("matchLabels") or {}
    if isinstance(wanted, dict) and any(labels.get(k) != v for k, v in wanted.items()):
        shown = json.dumps(labels, sort_keys=True, separators=(",", ":"))
        errs.add("spec.template.metadata.labels", f"Invalid value: {shown}: `selector` does not match template `labels`")


def validate_apps(obj: Workload, errs: FieldErrors) -> None:
    """A Deployment, ReplicaSet or StatefulSet: kube-apiserver's basic rules, then Kueue's webhook."""
    validate_name(obj.meta, errs, namespaced=True)
    _replicas_errors(obj.spec, errs)
    labels = _template_errors(obj.spec.get("template"), "spec.template", errs)
    _selector_errors(obj.spec, labels, errs)
    framework = _FRAMEWORK.get(obj.kind)
    if framework is not None and not errs:
        refused = serving_validate(framework, _manifest(obj), None, False)
        if refused is not None:
            errs.items.extend(refused.errors)


def _managed(obj: Workload) -> bool:
    """Kueue's webhook marked the template: it manages the set (what its update rules need to know)."""
    template = obj.spec.get("template")
    meta = template.get("metadata") if isinstance(template, dict) else None
    notes = meta.get("annotations") if isinstance(meta, dict) else None
    return isinstance(notes, dict) and notes.get(SUSPENDED_BY_PARENT_ANNOTATION) == _FRAMEWORK.get(obj.kind)


def validate_apps_update(old: Workload, new: Workload, errs: FieldErrors) -> None:
    """The selector is immutable (apps/v1); Kueue's update rules for a Deployment or StatefulSet."""
    if old.spec.get("selector") != new.spec.get("selector"):
        errs.invalid("spec.selector", new.spec.get("selector"), "field is immutable")
    framework = _FRAMEWORK.get(new.kind)
    if framework is not None:
        # The webhook sees the stored status on both (an update never carries a new one).
        refused = serving_validate(framework, {**_manifest(new), "status": old.status}, _manifest(old), _managed(old))
        if refused is not None:
            errs.items.extend(refused.errors)


def validate_cronjob(obj: Workload, errs: FieldErrors) -> None:
    """A schedule that parses (and an existing time zone), and a Job template with a pod template."""
    validate_name(obj.meta, errs, namespaced=True)
    schedule = obj.spec.get("schedule")
    if not isinstance(schedule, str) or not schedule:
        errs.required("spec.schedule")
    else:
        try:
            cron.parse(schedule)
        except cron.CronError as exc:
            errs.invalid("spec.schedule", schedule, str(exc))
    zone = obj.spec.get("timeZone")
    if zone is not None and (not isinstance(zone, str) or cron.time_zone(zone) is None):
        errs.invalid("spec.timeZone", zone, "unknown time zone")
    job = obj.spec.get("jobTemplate")
    job_spec = job.get("spec") if isinstance(job, dict) else None
    if not isinstance(job_spec, dict):
        errs.required("spec.jobTemplate.spec")
    else:
        _template_errors(job_spec.get("template"), "spec.jobTemplate.spec.template", errs)
