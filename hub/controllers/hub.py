"""The hub's reconciler: objects in from the store, one engine, status back to the store.

Single-threaded and clock-free (every call takes ``now``); :mod:`hub.controllers.hub_runtime`
runs it on its own thread and feeds it the store's watch.

Crash safety (kill -9 at any instant) rests on three rules:

1. **The store is the only truth.** User input is committed before the hub sees
   it (the watch delivers committed changes only), and the engine is rebuilt
   from a full list on start, exactly as it would be after a crash.
2. **One round, one transaction.** Everything a round decides (workload
   statuses, the Workloads it creates for Jobs, Jobs' ``suspend``, Job and
   queue statuses, garbage collection) is written in one ``store.batch()``.
   A crash before COMMIT loses the whole round and nothing else: the engine and
   the simulated runner lived only in this process and nobody outside saw their
   decisions, because clients read the store. A crash after COMMIT loses
   nothing. There is no state in between.
3. **Restore re-derives everything from status.** A workload stored with
   ``status.admission`` and QuotaReserved=True is restored as holding that quota
   (so usage is exactly what was committed and the scheduler cannot admit
   twice); a Finished one is never queued again; an admitted one resumes its
   simulated run from its committed ``Admitted`` time (see :mod:`.simrunner`).

**Stores without transactions** (the Kubernetes back end, :mod:`hub.store.kube`):
``store.batch()`` cannot make a round atomic there, so a crash (or a refused
write, which rebuilds exactly as a restart does) can land any prefix of the
round's writes. Rule 2 then becomes an order of writes such that every prefix
is a state rule 3 restores safely:

a. MultiKueueCluster/AdmissionCheck conditions first: derived state that the
   rebuilt engine recomputes.
b. Workload statuses that hold no quota (evicted, finished, requeued, pending)
   before those that hold quota. A quota holder's write never lands before the
   releases that made room for it, so a restore never finds two workloads
   holding the same quota: usage stays within quota, and an admitted workload
   is stored admitted before anything acts on it, so it is never admitted twice.
   New Workloads for Jobs are created without quota (pending).
c. Jobs' ``suspend`` after the statuses: a Job runs only once its Workload is
   stored admitted, and a Job whose unsuspend (or suspend) was lost is put right
   on restore (``_reconcile_suspend``: the stored Workload decides). Pods' gates likewise (:mod:`.pods`).
d. Garbage deletions, then ClusterQueue/LocalQueue statuses last (derived
   counters, recomputed on restore).

Messages to agents leave once what they act on has landed (``flush``): after the
Workload statuses (b), before the Jobs' and the rest's writes, which no agent reads.

A :class:`Federation` (the MultiKueue controller) extends rule 2 to the worker
agents: it is a plugin of the round's controller, the conditions it sets on
MultiKueueClusters and AdmissionChecks are written in the round's transaction,
and its messages leave only after that transaction committed (``flush``), so
no agent ever acts on a decision a crash could still undo.

The hub owns ``status``: a Workload event from the store keeps the engine's
status (users cannot write status; the control service strips it).
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from hub.api import fastjson
from hub.api.config import Configuration
from hub.api.conversion import V1BETA2
from hub.api.errors import ValidationError
from hub.api.jobkinds import JOB_KINDS, external_kinds
from hub.api.jobkinds.framework import KindObject
from hub.api.jobkinds.pod import Pod
from hub.api.meta import Condition, conditions_to_list, meta_to_dict, parse_time
from hub.api.quantity import format_quantity
from hub.api.queues import RESOURCE_IN_USE_FINALIZER, STOP_HOLD, STOP_NONE, ClusterQueue
from hub.api.registry import ApiObject, parse_object
from hub.api.workload import (
    EVICTED,
    Workload,
    workload_spec_to_dict,
    workload_status_to_dict,
)
from hub.engine.engine import Engine
from hub.obs.events import Resolve, refs_of
from hub.store.interface import (
    AlreadyExists,
    Conflict,
    EventType,
    NotFound,
    Object,
    ObjectKey,
    Store,
    WatchEvent,
    modify,
    update_status_each,
)

from . import kubejobs
from .active_writes import ActiveWrites
from .cluster import ClusterController, Observer, Plugin
from .event_log import EventLog
from .handoff import ParsedObjects
from .job_writes import write_jobs
from .jobs import JobChange, JobIntegration, adapter_of, is_job_kind, job_key, workload_key_for
from .kind_order import ENGINE_KINDS as _ENGINE_KINDS
from .kind_order import KIND_ORDER, restore_list
from .kubejobs import ClusterJobRunner, job_outcome, observe_job
from .own_writes import OwnWrites, committed
from .pods import PodIntegration, observe_pods, write_pods
from .queue_status import drift, recount, status_key, wanted_queue_statuses
from .run_length import run_length
from .simrunner import DEFAULT_DURATION, DEFAULT_READY_DELAY, SimRunner
from .write_batches import independent_writes

log = logging.getLogger(__name__)

_JOB_KINDS = frozenset(JOB_KINDS)
_QUEUE_KINDS = frozenset({"ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort", "AdmissionCheck", "Namespace"})

Status = dict[str, Any]

# Seconds added to the queue-status interval per status the last queue write wrote (2,000 queues
# changing at once: every 2 s rather than every 0.5 s; a few dozen: unchanged).
QUEUE_WRITE_SPACING = 0.001



class Federation(Plugin, Protocol):
    """A plugin whose decisions reach other processes (MultiKueue's controller).

    It outlives reconcilers: each new one (start, rebuild) :meth:`rebind` s it
    to its fresh engine before loading the store.
    """

    def rebind(self, engine: Engine, jobs: JobIntegration | None = None, pods: PodIntegration | None = None) -> None: ...

    def flush(self) -> None:
        """Send what the rounds so far decided (called only after their commit)."""

    def next_wakeup(self) -> float | None: ...

    def drain_status_changes(self) -> list[tuple[str, str]]:
        """(kind, name) of the MultiKueueClusters and AdmissionChecks whose conditions changed."""
        ...


class HubObserver(Observer, Protocol):
    """The controllers' observer, plus the hub's store writes (:class:`hub.obs.observer.ClusterObserver`)."""

    def store_batch(self, store: Store) -> AbstractContextManager[None]:
        """``store.batch()``, timed and traced."""
        ...

    def flush_events(self, store: Store, resolve: Resolve | None = None) -> list[int]:
        """Write the Events recorded since the last call (inside the round's batch); their resourceVersions."""
        ...


@dataclass(slots=True)
class RoundStats:
    workloads: int = 0  # workload statuses written or created
    writes: int = 0  # every store write of the round's transaction


def _key_text(key: ObjectKey) -> str:
    return f"{key.namespace}/{key.name}" if key.namespace else key.name


def _creation_order(manifest: Object) -> tuple[float, str, str]:
    meta = manifest.get("metadata") or {}
    stamp = meta.get("creationTimestamp")
    try:
        when = parse_time(stamp) if isinstance(stamp, str) else 0.0
    except ValueError:
        when = 0.0
    return when, str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _rv(obj: Object) -> int:
    return int(obj["metadata"]["resourceVersion"])


def _fingerprint(status: Status) -> int:
    """A compact stand-in for a stored status, to skip writes that would change nothing."""
    return hash(fastjson.dumps_sorted(status))


class HubReconciler:
    """One engine kept equal to the store; see the module docstring for the rules."""

    def __init__(
        self,
        store: Store,
        config: Configuration,
        now: float,
        *,
        events: EventLog | None = None,
        default_duration: float = DEFAULT_DURATION,
        ready_delay: float = DEFAULT_READY_DELAY,
        federation: Federation | None = None,
        observer: HubObserver | None = None,
        queue_status_interval: float = 0.0,
        round_budget: int = 0,
        handoff: ParsedObjects | None = None,
    ) -> None:
        self.store = store
        self.handoff = handoff
        self.config = config
        # ClusterQueue and LocalQueue statuses are written at most this often (seconds of the
        # round clock), as Kueue's queue controllers coalesce updates; the last change is always
        # written, at the latest this long after it. 0: every round.
        self.queue_status_interval = queue_status_interval
        # Workload status changes after which a round stops scheduling and commits (0: no bound).
        self.round_budget = round_budget
        self._queues_pending = False
        self._queues_written_at = float("-inf")
        self._queue_writes = 0  # queue statuses the last write of them wrote
        self.engine = Engine(config, now)
        # On a Kubernetes API server the cluster runs Jobs (hub.controllers.kubejobs).
        self.cluster_runs_jobs = bool(getattr(store, "runs_jobs", False))
        self._atomic_batches = bool(getattr(store, "atomic_batches", True))  # False: the Kubernetes store
        self.runner = (
            ClusterJobRunner(lambda key: key in self.controller.jobs.job_of or self.controller.pods.holds(key),
                             duration_of=self._duration_of,
                             default_duration=default_duration, ready_delay=ready_delay)
            if self.cluster_runs_jobs
            else SimRunner(self._duration_of, default_duration=default_duration, ready_delay=ready_delay)
        )
        self.controller = ClusterController(self.engine, self.runner)
        self.controller.on_status = self._on_status
        self.controller.on_job_change = self._on_job_change
        self.controller.observer = self.observer = observer
        self.federation = federation
        if federation is not None:
            # Before load(): the fresh engine must know the check controller that runs here.
            federation.rebind(self.engine, self.controller.jobs, self.controller.pods)
            self.controller.plugins.append(federation)
        self.events = events if events is not None else EventLog()
        self.partial_admission = config.gate("PartialAdmission")
        self.rounds = 0
        self._changed: set[str] = set()  # workload keys whose status changed this round
        self._suspend: dict[ObjectKey, bool] = {}  # object on the job framework -> suspend to write
        self._gc: set[str] = set()  # Workload keys to delete from the store
        self._active = ActiveWrites()  # spec.active as stored; the engine's deactivations to write
        self._persisted: set[str] = set()  # Workload keys the store holds
        self._floor: dict[ObjectKey, int] = {}  # resourceVersion each object was listed at
        self._own = OwnWrites()  # resourceVersions of our own writes, whose events we skip
        # Told, after each commit, of the Workload status writes it made (the dashboard's index: no second decode).
        self.workload_sinks: list[Callable[[list[Object]], None]] = []
        self._handed: list[Object] = []
        self._last_rv = 0
        self._statuses: dict[ObjectKey, Status] = {}  # last known status of queues and jobs
        self._written: dict[str, int] = {}  # workload key -> fingerprint of its stored status
        self._queues_dirty = True
        self._terminating: set[str] = set()  # ClusterQueues deleted while workloads reserve quota in them
        # MKHUB_DEBUG_CHECKS=1: after every round, check that each queue's stored counts equal a
        # recount from the workloads, and log any difference (see queue_drift()).
        self.debug_checks = os.environ.get("MKHUB_DEBUG_CHECKS", "") not in ("", "0")
        # With the Configuration's external frameworks (registered before a hub starts: hub.configfile).
        self._job_kinds, self._engine_kinds = _JOB_KINDS.union(external_kinds()), _ENGINE_KINDS.union(external_kinds())

    # ------------------------------------------------------------------ restore

    def load(self, now: float) -> int:
        """Build the engine from everything stored; returns the resourceVersion to watch from."""
        listed: dict[str, list[Object]] = {}
        since: int | None = None
        for kind in (*KIND_ORDER, *external_kinds()):
            if not self.controller.lists(kind):
                listed[kind] = []
                continue
            objects, rv = restore_list(self.store, kind)
            listed[kind] = objects
            since = rv if since is None else min(since, rv)
        workload_at = KIND_ORDER.index("Workload")
        for kind in KIND_ORDER[:workload_at]:
            for manifest in listed[kind]:
                self._remember(manifest)
                self._apply(manifest, now)
        # Creation order, so pending workloads queue up as they originally did.
        for manifest in sorted(listed["Workload"], key=_creation_order):
            self._remember(manifest)
            self._apply(manifest, now)
        jobs = [manifest for kind in (*JOB_KINDS, *external_kinds()) for manifest in listed[kind]]
        for manifest in jobs + listed["LeaderWorkerSet"] + listed["Pod"]:
            self._remember(manifest)
            self._apply(manifest, now)
        self.controller.pods.after_load()
        self._collect_orphans(listed["Workload"], jobs + listed["Pod"], now)
        self._resume_runs(now)
        self._reconcile_suspend()
        self._reconcile_finished_jobs()
        self._last_rv = since or 0
        if self.handoff is not None:
            self.handoff.passed(self._last_rv)  # what was left before this list is in the list
        log.info(
            "restored %d objects (%d workloads, %d holding quota) at resourceVersion %s",
            sum(len(v) for v in listed.values()),
            len(listed["Workload"]),
            sum(1 for wl in self.engine.workloads.values() if wl.is_quota_reserved and not wl.is_finished),
            since,
        )
        return since or 0

    def _remember(self, manifest: Object) -> None:
        key = ObjectKey.of(manifest)
        self._floor[key] = _rv(manifest)
        if (key.kind in ("ClusterQueue", "LocalQueue") or key.kind in self._job_kinds) and "status" in manifest:
            self._statuses[key] = manifest["status"]
        elif key.kind == "Workload":
            self._written[_key_text(key)] = _fingerprint(manifest.get("status") or {})

    def _collect_orphans(self, workloads: list[Object], jobs: list[Object], now: float) -> None:
        """Workloads of jobs that are gone (the hub died before deleting them): delete them now."""
        job_keys = {ObjectKey.of(j) for j in jobs}
        for manifest in workloads:
            meta = manifest["metadata"]
            ns = meta.get("namespace", "")
            for owner in meta.get("ownerReferences") or []:
                kind = owner.get("kind")
                owned = kind in self._job_kinds or (kind == "Pod" and self.controller.pods.enabled)  # a single Pod's
                if owned and owner.get("controller") and ObjectKey(kind, ns, owner.get("name") or "") not in job_keys:
                    self.controller.delete("Workload", ns, meta["name"], now)
                    self._gc.add(f"{ns}/{meta['name']}")

    def _reconcile_suspend(self) -> None:
        """An object's stored ``suspend`` that disagrees with its stored Workload (the hub died
        between the two writes): the Workload decides, the first round writes the object."""
        jobs = self.controller.jobs
        for key, job in jobs.jobs.items():
            wl = self.engine.workloads.get(jobs.workload_of.get(key) or "")
            if wl is None or wl.is_finished:
                continue
            running = wl.is_admitted and not wl.status.is_true(EVICTED)
            if jobs.is_suspended(key) == running:
                jobs.suspended[key] = not running
                self._suspend[key] = not running
            elif not running and job.meta.annotations.get(kubejobs.STOPPING_ANNOTATION) == "true":
                self._suspend[key] = True  # a stop the last hub left half done: finish it

    def _reconcile_finished_jobs(self) -> None:
        """A finished Workload whose object's stored status is not terminal yet (the hub died
        between the two writes, and the winner's last report died with it): the first
        round writes the object's status from the Workload."""
        jobs = self.controller.jobs
        for okey, wl_key in jobs.workload_of.items():
            wl = self.engine.workloads.get(wl_key)
            job = jobs.jobs.get(okey)
            if wl is not None and wl.is_finished and job is not None and job_outcome(job) is None:
                self._changed.add(wl_key)

    def _resume_runs(self, now: float) -> None:
        for key, wl in self.engine.workloads.items():
            if wl.is_finished or not wl.is_quota_reserved:
                continue
            if wl.status.is_true(EVICTED):
                self.runner.stop(key, now)  # its stop was not yet reported: report it
            elif wl.is_admitted and wl.status.cluster_name is None:
                self.runner.start(wl, now)

    # ------------------------------------------------------------------ input

    def observe(self, event: WatchEvent, now: float) -> bool:
        """Apply one committed store change. False when it was our own write or already known."""
        rv = event.resource_version
        self._last_rv = max(self._last_rv, rv)
        if self._own.take(rv) or event.key.kind == "Event":
            return False  # our own write, or a record of what happened (not input)
        key = event.key
        if key.kind not in self._engine_kinds or rv <= self._floor.get(key, 0):
            return False
        if event.type == EventType.DELETED:
            self._deleted(key, now)
        else:
            # What the control service parsed when it stored it (hub.controllers.handoff), else the store's.
            parsed = self.handoff.take(rv, key) if self.handoff is not None else None
            self._apply(event.object if parsed is None else None, now, parsed)
        return True

    def is_own_write(self, rv: int) -> bool:
        """The change at ``rv`` is one of this reconciler's own writes (its echo is skipped)."""
        return rv in self._own

    def take_own_write(self, rv: int) -> bool:
        """As :meth:`is_own_write`, and the echo is then skipped here: for the watch's feed thread."""
        return self._own.take(rv)

    def _apply(self, manifest: Object | None, now: float, parsed: ApiObject | None = None) -> None:
        try:
            obj = parsed if parsed is not None else parse_object(manifest, partial_admission=self.partial_admission)
        except ValidationError as exc:  # only the control service writes, and it validates
            log.warning("ignoring a stored object the API does not accept: %s", exc)
            return
        key = obj.meta.key
        if isinstance(obj, Pod):
            self.controller.apply(obj, now)
            if isinstance(self.runner, ClusterJobRunner):  # the kubelet runs it: its phase ends the Workload
                observe_pods(self.controller.pods, obj, self.runner)
            return
        is_job = is_job_kind(obj)
        held: Workload | KindObject | None = (
            self.engine.workloads.get(key) if isinstance(obj, Workload)
            else self.controller.jobs.jobs.get(job_key(obj)) if is_job else None
        )
        if held is not None and obj.meta.uid not in ("", None, held.meta.uid) and held.meta.uid:
            # Re-created under its name while we did not watch: new, it inherits no admission or suspend.
            self._deleted(ObjectKey(obj.kind, obj.meta.namespace, obj.meta.name), now)
        if isinstance(obj, Workload):
            known = self.engine.workloads.get(key)
            if known is not None:
                obj.status = known.status  # the hub owns status; the store may lag a round behind
            self._persisted.add(key)
            self._active.stored(key, obj.active, obj.meta.labels)
        elif is_job:
            jobs = self.controller.jobs
            okey = job_key(obj)
            known_job = jobs.jobs.get(okey)
            stored_suspend = adapter_of(obj).is_suspended(obj)
            if known_job is None and jobs.managed(obj):
                wl_key = workload_key_for(obj)
                if wl_key in self.engine.workloads:
                    jobs.adopt(obj, wl_key)
                    self._observe_job(obj)
                    return
            self.controller.apply(obj, now)
            if known_job is None and jobs.managed(obj) and self.cluster_runs_jobs and not stored_suspend \
                    and job_outcome(obj) is None:
                self._suspend[okey] = True  # created without the webhook: Kueue stops it until admitted
            self._observe_job(obj)
            return
        elif obj.kind in _QUEUE_KINDS:
            self._queues_dirty = True
            if isinstance(obj, ClusterQueue):
                self._terminate(obj)
        self.controller.apply(obj, now)

    def _terminate(self, cq: ClusterQueue) -> None:
        """A deleted ClusterQueue waiting for its finalizer admits nothing new, as Kueue's terminating
        queues; its admitted workloads run on (the hub holds it as with stopPolicy Hold)."""
        if cq.meta.deletion_timestamp is None:
            self._terminating.discard(cq.meta.name)
            return
        self._terminating.add(cq.meta.name)
        if cq.stop_policy == STOP_NONE:
            cq.stop_policy = STOP_HOLD

    def _deleted(self, key: ObjectKey, now: float) -> None:
        text = _key_text(key)
        if key.kind == "Workload":
            mirror = getattr(self.federation, "job_mirror", None)
            if mirror is not None:
                mirror.forget(text)
            self._persisted.discard(text)
            self._active.forget(text)
            self._written.pop(text, None)
            self.runner.discard(text)
        elif key.kind in self._job_kinds or key.kind == "Pod":
            wl_key = (self.controller.jobs.workload_of.get(key) if key.kind != "Pod"
                      else self.controller.pods.orphaned_by(key))
            if wl_key is not None:
                self.runner.discard(wl_key)
                if wl_key in self._persisted:
                    self._gc.add(wl_key)  # owner gone: Kubernetes' garbage collector would delete it
        if key.kind in _QUEUE_KINDS or key.kind == "Workload" or key.kind in self._job_kinds:
            self._queues_dirty = True  # a deleted workload leaves its queues' counts
        if key.kind == "ClusterQueue":
            self._terminating.discard(key.name)
        self._statuses.pop(key, None)
        self.controller.delete(key.kind, key.namespace, key.name, now)

    def _observe_job(self, job: KindObject) -> None:
        if isinstance(self.runner, ClusterJobRunner):
            key = self.controller.jobs.workload_of.get(job_key(job)) or ""
            observe_job(job, self.engine.workloads.get(key), self.runner, self.engine.is_pods_ready(key))

    def _on_status(self, workloads: list[Workload]) -> None:
        self._changed.update(wl.meta.key for wl in workloads)

    def _on_job_change(self, changes: list[JobChange]) -> None:
        for change in changes:
            self._suspend[change.key] = change.suspend

    def _duration_of(self, wl: Workload) -> float | None:
        return run_length(self.controller.jobs, self.controller.pods, wl)

    # ------------------------------------------------------------------ the round

    def next_wakeup(self) -> float | None:
        """When time alone will next change something (runner timers, backoffs, timeouts)."""
        if self.controller.unsettled:
            return float("-inf")  # the last round stopped at its budget: the next one is due now
        times = [t for t in (self.engine.next_wakeup(), self.runner.next_due()) if t is not None]
        if self._queues_pending:
            times.append(self._queues_written_at + self._queue_gap())
        if self.federation is not None:
            due = self.federation.next_wakeup()
            if due is not None:
                times.append(due)
        return min(times) if times else None

    def round(self, now: float) -> RoundStats:
        """Settle the engine and commit every consequence in one transaction.

        Raises when the store refuses the transaction; the engine is then ahead of
        the store and the caller must rebuild from the store (see HubRuntime).
        """
        self._settle(now)
        self._changed.update(self.controller.pods.take_conditions())  # the pod integration's own condition
        self.rounds += 1
        events, self.controller.event_log = self.controller.event_log, []
        self.events.add(events)
        for ev in events:
            if ev.type == "Deleted":
                self._queues_dirty = True
                self.runner.discard(ev.key)
        stats = RoundStats()
        own: list[int] = []
        created: list[tuple[str, Object]] = []
        statuses: dict[ObjectKey, Status] = {}
        written: dict[str, int] = {}
        with self.store.batch() if self.observer is None else self.observer.store_batch(self.store):
            if self.federation is not None:
                self._write_federation_status(own, stats)
            self._write_workloads(own, created, written, stats)
            own.extend(self._active.write(self.store, self._changed, self.engine.workloads))
            if self.federation is not None and not self._atomic_batches:
                # Rule 2 without transactions: what the agents act on (quota held, admitted) has
                # landed; the Jobs' writes and the rest need not wait for them (module docstring).
                self._set_uids(created)
                self.federation.flush()
            self._write_jobs(own, statuses, stats)
            mirror = getattr(self.federation, "job_mirror", None)
            own.extend(write_pods(self.store, self.controller.pods, self._changed, simulated=not self.cluster_runs_jobs,
                                  now=now, mirrored=mirror.statuses if mirror is not None else None))
            if self.observer is not None:  # after the creates: their events need the new uids
                own.extend(self.observer.flush_events(self.store, refs_of([o for _, o in created])))
            self._gc |= self.controller.lws.drain_deleted() | self.engine.ca.drain_deleted()  # and stale variants
            self._delete_garbage(stats)
            self._queues_pending = self._queues_pending or bool(self._changed) or self._queues_dirty
            write_queues = self._queues_pending and now >= self._queues_written_at + self._queue_gap()
            if write_queues:
                self._write_queues(now, own, statuses, stats)
            if self._terminating:
                self._release_cluster_queues(stats)
        # Committed: only now does anything of this round count.
        self._own.add(committed(own), self._last_rv)  # a no-op write's answer is someone else's change
        for sink in self.workload_sinks if self._handed else ():
            sink(self._handed)
        self._handed = []
        self._set_uids(created)
        self._persisted.update(key for key, _ in created)
        self._persisted.difference_update(self._gc)
        for key in self._gc:
            self._written.pop(key, None)
        self._written.update(written)
        self._statuses.update(statuses)
        self._changed.clear()
        self._suspend.clear()
        self._gc.clear()
        self._queues_dirty = False
        if write_queues:
            self._queues_pending = False
            self._queues_written_at = now
        if self.federation is not None:
            self.federation.flush()  # after the commit, never before: see the module docstring
        if self.debug_checks and not self._queues_pending:
            # Only once the statuses are written: a write held back by the spacing above is due later.
            for line in self.queue_drift():
                log.error("queue status drift: %s", line)
        return stats

    def _set_uids(self, created: list[tuple[str, Object]]) -> None:
        """The uids the store gave the Workloads this round created (the agents' messages carry them)."""
        for key, out in created:
            wl = self.engine.workloads.get(key)
            if wl is not None:
                wl.meta.uid = out["metadata"].get("uid", "")

    def _queue_gap(self) -> float:
        """Seconds between two writes of the queue statuses: ``queue_status_interval``, and longer
        when the last write was large (``QUEUE_WRITE_SPACING`` per status written), so that with
        thousands of queues changing at once their statuses take a bounded share of the hub's time."""
        if self.queue_status_interval <= 0:
            return 0.0
        return max(self.queue_status_interval, QUEUE_WRITE_SPACING * self._queue_writes)

    def queue_drift(self) -> list[str]:
        """Queues whose stored status counts differ from a recount from the workloads (the
        invariant the hub keeps after every round); empty when all agree."""
        written = {
            status_key(key.kind, key.namespace, key.name): status
            for key, status in self._statuses.items()
            if key.kind in ("ClusterQueue", "LocalQueue")
        }
        return drift(recount(self.engine), written)

    def _settle(self, now: float) -> None:
        # A bounded round: once this many workloads changed, commit and settle on in the next
        # round (due at once), so admissions stream out and released quota counts sooner.
        changed = self._changed
        start = len(changed)
        budget = self.round_budget
        self.controller.settle(now, enough=None if budget <= 0 else lambda: len(changed) - start >= budget)

    def _write_workloads(
        self, own: list[int], created: list[tuple[str, Object]], written: dict[str, int], stats: RoundStats
    ) -> None:
        for group in self._workload_write_order():
            writes: list[tuple[str, int, bool, Object]] = []
            for key in group:
                wl = self.engine.workloads.get(key)
                if wl is None or key in self._gc:
                    continue
                status = workload_status_to_dict(wl.status)
                fingerprint = _fingerprint(status)
                if key in self._persisted and self._written.get(key) == fingerprint:
                    continue  # the engine touched it but ended where the store already is
                if key in self._persisted:
                    body = {"kind": "Workload", "metadata": {"namespace": wl.meta.namespace, "name": wl.meta.name}, "status": status}
                    writes.append((key, fingerprint, False, body))
                else:
                    body = {
                        "apiVersion": V1BETA2,
                        "kind": "Workload",
                        "metadata": meta_to_dict(wl.meta),
                        "spec": workload_spec_to_dict(wl),
                        "status": status,
                    }
                    writes.append((key, fingerprint, True, body))
            # One group's writes are independent of each other: a store that takes them in bulk
            # or concurrently gets them at once; the next group starts once this one has landed.
            results = independent_writes(self.store, [(w[2], w[3]) for w in writes])
            for (key, fingerprint, create, _), out in zip(writes, results):
                if isinstance(out, NotFound):
                    continue  # deleted by a user a moment ago; its DELETED event is on its way
                if isinstance(out, AlreadyExists):
                    log.warning("cannot create Workload %s for its Job: a Workload of that name exists", key)
                    continue
                if isinstance(out, BaseException):
                    raise out
                if create:
                    created.append((key, out))
                own.append(_rv(out))
                if self.workload_sinks and not create and key in self._written:  # unknown: the store may have held it
                    self._handed.append(out)
                written[key] = fingerprint
                stats.workloads += 1
                stats.writes += 1

    def _workload_write_order(self) -> list[list[str]]:
        """Changed workloads in two groups: those holding no quota, then those holding quota
        (rule b of the module docstring)."""
        holding: list[str] = []
        free: list[str] = []
        for key in sorted(self._changed):
            wl = self.engine.workloads.get(key)
            (holding if wl is not None and wl.is_quota_reserved and not wl.is_finished else free).append(key)
        return [free, holding]

    def _write_jobs(self, own: list[int], statuses: dict[ObjectKey, Status], stats: RoundStats) -> None:
        mirror = getattr(self.federation, "job_mirror", None)  # the winners' statuses (jobmirror)
        drained = mirror.drain() if mirror is not None else set()
        self.controller.pods.status_due.update(drained & self.controller.pods.members.keys())  # write_pods mirrors them
        done = write_jobs(self.store, self.controller.jobs, self.engine.workloads, self.engine.flavors,
                          suspend=self._suspend, changed=self._changed | drained, known=self._statuses, mirror=mirror,
                          cluster_runs_jobs=self.cluster_runs_jobs, ready_at=self.engine.pods_ready_at)
        own.extend(done.own)
        statuses.update(done.statuses)
        stats.writes += done.writes

    def _delete_garbage(self, stats: RoundStats) -> None:
        for wl_key in sorted(self._gc):
            ns, _, name = wl_key.partition("/")
            try:
                self.store.delete("Workload", ns, name)
            except NotFound:
                continue
            stats.writes += 1  # its DELETED event is harmless: the engine already forgot it

    def _write_federation_status(self, own: list[int], stats: RoundStats) -> None:
        """The Active conditions the federation set this round (lost with the round if it fails:
        the federation recomputes them against the rebuilt engine)."""
        assert self.federation is not None
        engine = self.engine
        for kind, name in self.federation.drain_status_changes():
            if kind == "ClusterQueue":
                self._write_automated_quota(name, own, stats)
                continue
            conditions: list[Condition] | None = None
            fleet = None
            if kind == "MultiKueueCluster" and name in engine.mk_clusters:
                conditions = engine.mk_clusters[name].conditions
                fleet = engine.mk_clusters[name].fleet
            elif kind == "AdmissionCheck" and name in engine.admission_checks:
                conditions = engine.admission_checks[name].conditions
                self._queues_dirty = True  # ClusterQueues using the check may change activity
            if conditions is None:
                continue
            status: dict[str, Any] = {"conditions": conditions_to_list(conditions)}
            if fleet is not None:
                status["fleet"] = fleet
            try:
                out = self.store.update_status({"kind": kind, "metadata": {"namespace": "", "name": name}, "status": status})
            except NotFound:
                continue
            own.append(_rv(out))
            stats.writes += 1

    def _write_automated_quota(self, name: str, own: list[int], stats: RoundStats) -> None:
        """Quota automation changed a ClusterQueue's nominal quotas: write them into its spec."""
        state = self.engine.cqs.get(name)
        if state is None:
            return
        nominal = {
            (f.name, rq.name): rq.nominal_quota for g in state.spec.resource_groups for f in g.flavors for rq in f.resources
        }

        def change(obj: Object) -> bool:  # re-applied to a fresh read on a conflict
            before = copy.deepcopy(obj.get("spec"))
            for group in (obj.get("spec") or {}).get("resourceGroups") or []:
                for flavor in group.get("flavors") or []:
                    for rq in flavor.get("resources") or []:
                        value = nominal.get((flavor.get("name"), rq.get("name")))
                        if value is not None:
                            rq["nominalQuota"] = format_quantity(rq["name"], value)
            return obj.get("spec") != before

        try:
            out = modify(self.store, "ClusterQueue", "", name, change)
        except Conflict:
            return
        if out is not None:
            own.append(_rv(out))
            stats.writes += 1

    def _write_queues(self, now: float, own: list[int], statuses: dict[ObjectKey, Status], stats: RoundStats) -> None:
        wanted = wanted_queue_statuses(self.engine, self._statuses, self._terminating, now)
        changed = [(key, status) for key, status in wanted.items() if status != self._statuses.get(key)]
        self._queue_writes = len(changed)
        bodies = [
            {"kind": key.kind, "metadata": {"namespace": key.namespace, "name": key.name}, "status": status}
            for key, status in changed
        ]
        for (key, status), out in zip(changed, update_status_each(self.store, bodies, brief=True), strict=True):
            if isinstance(out, NotFound):
                continue
            if isinstance(out, BaseException):
                raise out
            own.append(_rv(out))
            statuses[key] = status
            stats.writes += 1

    def _release_cluster_queues(self, stats: RoundStats) -> None:
        """Drop the resource-in-use finalizer of terminating ClusterQueues no workload reserves quota in;
        the store then removes them and their DELETED event takes them out of the engine."""
        for name in sorted(self._terminating):
            state = self.engine.cqs.get(name)
            if state is not None and (state.reserving or state.admitted_count):
                continue
            if modify(self.store, "ClusterQueue", "", name, _drop_in_use_finalizer) is not None:
                stats.writes += 1


def _drop_in_use_finalizer(obj: Object) -> bool:
    meta = obj["metadata"]
    finalizers = [f for f in meta.get("finalizers") or [] if f != RESOURCE_IN_USE_FINALIZER]
    if finalizers == list(meta.get("finalizers") or []):
        return False
    meta["finalizers"] = finalizers
    return True
