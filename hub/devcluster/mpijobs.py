"""A simulated MPI operator (``kubeflow.org/v2beta1`` MPIJob), after kubeflow/mpi-operator's v2
controller, as far as Kueue's examples use it.

What it does, as the real operator does it:

- worker Pods ``<job>-worker-<i>`` (``i < Worker.replicas``) from the Worker template, and the
  launcher as a ``batch/v1`` Job ``<job>-launcher`` (one pod, ``backoffLimit`` and
  ``activeDeadlineSeconds`` from ``runPolicy``) that the dev-cluster's Job controller runs; all
  owned by the MPIJob (``controller: true``: the garbage collector deletes them with it), with
  the operator's labels (``training.kubeflow.org/job-name``, ``operator-name``, ``job-role``,
  ``replica-type``, ``replica-index``), the pods' ``hostname`` and ``subdomain`` (the job's name)
  and ``restartPolicy`` from the replica spec (Launcher OnFailure, Worker Never by default);
- ``launcherCreationPolicy``: ``AtStartup`` (the operator's default) creates the launcher with
  the workers, ``WaitForWorkersReady`` once every worker pod is ready;
- ``runPolicy.suspend``: no workers (those running are deleted), the launcher Job created or
  kept suspended; on resume the launcher's pod template gets what Kueue merged into the
  MPIJob's Launcher template (labels, annotations, nodeSelector, tolerations, schedulingGates)
  and is unsuspended; conditions ``Suspended`` (``MPIJobSuspended`` / ``MPIJobResumed``);
- success and failure are the launcher Job's: ``Succeeded`` (``MPIJobSucceeded``) or ``Failed``
  (``MPIJobFailed``), ``Running`` False, ``completionTime``; then ``cleanPodPolicy`` (Running:
  the running workers are deleted, All: every worker, None: none);
- ``Created`` at first sight, ``Running`` once the launcher pod and every worker run;
  ``status.replicaStatuses`` (active/succeeded/failed per replica type), ``startTime``;
- an MPIJob whose ``runPolicy.managedBy`` names another controller (MultiKueue) is left alone.

Names are fixed, so a restart of the dev-cluster reconciles from the store and never makes
two of one (a create that finds one is a no-op).

Not done (the real operator does): the ConfigMap with the hostfile, the SSH Secret and the
headless Service, ``runLauncherAsWorker``, ``ttlSecondsAfterFinished``, Events, and restarting
failed workers.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from typing import Any

from hub.store.interface import AlreadyExists, Conflict, NotFound, Object, Store

from .jobs import COMPLETE, FAILED, condition_true, format_time, pod_ready
from .jobsets import resumed_child

MPIJOB_API_VERSION, MPIJOB_KIND = "kubeflow.org/v2beta1", "MPIJob"
CONTROLLER_NAME = "kubeflow.org/mpi-operator"
OPERATOR_NAME = "mpi-operator"
PREFIX = "training.kubeflow.org/"
JOB_NAME, OPERATOR, JOB_ROLE = PREFIX + "job-name", PREFIX + "operator-name", PREFIX + "job-role"
REPLICA_TYPE, REPLICA_INDEX = PREFIX + "replica-type", PREFIX + "replica-index"
CREATED, RUNNING, SUCCEEDED, SUSPENDED = "Created", "Running", "Succeeded", "Suspended"

Clock = Callable[[], float]


def _spec(job: Object) -> dict[str, Any]:
    return job.get("spec") or {}


def _run_policy(job: Object) -> dict[str, Any]:
    return _spec(job).get("runPolicy") or {}


def _replica(job: Object, type_: str) -> dict[str, Any] | None:
    value = (_spec(job).get("mpiReplicaSpecs") or {}).get(type_)
    return value if isinstance(value, dict) else None


def worker_count(job: Object) -> int:
    worker = _replica(job, "Worker")
    return 0 if worker is None else int(worker.get("replicas") or 0)


def launcher_name(job: Object) -> str:
    return f"{job['metadata']['name']}-launcher"


def worker_name(job: Object, index: int) -> str:
    return f"{job['metadata']['name']}-worker-{index}"


def _owner(job: Object) -> dict[str, Any]:
    meta = job["metadata"]
    return {"apiVersion": MPIJOB_API_VERSION, "kind": MPIJOB_KIND, "name": meta["name"], "uid": meta.get("uid", ""),
            "controller": True, "blockOwnerDeletion": True}


def _labels(job: Object, role: str) -> dict[str, str]:
    return {JOB_NAME: job["metadata"]["name"], OPERATOR: OPERATOR_NAME, JOB_ROLE: role, REPLICA_TYPE: role}


def _pod_template(job: Object, type_: str, name: str, extra: dict[str, str]) -> dict[str, Any]:
    """The replica's pod template with the operator's labels, hostname, subdomain and restartPolicy."""
    replica = _replica(job, type_) or {}
    template = copy.deepcopy(replica.get("template") or {})
    meta = template.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **_labels(job, type_.lower()), **extra}
    spec = template.setdefault("spec", {})
    spec["hostname"] = name
    spec["subdomain"] = job["metadata"]["name"]  # the operator's headless Service (not made here)
    spec.setdefault("restartPolicy", replica.get("restartPolicy") or ("OnFailure" if type_ == "Launcher" else "Never"))
    return template


def new_worker(job: Object, index: int) -> Object:
    name = worker_name(job, index)
    template = _pod_template(job, "Worker", name, {REPLICA_INDEX: str(index)})
    meta = {"name": name, "namespace": job["metadata"].get("namespace", ""), "ownerReferences": [_owner(job)],
            **{k: v for k, v in template["metadata"].items() if k in ("labels", "annotations")}}
    spec = template["spec"]
    spec.setdefault("schedulerName", "default-scheduler")
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": "Pending", "qosClass": "BestEffort"}}


def new_launcher(job: Object) -> Object:
    name = launcher_name(job)
    template = _pod_template(job, "Launcher", name, {REPLICA_INDEX: "0"})
    meta = {"name": name, "namespace": job["metadata"].get("namespace", ""), "ownerReferences": [_owner(job)],
            "labels": _labels(job, "launcher")}
    if (template.get("metadata") or {}).get("annotations"):
        meta["annotations"] = dict(template["metadata"]["annotations"])  # mkhub.dev/sim-duration reaches the pod
    policy = _run_policy(job)
    spec: dict[str, Any] = {"parallelism": 1, "completions": 1, "template": template,
                            "suspend": bool(policy.get("suspend")),
                            "backoffLimit": int(policy["backoffLimit"]) if policy.get("backoffLimit") is not None else 6}
    if policy.get("activeDeadlineSeconds") is not None:
        spec["activeDeadlineSeconds"] = policy["activeDeadlineSeconds"]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


def set_condition(status: dict[str, Any], type_: str, value: str, reason: str, message: str, now: float) -> None:
    """A kubeflow JobCondition: a False condition is only recorded over an existing one;
    lastTransitionTime moves when the status changes."""
    conds: list[dict[str, Any]] = status.setdefault("conditions", [])
    stamp = format_time(now)
    for c in conds:
        if c.get("type") == type_:
            if c.get("status") != value:
                c.update(status=value, reason=reason, message=message, lastUpdateTime=stamp, lastTransitionTime=stamp)
            return
    if value == "True":
        conds.append({"type": type_, "status": value, "reason": reason, "message": message,
                      "lastUpdateTime": stamp, "lastTransitionTime": stamp})
    if not conds:
        status.pop("conditions")


class MPIJobController:
    """Reconciles one MPIJob at a time (no timers: every change it waits for is an event)."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    def reconcile_all(self) -> None:
        jobs, _ = self.store.list(MPIJOB_KIND)
        for job in jobs:
            self.reconcile(job["metadata"].get("namespace", ""), job["metadata"]["name"])

    def reconcile(self, namespace: str, name: str) -> None:
        for _ in range(5):  # a conflicting writer (Kueue, kubectl) moved the MPIJob: read again
            try:
                self._reconcile(namespace, name)
                return
            except NotFound:
                return
            except Conflict:
                continue

    def _owned(self, job: Object, kind: str) -> list[Object]:
        objs, _ = self.store.list(kind, job["metadata"].get("namespace", ""), f"{JOB_NAME}={job['metadata']['name']}")
        uid = job["metadata"].get("uid")
        return [o for o in objs if any(r.get("uid") == uid and r.get("controller")
                                       for r in o["metadata"].get("ownerReferences") or [])]

    def _reconcile(self, namespace: str, name: str) -> None:
        job = self.store.get(MPIJOB_KIND, namespace, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return
        if _run_policy(job).get("managedBy") not in (None, "", CONTROLLER_NAME):
            return
        now = self.clock()
        status: dict[str, Any] = copy.deepcopy(job.get("status") or {})
        ref = f"MPIJob {namespace}/{name}"
        set_condition(status, CREATED, "True", "MPIJobCreated", f"{ref} is created.", now)
        workers = {p["metadata"]["name"]: p for p in self._owned(job, "Pod")}
        launcher = next((j for j in self._owned(job, "Job") if j["metadata"]["name"] == launcher_name(job)), None)
        with self.store.batch():
            if condition_true(status, SUCCEEDED) or condition_true(status, FAILED):
                pass  # finished: nothing runs again
            elif launcher is not None and condition_true(launcher.get("status") or {}, COMPLETE):
                self._finish(job, status, list(workers.values()), True, f"{ref} successfully completed.", now)
            elif launcher is not None and condition_true(launcher.get("status") or {}, FAILED):
                self._finish(job, status, list(workers.values()), False, f"{ref} has failed", now)
            elif _run_policy(job).get("suspend"):
                self._suspend(job, status, workers, launcher, now)
            else:
                launcher = self._run(job, status, workers, launcher, now)
            status["replicaStatuses"] = self._replica_statuses(job, list(workers.values()), launcher)
            if status != (job.get("status") or {}):
                self.store.update_status({**job, "status": status})

    def _run(self, job: Object, status: dict[str, Any], workers: dict[str, Object], launcher: Object | None,
             now: float) -> Object | None:
        ref = f"MPIJob {job['metadata'].get('namespace', '')}/{job['metadata']['name']}"
        if any(c.get("type") == SUSPENDED for c in status.get("conditions") or []):
            set_condition(status, SUSPENDED, "False", "MPIJobResumed", "MPIJob resumed", now)
        status.setdefault("startTime", format_time(now))
        for index in range(worker_count(job)):
            name = worker_name(job, index)
            if name not in workers:
                with contextlib.suppress(AlreadyExists):  # written before a crash: it stays
                    workers[name] = self.store.create(new_worker(job, index))
        ready = all(pod_ready(p) for p in workers.values()) and len(workers) >= worker_count(job)
        wait = _spec(job).get("launcherCreationPolicy") == "WaitForWorkersReady"
        if launcher is None and (ready or not wait):
            with contextlib.suppress(AlreadyExists):
                launcher = self.store.create(new_launcher(job))
        elif launcher is not None and (launcher.get("spec") or {}).get("suspend"):
            source = (_replica(job, "Launcher") or {}).get("template") or {}
            launcher = self.store.update(resumed_child(launcher, {"template": {"spec": {"template": source}}}))
        if launcher is not None and ready and self._launcher_running(launcher):
            set_condition(status, RUNNING, "True", "MPIJobRunning", f"{ref} is running.", now)
        return launcher

    def _launcher_running(self, launcher: Object) -> bool:
        st = launcher.get("status") or {}
        return int(st.get("active") or 0) > 0 and int(st.get("ready") or 0) > 0

    def _suspend(self, job: Object, status: dict[str, Any], workers: dict[str, Object], launcher: Object | None,
                 now: float) -> None:
        self._delete(list(workers.values()))
        workers.clear()
        if launcher is None:
            with contextlib.suppress(AlreadyExists):
                self.store.create(new_launcher(job))  # suspended, as the operator creates it for a suspended job
        elif not (launcher.get("spec") or {}).get("suspend"):
            self.store.update({**launcher, "spec": {**launcher["spec"], "suspend": True}})
        status.pop("startTime", None)
        set_condition(status, SUSPENDED, "True", "MPIJobSuspended", "MPIJob suspended", now)
        set_condition(status, RUNNING, "False", "MPIJobSuspended", "MPIJob suspended", now)

    def _finish(self, job: Object, status: dict[str, Any], workers: list[Object], ok: bool, message: str,
                now: float) -> None:
        reason = "MPIJobSucceeded" if ok else "MPIJobFailed"
        set_condition(status, RUNNING, "False", reason, message, now)
        set_condition(status, SUCCEEDED if ok else FAILED, "True", reason, message, now)
        status["completionTime"] = format_time(now)
        policy = _run_policy(job).get("cleanPodPolicy") or "None"
        if policy == "All":
            self._delete(workers)
        elif policy == "Running":
            self._delete([p for p in workers if (p.get("status") or {}).get("phase") in ("Pending", "Running")])

    @staticmethod
    def _replica_statuses(job: Object, workers: list[Object], launcher: Object | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if _replica(job, "Launcher") is not None:
            st = (launcher or {}).get("status") or {}
            out["Launcher"] = {k: int(st[k]) for k in ("active", "succeeded", "failed") if st.get(k)}
        if _replica(job, "Worker") is not None:
            phases = [(p.get("status") or {}).get("phase") for p in workers]
            counts = {"active": phases.count("Running"), "succeeded": phases.count("Succeeded"),
                      "failed": phases.count("Failed")}
            out["Worker"] = {k: v for k, v in counts.items() if v}
        return out

    def _delete(self, pods: list[Object]) -> None:
        for pod in pods:
            with contextlib.suppress(NotFound):
                self.store.delete("Pod", pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
