"""Jobs on a Kubernetes API server (``mkhub serve --kubeconfig``): the cluster runs them.

In embedded mode the hub simulates a queued Job's run and writes its status. On a
Kubernetes API server the cluster's Job controller (a real cluster's, or
``mkhub dev-cluster``'s) runs the Job's pods once Kueue unsuspends it, so the hub
does what Kueue's job reconciler (``pkg/controller/jobframework``) does instead:

- on admission, the pod template gets the assigned flavors' ``nodeLabels`` as
  ``nodeSelector`` entries and their ``tolerations``, the admission checks'
  ``podSetUpdates`` (labels, annotations, nodeSelector, tolerations), and for a
  partial admission the admitted count as ``parallelism``; then ``suspend: false``
  (``RunWithPodSetsInfo``);
- on eviction, Kueue's ``Stop`` in three writes, because kube-apiserver lets the
  template's scheduling directives change only while the Job is suspended and has no
  ``status.startTime``: ``suspend: true`` with the ``kueue.x-k8s.io/stopping``
  annotation, then ``status.startTime`` cleared, then the template restored from the
  Workload's pod set, which kept the original (``RestorePodSetsInfo``), and the
  annotation dropped. A re-admission clears a left ``startTime`` first, then writes
  the restored-and-injected template with ``suspend: false`` in one update. Each
  write re-applies its change to a fresh read on a 409 (:func:`modify`); a Job whose
  write is refused (422, or conflicts past the retries) is logged and skipped: one
  object never fails the round;
- the Job's ``Complete``/``Failed`` condition finishes the Workload (reasons
  ``Succeeded``/``Failed``; also a Workload never admitted, when the Job ran without
  the webhook's suspension), its ``status.ready`` makes its pods ready (the PodsReady
  condition with waitForPodsReady); a Job created
  unsuspended (no webhook) is suspended until admitted, unless it already finished (one
  write: it never started and its template is the original, so the stop has no later steps);
- the hub never writes such a Job's status. Jobs with ``spec.managedBy`` naming
  MultiKueue are not run by the manager's Job controller: their status is the
  hub's mirror of the worker's run (:mod:`.job_status`).

A Workload not owned by a Job (created directly) has no pods anywhere: it is still
simulated, as in embedded mode.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from hub.api.conversion import json_copy
from hub.api.jobkinds import JobAdapter, adapter_of_kind
from hub.api.jobkinds.framework import KindObject, get_path, pod_set_infos, set_path, suspend_path
from hub.api.queues import ResourceFlavor
from hub.api.workload import Workload
from hub.store.interface import (
    ConcurrentWrites,
    Conflict,
    InvalidObject,
    NotFound,
    Object,
    ObjectKey,
    Store,
    StoreError,
    modify,
)

from .cluster import RunnerReport
from .simrunner import SimReport, SimRunner

log = logging.getLogger(__name__)

# Kueue's mark of a stop in progress: a Job carrying it is not yet stopped (jobframework).
STOPPING_ANNOTATION = "kueue.x-k8s.io/stopping"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"


def _adapter(kind: str) -> JobAdapter[Any]:
    adapter = adapter_of_kind(kind)
    if adapter is None:
        raise KeyError(f"{kind} is no kind on the job framework")
    return adapter


def _suspend_path(obj: Object) -> tuple[str, ...]:
    """The object's suspend flag: ``spec.suspend``, a Kubeflow job's ``spec.runPolicy.suspend``..."""
    return suspend_path(adapter_of_kind(str(obj.get("kind") or "Job")))


def _suspended(obj: Object) -> Any:
    return get_path(obj, _suspend_path(obj))


def run_by_cluster(job: KindObject) -> bool:
    """The cluster's own controller of the kind runs ``job`` (Kubernetes' managedBy rule)."""
    adapter = _adapter(job.kind)
    return adapter.managed_by(job) in ("", adapter.controller_name)


class ClusterJobRunner(SimRunner):
    """The runner of a hub on a Kubernetes API server: Jobs' Workloads run in the cluster
    (their ends arrive with :meth:`report`), other Workloads are simulated."""

    def __init__(self, is_job: Callable[[str], bool], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._is_job = is_job
        self._reports: list[RunnerReport] = []
        self.in_cluster: set[str] = set()

    def start(self, workload: Workload, now: float) -> None:
        key = workload.meta.key
        if self._is_job(key):
            self.in_cluster.add(key)
            return
        super().start(workload, now)

    def stop(self, key: str, now: float) -> None:
        if key in self.in_cluster or self._is_job(key):
            # The Job is suspended in the same round; its controller deletes the pods.
            self.in_cluster.discard(key)
            self._reports.append(SimReport(key, "stopped"))
            return
        super().stop(key, now)

    def report(self, key: str, kind: str, message: str = "") -> None:
        self._reports.append(SimReport(key, kind, message))
        if kind in ("succeeded", "failed"):
            self.in_cluster.discard(key)

    def poll(self, now: float) -> list[RunnerReport]:
        out = super().poll(now)
        if self._reports:
            out, self._reports = out + self._reports, []
        return out

    def discard(self, key: str) -> None:
        self.in_cluster.discard(key)
        super().discard(key)

    def next_due(self) -> float | None:
        if self._reports:
            return float("-inf")
        return super().next_due()


def job_outcome(job: KindObject) -> tuple[str, str] | None:
    """("succeeded" | "failed", message) once the object has finished (Kueue's ``Finished()``)."""
    return _adapter(job.kind).finished(job)


def observe_job(job: KindObject, wl: Workload | None, runner: ClusterJobRunner, was_ready: bool) -> None:
    """What the cluster's run of ``job`` tells its Workload (an admitted, unfinished one);
    ``was_ready``: the engine holds its pods ready (:meth:`hub.engine.engine.Engine.is_pods_ready`)."""
    if wl is None or wl.is_finished or not run_by_cluster(job):
        return
    key = wl.meta.key
    outcome = job_outcome(job)
    if outcome is not None:  # admitted or not, as Kueue's reconciler finishes the Workload of a finished Job
        runner.report(key, *outcome)
        return
    if not wl.is_admitted:
        return
    ready = _adapter(job.kind).pods_ready(job)
    if ready != was_ready:
        runner.report(key, "ready" if ready else "unready")


# --- the pod template (podset info injection) -------------------------------------------------


def inject(manifest: Object, wl: Workload, flavors: dict[str, ResourceFlavor]) -> None:
    """Kueue's ``RunWithPodSetsInfo`` on a stored object: merge the admission into its templates."""
    _adapter(str(manifest.get("kind") or "Job")).run_with_pod_sets_info(manifest, pod_set_infos(wl, flavors), wl.pod_sets)


def restore(manifest: Object, wl: Workload | None) -> None:
    """Kueue's ``RestorePodSetsInfo`` and suspend: the templates as the Workload's pod sets kept them."""
    adapter = _adapter(str(manifest.get("kind") or "Job"))
    adapter.suspend(manifest)
    if wl is not None:
        adapter.restore_pod_sets_info(manifest, wl.pod_sets)


# --- writing a Job's suspend on a cluster that runs it --------------------------------------------


def suspend_due(current: Object, suspend: bool) -> bool:
    """The stored Job is not yet where the hub wants it (a stop left half done is not stopped)."""
    return bool(_suspended(current)) is not suspend or (suspend and _stopping(current))


def write_suspend(
    store: Store, kind: str, namespace: str, name: str, suspend: bool, wl: Workload | None,
    flavors: dict[str, ResourceFlavor],
) -> list[Object]:
    """Stop (Kueue's ``Stop``) or start (``RunWithPodSetsInfo``) an object the cluster runs, in the
    writes kube-apiserver accepts; the objects written. A refused object is logged and left as it
    is (the next rebuild tries again), so that it cannot fail the round. The ``startTime`` step
    changes only a kind whose status has one (a Job's)."""
    written: list[Object] = []

    def step(change: Callable[[Object], bool], *, status: bool = False) -> Object | None:
        out = modify(store, kind, namespace, name, change, status=status)
        if out is not None:
            written.append(out)
        return out

    try:
        if suspend:
            out = step(lambda obj: _mark_stopping(obj, wl))
            if out is not None and not _stopping(out):
                return written  # a stop in one write (no startTime, nothing to restore): the steps below are no-ops
            step(_clear_start_time, status=True)
            step(lambda obj: _restored(obj, wl))
        else:
            step(_clear_start_time, status=True)  # a Job stopped without it (by hand, or before this rule)
            step(lambda obj: _started(obj, wl, flavors))
    except (InvalidObject, Conflict) as exc:
        log.error("cannot %s %s %s/%s, leaving it as it is: %s", "stop" if suspend else "start", kind, namespace, name, exc)
    return written


def write_starts(store: Any, starts: list[tuple[ObjectKey, Workload | None]],
                 flavors: dict[str, ResourceFlavor]) -> dict[ObjectKey, list[Object]]:
    """:func:`write_suspend`'s start of several objects on a store that gathers changes
    (``modify_gathered``: an API server): each step of all of them in one batch in flight at once,
    not a thread and a round trip each. The objects written, per object; a refused one is logged and
    left, and its next step not taken, as there."""
    written: dict[ObjectKey, list[Object]] = {okey: [] for okey, _ in starts}
    left = list(starts)
    shared = getattr(store, "get_shared", None)
    for step, status in ((lambda _wl: _clear_start_time, True),
                         (lambda wl: lambda obj: _started(obj, wl, flavors), False)):
        asked = left
        if status and shared is not None:
            # Only a Job holding a startTime has one to clear (rare: a stop left half done): the rest
            # are not copied whole by modify_gathered for a change that does nothing, nor sent.
            asked = [s for s in left if _holds_start_time(shared(s[0].kind, s[0].namespace, s[0].name))]
        changes = [(okey.kind, okey.namespace, okey.name, step(wl), status) for okey, wl in asked]
        answered = dict(zip([okey for okey, _ in asked], store.modify_gathered(changes) if changes else [], strict=True))
        outcomes = [answered.get(okey) for okey, _ in left]  # not asked: no change, as modify answers
        kept = []
        for (okey, wl), out in zip(left, outcomes, strict=True):
            if isinstance(out, (InvalidObject, Conflict)):
                log.error("cannot start %s %s/%s, leaving it as it is: %s", okey.kind, okey.namespace, okey.name, out)
                continue
            if isinstance(out, StoreError):
                raise out  # as write_suspend's step: the round fails, the store is still the truth
            if out is not None:
                written[okey].append(out)
            kept.append((okey, wl))
        left = kept
    return written


def write_status(store: Store, kind: str, namespace: str, name: str, status: dict[str, Any]) -> Object | None:
    """The status the hub keeps for an object it does not leave to the cluster (embedded,
    MultiKueue's mirror); None when it is gone or the API server refused it (logged: one refused
    object never fails the round)."""
    try:
        return store.update_status({"kind": kind, "metadata": {"namespace": namespace, "name": name}, "status": status})
    except NotFound:
        return None
    except InvalidObject as exc:
        log.error("cannot write the status of %s %s/%s: %s", kind, namespace, name, exc)
        return None


def write_statuses(store: Store, statuses: list[tuple[ObjectKey, dict[str, Any]]]) -> list[Object | None]:
    """:func:`write_status` of each, gathered where the store sends independent writes together (an
    API server: all in flight at once, not a thread and a Python HTTP round trip each); each result
    in its place, as :func:`write_status` gives it."""
    if not isinstance(store, ConcurrentWrites) or len(statuses) <= 1:
        return [write_status(store, key.kind, key.namespace, key.name, status) for key, status in statuses]
    out: list[Object | None] = []
    writes = [(False, {"kind": key.kind, "metadata": {"namespace": key.namespace, "name": key.name}, "status": status})
              for key, status in statuses]
    for (key, _), got in zip(statuses, store.write_concurrently(writes), strict=True):
        if isinstance(got, InvalidObject):
            log.error("cannot write the status of %s %s/%s: %s", key.kind, key.namespace, key.name, got)
        elif isinstance(got, StoreError) and not isinstance(got, NotFound):
            raise got  # as write_status lets it go: the round fails and is tried again
        out.append(None if isinstance(got, StoreError) else got)
    return out


def set_suspend(suspend: bool, obj: Object) -> bool:
    """The suspend flag alone (embedded mode: the hub runs the Job, no template to change)."""
    return set_path(obj, _suspend_path(obj), suspend)


def _stopping(obj: Object) -> bool:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(STOPPING_ANNOTATION) == "true"


def _mark_stopping(obj: Object, wl: Workload | None) -> bool:
    meta = obj.setdefault("metadata", {})
    annotations = meta.get("annotations") or {}
    if _suspended(obj) is True:
        return False  # suspended already (or by this step of an earlier, interrupted stop)
    set_path(obj, _suspend_path(obj), True)
    if not _stop_needs_steps(obj, wl):
        return True  # the stop is this one write: nothing to mark as left to do
    meta["annotations"] = {**annotations, STOPPING_ANNOTATION: "true"}
    return True


def _stop_needs_steps(suspended: Object, wl: Workload | None) -> bool:
    """A stop has writes after the suspend: a ``startTime`` to clear or a template to restore. A
    Job that never ran with an injected template (created unsuspended, no webhook, and not yet
    admitted) has neither, and is stopped by the suspend alone, as Kueue's one update stops it."""
    status = suspended.get("status")
    if isinstance(status, dict) and "startTime" in status:
        return True
    restored = json_copy(suspended)
    restore(restored, wl)
    return bool(_pruned(restored) != _pruned(suspended))


def _pruned(value: Any) -> Any:
    """``value`` without the empty maps a restore may add (a template's ``metadata: {}``), which
    change nothing the API server acts on."""
    if isinstance(value, dict):
        return {k: p for k, v in value.items() if (p := _pruned(v)) != {}}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _holds_start_time(obj: Object | None) -> bool:
    status = (obj or {}).get("status")
    return isinstance(status, dict) and "startTime" in status


def _clear_start_time(obj: Object) -> bool:
    status = obj.get("status")
    if not isinstance(status, dict) or "startTime" not in status:
        return False
    if _suspended(obj) is not True:
        return False  # only a suspended Job's startTime may go; the first step was refused or undone
    del status["startTime"]
    return True


def _restored(obj: Object, wl: Workload | None) -> bool:
    before = json_copy(obj)
    _restore_unmarked(obj, wl)
    return bool(_pruned(obj) != _pruned(before))


def _restore_unmarked(obj: Object, wl: Workload | None) -> None:
    restore(obj, wl)
    meta = obj.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    if annotations.pop(STOPPING_ANNOTATION, None) is not None:
        if annotations:
            meta["annotations"] = annotations
        else:
            meta.pop("annotations", None)


def _started(obj: Object, wl: Workload | None, flavors: dict[str, ResourceFlavor]) -> bool:
    if not _suspended(obj) or wl is None:
        return False  # running already
    # Stored objects are JSON (json_copy, not deepcopy), and whether the restore alone changed
    # anything is not asked: one copy and one comparison per start (a Job's unsuspend).
    before = json_copy(obj)
    _restore_unmarked(obj, wl)  # from the original template, so a half-done stop leaves nothing behind
    inject(obj, wl, flavors)
    return bool(obj != before)
