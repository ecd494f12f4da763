"""Kueue's pod integration in the hub: plain Pods and pod groups queued as Workloads.

Pure bookkeeping over the engine (:class:`PodIntegration`), beside :class:`.jobs.JobIntegration`,
plus the round's writes (:func:`write_pods`). A Pod Kueue's webhook marked
(``kueue.x-k8s.io/managed=true``: :func:`hub.api.jobkinds.pod.default_at_creation`) is managed
while the ``pod`` framework is enabled:

- a single Pod is one Workload (``pod-<name>-<hash>``, :func:`~hub.api.jobkinds.framework.workload_for`);
  a pod group is one Workload named as the group, created once :func:`~hub.api.jobkinds.pod_group.compose_group`
  finds it complete; a restarted hub finds the Workload by that deterministic name and adopts it;
- admission ungates the Workload's Pods with the admission's pod-set infos; eviction marks them
  ``TerminationTarget`` and deletes them (Kueue cannot suspend a running Pod);
- the end comes from the Pods' phases on a Kubernetes API server (:func:`observe_pods`), from the
  simulated runner in the embedded hub (the Pods' statuses are then written from the Workload);
- Kueue's finalizer is dropped once a Pod finished, is being deleted, or its Workload is gone.

Nothing here does I/O but :func:`write_pods`, which the hub calls inside its round, after the
Workload statuses (rule c of :mod:`hub.controllers.hub`: a Pod runs only once its Workload is
stored admitted).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from hub.api.errors import ValidationError
from hub.api.jobkinds.framework import pod_set_infos, workload_for, workload_name
from hub.api.jobkinds.pod import (
    GROUP_NAME_LABEL,
    POD,
    POD_FINALIZER,
    PREBUILT_WORKLOAD_LABEL,
    InjectionConflict,
    Pod,
    manifest_gated,
    pods_to_stop,
    read_pod,
    remove_finalizer,
    termination_target,
)
from hub.api.jobkinds.pod_group import (
    WAITING_FOR_REPLACEMENT,
    compose_group,
    group_finished,
    group_pods_ready,
    match_to_workload,
    ungate_group,
    waiting_for_replacement,
)
from hub.api.jobkinds.serving import manages_pod_of, own_by_parent, pod_integration_enabled
from hub.api.workload import EVICTED, Workload
from hub.engine.conditions import set_condition
from hub.engine.engine import Engine
from hub.engine.events import EngineEvent
from hub.obs.events import JobEvent
from hub.store.interface import Conflict, InvalidObject, NotFound, Object, ObjectKey, Store, modify

from .pod_mirror import manager_pod_status, worker_pod_statuses
from .tas_pods import TasPods, write_tas_pods

log = logging.getLogger(__name__)

_COMPONENT = "pod-kueue-controller"
_WORKLOAD_DELETED = "WorkloadDeleted"
_STOP_REASONS = {"Evicted": "WorkloadEvicted", "Released": "WorkloadEvicted", "Deactivated": "WorkloadEvicted"}


def pod_key(pod: Pod) -> ObjectKey:
    return ObjectKey("Pod", pod.meta.namespace, pod.meta.name)


def workload_key_of(pod: Pod) -> str:
    """The key of the Workload Kueue names for ``pod``: its group's (or prebuilt) name, else
    ``pod-<name>-<hash of its uid>``."""
    meta = pod.meta
    group = meta.labels.get(PREBUILT_WORKLOAD_LABEL) or pod.group_name
    return f"{meta.namespace}/{group or workload_name('Pod', '', meta.name, meta.uid)}"


class ReportSink(Protocol):
    def report(self, key: str, kind: str, message: str = "") -> None: ...


@dataclass(slots=True)
class PodIntegration:
    """The managed Pods, their Workloads, and what the next round must write for them."""

    engine: Engine
    pods: dict[ObjectKey, Pod] = field(default_factory=dict)  # managed Pods, as last read or written
    workload_of: dict[ObjectKey, str] = field(default_factory=dict)
    members: dict[str, set[ObjectKey]] = field(default_factory=dict)  # Workload key -> its Pods
    waiting: dict[str, set[ObjectKey]] = field(default_factory=dict)  # group Workload key -> Pods so far
    kept: set[str] = field(default_factory=set)  # group Workloads a LeaderWorkerSet keeps without Pods (.lws)
    grown: set[str] = field(default_factory=set)  # Workloads whose Pods joined after their creation
    statuses: dict[ObjectKey, dict[str, Any]] = field(default_factory=dict)  # simulated statuses written
    # Decided, written by the next round (write_pods), then cleared.
    to_ungate: set[str] = field(default_factory=set)
    to_stop: dict[str, tuple[str, str]] = field(default_factory=dict)  # Workload key -> (reason, message)
    to_finalize: set[ObjectKey] = field(default_factory=set)
    to_delete: set[ObjectKey] = field(default_factory=set)  # a group's Pods beyond its total count
    status_due: set[str] = field(default_factory=set)
    conditions_due: set[str] = field(default_factory=set)  # Workloads whose WaitingForReplacementPods changed
    events: list[JobEvent] = field(default_factory=list)
    tas: TasPods = field(init=False)  # TAS's pods: the topology ungater, the non-TAS usage (.tas_pods)

    def __post_init__(self) -> None:
        self.tas = TasPods(self.engine)

    @property
    def enabled(self) -> bool:
        """The ``pod`` framework, or a Deployment or StatefulSet one that implies it (as in Kueue)."""
        return pod_integration_enabled(self.engine.config)

    def managed(self, pod: Pod) -> bool:
        """Kueue's pod reconciler skips Pods its webhook did not mark, and, when only implied by a
        serving framework, Pods without an enabled parent's annotation."""
        return pod.kueue_managed and manages_pod_of(self.engine.config, pod.meta.annotations)

    # --- inputs

    def apply(self, pod: Pod, now: float) -> list[Workload]:
        """Record a Pod; returns the Workloads to create (a new single Pod's, a completed group's)."""
        key = pod_key(pod)
        if not self.managed(pod):
            return []
        self.pods[key] = pod
        if POD_FINALIZER in pod.meta.finalizers and (pod.deleting or (pod.terminated and not pod.group_name)):
            self.to_finalize.add(key)
        if key in self.workload_of:
            self._match_group(self.workload_of[key], pod, now)
            return []
        wl_key = workload_key_of(pod)
        if wl_key in self.engine.workloads or wl_key in self.members:
            self._attach(key, wl_key)  # a restarted hub's, or a group's replacement or later Pod
            wl = self.engine.workloads.get(wl_key)
            if wl is not None and (wl.status.cluster_name or wl.status.nominated_cluster_names):
                self.grown.add(wl_key)  # dispatched through MultiKueue: its copies get it (hub.federation.podcopies)
            if wl is not None and wl.is_admitted and not wl.status.is_true(EVICTED) and pod.gated:
                self.to_ungate.add(wl_key)
                self.status_due.add(wl_key)  # a Pod joining a running group (a StatefulSet's next ordinal) runs too
            self._match_group(wl_key, pod, now)
            return []
        if not pod.group_name:
            if pod.terminated or pod.deleting:
                return []
            wl = workload_for(POD, pod)
            self._attach(key, wl_key)
            return [self._created(wl, pod, now)]
        waiting = self.waiting.setdefault(wl_key, set())
        waiting.add(key)
        plan = compose_group([self.pods[k] for k in sorted(waiting)])
        if plan.error is not None:
            log.warning("pod group %s: %s", wl_key, plan.error)
            return []
        self.to_delete.update(pod_key(p) for p in plan.to_delete)
        self.to_finalize.update(pod_key(p) for p in plan.to_finalize if POD_FINALIZER in p.meta.finalizers)
        if plan.workload is None:
            return []
        for k in self.waiting.pop(wl_key):
            self._attach(k, wl_key)
        own_by_parent(plan.workload, pod)
        return [self._created(plan.workload, pod, now)]

    def orphaned_by(self, key: ObjectKey) -> str | None:
        """The Workload the Pod's deletion leaves without Pods (Kubernetes' garbage collector deletes it)."""
        wl_key = self.workload_of.get(key)
        return wl_key if wl_key is not None and wl_key not in self.kept and self.members.get(wl_key, set()) <= {key} else None

    def delete(self, key: ObjectKey) -> str | None:
        """Forget a Pod; returns its Workload's key when no Pod of it is left (to be deleted with it)."""
        self.pods.pop(key, None)
        self.statuses.pop(key, None)
        self.to_finalize.discard(key)
        self.to_delete.discard(key)
        for waiting in self.waiting.values():
            waiting.discard(key)
        wl_key = self.workload_of.pop(key, None)
        if wl_key is None:
            return None
        left = self.members.get(wl_key, set())
        left.discard(key)
        if left or wl_key in self.kept:
            return None
        self.members.pop(wl_key, None)
        return wl_key

    def drain_grown(self) -> set[str]:
        out, self.grown = self.grown, set()
        return out

    def holds(self, wl_key: str) -> bool:
        """The Workload is the Pods' (its Pods, not a simulation, run it and end it): a Workload of
        Pods, or a LeaderWorkerSet's group Workload waiting for its Pods."""
        return wl_key in self.members or wl_key in self.kept

    def adopt_waiting(self, wl_key: str) -> None:
        """The Pods waiting for their group (a LeaderWorkerSet's leader seen before its set) join
        the group's Workload, which the set's integration creates now."""
        for k in self.waiting.pop(wl_key, set()):
            self._attach(k, wl_key)

    def on_events(self, events: list[EngineEvent]) -> None:
        self.tas.on_events(events)
        for ev in events:
            keys = self.members.get(ev.key)
            if not keys:
                continue
            pod = self.pods[min(keys)]
            if ev.type == "Admitted":
                self.to_ungate.add(ev.key)
                self.to_stop.pop(ev.key, None)
                self._event(pod, "Started", f"Admitted by clusterQueue {_cluster_queue(self.engine, ev.key)}")
            elif ev.type in _STOP_REASONS:
                self.to_ungate.discard(ev.key)
                self.to_stop[ev.key] = (_STOP_REASONS[ev.type], ev.message or "Workload evicted")
                self._event(pod, "Stopped", ev.message or "Not admitted by cluster queue")
            elif ev.type == "Deleted":  # Kueue stops a deleted Workload's Pods, gated ones too
                self.to_ungate.discard(ev.key)
                self.to_stop[ev.key] = (_WORKLOAD_DELETED, "Workload deleted")
            elif ev.type == "Finished":
                self.to_finalize.update(k for k in keys if POD_FINALIZER in self.pods[k].meta.finalizers)
                self._event(pod, "FinishedWorkload", f"Workload '{ev.key}' is declared finished")
            self.status_due.add(ev.key)

    def after_load(self) -> None:
        """A restarted hub puts right what the last one left half written: admitted Workloads'
        gated Pods are ungated, evicted ones' running Pods stopped, finished ones' finalizers dropped."""
        self.tas.after_load()
        for wl_key, keys in self.members.items():
            wl = self.engine.workloads.get(wl_key)
            if wl is None:
                continue
            if wl.is_finished:
                self.to_finalize.update(k for k in keys if POD_FINALIZER in self.pods[k].meta.finalizers)
            elif wl.status.is_true(EVICTED):
                self.to_stop[wl_key] = ("WorkloadEvicted", "Workload evicted")
            elif wl.is_admitted:
                self.to_ungate.add(wl_key)
            self.status_due.add(wl_key)

    def _match_group(self, wl_key: str, pod: Pod, now: float) -> None:
        """A group's Pods against its Workload (Kueue's replacement rules): failed Pods a replacement
        took the place of let go (finalizer dropped), runnable Pods beyond a role's count deleted."""
        wl = self.engine.workloads.get(wl_key)
        if not pod.group_name or wl is None or wl.is_finished:
            return
        matched = match_to_workload(self.member_pods(wl_key), wl, now)
        self.to_finalize.update(pod_key(p) for p in matched.to_finalize if POD_FINALIZER in p.meta.finalizers)
        self.to_delete.update(pod_key(p) for p in matched.to_delete)
        wanted = waiting_for_replacement(matched.absent, wl)  # Kueue's custom Workload condition for groups
        if wanted is not None and set_condition(wl, WAITING_FOR_REPLACEMENT, *wanted, now):
            self.conditions_due.add(wl_key)

    def take_conditions(self) -> set[str]:
        """The Workloads whose pod-group condition changed: their statuses are written in the round."""
        due, self.conditions_due = self.conditions_due, set()
        return due

    def member_pods(self, wl_key: str) -> list[Pod]:
        return [self.pods[k] for k in sorted(self.members.get(wl_key, ()))]

    def drain_events(self) -> list[JobEvent]:
        events, self.events = self.events, []
        return events

    def _attach(self, key: ObjectKey, wl_key: str) -> None:
        self.workload_of[key] = wl_key
        self.members.setdefault(wl_key, set()).add(key)

    def _created(self, wl: Workload, pod: Pod, now: float) -> Workload:
        if wl.meta.creation_timestamp is None:
            wl.meta.creation_timestamp = now
        self._event(pod, "CreatedWorkload", f"Created Workload: {wl.meta.key}")
        return wl

    def _event(self, pod: Pod, reason: str, message: str) -> None:
        self.events.append(JobEvent(pod, reason, message, kind="Pod", api_version="v1", component=_COMPONENT))


def _cluster_queue(engine: Engine, wl_key: str) -> str:
    wl = engine.workloads.get(wl_key)
    return wl.status.admission.cluster_queue if wl is not None and wl.status.admission is not None else ""


def observe_pods(pods: PodIntegration, pod: Pod, sink: ReportSink) -> None:
    """What the cluster's Pods tell their admitted, unfinished Workload (a Kubernetes API server's
    kubelet runs them): finished when the Pod (or the group) finished, ready when all are Ready."""
    wl_key = pods.workload_of.get(pod_key(pod))
    wl = pods.engine.workloads.get(wl_key or "")
    if wl_key is None or wl is None or wl.is_finished or wl.status.cluster_name is not None:
        return  # a MultiKueue Workload's Pods run in its worker: the manager's show what the agent reports
    members = pods.member_pods(wl_key)
    outcome = group_finished(members) if pod.group_name else POD.finished(pod)
    if outcome is not None:
        sink.report(wl_key, *outcome)
        return
    if wl.is_admitted and not wl.status.is_true(EVICTED):
        ready = group_pods_ready(members) if pod.group_name else POD.pods_ready(pod)
        if ready != pods.engine.is_pods_ready(wl_key):
            sink.report(wl_key, "ready" if ready else "unready")


# --- the round's writes ---------------------------------------------------------------------------------


def write_pods(store: Store, pods: PodIntegration, changed: Iterable[str], *, simulated: bool, now: float,
               mirrored: Mapping[str, dict[str, Any]] | None = None) -> list[int]:
    """Write what the round decided for Pods: stops (TerminationTarget, finalizer, delete), excess
    group Pods deleted, ungating, the simulated statuses (embedded hub: ``simulated``), the statuses
    of the winning worker's Pods for a MultiKueue Workload (``mirrored``, by Workload key), finalizers.
    Returns the resourceVersions of the writes (the hub's own, whose events it skips). A Pod that
    is gone or refused is skipped (logged): one Pod never fails the round."""
    own: list[int] = []
    writer = _Writer(store, pods, own)
    to_stop, to_delete, to_ungate = pods.to_stop, pods.to_delete, pods.to_ungate
    due, to_finalize = pods.status_due | {k for k in changed if k in pods.members}, pods.to_finalize
    pods.to_stop, pods.to_delete, pods.to_ungate, pods.status_due, pods.to_finalize = {}, set(), set(), set(), set()
    for wl_key, (reason, message) in sorted(to_stop.items()):
        for pod in pods_to_stop(pods.member_pods(wl_key), workload_deleted=reason == _WORKLOAD_DELETED):
            writer.stop(pod_key(pod), reason, message, now)
    for key in sorted(to_delete):
        writer.stop(key, "NoMatchingWorkload", "the pod group already has its total count of pods", now)
    for wl_key in sorted(to_ungate):
        wl = pods.engine.workloads.get(wl_key)
        # Dispatched through MultiKueue, the Pods run in the worker: the manager's stay gated, as in Kueue.
        if wl is not None and wl.is_admitted and not wl.status.is_true(EVICTED) and wl.status.cluster_name is None:
            writer.ungate(wl_key, wl)
    for wl_key in sorted(due):
        wl = pods.engine.workloads.get(wl_key)
        if wl is None:
            continue
        if wl.status.cluster_name is not None:  # MultiKueue: the worker's Pods, else derived from the Workload
            remote = worker_pod_statuses((mirrored or {}).get(wl_key))
            for pod in pods.member_pods(wl_key):
                previous = pods.statuses.get(pod_key(pod))
                status = remote.get(pod.meta.name)
                if status is not None and not (wl.is_finished and not POD.status_terminal(status)):
                    writer.status(pod, manager_pod_status(previous, status))
                elif remote and not wl.is_finished:
                    continue  # the worker reports its Pods and this one is not there (made after the dispatch)
                else:  # a simulated worker reports none (as for Jobs); a stale one: the agent finished first
                    writer.status(pod, POD.simulated_status(wl, pod, previous, pods.engine.pods_ready_at(wl_key)))
        elif simulated:
            for pod in pods.member_pods(wl_key):
                writer.status(pod, POD.simulated_status(wl, pod, pods.statuses.get(pod_key(pod)),
                                                   pods.engine.pods_ready_at(wl_key)))
    for key in sorted(to_finalize):
        writer.write(key, remove_finalizer)
    write_tas_pods(store, pods.tas)
    return own


@dataclass(slots=True)
class _Writer:
    store: Store
    pods: PodIntegration
    own: list[int]

    def write(self, key: ObjectKey, change: Any, *, status: bool = False) -> Object | None:
        try:
            out = modify(self.store, key.kind, key.namespace, key.name, change, status=status)
        except (Conflict, InvalidObject) as exc:
            log.error("cannot write Pod %s/%s: %s", key.namespace, key.name, exc)
            return None
        if out is not None:
            self._written(key, out)
        return out

    def _written(self, key: ObjectKey, out: Object) -> None:
        meta = out["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            return  # the last finalizer gone, the store removed it: its DELETED event is input (the Workload goes)
        self.own.append(int(meta["resourceVersion"]))
        if key in self.pods.pods:
            try:
                self.pods.pods[key] = read_pod(out)
            except ValidationError as exc:  # stored by the hub itself: never expected
                log.error("cannot read back %s", exc)

    def stop(self, key: ObjectKey, reason: str, message: str, now: float) -> None:
        """Kueue's stop of a Pod: the TerminationTarget condition, then the delete (the finalizer
        dropped first, so that the Pod goes at once)."""
        condition = termination_target(reason, message, now)

        def mark(obj: Object) -> bool:
            status = obj.setdefault("status", {})
            status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != condition["type"]]
            status["conditions"].append(condition)
            return True

        self.write(key, mark, status=True)
        self.write(key, remove_finalizer)
        with contextlib.suppress(NotFound):  # gone already
            self.store.delete(key.kind, key.namespace, key.name)

    def ungate(self, wl_key: str, wl: Workload) -> None:
        infos = pod_set_infos(wl, self.pods.engine.flavors)
        members = self.pods.member_pods(wl_key)
        if len(members) == 1 and not members[0].group_name:
            key = pod_key(members[0])

            def run(obj: Object) -> bool:
                if not manifest_gated(obj):
                    return False
                try:
                    POD.run_with_pod_sets_info(obj, infos, wl.pod_sets)
                except InjectionConflict as exc:
                    log.error("cannot start %s: %s", wl_key, exc)
                    return False
                return True

            self.write(key, run)
            return
        manifests = [m for m in (self.store.get("Pod", k.namespace, k.name) for k in sorted(self.pods.members[wl_key]))
                     if m is not None]
        ungated, problem = ungate_group(manifests, infos)
        if problem is not None:
            log.error("cannot start %s: %s", wl_key, problem)
            return
        for manifest in ungated:
            meta = manifest["metadata"]
            key = ObjectKey("Pod", meta["namespace"], meta["name"])
            try:
                self._written(key, self.store.update(manifest))
            except (Conflict, NotFound, InvalidObject) as exc:  # changed meanwhile: its event brings it back
                log.warning("cannot ungate Pod %s/%s: %s", key.namespace, key.name, exc)
                self.pods.to_ungate.add(wl_key)

    def status(self, pod: Pod, status: dict[str, Any]) -> None:
        key = pod_key(pod)
        if self.pods.statuses.get(key) == status:
            return

        def put(obj: Object) -> bool:
            qos = (obj.get("status") or {}).get("qosClass")  # immutable: the API server set it at creation
            obj["status"] = {**status, "qosClass": qos} if qos is not None else status
            return True

        if self.write(key, put, status=True) is not None:
            self.pods.statuses[key] = status


__all__ = ["GROUP_NAME_LABEL", "PodIntegration", "observe_pods", "pod_key", "workload_key_of", "write_pods"]
