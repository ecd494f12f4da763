"""What the worker agents report to the hub's MultiKueue controller, applied on its thread.

A mixin of :class:`hub.federation.multikueue.MultiKueueController`: a (re)connecting agent's
Hello reconciled against what the hub wants, a disconnect, and the items an agent sends —
Reserved (a candidate for election), Status (the winner's progress: pods ready, finished,
evicted; a loser's refusal or eviction) and Capacity. Everything else the controller
decides (nomination, election, withdrawal, timers) stays in that module.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from hub.api.workload import CHECK_READY
from hub.controllers.pods import PodIntegration
from hub.engine.engine import Engine
from mkhub.v1 import federation_pb2 as pb

from .capacity_dispatch import CapacityBook, QuotaAutomation
from .jobmirror import JobMirror
from .mkrecords import Connected, Dispatch, MultiKueueStats, Worker
from .mkstatus import previously
from .mkwire import FENCED, dispatch_key

if TYPE_CHECKING:
    from hub.obs.federation import DispatchObserver

log = logging.getLogger("hub.federation.multikueue")  # the controller's logger, as before the split


class AgentReports:
    """The controller's handlers of agent input; the attributes below are the controller's."""

    engine: Engine
    pods: PodIntegration | None
    capacity: CapacityBook
    quotas: QuotaAutomation
    job_mirror: JobMirror
    stats: MultiKueueStats
    observer: DispatchObserver | None
    _dispatches: dict[str, Dispatch]
    _winners: dict[str, set[str]]
    _dirty: set[str]
    _electing: set[str]
    _statuses_stale: bool
    _worker: Callable[[str], Worker]
    _usable: Callable[[str], bool]
    _emit: Callable[[Worker, pb.HubItem], None]
    _withdraw: Callable[[Worker, str, str, str, str], None]
    _retry: Callable[[Dispatch, str, float], bool]

    def _on_connected(self, entry: Connected, now: float) -> bool:
        self._statuses_stale = True
        worker = self._worker(entry.cluster)
        worker.sender = entry.sender
        worker.since = now
        worker.connected = worker.ever_connected = True
        worker.lost_since = None
        worker.reports_job_status = entry.hello.reports_job_status
        reported = {dispatch_key(h.dispatch_id): h for h in entry.hello.held if h.dispatch_id}
        if entry.resumed:
            # Our unacknowledged sends are replayed after the Hello: keep our view, add theirs.
            worker.held.update({key: h.dispatch_id for key, h in reported.items()})
        else:
            # A new agent or hub process: what it says it holds is all there is, and whatever
            # was queued for its predecessor (withdrawals included) was dropped.
            worker.held = {key: h.dispatch_id for key, h in reported.items()}
            worker.withdrawn.clear()
            self.capacity.forget_generation(worker.name)
        if entry.hello.HasField("capacity"):
            self._on_capacity(worker, entry.hello.capacity, now)
        changed = False
        for key, h in reported.items():
            changed = self._reconcile_held(worker, key, h, now) or changed
        for key in sorted(self._winners.get(worker.name, set()) - reported.keys()):
            changed = self._retry(self._dispatches[key], previously("Admitting remote no longer exists", CHECK_READY), now) or changed
        for key, d in self._dispatches.items():
            if d.winner is None and worker.name in d.clusters:
                self._dirty.add(key)  # (re)nominate and send the copies it lacks
        return changed

    def _reconcile_held(self, worker: Worker, key: str, held: pb.HeldWorkload, now: float) -> bool:
        d = self._dispatches.get(key)
        if d is None or d.did != held.dispatch_id:
            self._withdraw(worker, key, held.dispatch_id, held.workload_uid, "not wanted by the hub")
            return False
        if self.pods is not None and key in self.pods.members:
            self.pods.grown.add(key)  # its Pods again: an agent that died may not have saved the last ones
        state = held.state
        if d.winner == worker.name:
            if state in (pb.LOCAL_STATE_RESERVED, pb.LOCAL_STATE_ADMITTED):
                # It won but never got (or lost) the Start: the copy is the only one, starting it is safe.
                self._emit(worker, pb.HubItem(start=pb.Start(workload_uid=d.uid, dispatch_id=d.did)))
                return False
            phase = {
                pb.LOCAL_STATE_PODS_READY: pb.PHASE_PODS_READY,
                pb.LOCAL_STATE_SUCCEEDED: pb.PHASE_SUCCEEDED,
                pb.LOCAL_STATE_FAILED: pb.PHASE_FAILED,
                pb.LOCAL_STATE_EVICTED: pb.PHASE_EVICTED,
                pb.LOCAL_STATE_QUEUED: pb.PHASE_EVICTED,
            }.get(state)
            if phase is None:
                return False
            return self._winner_status(d, worker, pb.Status(dispatch_id=d.did, phase=phase), now)
        if d.winner is not None:
            self._withdraw(worker, key, d.did, d.uid, f"admitted on {d.winner}")
            return False
        if state in (pb.LOCAL_STATE_RUNNING, pb.LOCAL_STATE_PODS_READY):
            # Running without a recorded winner: the hub decided, told it, and lost the decision
            # (crash before its store commit). Only that copy may run: make it the winner.
            self._candidate(d, worker.name, float("-inf"))
        elif state == pb.LOCAL_STATE_ADMITTED:
            self._candidate(d, worker.name, now)
        return False

    def _on_disconnected(self, worker: Worker, now: float) -> None:
        self._statuses_stale = True
        worker.connected = False
        worker.since = now
        if worker.lost_since is None:
            worker.lost_since = now
        for key, d in self._dispatches.items():
            if d.winner is None and worker.name in d.clusters:
                d.candidates.pop(worker.name, None)
                self._dirty.add(key)

    def _on_items(self, worker: Worker, items: Sequence[pb.AgentItem], now: float) -> bool:
        changed = False
        for item in items:
            kind = item.WhichOneof("kind")
            if kind == "reserved":
                self._on_reserved(worker, item.reserved)
            elif kind == "status":
                changed = self._on_status(worker, item.status, now) or changed
            elif kind == "capacity":
                self._on_capacity(worker, item.capacity, now)
        return changed

    def _on_capacity(self, worker: Worker, msg: pb.Capacity, now: float) -> None:
        if not self.capacity.update(worker.name, msg, now):
            return
        self.quotas.stale = True
        self._dirty.update(self.capacity.waiting)  # capacity-aware: those no worker could take
        self._dirty.update(self.capacity.rerank_keys(worker.name))  # and copies it may rank better: re-rank

    def _current(self, worker: Worker, did: str, uid: str) -> Dispatch | None:
        """The dispatch a report is about, or None after withdrawing a copy the hub no longer wants."""
        key = dispatch_key(did)
        d = self._dispatches.get(key)
        if d is not None and d.did == did and did not in worker.withdrawn:
            return d
        self.stats.stale += 1
        if did not in worker.withdrawn:  # else the Withdraw is already on its way
            self._withdraw(worker, key, did, uid, "not wanted by the hub")
        return None

    def _on_reserved(self, worker: Worker, msg: pb.Reserved) -> None:
        d = self._current(worker, msg.dispatch_id, msg.workload_uid)
        if d is None:
            return
        if d.winner is not None:
            if d.winner != worker.name:
                self._withdraw(worker, d.key, d.did, d.uid, f"admitted on {d.winner}")
            return
        worker.held[d.key] = d.did
        if msg.admitted and self._usable(worker.name):
            self._candidate(d, worker.name, msg.time / 1000.0)

    def _candidate(self, d: Dispatch, cluster: str, at: float) -> None:
        previous = d.candidates.get(cluster)
        d.candidates[cluster] = at if previous is None else min(previous, at)
        self._electing.add(d.key)

    def _on_status(self, worker: Worker, msg: pb.Status, now: float) -> bool:
        if msg.phase == pb.PHASE_EVICTED and msg.reason == FENCED:
            # The agent stopped this run while cut off; a lost worker's workloads were already
            # requeued, else the eviction below requeues it.
            self.stats.fenced += 1
            log.warning("cluster %s stopped workload %s (dispatch %s) by fencing: %s",
                        worker.name, dispatch_key(msg.dispatch_id), msg.dispatch_id, msg.message)
        d = self._current(worker, msg.dispatch_id, msg.workload_uid)
        if d is None:
            return False
        phase = msg.phase
        if d.winner == worker.name:
            return self.job_mirror.record(d.key, msg) | self._winner_status(d, worker, msg, now)
        if phase == pb.PHASE_REJECTED:
            log.warning("cluster %s refused workload %s: %s", worker.name, d.key, msg.message)
            worker.held.pop(d.key, None)
            if self.observer is not None:
                self.observer.rejected(d.key, d.uid, worker.name, msg.reason, msg.message)
        if phase in (pb.PHASE_REJECTED, pb.PHASE_EVICTED):
            d.candidates.pop(worker.name, None)  # its copy is back in its queue (or gone)
            if self.capacity.current(d.did) == worker.name:
                self.capacity.expire(d.did)  # capacity-aware: the next nominee, now
                self._dirty.add(d.key)
        elif d.winner is not None:
            self._withdraw(worker, d.key, d.did, d.uid, f"admitted on {d.winner}")
        return False

    def _winner_status(self, d: Dispatch, worker: Worker, msg: pb.Status, now: float) -> bool:
        engine = self.engine
        phase = msg.phase
        if self.observer is not None and phase in (pb.PHASE_RUNNING, pb.PHASE_PODS_READY, pb.PHASE_SUCCEEDED):
            self.observer.started(d.key, d.uid, d.did, worker.name)
        if phase == pb.PHASE_PODS_READY:
            wl = engine.workloads.get(d.key)
            if wl is None or not wl.is_admitted or engine.is_pods_ready(d.key):
                return False
            engine.pods_ready(d.key, True, now)
            return True
        if phase in (pb.PHASE_SUCCEEDED, pb.PHASE_FAILED):
            wl = engine.workloads.get(d.key)
            if wl is None or wl.is_finished:
                return False
            engine.finish(d.key, phase == pb.PHASE_SUCCEEDED, msg.message, now)
            return True
        if phase in (pb.PHASE_EVICTED, pb.PHASE_REJECTED):
            return self._retry(
                d, f'Workload evicted on worker cluster: "{worker.name}", resetting for re-admission. Previously: "Ready"', now
            )
        return False
