"""The hub's MultiKueue admission check controller (``kueue.x-k8s.io/multikueue``).

Wiring, for ``mkhub serve`` (and likewise :mod:`hub.sim.federation`, :mod:`hub.federation.embedded`)::

    mk = MultiKueueController(engine, config, jobs=cluster_controller.jobs, pods=cluster_controller.pods, auto_flush=False)
    cluster_controller.plugins.append(mk)          # engine events in; tick(now) every react round
    server = FederationServer(mk, authorize=mk.authorize, worker_lost_timeout=..., ...)
    mk.silence = server.endpoint.silent_for        # optional: a connected but silent agent is lost
    mk.notify = wake_the_reconciler                # called (transport thread) after an agent message
    # reconciler loop, on its thread: settle/react(now) (which ticks mk), commit the round's
    # transaction, then mk.flush(); sleep until notified or mk.next_wakeup() / engine timers.
    # Persist mk.drain_status_changes(): MultiKueueCluster / AdmissionCheck Active conditions.
    # After rebuilding the engine from the store: mk.rebind(new_engine, new_jobs).

``authorize`` accepts the names of existing MultiKueueClusters; the client
certificate's name must match (the server checks that).

**Threading contract.** The ``HubHandler`` callbacks (:meth:`on_agent_connected`,
:meth:`on_agent_items`, :meth:`on_agent_disconnected`) run on the transport's
thread (the gRPC event loop). They only append to an inbox (a deque: atomic
under the GIL) and call ``notify``. Everything else — :meth:`tick`,
:meth:`on_events`, :meth:`flush`, every engine call — runs on the controller's
thread, which owns the engine. :meth:`authorize` runs on the transport thread
and only reads whether a MultiKueueCluster of that name exists. ``send`` on the
agents' senders is called from the controller thread; ``ClusterSender.send``
hands the batch to the transport's loop.

**Crash safety with a store.** With ``auto_flush=False`` nothing reaches an
agent until :meth:`flush`, which the reconciler calls after the round's
transaction committed: agents never act on a decision (a winner, a dispatch)
that a crash could still undo. (``auto_flush=True``, the default, flushes at the
end of every tick: simulations, tests, the embedded hub.) After a restart the
controller re-derives its state from workload status — check state,
``clusterName``, ``nominatedClusterNames``, and the dispatch id, a function of
the persisted reservation (:mod:`hub.federation.mkwire`) — before it reads the
agents' Hellos, which say what they hold.

What it implements (Kueue's workload reconciler and dispatchers, semantics §9):

* A workload holding quota in a ClusterQueue with a MultiKueue check, that
  check Pending, no ``clusterName`` and every other check Ready, is nominated
  (AllAtOnce / Incremental / external, see :mod:`hub.federation.dispatcher`)
  and a Dispatch goes to each nominated connected agent.
* The first copy admitted on a worker wins: ``clusterName``, nominations
  cleared, the check Ready ("The workload got reservation on ...", Kueue's words) so the hub
  workload is Admitted; Start to the winner, Withdraw to everyone else.
* The winner's Status flows back: pods ready, finished (Succeeded/Failed with
  its message), evicted there while Ready -> check Retry -> the engine evicts
  (AdmissionCheck), requeues and the next reservation is dispatched afresh.
* Whenever the hub workload holds no reservation (evicted and released,
  preempted, finished, deactivated, deleted) every remote copy is withdrawn.
* A winner whose agent is disconnected (or silent) for ``workerLostTimeout``
  since the loss began: Retry ("Admitting remote lost"); a winner whose copy
  is gone from a reconnected agent: Retry at once.
* On every (re)connect the agent's Hello is reconciled both ways, and every
  ``gcInterval`` each connected agent's copies are checked against what the hub
  wants (Kueue's garbage collector).
* MultiKueueCluster ``Active`` follows the agent's connection, the
  AdmissionCheck ``Active`` condition follows its config's clusters (§9.4).
"""

from __future__ import annotations

import heapq
import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from hub.api.config import ALL_AT_ONCE, INCREMENTAL, Configuration
from hub.api.jobkinds.framework import KindObject
from hub.api.others import MULTIKUEUE_CONTROLLER
from hub.api.workload import (
    CHECK_PENDING,
    CHECK_READY,
    CHECK_REJECTED,
    CHECK_RETRY,
    EVICTED,
    Workload,
)
from hub.controllers.jobs import JobIntegration
from hub.controllers.pods import PodIntegration
from hub.engine.engine import Engine, EngineEvent
from mkhub.v1 import federation_pb2 as pb

from .capacity import CAPACITY_AWARE, Refuse
from .capacity_dispatch import CapacityBook, QuotaAutomation, request_of
from .dispatcher import INCREMENTAL_ROUND_TIMEOUT, nominate
from .fleet import refresh_cluster_status
from .jobmirror import JobMirror
from .mkrecords import (
    Connected,
    Disconnected,
    Dispatch,
    InboxEntry,
    InboxItems,
    MultiKueueStats,
    Worker,
    unwanted_copies,
)
from .mkreports import AgentReports
from .mkstatus import multikueue_check, previously, refresh_check_statuses
from .mkwire import dispatch_id, dispatch_rejection, fill_workload_uids, make_dispatch
from .podcopies import grown_copies
from .session import AgentSender

if TYPE_CHECKING:
    from hub.obs.federation import DispatchObserver

log = logging.getLogger(__name__)

# How often Active conditions are recomputed without a connectivity change (objects re-applied
# by users lose the conditions this controller wrote).
_STATUS_PERIOD = 1.0
# How many withdrawn dispatch ids per agent the hub remembers (to ignore reports crossing a Withdraw).
_WITHDRAWN_MEMORY = 100_000
# Engine events after which a tracked workload must be looked at again.
# (Admitted needs nothing: it follows the check turning Ready, which this controller did.)
_EVENTS = frozenset({"QuotaReserved", "Evicted", "Released", "Finished", "Deleted", "Deactivated"})


class MultiKueueController(AgentReports):
    """Both a :class:`hub.controllers.cluster.Plugin` and a transport ``HubHandler``; see the module docstring.
    What agents report is applied by :class:`hub.federation.mkreports.AgentReports`."""

    def __init__(
        self,
        engine: Engine,
        config: Configuration,
        *,
        jobs: JobIntegration | None = None,
        pods: PodIntegration | None = None,
        silence: Callable[[str], float | None] | None = None,
        round_timeout: float = INCREMENTAL_ROUND_TIMEOUT,
        auto_flush: bool = True,
    ) -> None:
        self.options = config.multikueue
        self.round_timeout = round_timeout
        self.auto_flush = auto_flush
        self.silence = silence
        self.notify: Callable[[], None] | None = None
        self.observer: DispatchObserver | None = None
        self.stats = MultiKueueStats()
        self._inbox: deque[InboxEntry] = deque()
        self._workers: dict[str, Worker] = {}
        self._status_changes: set[tuple[str, str]] = set()
        self._silent: set[str] = set()  # connected agents silent for workerLostTimeout
        self.capacity = CapacityBook(self.options.nomination_timeout)  # workers' capacity reports
        self.quotas = QuotaAutomation()
        self.job_mirror = JobMirror()  # the winners' Job statuses, for the manager's Jobs (outlives rebuilds)
        self.job_mirror.expected = self.mirrors_job_status
        self.rebind(engine, jobs, pods)

    def rebind(self, engine: Engine, jobs: JobIntegration | None = None, pods: PodIntegration | None = None) -> None:
        """Follow a rebuilt engine: forget workload state (re-derived from status); keep agents and their copies."""
        self.engine, self.jobs, self.pods = engine, jobs, pods  # pods: their manifests travel with a dispatch
        engine.register_check_controller(MULTIKUEUE_CONTROLLER)
        self._dispatches: dict[str, Dispatch] = {}
        self._winners: dict[str, set[str]] = {}  # cluster -> keys it won
        self._dirty: set[str] = set()
        self._waiting: set[str] = set()  # reserved, MK check Pending, other checks not all Ready
        self._electing: set[str] = set()
        self._rounds: list[tuple[float, str, str]] = []  # (deadline, key, dispatch id) of Incremental rounds
        self._next_gc: float | None = None
        self._scanned = False
        self._statuses_stale = True
        self._statuses_at: float | None = None
        self._check_inputs_seen = -1  # engine.cache.check_inputs when the Active conditions were last computed

    def forget_agents_view(self) -> None:
        """Before :meth:`rebind` when the last round may not have committed: drop what it meant to
        send (never flushed, so no agent acts on it) and what the hub believed each agent holds.
        The caller then closes the agents' streams; their Hellos say what they hold (as after a
        hub restart), which also restores candidates the rebuilt state forgot."""
        for worker in self._workers.values():
            worker.out.clear()
            worker.held.clear()

    # ------------------------------------------------------------------ HubHandler (transport thread)

    def authorize(self, cluster_name: str) -> bool:
        """Agents may connect for the MultiKueueClusters that exist."""
        return cluster_name in self.engine.mk_clusters

    def on_agent_connected(self, cluster_name: str, hello: pb.Hello, sender: AgentSender) -> None:
        resumed = bool(getattr(sender, "resumed", False))
        self._inbox.append(Connected(cluster_name, hello, sender, resumed))
        self._wake()

    def on_agent_items(self, cluster_name: str, items: Sequence[pb.AgentItem]) -> None:
        self._inbox.append(InboxItems(cluster_name, list(items)))
        self._wake()

    def on_agent_disconnected(self, cluster_name: str) -> None:
        self._inbox.append(Disconnected(cluster_name))
        self._wake()

    def _wake(self) -> None:
        if self.notify is not None:
            self.notify()

    # ------------------------------------------------------------------ Plugin (controller thread)

    def on_events(self, events: list[EngineEvent], now: float) -> None:
        dispatches = self._dispatches
        for ev in events:
            if ev.type in _EVENTS and (ev.key in dispatches or ev.type == "QuotaReserved"):
                self._dirty.add(ev.key)

    def tick(self, now: float) -> bool:
        """Apply everything queued and due; True when the engine changed."""
        changed = False
        if not self._scanned:
            # Adopt what the engine holds before reading any Hello: a restarted hub must know
            # its winners before it judges what the agents say they hold.
            self._scan()
            changed = self._reconcile_dirty(now)
        changed = self._drain_inbox(now) or changed
        for name in self.quotas.run(self.engine, self.capacity, now):
            self._status_changes.add(("ClusterQueue", name))
            changed = True
        # A new or changed check, config or cluster gets its Active condition before the cycle
        # that follows schedules: until then a check without one would count as active.
        if (self._statuses_stale or self._statuses_at is None or now - self._statuses_at >= _STATUS_PERIOD
                or self.engine.cache.check_inputs != self._check_inputs_seen):
            changed = self._refresh_statuses(now) or changed
        changed = self._elect(now) or changed
        for worker, message in grown_copies(self.pods, self._dispatches, self._workers, self.engine.workloads):
            self._emit(worker, pb.HubItem(dispatch=message))  # a group's Pods made after its dispatch
        if self._waiting:
            self._dirty.update(self._waiting)
        changed = self._reconcile_dirty(now) or changed
        changed = self._timers(now) or changed
        if self.auto_flush:
            self.flush()
        return changed

    def flush(self) -> None:
        """Hand what this round produced to the transport: one ``send`` per agent."""
        for worker in self._workers.values():
            if worker.out:
                batch, worker.out = worker.out, []
                for key, uid in fill_workload_uids(batch, self.engine.workloads).items():
                    d = self._dispatches.get(key)
                    if d is not None and not d.uid:
                        d.uid = uid  # its later items carry it from the start
                if worker.sender is not None:
                    worker.sender.send(batch)

    def next_wakeup(self) -> float | None:
        """When time alone will next make :meth:`tick` do something (None: only input will)."""
        times: list[float] = []
        timeout = self.options.worker_lost_timeout
        for worker in self._workers.values():
            if worker.lost_since is not None and self._winners.get(worker.name):
                times.append(worker.lost_since + timeout)
        if self._rounds:
            times.append(self._rounds[0][0])
        if self._next_gc is not None:
            times.append(self._next_gc)
        deadline = self.capacity.next_deadline()
        if deadline is not None:
            times.append(deadline)
        return min(times) if times else None

    def drain_status_changes(self) -> list[tuple[str, str]]:
        """(kind, name) of MultiKueueClusters and AdmissionChecks whose conditions changed since the last call."""
        out = sorted(self._status_changes)
        self._status_changes.clear()
        return out

    # ------------------------------------------------------------------ queries

    def connected_clusters(self) -> list[str]:
        return sorted(name for name, w in self._workers.items() if w.connected)

    def lost_since(self, cluster: str) -> float | None:
        """When the cluster's current outage began (None: connected or never seen)."""
        worker = self._workers.get(cluster)
        return worker.lost_since if worker is not None else None

    def held(self, cluster: str) -> dict[str, str]:
        """Workload key -> dispatch id of the copies the hub believes the cluster holds."""
        worker = self._workers.get(cluster)
        return dict(worker.held) if worker is not None else {}

    def winner(self, key: str) -> str | None:
        d = self._dispatches.get(key)
        return d.winner if d is not None else None

    def nominated(self, key: str) -> list[str]:
        d = self._dispatches.get(key)
        return list(d.nominated) if d is not None else []

    def mirrors_job_status(self, key: str) -> bool:
        """Workload ``key``'s object status in the manager is the worker copy's, as Kueue's SyncJob
        writes it: its winner's agent (before one, every agent it may go to) reports that status."""
        d = self._dispatches.get(key)
        if d is None:
            return False  # not reserved (or no MultiKueue workload): the hub derives it, as before
        workers = self._workers
        return all(n in workers and workers[n].reports_job_status
                   for n in ((d.winner,) if d.winner is not None else d.clusters))

    # ------------------------------------------------------------------ inbox

    def _drain_inbox(self, now: float) -> bool:
        changed = False
        inbox = self._inbox
        while inbox:
            entry = inbox.popleft()
            if isinstance(entry, InboxItems):
                changed = self._on_items(self._worker(entry.cluster), entry.items, now) or changed
            elif isinstance(entry, Connected):
                changed = self._on_connected(entry, now) or changed
            else:
                self._on_disconnected(self._worker(entry.cluster), now)
        return changed

    def _worker(self, name: str) -> Worker:
        worker = self._workers.get(name)
        if worker is None:
            worker = self._workers[name] = Worker(name)
        return worker

    # ------------------------------------------------------------------ decisions

    def _elect(self, now: float) -> bool:
        if not self._electing:
            return False
        changed = False
        keys, self._electing = self._electing, set()
        for key in sorted(keys):
            d = self._dispatches.get(key)
            if d is None or d.winner is not None or not d.candidates:
                continue
            wl = self.engine.workloads.get(key)
            check = wl.status.check(d.check) if wl is not None else None
            if wl is None or check is None or check.state != CHECK_PENDING or not self._dispatchable(wl):
                continue
            winner = min(d.candidates.items(), key=lambda kv: (kv[1], kv[0]))[0]
            self._declare_winner(d, winner, now)
            changed = True
        return changed

    def _declare_winner(self, d: Dispatch, winner: str, now: float) -> None:
        self.capacity.done(d.key, d.did)
        d.winner = winner
        d.candidates.clear()
        d.message = None
        self._winners.setdefault(winner, set()).add(d.key)
        self.stats.admitted += 1
        self.stats.by_queue["admitted", d.cluster_queue, winner] += 1
        engine = self.engine
        engine.set_dispatch_status(d.key, [], winner)
        engine.set_check_states(d.key, {d.check: (CHECK_READY, f'The workload got reservation on "{winner}"', None)}, now)
        worker = self._workers[winner]
        worker.held[d.key] = d.did
        start = pb.Start(workload_uid=d.uid, dispatch_id=d.did)
        if self.observer is not None:
            self.observer.won(d.key, d.uid, d.did, d.cluster_queue, winner)
            start.trace_context.update(self.observer.context(d.did))
        self._emit(worker, pb.HubItem(start=start))
        for other in self._workers.values():
            if other is not worker and d.key in other.held:
                self._withdraw(other, d.key, other.held[d.key], d.uid, f"admitted on {winner}")

    def _retry(self, d: Dispatch, message: str, now: float) -> bool:
        """Kueue's check -> Retry (only from Ready): the engine evicts and requeues; copies go with the reservation."""
        wl = self.engine.workloads.get(d.key)
        check = wl.status.check(d.check) if wl is not None else None
        if wl is None or check is None or check.state != CHECK_READY:
            return False
        self.stats.retries += 1
        log.info("workload %s: %s", d.key, message)
        self.engine.set_check_states(d.key, {d.check: (CHECK_RETRY, message, None)}, now)
        return True

    def _reconcile_dirty(self, now: float) -> bool:
        if not self._dirty:
            return False
        changed = False
        keys, self._dirty = self._dirty, set()
        for key in sorted(keys):
            changed = self._reconcile(key, now) or changed
        return changed

    def _reconcile(self, key: str, now: float) -> bool:
        engine = self.engine
        wl = engine.workloads.get(key)
        d = self._dispatches.get(key)
        self._waiting.discard(key)
        mk = multikueue_check(self.engine, wl) if wl is not None and self._holds_quota(wl) else None
        if wl is None or mk is None:
            if d is not None:
                self._drop(d, "the workload holds no reservation")
            return False
        check, clusters = mk
        did = dispatch_id(wl)
        if d is not None and d.did != did:
            self._drop(d, "superseded by a new reservation")
            d = None
        if check.state in (CHECK_RETRY, CHECK_REJECTED) or wl.status.is_true(EVICTED):
            return False  # the engine evicts or releases; copies are withdrawn when the reservation goes
        if check.state == CHECK_READY:
            if d is None:
                d = self._adopt(wl, did, check.name, clusters)
            if d.winner is None:
                return self._retry(
                    d,
                    previously(
                        "Admission check is Ready but no admitting cluster is recorded; this is unexpected, please report it",
                        CHECK_READY,
                    ),
                    now,
                )
            return False
        if wl.status.cluster_name is not None:
            return False  # Kueue skips nomination while clusterName is set
        if any(c.state != CHECK_READY for c in wl.status.admission_checks if c.name != check.name) or (
                self.jobs is not None and self.jobs.awaited(key)):  # an external framework's object not seen yet
            self._waiting.add(key)
            return False
        rejection = dispatch_rejection(wl, self._job_of(wl.meta.key))
        if rejection:
            self.stats.rejected += 1
            engine.set_check_states(key, {check.name: (CHECK_REJECTED, previously(rejection, check.state), None)}, now)
            return True
        if d is None:
            d = self._adopt(wl, did, check.name, clusters)
        return self._nominate(d, wl, now)

    def _nominate(self, d: Dispatch, wl: Workload, now: float) -> bool:
        options = self.options
        if options.dispatcher_name == CAPACITY_AWARE:
            job = self._job_of(d.key)
            request = request_of(wl, [job.meta.annotations, job.meta.labels] if job is not None else [])
            decision = self.capacity.nominate(d.key, d.did, request, d.clusters, self._usable, now, d.nominated)
            if isinstance(decision, Refuse):
                return self._refuse(d, decision.message, now, decision.certain)
            current = self.capacity.current(d.did)
            return self._send_copies(d, wl, [current] if current is not None else [])
        external = options.dispatcher_name not in (ALL_AT_ONCE, INCREMENTAL)
        nominated = nominate(
            options.dispatcher_name,
            d.clusters,
            wl.status.nominated_cluster_names if external else d.nominated,  # external: whoever wrote it
            self._usable,
            options.incremental_step_size,
            new_round=d.new_round,
        )
        if d.new_round and options.dispatcher_name == INCREMENTAL:
            d.new_round = False
            if len(nominated) < len(d.clusters):
                heapq.heappush(self._rounds, (now + self.round_timeout, d.key, d.did))
        return self._send_copies(d, wl, nominated)

    def _refuse(self, d: Dispatch, message: str, now: float, certain: bool) -> bool:
        """Capacity-aware: no worker could ever hold the workload. Retry (the manager's quota is
        released, the workload requeued after ``retryInterval``) until ``giveUpTimeout`` has passed
        since the first refusal, then Rejected (the workload is deactivated with the message).
        ``certain`` (every shortfall is against quota totals): Rejected at once, since retrying
        would only re-reserve the manager's quota and evict again every ``retryInterval``."""
        options = self.options
        self.engine.set_dispatch_status(d.key, [], None)
        first = self.capacity.refused_since.setdefault(d.key, now)
        if certain or now - first >= options.give_up_timeout:
            self.capacity.refused_since.pop(d.key, None)
            self.stats.rejected += 1
            if not certain:
                message = f"{message} (gave up after {int(options.give_up_timeout)}s)"
            self.engine.set_check_states(d.key, {d.check: (CHECK_REJECTED, message, None)}, now)
        else:
            retry = max(1, int(options.refusal_retry))
            self.engine.set_check_states(d.key, {d.check: (CHECK_RETRY, message, retry)}, now)
        return True

    def _send_copies(self, d: Dispatch, wl: Workload, nominated: list[str]) -> bool:
        d.nominated = nominated
        changed = self.engine.set_dispatch_status(d.key, nominated, None)
        for name in nominated:
            if not self._usable(name):
                continue
            worker = self._workers[name]
            if worker.held.get(d.key) == d.did:
                continue
            if d.message is None:
                d.message = make_dispatch(wl, d.did, self._job_of(d.key), self.pods.member_pods(d.key) if self.pods else ())
                if self.observer is not None:
                    d.message.trace_context.update(self.observer.dispatch_context(d.key, d.uid, d.did, d.cluster_queue))
            worker.held[d.key] = d.did
            worker.withdrawn.pop(d.did, None)
            self.stats.dispatched += 1
            self.stats.by_queue["dispatched", d.cluster_queue, name] += 1
            if self.observer is not None:
                self.observer.dispatched(d.key, d.uid, d.did, d.cluster_queue, name)
            self._emit(worker, pb.HubItem(dispatch=d.message))
        # Copies on clusters no longer nominated go (Kueue deletes remote workloads there).
        for worker in self._workers.values():
            if worker.connected and d.key in worker.held and worker.name not in nominated:
                self._withdraw(worker, d.key, worker.held[d.key], d.uid, "not nominated")
        return changed

    def _adopt(self, wl: Workload, did: str, check: str, clusters: tuple[str, ...]) -> Dispatch:
        """Start tracking a reservation (a new one, or one restored after a restart)."""
        d = Dispatch(
            key=wl.meta.key,
            did=did,
            uid=wl.meta.uid,
            check=check,
            clusters=clusters,
            cluster_queue=wl.status.admission.cluster_queue if wl.status.admission is not None else "",
            nominated=list(wl.status.nominated_cluster_names),
        )
        winner = wl.status.cluster_name
        state = wl.status.check(check)
        if winner is not None and state is not None and state.state == CHECK_READY:
            d.winner = winner
            self._winners.setdefault(winner, set()).add(d.key)
            self._worker(winner).held.setdefault(d.key, did)
        self._dispatches[d.key] = d
        return d

    def _drop(self, d: Dispatch, reason: str) -> None:
        """Stop tracking a dispatch and withdraw every copy of the workload."""
        self._dispatches.pop(d.key, None)
        self.capacity.done(d.key, d.did)
        if self.observer is not None:
            self.observer.dropped(d.did)
        if d.winner is not None:
            self._winners.get(d.winner, set()).discard(d.key)
        for worker in self._workers.values():
            did = worker.held.get(d.key)
            if did is not None:
                self._withdraw(worker, d.key, did, d.uid, reason)

    def _withdraw(self, worker: Worker, key: str, did: str, uid: str, reason: str) -> None:
        if worker.held.get(key) == did:
            del worker.held[key]
        withdrawn = worker.withdrawn
        withdrawn[did] = None
        if len(withdrawn) > _WITHDRAWN_MEMORY:
            withdrawn.popitem(last=False)
        self.stats.withdrawn += 1
        self._emit(worker, pb.HubItem(withdraw=pb.Withdraw(workload_uid=uid, dispatch_id=did, reason=reason)))

    def _emit(self, worker: Worker, item: pb.HubItem) -> None:
        if worker.sender is not None:
            worker.out.append(item)

    # ------------------------------------------------------------------ time

    def _timers(self, now: float) -> bool:
        changed = self._lost_workers(now)
        self._dirty.update(self.capacity.due(now))
        rounds = self._rounds
        while rounds and rounds[0][0] <= now:
            _, key, did = heapq.heappop(rounds)
            d = self._dispatches.get(key)
            if d is not None and d.did == did and d.winner is None:
                d.new_round = True
                self._dirty.add(key)
        if self._dirty:
            changed = self._reconcile_dirty(now) or changed
        gc_interval = self.options.gc_interval
        if gc_interval > 0:
            if self._next_gc is None:
                self._next_gc = now + gc_interval
            elif now >= self._next_gc:
                self._next_gc = now + gc_interval
                for worker, key, did, uid in unwanted_copies(self._workers.values(), self._dispatches):
                    self._withdraw(worker, key, did, uid, "garbage collected")  # Kueue's per-cluster GC
        return changed

    def _lost_workers(self, now: float) -> bool:
        timeout = self.options.worker_lost_timeout
        changed = False
        self._silent.clear()
        for worker in self._workers.values():
            lost_at = worker.lost_since
            if worker.connected and self.silence is not None:
                # Connected but not heard from for a whole workerLostTimeout: as good as lost.
                silent = self.silence(worker.name)
                lost_at = now - silent if silent is not None and silent >= timeout else None
                if lost_at is not None:
                    self._silent.add(worker.name)
            won = self._winners.get(worker.name)
            if not won or lost_at is None or now - lost_at < timeout:
                continue
            for key in sorted(won):
                d = self._dispatches[key]
                if self._retry(d, previously("Admitting remote lost", CHECK_READY), now):
                    changed = True
                    if self.observer is not None:
                        self.observer.lost(key, d.uid, worker.name)
        return changed

    # ------------------------------------------------------------------ object status

    def _refresh_statuses(self, now: float) -> bool:
        self._statuses_stale = False
        self._statuses_at = now
        for name, cluster in self.engine.mk_clusters.items():
            if refresh_cluster_status(cluster, self._workers.get(name), self.silence, self.capacity.reports.get(name),
                                      len(self._winners.get(name, ())), now):
                self._status_changes.add(("MultiKueueCluster", name))
        changed = refresh_check_statuses(self.engine, self._connected, self._status_changes, now)
        self._check_inputs_seen = self.engine.cache.check_inputs  # after re-applying its own checks
        return changed

    # ------------------------------------------------------------------ helpers

    def _scan(self) -> None:
        """First tick after (re)binding: every reserved workload is looked at once."""
        self._scanned = True
        for key, wl in self.engine.workloads.items():
            if wl.is_quota_reserved and not wl.is_finished:
                self._dirty.add(key)

    def _connected(self, name: str) -> bool:
        worker = self._workers.get(name)
        return worker is not None and worker.connected

    def _usable(self, name: str) -> bool:
        return name in self.engine.mk_clusters and self._connected(name) and name not in self._silent

    @staticmethod
    def _holds_quota(wl: Workload) -> bool:
        return wl.is_quota_reserved and not wl.is_finished and wl.active

    def _dispatchable(self, wl: Workload) -> bool:
        return self._holds_quota(wl) and not wl.status.is_true(EVICTED) and wl.status.cluster_name is None

    def _job_of(self, key: str) -> KindObject | None:
        if self.jobs is None:
            return None
        job_key = self.jobs.job_of.get(key)
        return self.jobs.jobs.get(job_key) if job_key is not None else None
