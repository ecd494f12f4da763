"""A hub round's writes of the objects on the job framework (Jobs, JobSets...): their suspend
(Kueue's start and stop: :func:`hub.controllers.kubejobs.write_suspend`) and the status the hub
keeps for those no cluster controller runs (embedded mode, MultiKueue's mirror of the winner)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from hub.api.queues import ResourceFlavor
from hub.api.workload import Workload
from hub.store import journal
from hub.store.interface import ConcurrentWrites, Object, ObjectKey, Store, modify

from . import kubejobs
from .job_status import manager_job_status
from .jobs import JobIntegration
from .kubejobs import run_by_cluster

Status = dict[str, Any]


@dataclass
class JobWrites:
    """What a round wrote: the resourceVersions of its own writes (echoes to skip), the statuses
    written, and how many writes."""

    own: list[int] = field(default_factory=list)
    statuses: dict[ObjectKey, Status] = field(default_factory=dict)
    writes: int = 0


def _rv(obj: Object) -> int:
    return int(obj["metadata"]["resourceVersion"])


def write_jobs(store: Store, jobs: JobIntegration, workloads: dict[str, Workload], flavors: dict[str, ResourceFlavor], *,
               suspend: dict[ObjectKey, bool], changed: set[str], known: dict[ObjectKey, Status], mirror: Any,
               cluster_runs_jobs: bool, ready_at: Callable[[str], float | None]) -> JobWrites:
    """``suspend``: the suspend to write per object; ``changed``: the Workloads whose objects'
    statuses may have moved; ``known``: each object's status as last written or seen; ``mirror``:
    the federation's :class:`hub.federation.jobmirror.JobMirror` (None without one), whose
    ``statuses`` were drained into ``changed`` by the caller; ``ready_at``: since when a
    Workload's pods are all ready (:meth:`hub.engine.engine.Engine.pods_ready_at`)."""
    starts: list[tuple[ObjectKey, bool, Workload | None]] = []
    for okey, wanted in suspend.items():
        current = store.get(*okey)
        if current is not None and kubejobs.suspend_due(current, wanted):
            starts.append((okey, wanted, workloads.get(jobs.workload_of.get(okey) or "")))
    # The statuses to write are read from the round's state, which the writes below do not move
    # (their echoes come back through the watch), so they are known before any write is sent.
    statuses: list[tuple[ObjectKey, Status]] = []
    for wl_key in changed:
        wl = workloads.get(wl_key)
        found = jobs.job_of.get(wl_key)
        job = jobs.jobs.get(found) if found is not None else None
        if job is None or found is None or wl is None or (cluster_runs_jobs and run_by_cluster(job)):
            continue  # on a Kubernetes API server the kind's own controller writes its status
        mirrored = mirror.statuses.get(wl_key) if mirror is not None else None
        if mirrored is None and mirror is not None and not wl.is_finished and mirror.expected(wl_key):
            continue  # the worker's report will say (a finished Workload's outcome is written regardless)
        status = manager_job_status(wl, job, mirrored, known.get(found), jobs.is_suspended(found), ready_at(wl_key))
        if status != known.get(found):
            statuses.append((found, status))

    def start_or_stop(okey: ObjectKey, wanted: bool, wl: Workload | None) -> list[Object]:
        kind, ns, name = okey
        if cluster_runs_jobs:  # Kueue's podset info injection, and its staged stop
            return kubejobs.write_suspend(store, kind, ns, name, wanted, wl, flavors)
        done = modify(store, kind, ns, name, partial(kubejobs.set_suspend, wanted))
        return [] if done is None else [done]

    out = JobWrites()

    def landed(written: list[Object], status_writes: list[tuple[ObjectKey, Status, Object | None]]) -> None:
        out.own.extend(_rv(o) for o in written)
        out.writes += len(written)
        for okey, status, done in status_writes:
            if done is not None:
                out.own.append(_rv(done))
                out.statuses[okey] = status
                out.writes += 1

    def status_write(okey: ObjectKey, status: Status) -> tuple[ObjectKey, Status, Object | None]:
        return okey, status, kubejobs.write_status(store, okey.kind, okey.namespace, okey.name, status)

    width = int(getattr(store, "write_concurrency", 1))
    if width <= 1 or len(starts) + len(statuses) <= 1:
        for start in starts:
            landed(start_or_stop(*start), [])
        landed([], [status_write(okey, status) for okey, status in statuses])
        return out
    # An API server: each object's writes in their order (its suspend before its status: a Job
    # whose status has a startTime takes no new nodeSelector), the objects' at once, as many
    # round trips in flight as the store allows instead of one after another in the round.
    per_object: dict[ObjectKey, tuple[list[tuple[bool, Workload | None]], list[Status]]] = {}
    # A store that gathers changes (an API server) takes the round's starts as one batch per step;
    # the stops (staged, rare) stay one object per thread.
    gathered_starts = [(okey, wl) for okey, wanted, wl in starts if not wanted] \
        if cluster_runs_jobs and hasattr(store, "modify_gathered") else []
    for okey, wanted, wl in starts:
        if not gathered_starts or wanted:
            per_object.setdefault(okey, ([], []))[0].append((wanted, wl))
    # A store that sends independent writes together takes every status at once after the starts
    # and stops (one gathered batch, not a thread and a Python HTTP round trip each): still after
    # its object's suspend.
    gathered = isinstance(store, ConcurrentWrites)
    if not gathered:
        for okey, status in statuses:
            per_object.setdefault(okey, ([], []))[1].append(status)

    def one_object(item: tuple[ObjectKey, tuple[list[tuple[bool, Workload | None]], list[Status]]]) -> tuple[
            list[Object], list[tuple[ObjectKey, Status, Object | None]]]:
        okey, (suspends, wanted_statuses) = item
        written = [o for wanted, wl in suspends for o in start_or_stop(okey, wanted, wl)]
        return written, [status_write(okey, status) for status in wanted_statuses]

    if gathered_starts:
        for written in kubejobs.write_starts(store, gathered_starts, flavors).values():
            landed(written, [])
    calls = [journal.carry(partial(one_object, item)) for item in per_object.items()]  # the round's batch goes along
    for written, status_writes in _pool(width).map(_call, calls):
        landed(written, status_writes)
    if gathered:
        done = kubejobs.write_statuses(store, statuses)
        landed([], [(okey, status, got) for (okey, status), got in zip(statuses, done, strict=True)])
    return out


T = TypeVar("T")
_POOLS: dict[int, ThreadPoolExecutor] = {}


def _call(call: Callable[[], T]) -> T:
    return call()


def _pool(width: int) -> ThreadPoolExecutor:
    """Writer threads for the Job writes (their own: the Events' pool may be busy with the round's
    Events, and a round never waits on itself)."""
    pool = _POOLS.get(width)
    if pool is None:
        pool = _POOLS.setdefault(width, ThreadPoolExecutor(width, thread_name_prefix="mkhub-job-writes"))
    return pool
