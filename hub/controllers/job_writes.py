"""A hub round's writes of the objects on the job framework (Jobs, JobSets...): their suspend
(Kueue's start and stop: :func:`hub.controllers.kubejobs.write_suspend`) and the status the hub
keeps for those no cluster controller runs (embedded mode, MultiKueue's mirror of the winner)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from hub.api.queues import ResourceFlavor
from hub.api.workload import Workload
from hub.store.interface import Object, ObjectKey, Store, modify

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
               cluster_runs_jobs: bool) -> JobWrites:
    """``suspend``: the suspend to write per object; ``changed``: the Workloads whose objects'
    statuses may have moved; ``known``: each object's status as last written or seen; ``mirror``:
    the federation's :class:`hub.federation.jobmirror.JobMirror` (None without one), whose
    ``statuses`` were drained into ``changed`` by the caller."""
    out = JobWrites()
    for okey, wanted in suspend.items():
        kind, ns, name = okey
        current = store.get(kind, ns, name)
        if current is None or not kubejobs.suspend_due(current, wanted):
            continue
        if cluster_runs_jobs:  # Kueue's podset info injection, and its staged stop
            wl = workloads.get(jobs.workload_of.get(okey) or "")
            written = kubejobs.write_suspend(store, kind, ns, name, wanted, wl, flavors)
        else:
            done = modify(store, kind, ns, name, partial(kubejobs.set_suspend, wanted))
            written = [] if done is None else [done]
        out.own.extend(_rv(o) for o in written)
        out.writes += len(written)
    for wl_key in changed:
        wl = workloads.get(wl_key)
        found = jobs.job_of.get(wl_key)
        job = jobs.jobs.get(found) if found is not None else None
        if job is None or found is None or wl is None or (cluster_runs_jobs and run_by_cluster(job)):
            continue  # on a Kubernetes API server the kind's own controller writes its status
        okey = found
        mirrored = mirror.statuses.get(wl_key) if mirror is not None else None
        status = manager_job_status(wl, job, mirrored, known.get(okey), jobs.is_suspended(okey))
        if status == known.get(okey):
            continue
        written_status = kubejobs.write_status(store, okey.kind, okey.namespace, okey.name, status)
        if written_status is None:
            continue
        out.own.append(_rv(written_status))
        out.statuses[okey] = status
        out.writes += 1
    return out
