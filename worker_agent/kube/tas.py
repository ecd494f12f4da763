"""Topology-aware scheduling in a worker, as the worker's Kueue does it under MultiKueue.

A copy the local engine admitted with a ``topologyAssignment`` is created with its pod templates
gated and marked (:func:`worker_agent.kube.jobs.worker_job`); its kind's controller then makes
gated pods. Here the worker's Pods feed :class:`hub.controllers.tas_pods.TasPods` (the copy's
gated pods, and the usage of the pods TAS did not place, taken off their Nodes), and each round the
due pods are ungated with their domains' nodeSelectors on the writer threads, never on the loop.
A pod ungated onto a node that then failed or left the assignment, still Pending there, is failed
as the worker's Kueue node controller does (:func:`hub.controllers.tas_pods.due_failures`), so its
Job makes one that goes to the replacement.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hub.api.errors import ValidationError
from hub.api.jobkinds.framework import TOPOLOGY_GATE
from hub.api.jobkinds.pod import Pod, read_pod, reread_pod
from hub.controllers.cluster import ClusterController
from hub.controllers.tas_pods import due_failures, due_ungates, fail_pod, ungate_pod
from hub.store.interface import EventType, ObjectKey, Store, WatchEvent

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PodUngate:
    """The writer's desired state of a gated Pod: ungated into this domain."""

    selector: dict[str, str]


@dataclass(frozen=True, slots=True)
class PodFail:
    """The writer's desired state of an ungated, unbound Pod on a node its Workload lost: Failed
    (Kueue's TerminatedByKueue / UnschedulableOnAssignedNode), stamped with the loop's time."""

    at: float


class WorkerTas:
    """``desire(ref, state)`` queues a write on the writer threads (``Pod:ns/name``)."""

    def __init__(self, controller: ClusterController, desire: Callable[[str, object], None]) -> None:
        self.controller = controller
        controller.pods.tas.ungates_managed = True  # the copies' Pods (.pods) are gated for TAS too
        self.desire = desire
        self._refused: set[tuple[str, str]] = set()  # Pods that did not parse, logged once
        self._members: dict[ObjectKey, dict[str, Any]] = {}  # the copies' TAS pods as last seen
        self._ungating: dict[ObjectKey, dict[str, str]] = {}  # ungates queued, not yet seen in an event
        # Each Pod's last event as read (manifest, Pod): its next version is read from it (reread_pod).
        self._read: dict[ObjectKey, tuple[dict[str, Any], Pod]] = {}

    def on_pod(self, event: WatchEvent, now: float) -> bool:
        """A Pod event of the worker (loop thread). Never wakes a round: usage goes into the inventory as
        Kueue's cache takes it, and freed capacity requeues in batches (the engine's next_wakeup)."""
        tas = self.controller.pods.tas
        meta = event.object.get("metadata") or {}
        ident = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        key = ObjectKey("Pod", *ident)
        self._members.pop(key, None)
        if event.type == EventType.DELETED:
            self._ungating.pop(key, None)
            self._read.pop(key, None)
            tas.delete_pod(key, now)
        else:
            obj = event.object
            selector = self._ungating.get(key)
            if selector is not None:  # an event from before our write lands: read it as written
                if _gated(obj):
                    obj = _ungated(obj, selector)
                else:
                    del self._ungating[key]
            try:
                pod = reread_pod(obj, self._read.get(key))
            except ValidationError as exc:
                self._read.pop(key, None)
                if ident not in self._refused:
                    self._refused.add(ident)
                    log.warning("ignoring a worker Pod for TAS: %s", exc)
                return False
            self._read[key] = (obj, pod)
            tas.apply_pod(pod, now)
            if key in tas.workload_of:
                self._members[key] = obj
        return False  # the usage went into the inventory; freed capacity requeues batched (engine timers)

    def flush(self) -> int:
        """Queue the ungating of the pods found due, and the failing of those stranded on a lost
        node (loop thread); returns how many were ungated."""
        tas = self.controller.pods.tas
        due = due_ungates(tas)
        for key, selector in due:
            self.desire(f"Pod:{key.namespace}/{key.name}", PodUngate(selector))
            # Taken as ungated at once (the hub reads its own write back likewise): a pod event
            # before the echo must not give this pod's domain slot to another gated pod.
            self._ungating[key] = selector
            raw = self._members.get(key)
            if raw is not None:
                tas.apply_pod(read_pod(_ungated(raw, selector)))
        for key in due_failures(tas):
            tas.unbound.pop(key, None)  # its echo (Failed) forgets it; queued once meanwhile
            self.desire(f"Pod:{key.namespace}/{key.name}", PodFail(tas.engine.now))
        return len(due)


def _gated(pod: dict[str, Any]) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(isinstance(g, dict) and g.get("name") == TOPOLOGY_GATE for g in gates)


def _ungated(pod: dict[str, Any], selector: dict[str, str]) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    spec = out.setdefault("spec", {})
    spec["schedulingGates"] = [g for g in spec.get("schedulingGates") or []
                               if not (isinstance(g, dict) and g.get("name") == TOPOLOGY_GATE)]
    spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **selector}
    return out


def apply_pod_write(store: Store, pod_key: str, state: PodUngate | PodFail) -> None:
    """Writer thread: ungate or fail one Pod (``ns/name``); its echo comes back through the watch."""
    namespace, _, name = pod_key.partition("/")
    key = ObjectKey("Pod", namespace, name)
    if isinstance(state, PodFail):
        if fail_pod(store, key, state.at) is not None:
            log.info("failed worker Pod %s/%s: its node is no longer its Workload's, or is unhealthy", namespace, name)
        return
    ungate_pod(store, key, state.selector)
