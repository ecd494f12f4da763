"""The agent's runner on a Kubernetes worker: a won copy runs as its kind's object there (a
``batch/v1`` Job, a JobSet...: any kind on the job framework, :mod:`hub.api.jobkinds`).

On Start (the :class:`worker_agent.runner.StartGate` lets the copy through) the
object is created from the manifest the hub sent, as Kueue's MultiKueue creates
it in a worker: same kind, namespace and name as the manager's, the origin label
(``kueue.x-k8s.io/multikueue-origin``) and the prebuilt-workload label naming
the local copy, no ``managedBy`` (so the worker's controller of the kind runs it),
unsuspended, with the admitted flavors' ``nodeSelector`` and tolerations in the
pod templates (the adapter's ``worker_copy`` and ``run_with_pod_sets_info``), and for a pod
set the local admission placed by TAS the topology gate, the Workload and pod set names, as the
worker's Kueue puts them (its pods are ungated by :mod:`worker_agent.kube.tas`). Its
status (from the store's watch) becomes the runner's reports: ``ready`` once its
pods run, ``succeeded`` / ``failed`` when the adapter reads an outcome. Stopping a
copy deletes the object (pods go in the background). A copy without an object (a
bare hub Workload) runs on simulated pods. Objects are named ``Kind:namespace/name``
(a *ref*) here, as the writer keys them.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hub.api.jobkinds import BATCH_JOB, JobAdapter, adapter_of_kind
from hub.api.jobkinds.framework import PodSetInfo, topology_info
from hub.api.others import MULTIKUEUE_ORIGIN_LABEL
from hub.api.workload import Workload
from hub.controllers.cluster import RunnerReport
from hub.controllers.simrunner import SimRunner
from hub.federation.mkwire import DISPATCH_ID_ANNOTATION

from ..runner import Report
from .pods import PREBUILT_WORKLOAD_LABEL, QUEUE_NAME_LABEL, is_pod_list, pods_phase, worker_pods

log = logging.getLogger(__name__)

# Labels and fields the API server or the manager's controllers set; a new object gets its own.
_CONTROLLER_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name")
_SERVER_META = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "ownerReferences",
                "deletionTimestamp", "deletionGracePeriodSeconds", "finalizers")


def job_key_of(job: Mapping[str, Any] | None, default_namespace: str) -> str | None:
    meta = (job or {}).get("metadata") or {}
    if not meta.get("name"):
        return None
    return f"{meta.get('namespace') or default_namespace}/{meta['name']}"


def adapter_of(job: Mapping[str, Any] | None) -> JobAdapter[Any]:
    """The adapter of a manifest's kind (a Job's when it names none: older hubs sent Jobs only)."""
    return adapter_of_kind(str((job or {}).get("kind") or "Job")) or BATCH_JOB


def job_ref(kind: str, job_key: str) -> str:
    """``Kind:namespace/name``: how the runner and the writer name a worker object."""
    return f"{kind}:{job_key}"


def flavor_placement(wl: Workload, flavors: Callable[[str], Mapping[str, Any] | None]) -> dict[str, tuple[dict[str, str], list[Any]]]:
    """Per pod set of the local admission: the nodeSelector and tolerations of its flavors."""
    out: dict[str, tuple[dict[str, str], list[Any]]] = {}
    admission = wl.status.admission
    if admission is None:
        return out
    for psa in admission.pod_set_assignments:
        selector: dict[str, str] = {}
        tolerations: list[Any] = []
        for name in sorted({f for _, f in psa.flavors}):
            spec = (flavors(name) or {}).get("spec") or {}
            selector.update({str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()})
            tolerations.extend(t for t in spec.get("tolerations") or [] if t not in tolerations)
        out[psa.name] = (selector, tolerations)
    return out


def worker_job(job: Mapping[str, Any], wl: Workload, origin: str, placement: Mapping[str, tuple[dict[str, str], list[Any]]]) -> dict[str, Any]:
    """The object to create in the worker from the hub's manifest (see the module docstring)."""
    adapter = adapter_of(job)
    out: dict[str, Any] = copy.deepcopy(dict(job))
    out["apiVersion"], out["kind"] = adapter.api_version, adapter.kind
    meta = out.setdefault("metadata", {})
    for name in _SERVER_META:
        meta.pop(name, None)
    meta.setdefault("namespace", wl.meta.namespace)
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in _CONTROLLER_LABELS and k != QUEUE_NAME_LABEL}
    labels[MULTIKUEUE_ORIGIN_LABEL] = origin
    labels[PREBUILT_WORKLOAD_LABEL] = wl.meta.name
    meta["labels"] = labels
    adapter.worker_copy(out)  # no managedBy: the worker's controller of the kind runs it, unsuspended
    # The local admission into the template, and its count as parallelism when it was partial
    # (the worker's Kueue would run its Job so).
    counts = {psa.name: psa.count for psa in wl.status.admission.pod_set_assignments} if wl.status.admission else {}
    infos = [PodSetInfo(name, counts.get(name, 0), dict(selector), list(tolerations))
             for name, (selector, tolerations) in placement.items()]
    for info in infos:  # placed by TAS: gated pods, ungated into their domains (worker_agent.kube.tas)
        topology_info(info, wl)
    adapter.run_with_pod_sets_info(out, infos, wl.pod_sets)
    out.pop("status", None)
    return out


def job_phase(status: Mapping[str, Any], adapter: JobAdapter[Any] = BATCH_JOB) -> str:
    """"succeeded", "failed", "ready", or "" from an object's status (a Job's unless ``adapter`` says)."""
    outcome = adapter.status_outcome(dict(status))
    if outcome is not None:
        return outcome[0]
    return "ready" if adapter.status_running(dict(status)) else ""


def failure_message(status: Mapping[str, Any], adapter: JobAdapter[Any] = BATCH_JOB) -> str:
    outcome = adapter.status_outcome(dict(status))
    return outcome[1] if outcome is not None and outcome[0] == "failed" else f"{adapter.kind} failed"


@dataclass(frozen=True, slots=True)
class JobWanted:
    manifest: dict[str, Any]


@dataclass(frozen=True, slots=True)
class JobGone:
    keep_logs: bool  # a finished Job: keep its pods' lines before deleting it (mkhub logs)


@dataclass
class Run:
    key: str  # the local Workload
    job_key: str  # namespace/name of the worker object
    kind: str = "Job"  # its kind
    reported: str = ""  # the last report kind sent for it
    status: dict[str, Any] = field(default_factory=dict)  # a Pod copy's: each Pod's, by name
    pods: dict[str, dict[str, Any]] | None = None  # a Pod copy's Pods as last seen, by name (.pods)
    refs: list[str] = field(default_factory=list)  # a Pod copy's worker objects


class KubeJobs:
    """:class:`hub.controllers.cluster.Runner` over the worker's job objects.

    ``job_of(key)`` gives the hub's manifest of a copy's object (None: a bare Workload);
    ``dispatch_of(key)`` the copy's dispatch id, annotated on the object it creates (a restarted
    agent reads that the copy started from it: :mod:`worker_agent.kube.mirror`);
    ``flavor(name)`` a ResourceFlavor object of the worker; ``current_job(ref)`` the worker's
    object; ``desire(ref, state)`` queues writes on the writer threads; ``on_status(key,
    status)`` hears every status change of a running copy's object.
    """

    def __init__(
        self,
        *,
        origin: str,
        job_of: Callable[[str], Mapping[str, Any] | None],
        flavor: Callable[[str], Mapping[str, Any] | None],
        current_job: Callable[[str], Mapping[str, Any] | None],
        desire: Callable[[str, object], None],
        sim: SimRunner,
        dispatch_of: Callable[[str], str] | None = None,
    ) -> None:
        self.origin = origin
        self.job_of = job_of
        self.dispatch_of = dispatch_of
        self.flavor = flavor
        self.current_job = current_job
        self._desire = desire
        self.sim = sim
        self.runs: dict[str, Run] = {}  # local workload key -> its object's run
        self.by_job: dict[str, str] = {}  # worker object ref (Kind:ns/name) -> local workload key
        self.on_status: Callable[[str, dict[str, Any]], None] | None = None
        self._reports: list[RunnerReport] = []
        self.created = 0

    # --- Runner
    def start(self, workload: Workload, now: float) -> None:
        key = workload.meta.key
        job = self.job_of(key)
        if job is None:
            log.info("copy %s has no job object: simulated pods", key)
            self.sim.start(workload, now)
            return
        if is_pod_list(job):
            self._start_pods(workload, job)
            return
        job_key = job_key_of(job, workload.meta.namespace)
        assert job_key is not None
        manifest = worker_job(job, workload, self.origin, flavor_placement(workload, self.flavor))
        did = self.dispatch_of(key) if self.dispatch_of is not None else ""
        if did:
            meta = manifest["metadata"]
            meta["annotations"] = {**(meta.get("annotations") or {}), DISPATCH_ID_ANNOTATION: did}
        ref = job_ref(manifest["kind"], job_key)
        self._track(key, manifest["kind"], job_key)
        existing = self.current_job(ref)
        if existing is not None and ((existing.get("metadata") or {}).get("labels") or {}).get(PREBUILT_WORKLOAD_LABEL) == workload.meta.name:
            self.observe(existing)  # created before a restart: follow it, never create it twice
            return
        self.created += 1
        self._desire(ref, JobWanted(manifest))

    def _start_pods(self, workload: Workload, job: Mapping[str, Any]) -> None:
        """Create the copy's Pods; those a previous process created are followed, never made twice."""
        key = workload.meta.key
        manifests = worker_pods(job, workload, self.origin, flavor_placement(workload, self.flavor))
        run = self.runs[key] = Run(key, key, "Pod", pods={})
        for manifest in manifests:
            meta = manifest["metadata"]
            ref = job_ref("Pod", f"{meta['namespace']}/{meta['name']}")
            run.refs.append(ref)
            self.by_job[ref] = key
        for manifest, ref in zip(manifests, run.refs):
            existing = self.current_job(ref)
            if existing is not None and ((existing.get("metadata") or {}).get("labels") or {}).get(PREBUILT_WORKLOAD_LABEL) == workload.meta.name:
                self.observe(existing)
                continue
            self.created += 1
            self._desire(ref, JobWanted(manifest))

    def grow(self, workload: Workload) -> None:
        """A running Pod copy got more Pods (:meth:`worker_agent.agent.Agent._grow`): create the new
        ones, follow the others."""
        job = self.job_of(workload.meta.key)
        if workload.meta.key in self.runs and is_pod_list(job):
            assert job is not None
            self._start_pods(workload, job)

    def _track(self, key: str, kind: str, job_key: str) -> None:
        self.runs[key] = Run(key, job_key, kind)
        self.by_job[job_ref(kind, job_key)] = key

    def stop(self, key: str, now: float) -> None:
        run = self.runs.pop(key, None)
        if run is None:
            self.sim.stop(key, now)
            return
        for ref in run.refs if run.pods is not None else [job_ref(run.kind, run.job_key)]:
            self.by_job.pop(ref, None)
            self._desire(ref, JobGone(keep_logs=False))
        self._reports.append(Report(key, "stopped"))

    def discard(self, key: str) -> None:
        run = self.runs.pop(key, None)
        if run is None:
            self.sim.discard(key)
            return
        for ref in run.refs if run.pods is not None else [job_ref(run.kind, run.job_key)]:
            self.by_job.pop(ref, None)
            self._desire(ref, JobGone(keep_logs=run.reported in ("succeeded", "failed")))

    def collect(self, ref: str) -> None:
        """Delete an object (``Kind:ns/name``) no copy accounts for (garbage collection)."""
        if ref not in self.by_job:
            self._desire(ref, JobGone(keep_logs=False))

    def poll(self, now: float) -> list[RunnerReport]:
        out = self.sim.poll(now)
        if self._reports:
            out = [*self._reports, *out]
            self._reports = []
        return out

    def next_due(self) -> float | None:
        return self.sim.next_due()

    # --- the watch
    def observe(self, job: Mapping[str, Any]) -> bool:
        """An event of a job object in the worker: report what changed. True if it was one of ours."""
        meta = job.get("metadata") or {}
        key = self.by_job.get(job_ref(str(job.get("kind") or "Job"), f"{meta.get('namespace', '')}/{meta.get('name', '')}"))
        run = self.runs.get(key) if key is not None else None
        if run is None:
            return False
        status = dict(job.get("status") or {})
        if run.pods is not None:  # one of a Pod copy's Pods
            name = str(meta.get("name"))
            if run.status.get(name) == status:
                return True
            run.status[name], run.pods[name] = status, dict(job)
            phase, message = pods_phase(run.status, run.pods, len(run.refs))
        else:
            if status == run.status:
                return True
            run.status = status
            adapter = adapter_of(job)
            phase = job_phase(status, adapter)
            message = failure_message(status, adapter) if phase == "failed" else ""
        if self.on_status is not None:
            self.on_status(run.key, status)
        if phase and phase != run.reported and run.reported not in ("succeeded", "failed"):
            run.reported = phase
            self._reports.append(Report(run.key, phase, message))
        return True

    def status_json(self, key: str) -> str:
        run = self.runs.get(key)
        if run is None or not run.status:
            return ""
        return json.dumps({"pods": run.status} if run.pods is not None else run.status, separators=(",", ":"), sort_keys=True)
