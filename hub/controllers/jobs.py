"""Kueue's batch/v1 Job integration: a queued Job is represented by a Workload.

Pure bookkeeping over the engine, shared by the hub and ``mkhub simulate``:
a Job labelled with a queue name gets a Workload named as Kueue names it; the
Job runs (``suspend: false``) while its Workload is admitted and is suspended
again when the Workload is evicted.
"""

from __future__ import annotations

from dataclasses import dataclass

from hub.api.jobkinds.batch_job import BATCH_JOB
from hub.api.jobkinds.management import manages
from hub.api.jobs import workload_for_job
from hub.api.others import Job
from hub.api.workload import CHECK_PENDING, Workload
from hub.engine.engine import Engine, EngineEvent
from hub.obs.events import JobEvent


@dataclass(slots=True)
class JobChange:
    """A Job whose desired ``suspend`` flipped."""

    job: Job
    suspend: bool


class JobIntegration:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.jobs: dict[str, Job] = {}
        self.workload_of: dict[str, str] = {}
        self.job_of: dict[str, str] = {}
        self.events: list[JobEvent] = []  # recorded on the Jobs; drained by the controller
        self._check_messages: dict[str, str] = {}  # Job key -> the admission check message last recorded

    @property
    def manage_without_queue_name(self) -> bool:
        return self.engine.config.manage_jobs_without_queue_name

    def managed(self, job: Job) -> bool:
        """Kueue manages ``job``: batch/job is an enabled framework, and its queue name and
        namespace say so (:func:`hub.api.jobkinds.management.manages`)."""
        ns = job.meta.namespace
        return manages(self.engine.config, BATCH_JOB.framework, job.queue_name, ns, self.engine.namespaces.get(ns))

    def apply(self, job: Job, now: float) -> Workload | None:
        """Record a Job; returns the new Workload for a newly managed Job."""
        key = job.meta.key
        self.jobs[key] = job
        if not self.managed(job) or key in self.workload_of:
            return None
        job.suspend = True  # Kueue's webhook suspends every Job it manages until admission
        wl = workload_for_job(job)
        if wl.meta.creation_timestamp is None:
            wl.meta.creation_timestamp = now
        self.workload_of[key] = wl.meta.key
        self.job_of[wl.meta.key] = key
        self.events.append(JobEvent(job, "CreatedWorkload", f"Created Workload: {wl.meta.key}"))
        return wl

    def adopt(self, job: Job, workload_key: str) -> None:
        """Record a Job whose Workload already exists (a restarted hub re-reading its store):
        the engine gets the stored Workload, status and all, instead of a fresh one."""
        key = job.meta.key
        self.jobs[key] = job
        self.workload_of[key] = workload_key
        self.job_of[workload_key] = key

    def delete(self, key: str) -> str | None:
        """Forget a Job; returns its Workload's key (to be deleted with it)."""
        self.jobs.pop(key, None)
        self._check_messages.pop(key, None)
        wl_key = self.workload_of.pop(key, None)
        if wl_key is not None:
            self.job_of.pop(wl_key, None)
        return wl_key

    def workload_key(self, name: str) -> str | None:
        """The Workload key for a Job key, if the name is a managed Job."""
        return self.workload_of.get(name)

    def on_events(self, events: list[EngineEvent]) -> list[JobChange]:
        changes = []
        for ev in events:
            job_key = self.job_of.get(ev.key)
            if job_key is None:
                continue
            job = self.jobs.get(job_key)
            if job is None:
                continue
            if ev.type == "Admitted" and job.suspend:
                job.suspend = False
                changes.append(JobChange(job, False))
                wl = self.engine.workloads.get(ev.key)
                cq = wl.status.admission.cluster_queue if wl is not None and wl.status.admission is not None else ""
                self.events.append(JobEvent(job, "Started", f"Admitted by clusterQueue {cq}"))
            elif ev.type in ("Evicted", "Released", "Deactivated") and not job.suspend:
                job.suspend = True
                changes.append(JobChange(job, True))
                self.events.append(JobEvent(job, "Stopped", ev.message or "Not admitted by cluster queue"))
            elif ev.type == "Finished":
                self.events.append(JobEvent(job, "FinishedWorkload", f"Workload '{ev.key}' is declared finished"))
        return changes

    def on_status(self, workloads: list[Workload]) -> None:
        """Kueue's recordAdmissionCheckUpdate: while a suspended Job's Workload holds quota and
        waits on admission checks, their messages are recorded on the Job (each new one once)."""
        for wl in workloads:
            job_key = self.job_of.get(wl.meta.key)
            job = self.jobs.get(job_key) if job_key is not None else None
            if job is None or job_key is None or not job.suspend or not wl.is_quota_reserved:
                continue
            message = "; ".join(f"{c.name}: {c.message}" for c in wl.status.admission_checks
                                if c.state == CHECK_PENDING and c.message)
            if message and self._check_messages.get(job_key) != message:
                self._check_messages[job_key] = message
                self.events.append(JobEvent(job, "UpdatedAdmissionCheck", message))

    def drain_events(self) -> list[JobEvent]:
        events, self.events = self.events, []
        return events
