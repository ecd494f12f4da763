"""Kueue's job integrations: a queued object of a kind on the job framework (a Job, a JobSet...)
is represented by a Workload.

Pure bookkeeping over the engine, shared by the hub and ``mkhub simulate``: an object
labelled with a queue name (of a kind whose framework is enabled: :mod:`hub.api.jobkinds`)
gets a Workload named as Kueue names it; it runs (``suspend: false``) while its Workload is
admitted and is suspended again when the Workload is evicted. Objects are keyed by
:class:`ObjectKey` (the store's kinds are unique by name, so the kind tells the adapter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hub.api.jobkinds import JOB_KINDS, JobAdapter, adapter_of_kind, is_external, owner_managed
from hub.api.jobkinds.framework import KindObject, group_of, queue_name, workload_for, workload_name
from hub.api.jobkinds.management import manages
from hub.api.workload import CHECK_PENDING, Workload
from hub.engine.engine import Engine
from hub.engine.events import EngineEvent
from hub.obs.events import JobEvent
from hub.store.interface import ObjectKey


def job_key(obj: KindObject) -> ObjectKey:
    return ObjectKey(obj.kind, obj.meta.namespace, obj.meta.name)


def is_job_kind(obj: object) -> bool:
    """``obj`` is a typed object of a kind on the job framework."""
    kind = getattr(obj, "kind", None)
    return isinstance(kind, str) and adapter_of_kind(kind) is not None


def adapter_of(key_or_obj: ObjectKey | KindObject) -> JobAdapter[Any]:
    kind = key_or_obj.kind if isinstance(key_or_obj, ObjectKey) else key_or_obj.kind
    adapter = adapter_of_kind(kind)
    if adapter is None:
        raise KeyError(f"{kind} is no kind on the job framework")
    return adapter


def workload_key_for(obj: KindObject, uid: str | None = None) -> str:
    """The key of the Workload Kueue names for ``obj`` (with ``uid``, else its own)."""
    adapter = adapter_of(obj)
    meta = obj.meta
    name = workload_name(adapter.kind, group_of(adapter.api_version), meta.name, meta.uid if uid is None else uid)
    return f"{meta.namespace}/{name}"


@dataclass(slots=True)
class JobChange:
    """An object whose desired ``suspend`` flipped."""

    job: KindObject
    suspend: bool

    @property
    def key(self) -> ObjectKey:
        return job_key(self.job)


class JobIntegration:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.jobs: dict[ObjectKey, KindObject] = {}
        # The suspend the hub wants for each managed object (it owns it: Kueue's webhook and reconciler).
        self.suspended: dict[ObjectKey, bool] = {}
        self.workload_of: dict[ObjectKey, str] = {}
        self.job_of: dict[str, ObjectKey] = {}
        self.events: list[JobEvent] = []  # recorded on the objects; drained by the controller
        self._check_messages: dict[ObjectKey, str] = {}  # the admission check message last recorded
        self.references: dict[ObjectKey, Any] = {}  # objects of REFERENCED_KINDS, by key

    @property
    def manage_without_queue_name(self) -> bool:
        return self.engine.config.manage_jobs_without_queue_name

    def managed(self, job: KindObject) -> bool:
        """Kueue manages ``job``: its kind's framework is enabled, and its queue name and
        namespace say so (:func:`hub.api.jobkinds.management.manages`), and no object Kueue
        manages controls it (a JobSet's child Jobs are the JobSet's: Kueue's IsOwnerManagedByKueue)."""
        ns = job.meta.namespace
        config = self.engine.config
        if is_external(adapter_of(job)):
            return False  # an external framework's Workload is its own controller's (link_owner)
        if owner_managed(config, job.meta.owner_references):
            return False
        skip = getattr(adapter_of(job), "skip", None)  # Kueue's JobWithSkip (a RayJob on an existing cluster)
        if skip is not None and skip(job):
            return False
        return manages(config, adapter_of(job).framework, queue_name(job), ns, self.engine.namespaces.get(ns))

    def is_suspended(self, key: ObjectKey) -> bool:
        """Suspended as the hub wants it (managed objects), else as the object says."""
        wanted = self.suspended.get(key)
        if wanted is not None:
            return wanted
        job = self.jobs.get(key)
        return job is not None and adapter_of(key).is_suspended(job)

    def apply(self, job: KindObject, now: float) -> Workload | None:
        """Record an object; returns the new Workload for a newly managed one."""
        key = job_key(job)
        resolved = self._resolve(job)
        self.jobs[key] = job if resolved is None else resolved
        if not self.managed(job) or key in self.workload_of:
            return None
        self.suspended[key] = True  # Kueue's webhook suspends every object it manages until admission
        if resolved is None:
            return None  # what its pod sets come from is missing: Kueue's reconciler tries again later
        wl = workload_for(adapter_of(job), resolved)
        if wl.meta.creation_timestamp is None:
            wl.meta.creation_timestamp = now
        self.workload_of[key] = wl.meta.key
        self.job_of[wl.meta.key] = key
        self._event(job, "CreatedWorkload", f"Created Workload: {wl.meta.key}")
        return wl

    def adopt(self, job: KindObject, workload_key: str) -> None:
        """Record an object whose Workload already exists (a restarted hub re-reading its store):
        the engine gets the stored Workload, status and all, instead of a fresh one."""
        key = job_key(job)
        self.jobs[key] = self._resolve(job) or job
        self.suspended[key] = adapter_of(job).is_suspended(job)
        self.workload_of[key] = workload_key
        self.job_of[workload_key] = key

    def link_owner(self, wl: Workload) -> None:
        """A Workload an external framework's controller made, owned by its object: MultiKueue's
        generic adapter dispatches that object with it (:mod:`hub.api.jobkinds.external`)."""
        for ref in wl.meta.owner_references:
            adapter = adapter_of_kind(str(ref.get("kind"))) if ref.get("controller") else None
            if adapter is not None and is_external(adapter) and ref.get("apiVersion") == adapter.api_version:
                key = ObjectKey(adapter.kind, wl.meta.namespace, str(ref.get("name")))
                self.workload_of[key] = wl.meta.key
                self.job_of[wl.meta.key] = key
                return

    def unlink(self, workload_key: str) -> None:
        """A Workload went: an external object stays, unlinked (a managed kind's object owns its
        Workload the other way round: :meth:`delete`)."""
        key = self.job_of.get(workload_key)
        if key is not None and is_external(adapter_of(key)):
            del self.job_of[workload_key]
            if self.workload_of.get(key) == workload_key:
                del self.workload_of[key]

    def awaited(self, workload_key: str) -> bool:
        """The Workload's external object is not seen yet: nothing to dispatch it with."""
        key = self.job_of.get(workload_key)
        return key is not None and key not in self.jobs

    def _resolve(self, job: KindObject) -> KindObject | None:
        """``job`` with what its kind's pod sets need looked up (a TrainJob's runtime); None while
        that is missing. Kinds that need nothing are themselves."""
        resolve = getattr(adapter_of(job), "resolve", None)
        if resolve is None:
            return job
        resolved: KindObject | None = resolve(job, lambda kind, ns, name: self.references.get(ObjectKey(kind, ns, name)))
        return resolved

    def apply_reference(self, obj: KindObject, now: float) -> list[Workload]:
        """Record an object some kind's pod sets come from; returns the Workloads of the managed
        objects that waited for it."""
        self.references[ObjectKey(obj.kind, obj.meta.namespace, obj.meta.name)] = obj
        made = []
        for key, job in list(self.jobs.items()):
            if obj.kind in getattr(adapter_of(key), "referenced_kinds", ()):
                wl = self.apply(job, now)
                if wl is not None:
                    made.append(wl)
        return made

    def delete_reference(self, key: ObjectKey) -> None:
        """A referenced object went: Workloads made already stay (as Kueue's do)."""
        self.references.pop(key, None)

    def delete(self, key: ObjectKey) -> str | None:
        """Forget an object; returns its Workload's key (to be deleted with it)."""
        self.jobs.pop(key, None)
        self.suspended.pop(key, None)
        self._check_messages.pop(key, None)
        wl_key = self.workload_of.pop(key, None)
        if wl_key is not None:
            self.job_of.pop(wl_key, None)
        return wl_key

    def find(self, name: str) -> ObjectKey | None:
        """The managed object ``namespace/name`` of any kind (a Job first), for names users give."""
        namespace, _, short = name.rpartition("/")
        for kind in JOB_KINDS:
            key = ObjectKey(kind, namespace, short)
            if key in self.workload_of:
                return key
        return None

    def workload_key(self, name: str) -> str | None:
        """The Workload key for ``namespace/name`` if that names a managed object."""
        key = self.find(name)
        return self.workload_of.get(key) if key is not None else None

    def on_events(self, events: list[EngineEvent]) -> list[JobChange]:
        changes = []
        for ev in events:
            key = self.job_of.get(ev.key)
            job = self.jobs.get(key) if key is not None else None
            if key is None or job is None or is_external(adapter_of(key)):
                continue  # an external object's suspend and events are its own controller's
            suspended = self.suspended.get(key, True)
            if ev.type == "Admitted" and suspended:
                self.suspended[key] = False
                changes.append(JobChange(job, False))
                wl = self.engine.workloads.get(ev.key)
                cq = wl.status.admission.cluster_queue if wl is not None and wl.status.admission is not None else ""
                self._event(job, "Started", f"Admitted by clusterQueue {cq}")
            elif ev.type in ("Evicted", "Released", "Deactivated") and not suspended:
                self.suspended[key] = True
                changes.append(JobChange(job, True))
                self._event(job, "Stopped", ev.message or "Not admitted by cluster queue")
            elif ev.type == "Finished":
                self._event(job, "FinishedWorkload", f"Workload '{ev.key}' is declared finished")
        return changes

    def on_status(self, workloads: list[Workload]) -> None:
        """Kueue's recordAdmissionCheckUpdate: while a suspended object's Workload holds quota and
        waits on admission checks, their messages are recorded on the object (each new one once)."""
        for wl in workloads:
            key = self.job_of.get(wl.meta.key)
            job = self.jobs.get(key) if key is not None else None
            if job is None or key is None or not self.suspended.get(key, True) or not wl.is_quota_reserved \
                    or is_external(adapter_of(key)):
                continue
            message = "; ".join(f"{c.name}: {c.message}" for c in wl.status.admission_checks
                                if c.state == CHECK_PENDING and c.message)
            if message and self._check_messages.get(key) != message:
                self._check_messages[key] = message
                self._event(job, "UpdatedAdmissionCheck", message)

    def drain_events(self) -> list[JobEvent]:
        events, self.events = self.events, []
        return events

    def _event(self, job: KindObject, reason: str, message: str) -> None:
        adapter = adapter_of(job)
        self.events.append(JobEvent(job, reason, message, kind=adapter.kind, api_version=adapter.api_version,
                                    component=f"{adapter.framework}-kueue-controller"))

