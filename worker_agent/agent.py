"""The worker cluster's side of MultiKueue: local admission of hub workloads.

An :class:`Agent` owns nothing but bookkeeping: the cluster's own Engine and
:class:`hub.controllers.cluster.ClusterController` do the queueing, exactly as
they do in the hub. The agent is

* the transport's ``AgentHandler``: :meth:`build_hello` and
  :meth:`on_hub_items` run on the transport's thread and only read a snapshot
  / append to an inbox (then call ``notify``);
* a ``Plugin`` of the cluster's ClusterController: :meth:`tick` (on the
  controller's thread, time passed in) applies Dispatch/Start/Withdraw to the
  engine and reports what changed; :meth:`on_events` follows the local copies.

Per hub item, as Kueue's MultiKueue does to a worker:

* Dispatch: create the copy (same namespace/name, origin label, no status) and
  let local admission run. Reserved goes back when it holds quota, and
  Reserved(admitted=True) once it is admitted locally — that decides the winner.
* Start: run the copy (only now do its pods start; see :class:`StartGate`),
  then report Running, PodsReady, Succeeded/Failed.
* Withdraw: delete the copy, stopping its pods if it ran.

A copy evicted locally after it was reported admitted is reported Evicted;
one that had not started is a candidate again once re-admitted, one whose run
was cut short is never started again under that dispatch (the hub
re-dispatches with a new id). Every handler is idempotent: a replayed or
repeated item has no further effect.

Restart: with ``state`` (see :mod:`worker_agent.state`) the agent saves its
copies and resumes them, runs included; without it a restarted agent holds
nothing and the hub re-dispatches what it had.
"""

from __future__ import annotations

import logging
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hub.api import fastjson
from hub.api.annotations import duration_annotation
from hub.api.errors import ValidationError
from hub.api.others import JOB_UID_LABEL
from hub.api.workload import EVICTED, FINISHED, Workload
from hub.controllers.cluster import ClusterController
from hub.engine.engine import EngineEvent
from hub.federation.mkwire import FENCED, dispatch_key, remote_copy
from mkhub.v1 import federation_pb2 as pb

from .capacity import CapacityReporter
from .parse import WorkloadParser
from .runner import StartGate

if TYPE_CHECKING:
    from hub.obs.federation import AgentObserver

log = logging.getLogger(__name__)



@dataclass
class Copy:
    """A local copy of a hub workload and what was reported about it."""

    key: str
    uid: str
    did: str
    manifest: dict[str, Any]  # the local Workload as created (for saving)
    job: dict[str, Any] | None = None  # the hub's Job manifest, if any
    started: bool = False
    started_at: float | None = None
    interrupted: bool = False  # its run was cut short by a local eviction
    sent_reserved: bool = False
    sent_admitted: bool = False
    sent_running: bool = False
    sent_ready: bool = False
    sent_final: bool = False
    gone: bool = False  # deleted locally by someone other than the hub
    evicted: tuple[str, str] | None = None  # (reason, message) to report
    sent_job_status: str = ""  # the worker Job's status last reported (Kubernetes mode)


@dataclass
class AgentStats:
    dispatches: int = 0
    starts: int = 0
    withdrawals: int = 0
    duplicates: int = 0  # items that changed nothing (replays, repeats)
    rejected: int = 0
    coalesced: int = 0  # dispatches withdrawn before this agent got to them
    fenced: int = 0  # runs stopped because the hub could no longer hear this agent


_PHASE_OF_STATE: dict[int, int] = {
    pb.LOCAL_STATE_RUNNING: pb.PHASE_RUNNING,
    pb.LOCAL_STATE_PODS_READY: pb.PHASE_PODS_READY,
    pb.LOCAL_STATE_SUCCEEDED: pb.PHASE_SUCCEEDED,
    pb.LOCAL_STATE_FAILED: pb.PHASE_FAILED,
}


def copy_uid(cluster: str, did: str) -> str:
    """The uid of a worker's copy of a dispatch: as an API server would give one, and the same
    whenever it is rebuilt (saved state, or the copy read back from the worker cluster)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"mkhub:{cluster}/{did}"))


def _item_dispatch_id(item: pb.HubItem) -> str:
    kind = item.WhichOneof("kind")
    if kind == "dispatch":
        return item.dispatch.dispatch_id
    if kind == "withdraw":
        return item.withdraw.dispatch_id
    return ""


class Agent:
    """See the module docstring. Attaches itself to ``controller`` (runner gate, plugin, status hook)."""

    def __init__(
        self,
        cluster_name: str,
        controller: ClusterController,
        *,
        origin: str = "multikueue",
        version: str = "",
        partial_admission: bool = True,
        auto_flush: bool = True,
        capacity_interval: float | None = None,
    ) -> None:
        self.cluster_name = cluster_name
        # False: the driver calls flush() after a batch of cycles (fewer, larger reports).
        self.auto_flush = auto_flush
        self.controller = controller
        self.engine = controller.engine
        self.origin = origin
        self.version = version
        self.partial_admission = partial_admission
        self.parser = WorkloadParser(partial_admission=partial_admission)
        self.gate = StartGate(controller.runner)
        controller.runner = self.gate
        controller.plugins.append(self)
        self._chained_status = controller.on_status
        controller.on_status = self._on_status
        self.send: Callable[[list[pb.AgentItem]], None] | None = None
        self.notify: Callable[[], None] | None = None
        self.on_change: Callable[[], None] | None = None  # copies changed (e.g. to save them)
        # Kubernetes mode's Mirror: the keys of the copies changed, made or dropped since it last
        # looked (None: nobody keeps them), so it writes those alone instead of walking every copy.
        self.touched: set[str] | None = None
        self.observer: AgentObserver | None = None  # logs, metrics and spans of the hub's orders
        self.copies: dict[str, Copy] = {}
        # any_running's answer, kept: a copy seen running (checked again on each ask), or that none
        # ran at the last look (until a start or a restore), so that the ask, made every loop
        # turn, is no walk of every copy.
        self._running_hint: str | None = None
        self._none_running = False
        self.stats = AgentStats()
        self._inbox: deque[list[pb.HubItem]] = deque()
        self._dirty: set[str] = set()
        self._out: list[pb.AgentItem] = []
        self._held_entries: dict[str, pb.HeldWorkload] = {}  # what build_hello reports
        self._held_changed = False
        # Capacity reports every ``capacity_interval`` seconds at most (mkagent: DEFAULT_INTERVAL);
        # None: this agent sends none, as agents before capacity version 1.
        self.capacity = CapacityReporter(self.engine, capacity_interval) if capacity_interval is not None else None
        # Copies by the names they carry: the Workload's and, when it came from a Job, the Job's
        # (namespace/name on the manager), so a copy can be found after the manager's Job is gone.
        self.by_job: dict[str, str] = {}
        # Kubernetes mode: the worker Job's (namespace/name, status JSON) of a copy, sent with its Status.
        self.job_status_of: Callable[[str], tuple[str, str]] | None = None
        self.serves_logs = False  # Hello.serves_logs: LogsRequest items are answered

    # ------------------------------------------------------------------ AgentHandler (transport thread)

    def build_hello(self) -> pb.Hello:
        # list(dict.values()) is one C-level copy under the GIL, so this is safe from the
        # transport's thread; the entries are replaced, never mutated.
        held = list(self._held_entries.values())
        hello = pb.Hello(cluster_name=self.cluster_name, agent_version=self.version, held=held,
                         serves_logs=self.serves_logs, reports_job_status=self.job_status_of is not None)
        capacity = self.capacity
        if capacity is not None:
            last = capacity.last
            if last is not None:
                hello.capacity.CopyFrom(last)
            capacity.dirty = True  # and a fresh one soon after
        return hello

    def on_hub_items(self, items: Sequence[pb.HubItem]) -> None:
        self._inbox.append(list(items))
        if self.notify is not None:
            self.notify()

    # ------------------------------------------------------------------ Plugin (controller thread)

    def on_events(self, events: list[EngineEvent], now: float) -> None:
        if events and self.capacity is not None:
            self.capacity.dirty = True
        copies = self.copies
        for ev in events:
            c = copies.get(ev.key)
            if c is None:
                continue
            if ev.type == "Evicted":
                if c.started or c.sent_admitted:
                    c.evicted = (ev.reason, ev.message)
                if c.started:
                    # A run was cut short: the hub re-dispatches; this dispatch never runs again.
                    c.interrupted = True
                    self.gate.revoke(c.key)
                # Not started: back in the local queue, a candidate again once re-admitted
                # (Kueue elects any remote whose Admitted condition is true).
                c.started = False
                c.sent_reserved = c.sent_admitted = False
            elif ev.type == "Deleted":
                if ev.key in self.engine.workloads:
                    continue  # an older copy was replaced in the same round; this one lives
                c.gone = True
            self._dirty.add(ev.key)

    def _on_status(self, workloads: list[Workload]) -> None:
        copies = self.copies
        for wl in workloads:
            if wl.meta.key in copies:
                self._dirty.add(wl.meta.key)
        if self._chained_status is not None:
            self._chained_status(workloads)

    def tick(self, now: float) -> bool:
        changed = False
        inbox = self._inbox
        items: list[pb.HubItem] = []
        while inbox:
            items.extend(inbox.popleft())
        # A Dispatch withdrawn later in the same drain (another worker already won while this
        # agent was behind) would only be created and deleted again: skip both.
        withdrawn = {i.withdraw.dispatch_id for i in items if i.WhichOneof("kind") == "withdraw"}
        if withdrawn:
            pending = {
                i.dispatch.dispatch_id
                for i in items
                if i.WhichOneof("kind") == "dispatch" and i.dispatch.dispatch_id in withdrawn
                and self._copy_of(i.dispatch.dispatch_id) is None
            }
            if pending:
                self.stats.coalesced += len(pending)
                if self.observer is not None:
                    self.observer.skipped(i.WhichOneof("kind") for i in items if _item_dispatch_id(i) in pending)
                items = [i for i in items if _item_dispatch_id(i) not in pending]
        for item in items:
            changed = self._handle(item, now) or changed
        if self.auto_flush:
            self.flush(now)
        return changed

    def flush(self, now: float) -> None:
        """Report what changed since the last flush, one batch. Reports are computed from the
        copies' current state, so phases passed in between are coalesced (a copy that started
        and finished reports only Succeeded; phases only move forward)."""
        if self._dirty:
            keys, self._dirty = self._dirty, set()
            if self.touched is not None:
                self.touched |= keys
            entries = self._held_entries
            for key in sorted(keys):
                c = self.copies.get(key)
                if c is not None:
                    self._report(c, now)
                c = self.copies.get(key)
                if c is not None:
                    entry = self._held_entry(c)
                    if entries.get(key) != entry:
                        entries[key] = entry
                        self._held_changed = True
                elif entries.pop(key, None) is not None:
                    self._held_changed = True
        if self._held_changed:
            self._held_changed = False
            if self.on_change is not None:
                self.on_change()
        if self.capacity is not None:
            report = self.capacity.report(now)
            if report is not None:
                self._out.append(pb.AgentItem(capacity=report))
        if self._out:
            batch, self._out = self._out, []
            if self.send is not None:
                self.send(batch)

    # ------------------------------------------------------------------ hub items

    def _handle(self, item: pb.HubItem, now: float) -> bool:
        kind = item.WhichOneof("kind")
        if kind == "dispatch":
            return self._dispatch(item.dispatch, now)
        if kind == "start":
            return self._start(item.start, now)
        if kind == "withdraw":
            return self._withdraw(item.withdraw, now)
        return False

    def _dispatch(self, msg: pb.Dispatch, now: float) -> bool:
        key = f"{msg.namespace}/{msg.name}"
        c = self.copies.get(key)
        if c is not None and c.did == msg.dispatch_id:
            if self._grow(c, msg, now):
                return True
            self.stats.duplicates += 1
            return False
        if c is not None:
            self._drop(c, now)  # an older dispatch of the same workload: the hub moved on
        elif key in self.engine.workloads:
            self._reject(msg, "WorkloadExists", f"a Workload {key} that MultiKueue did not create exists in {self.cluster_name}")
            return False
        try:
            manifest = remote_copy(fastjson.loads(msg.workload_json), self.origin, msg.dispatch_id)
            # The uid a worker's API server would give the copy: one per copy, kept in the saved
            # state, so decision logs and preemption messages name it across agent restarts.
            meta = manifest["metadata"]
            meta["uid"] = copy_uid(self.cluster_name, msg.dispatch_id)
            job = fastjson.loads(msg.job_json) if msg.job_json else None
            if job is None and msg.pod_jsons:  # Kueue's pod integration: the Pods, as one v1 List
                job = {"apiVersion": "v1", "kind": "List", "items": [fastjson.loads(p) for p in msg.pod_jsons]}
            job_uid = ((job or {}).get("metadata") or {}).get("uid")
            if job_uid:  # the Job this copy runs for here (remote_copy drops the manager's label)
                meta["labels"] = {**meta["labels"], JOB_UID_LABEL: str(job_uid)}
            wl = self.parser.parse(manifest, msg.workload_json)
        except (ValueError, TypeError, KeyError, AttributeError, ValidationError) as exc:
            self._reject(msg, "InvalidWorkload", f"invalid Workload: {exc}")
            return False
        if wl.meta.key != key:
            self._reject(msg, "InvalidWorkload", "the manifest is not the named Workload")
            return False
        self.stats.dispatches += 1
        if self.observer is not None:
            self.observer.dispatch(key, msg.workload_uid, msg.dispatch_id, msg.trace_context)
        self._create(Copy(key, msg.workload_uid, msg.dispatch_id, manifest, job), wl, now)
        return True

    def _grow(self, c: Copy, msg: pb.Dispatch, now: float) -> bool:
        """The same dispatch again with more Pods (a group's Pods made in the manager after it was
        dispatched: a StatefulSet's next ordinal): they join the copy, and are created if it runs."""
        job = c.job
        if job is None or job.get("kind") != "List" or not msg.pod_jsons:
            return False
        have = {(item.get("metadata") or {}).get("name") for item in job.get("items") or []}
        new = [p for p in (fastjson.loads(j) for j in msg.pod_jsons) if (p.get("metadata") or {}).get("name") not in have]
        if not new:
            return False
        c.job = {**job, "items": [*(job.get("items") or []), *new]}
        self._dirty.add(c.key)
        wl = self.engine.workloads.get(c.key)
        grow = getattr(self.gate.inner, "grow", None)
        if c.started and not c.sent_final and wl is not None and callable(grow):
            grow(wl)
        return True

    def capacity_due(self) -> float | None:
        """When :meth:`flush` would next send a capacity report (None: nothing to report)."""
        return self.capacity.due() if self.capacity is not None else None

    def copy_named(self, name: str) -> Copy | None:
        """The copy carrying ``namespace/name``: its Workload's, or the manager Job's it came from."""
        c = self.copies.get(name)
        if c is None:
            key = self.by_job.get(name)
            c = self.copies.get(key) if key is not None else None
        return c

    def _index(self, c: Copy) -> None:
        meta = (c.job or {}).get("metadata") or {}
        if meta.get("name"):
            self.by_job[f"{meta.get('namespace') or c.key.partition('/')[0]}/{meta['name']}"] = c.key

    def _unindex(self, c: Copy) -> None:
        meta = (c.job or {}).get("metadata") or {}
        job_key = f"{meta.get('namespace') or c.key.partition('/')[0]}/{meta.get('name')}"
        if self.by_job.get(job_key) == c.key:
            del self.by_job[job_key]

    def _create(self, c: Copy, wl: Workload, now: float) -> None:
        self._index(c)
        self.copies[c.key] = c
        self.gate.copies.add(c.key)
        self.controller.apply(wl, now)
        self._dirty.add(c.key)
        self._capacity_changed()

    def _capacity_changed(self) -> None:
        """A copy came or went: its queue's pending demand changed, though a copy that only
        waits in the queue makes no engine event (the fleet's pending count and the hub's
        capacity-aware score read this report)."""
        if self.capacity is not None:
            self.capacity.dirty = True

    def restore(self, c: Copy, wl: Workload, now: float) -> None:
        """Take back a copy saved by a previous agent process (see :mod:`worker_agent.state`):
        its reservation is restored as is, and a copy that was running runs on."""
        self._index(c)
        self.copies[c.key] = c
        self._none_running = False
        self.gate.copies.add(c.key)
        self.controller.apply(wl, now)
        if c.started and wl.is_admitted and not wl.is_finished:
            self.gate.resume(wl, now)
        self._dirty.add(c.key)

    def _reject(self, msg: pb.Dispatch, reason: str, why: str) -> None:
        self.stats.rejected += 1
        log.warning("refusing dispatch %s: %s", msg.dispatch_id, why)
        if self.observer is not None:
            self.observer.rejected(f"{msg.namespace}/{msg.name}", msg.workload_uid, msg.dispatch_id, reason, why)
        self._status(msg.workload_uid, msg.dispatch_id, pb.PHASE_REJECTED, reason, why, 0.0)

    def _copy_of(self, did: str) -> Copy | None:
        c = self.copies.get(dispatch_key(did))
        return c if c is not None and c.did == did else None

    def _start(self, msg: pb.Start, now: float) -> bool:
        c = self._copy_of(msg.dispatch_id)
        if c is None:
            self._status(msg.workload_uid, msg.dispatch_id, pb.PHASE_EVICTED, "NotFound",
                         f"no copy of this dispatch in {self.cluster_name}", now)
            return False
        if c.started or c.sent_final:
            self.stats.duplicates += 1
            return False
        wl = self.engine.workloads.get(c.key)
        if c.interrupted or wl is None or not wl.is_admitted or wl.status.is_true(EVICTED):
            self._status(c.uid, c.did, pb.PHASE_EVICTED, "NotAdmitted",
                         f"the copy is not admitted in {self.cluster_name}", now)
            return False
        self.stats.starts += 1
        if self.observer is not None:
            self.observer.won(c.key, c.uid, c.did, msg.trace_context)
        c.started = True
        c.started_at = now
        self._running_hint, self._none_running = c.key, False
        if not self.gate.allow(c.key, now):
            # Admitted without an Admitted event this process saw (restored after a restart).
            self.gate.resume(wl, now)
        self._dirty.add(c.key)
        return True

    def _withdraw(self, msg: pb.Withdraw, now: float) -> bool:
        c = self._copy_of(msg.dispatch_id)
        if c is None:
            self.stats.duplicates += 1
            return False
        self.stats.withdrawals += 1
        if self.observer is not None:
            self.observer.withdrawn(c.key, c.uid, c.did, msg.reason)
        self._drop(c, now)
        return True

    def fence(self, now: float, silent_for: float) -> int:
        """Stop every run: the hub has not heard this agent for ``silent_for`` seconds and will soon
        give its workloads to another worker. Each is reported Evicted (reason Fenced) once the link
        is back, and the copy is dropped. Returns how many runs were stopped."""
        stopped = 0
        for c in list(self.copies.values()):
            wl = self.engine.workloads.get(c.key)
            if not c.started or c.sent_final or wl is None or wl.is_finished:
                continue
            self._status(c.uid, c.did, pb.PHASE_EVICTED, FENCED,
                         f"{self.cluster_name} stopped it: cut off from the hub for {silent_for:.1f}s", now)
            self._drop(c, now, why="fenced")
            stopped += 1
        if stopped:
            self.stats.fenced += stopped
            log.warning("fencing: not heard by the hub for %.1fs; stopped %d running workload(s)", silent_for, stopped)
        return stopped

    def any_running(self) -> bool:
        """A copy whose run the hub started has not finished (asked every loop turn)."""
        hint = self.copies.get(self._running_hint) if self._running_hint is not None else None
        if hint is not None and hint.started and not hint.sent_final:
            return True
        if self._none_running:
            return False
        self._running_hint = next((c.key for c in self.copies.values() if c.started and not c.sent_final), None)
        self._none_running = self._running_hint is None
        return not self._none_running

    def _drop(self, c: Copy, now: float, why: str = "withdrawn") -> None:
        del self.copies[c.key]
        self._unindex(c)
        self._dirty.discard(c.key)
        if self.touched is not None:
            self.touched.add(c.key)
        if self._held_entries.pop(c.key, None) is not None:
            self._held_changed = True
        self.gate.forget(c.key, now, why)
        if c.key in self.engine.workloads:
            ns, _, name = c.key.partition("/")
            self.controller.delete("Workload", ns, name, now)
            self._capacity_changed()

    # ------------------------------------------------------------------ reports

    def mark(self, key: str) -> None:
        """Something about this copy changed outside the engine (its worker Job's status)."""
        if key in self.copies:
            self._dirty.add(key)

    def _report(self, c: Copy, now: float) -> None:
        first = len(self._out)
        self._report_phase(c, now)
        if self.job_status_of is None or not c.started or self.copies.get(c.key) is not c:
            return
        job, status = self.job_status_of(c.key)
        if not status or status == c.sent_job_status:
            return
        c.sent_job_status = status
        for item in reversed(self._out[first:]):
            if item.WhichOneof("kind") == "status" and item.status.dispatch_id == c.did:
                item.status.job_status_json, item.status.job = status, job
                return
        phase = _PHASE_OF_STATE.get(self.local_state(c))
        if phase is not None:
            self._status(c.uid, c.did, phase, "JobStatus", "", now)
            self._out[-1].status.job_status_json, self._out[-1].status.job = status, job

    def _report_phase(self, c: Copy, now: float) -> None:
        wl = self.engine.workloads.get(c.key)
        if c.gone or wl is None:
            if (c.started or c.sent_admitted) and not c.sent_final:
                self._status(c.uid, c.did, pb.PHASE_EVICTED, "Deleted",
                             f"the copy was deleted in {self.cluster_name}", now)
            self.copies.pop(c.key, None)
            self._unindex(c)
            self.gate.forget(c.key, now)
            return
        if wl.is_finished:
            if not c.sent_final:
                cond = wl.status.condition(FINISHED)
                ok = cond is None or cond.reason != "Failed"
                self._status(c.uid, c.did, pb.PHASE_SUCCEEDED if ok else pb.PHASE_FAILED,
                             cond.reason if cond else "Succeeded", cond.message if cond else "", now)
                c.sent_final = True
                if self.observer is not None and c.started:
                    self.observer.finished(c.key, c.uid, c.did, "Succeeded" if ok else "Failed")
            return
        if c.evicted is not None:
            reason, message = c.evicted
            c.evicted = None
            self._status(c.uid, c.did, pb.PHASE_EVICTED, reason, message, now)
        if c.started:
            if self.observer is not None and not c.sent_running:
                self.observer.started(c.key, c.uid, c.did)
            ready = self.engine.is_pods_ready(c.key)
            if ready and not c.sent_ready:
                c.sent_ready = c.sent_running = True
                self._status(c.uid, c.did, pb.PHASE_PODS_READY, "PodsReady", "", now)
            elif not c.sent_running:
                c.sent_running = True
                self._status(c.uid, c.did, pb.PHASE_RUNNING, "Started", "", now)
            return
        if c.interrupted:
            return
        if wl.is_admitted:
            if not c.sent_admitted:
                c.sent_admitted = c.sent_reserved = True
                self._reserved(c, wl, True, now)
        elif wl.is_quota_reserved and not c.sent_reserved:
            c.sent_reserved = True
            self._reserved(c, wl, False, now)

    def _reserved(self, c: Copy, wl: Workload, admitted: bool, now: float) -> None:
        cq = wl.status.admission.cluster_queue if wl.status.admission is not None else ""
        self._out.append(pb.AgentItem(reserved=pb.Reserved(
            workload_uid=c.uid, dispatch_id=c.did, cluster_queue=cq, admitted=admitted, time=int(now * 1000),
        )))

    def _status(self, uid: str, did: str, phase: int, reason: str, message: str, now: float) -> None:
        self._out.append(pb.AgentItem(status=pb.Status(
            workload_uid=uid, dispatch_id=did, phase=phase, reason=reason,  # type: ignore[arg-type]
            message=message, time=int(now * 1000),
        )))

    def _held_entry(self, c: Copy) -> pb.HeldWorkload:
        return pb.HeldWorkload(workload_uid=c.uid, dispatch_id=c.did, state=self.local_state(c))  # type: ignore[arg-type]

    def local_state(self, c: Copy) -> int:
        wl = self.engine.workloads.get(c.key)
        if wl is None or c.gone:
            return pb.LOCAL_STATE_EVICTED
        if wl.is_finished:
            cond = wl.status.condition(FINISHED)
            return pb.LOCAL_STATE_FAILED if cond is not None and cond.reason == "Failed" else pb.LOCAL_STATE_SUCCEEDED
        if c.started:
            return pb.LOCAL_STATE_PODS_READY if self.engine.is_pods_ready(c.key) else pb.LOCAL_STATE_RUNNING
        if c.interrupted:
            return pb.LOCAL_STATE_EVICTED
        if wl.is_admitted:
            return pb.LOCAL_STATE_ADMITTED
        if wl.is_quota_reserved:
            return pb.LOCAL_STATE_RESERVED
        return pb.LOCAL_STATE_QUEUED

    # ------------------------------------------------------------------ helpers for runners

    def duration_of(self, wl: Workload) -> float | None:
        """``mkhub.dev/sim-duration`` of the workload, or of the Job it came from."""
        value = duration_annotation(wl.meta.annotations)
        if value is None:
            c = self.copies.get(wl.meta.key)
            job_meta = (c.job or {}).get("metadata") or {} if c is not None else {}
            value = duration_annotation(job_meta.get("annotations") or {})
        return value

    def held(self) -> dict[str, int]:
        """Workload key -> local state of every copy (for status pages and tests)."""
        return {key: self.local_state(c) for key, c in self.copies.items()}
