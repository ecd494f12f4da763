"""A simulated Kubeflow training operator (``kubeflow.org/v1``: PyTorchJob, TFJob, XGBoostJob,
PaddleJob, JAXJob), after kubeflow/training-operator v1, as far as Kueue's examples use it.

What it does, as the operator does it:

- per replica type and index ``i < replicas`` a pod ``<job>-<type lowercased>-<i>`` from the
  replica's template, labelled ``training.kubeflow.org/job-name``, ``operator-name``
  (``pytorchjob-controller``...), ``replica-type`` (lowercased), ``replica-index`` and, on the
  Master/Chief pods, ``job-role: master``; the pod's ``restartPolicy`` is the replica's
  (``ExitCode`` is ``Never`` on the pod), owned by the job (``controller: true``: the garbage
  collector deletes them with it). Pods are created through ``create`` (mkhub dev-cluster passes
  its API, so admission webhooks see them);
- ``spec.runPolicy.suspend``: no pods, running ones deleted, ``startTime`` cleared, condition
  ``Suspended`` (and ``Running`` False); on resume ``Suspended`` turns False and pods are created
  from the (Kueue-injected) templates;
- ``status.replicaStatuses`` (active/succeeded/failed pods per replica type), ``startTime``,
  ``completionTime``, conditions ``Created``, ``Running`` (every pod running or done),
  ``Succeeded``, ``Failed``, with the operator's reasons (``PyTorchJobRunning``...);
- success as the operator decides it: the Master's (TFJob: the Chief's or Master's) pods
  succeeded; without one, every Worker (TFJob: worker 0, or every Worker with
  ``successPolicy: AllWorkers``); a failed pod fails the job; ``runPolicy.cleanPodPolicy``
  (``Running``, ``All``; default ``None``) says which pods go once it finished;
- a job whose ``runPolicy.managedBy`` names another controller (MultiKueue) is left alone.

Pod names are fixed, so a restart of the dev-cluster reconciles from the store and never makes
two pods of one name. Not done (the operator does): Services and the frameworks' environment
(``MASTER_ADDR``, ``TF_CONFIG``...), restarts (``OnFailure``/``ExitCode`` retries,
``backoffLimit``, the ``Restarting`` condition), ``activeDeadlineSeconds``,
``ttlSecondsAfterFinished``, elastic PyTorch, gang scheduling, the webhook's defaults (ports,
default restart policies). Events: one per condition change.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable
from typing import Any

from hub.api.kubeflow_kind import FAMILY, KUBEFLOW_API_VERSION, TRAINING_OPERATOR, KubeflowKind
from hub.obs.events import NORMAL, WARNING, EventRecorder, ObjectRef
from hub.store.interface import AlreadyExists, Conflict, InvalidObject, NotFound, Object, Store

from .apps import RETRY_SECONDS
from .jobs import format_time, pod_ready

log = logging.getLogger(__name__)

PREFIX = "training.kubeflow.org/"
JOB_NAME, OPERATOR_NAME, REPLICA_TYPE, REPLICA_INDEX, JOB_ROLE = (
    PREFIX + n for n in ("job-name", "operator-name", "replica-type", "replica-index", "job-role"))
CREATED, RUNNING, SUCCEEDED, FAILED, SUSPENDED = "Created", "Running", "Succeeded", "Failed", "Suspended"
_LEADS = ("Chief", "Master")

Clock = Callable[[], float]


def pod_name(job: str, type_: str, index: int) -> str:
    return f"{job}-{type_.lower()}-{index}"


def new_pod(job: Object, family: KubeflowKind, type_: str, index: int) -> Object:
    meta = job["metadata"]
    replica = ((job.get("spec") or {}).get(family.replica_field) or {}).get(type_) or {}
    template = replica.get("template") or {}
    tmeta = template.get("metadata") or {}
    labels = {**(tmeta.get("labels") or {}), JOB_NAME: meta["name"], OPERATOR_NAME: f"{family.kind.lower()}-controller",
              REPLICA_TYPE: type_.lower(), REPLICA_INDEX: str(index)}
    if type_ in _LEADS:
        labels[JOB_ROLE] = "master"
    spec = copy.deepcopy(template.get("spec") or {})
    policy = replica.get("restartPolicy") or spec.get("restartPolicy") or "Never"
    spec["restartPolicy"] = "Never" if policy == "ExitCode" else policy
    spec.setdefault("schedulerName", "default-scheduler")
    pod_meta: dict[str, Any] = {
        "name": pod_name(meta["name"], type_, index), "namespace": meta.get("namespace", ""), "labels": labels,
        "ownerReferences": [{"apiVersion": KUBEFLOW_API_VERSION, "kind": family.kind, "name": meta["name"],
                             "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}]}
    if tmeta.get("annotations"):
        pod_meta["annotations"] = dict(tmeta["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec,
            "status": {"phase": "Pending", "qosClass": "BestEffort"}}


def _phase(pod: Object) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _condition(status: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == type_), None)


def _is_true(status: dict[str, Any], type_: str) -> bool:
    c = _condition(status, type_)
    return c is not None and c.get("status") == "True"


def set_condition(status: dict[str, Any], type_: str, value: bool, reason: str, message: str, now: float) -> None:
    """As the operator's updateJobConditions: a new or changed condition goes to the end (its
    State column shows the last one); a False one is only recorded over an existing one."""
    want = "True" if value else "False"
    conds: list[dict[str, Any]] = status.setdefault("conditions", [])
    old = _condition(status, type_)
    if old is not None and old.get("status") == want and old.get("reason") == reason:
        return
    if old is None and not value:
        if not conds:
            status.pop("conditions")
        return
    stamp = format_time(now)
    cond = {"type": type_, "status": want, "reason": reason, "message": message, "lastUpdateTime": stamp,
            "lastTransitionTime": stamp if old is None or old.get("status") != want else old.get("lastTransitionTime", stamp)}
    status["conditions"] = [c for c in conds if c.get("type") != type_] + [cond]


class KubeflowController:
    """Reconciles the jobs of one kind of the family, one at a time."""

    def __init__(self, store: Store, clock: Clock, family: KubeflowKind,
                 create: Callable[[Object], Object] | None = None) -> None:
        self.store = store
        self.clock = clock
        self.family = family
        self.create = create or store.create  # raises AlreadyExists, or InvalidObject when refused
        self.events = EventRecorder(f"{family.kind.lower()}-controller", clock=clock)

    def reconcile_all(self) -> None:
        jobs, _ = self.store.list(self.family.kind)
        for job in jobs:
            self.reconcile(job["metadata"].get("namespace", ""), job["metadata"]["name"])

    def reconcile(self, namespace: str, name: str) -> float | None:
        """Returns when to try again (a pod was refused), else None."""
        for _ in range(5):  # a conflicting writer (Kueue, kubectl) moved the job: read again
            try:
                return self._reconcile(namespace, name)
            except NotFound:
                return None
            except Conflict:
                continue
        return None

    def pods(self, job: Object) -> dict[tuple[str, int], Object]:
        """The job's pods by (replica type as the label has it, index)."""
        meta = job["metadata"]
        found, _ = self.store.list("Pod", meta.get("namespace", ""), f"{JOB_NAME}={meta['name']}")
        out: dict[tuple[str, int], Object] = {}
        for pod in found:
            if not any(r.get("uid") == meta.get("uid") and r.get("controller")
                       for r in pod["metadata"].get("ownerReferences") or []):
                continue
            labels = pod["metadata"].get("labels") or {}
            with contextlib.suppress(ValueError):
                out[(str(labels.get(REPLICA_TYPE, "")), int(labels.get(REPLICA_INDEX, "")))] = pod
        return out

    def _reconcile(self, namespace: str, name: str) -> float | None:
        job = self.store.get(self.family.kind, namespace, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return None
        spec = job.get("spec") or {}
        run_policy = spec.get("runPolicy") or {}
        if run_policy.get("managedBy") not in (None, "", TRAINING_OPERATOR):
            return None
        now, kind, key = self.clock(), self.family.kind, f"{namespace}/{name}"
        status: dict[str, Any] = copy.deepcopy(job.get("status") or {})
        replicas = {t: max(int(rs.get("replicas", 1) or 0), 0)
                    for t, rs in (spec.get(self.family.replica_field) or {}).items() if isinstance(rs, dict)}
        pods = self.pods(job)
        set_condition(status, CREATED, True, f"{kind}Created", f"{kind} {name} is created.", now)
        retry: float | None = None
        if _is_true(status, SUCCEEDED) or _is_true(status, FAILED):
            self._clean(run_policy, pods)
        elif run_policy.get("suspend"):
            self._delete(list(pods.values()))
            pods = {}
            status.pop("startTime", None)
            set_condition(status, RUNNING, False, f"{kind}Suspended", f"{kind} {name} is suspended.", now)
            set_condition(status, SUSPENDED, True, f"{kind}Suspended", f"{kind} {name} is suspended.", now)
        else:
            set_condition(status, SUSPENDED, False, f"{kind}Resumed", f"{kind} {key} is resumed.", now)
            status.setdefault("startTime", format_time(now))
            retry = self._create_missing(job, replicas, pods)
            self._judge(job, status, replicas, pods, now)
        status["replicaStatuses"] = self._counts(replicas, pods)
        if status != (job.get("status") or {}):
            self.store.update_status({**job, "status": status})
            self._events(job, status, now)
        return retry

    def _create_missing(self, job: Object, replicas: dict[str, int], pods: dict[tuple[str, int], Object]) -> float | None:
        for type_, count in replicas.items():
            for index in range(count):
                if (type_.lower(), index) in pods:
                    continue
                try:
                    pods[(type_.lower(), index)] = self.create(new_pod(job, self.family, type_, index))
                except AlreadyExists:  # written before a crash: it stays
                    continue
                except InvalidObject as exc:  # refused (a webhook): tried again shortly
                    log.warning("%s %s: pod refused: %s", self.family.kind, job["metadata"]["name"], exc)
                    return self.clock() + RETRY_SECONDS
        return None

    def _judge(self, job: Object, status: dict[str, Any], replicas: dict[str, int],
               pods: dict[tuple[str, int], Object], now: float) -> None:
        kind, name = self.family.kind, job["metadata"]["name"]
        key = f"{job['metadata'].get('namespace', '')}/{name}"
        failed = sorted({t for t in replicas for (pt, _), pod in pods.items() if pt == t.lower() and _phase(pod) == "Failed"})
        if failed:
            message = f"{kind} {key} has failed because {failed[0]} replica(s) failed."
            self._finish(status, FAILED, f"{kind}Failed", message, now)
            return
        if self._succeeded(job, replicas, pods):
            self._finish(status, SUCCEEDED, f"{kind}Succeeded", f"{kind} {key} successfully completed.", now)
            return
        expected = sum(replicas.values())
        up = sum(1 for pod in pods.values() if (_phase(pod) == "Running" and pod_ready(pod)) or _phase(pod) == "Succeeded")
        if expected and up >= expected:
            set_condition(status, RUNNING, True, f"{kind}Running", f"{kind} {key} is running.", now)

    def _succeeded(self, job: Object, replicas: dict[str, int], pods: dict[tuple[str, int], Object]) -> bool:
        def done(type_: str, indexes: range) -> bool:
            return all(_phase(pods.get((type_.lower(), i)) or {}) == "Succeeded" for i in indexes)

        lead = next((t for t in _LEADS if replicas.get(t)), None)
        if lead is not None:
            return done(lead, range(replicas[lead]))
        workers = replicas.get("Worker", 0)
        if not workers:
            return False
        all_workers = ((job.get("spec") or {}).get("successPolicy") or "") == "AllWorkers"
        if self.family.kind == "TFJob" and not all_workers:
            return done("Worker", range(1))  # the operator's default: worker 0 decides
        return done("Worker", range(workers))

    def _finish(self, status: dict[str, Any], type_: str, reason: str, message: str, now: float) -> None:
        running = _condition(status, RUNNING)
        if running is not None and running.get("status") == "True":  # False in place, its reason and message kept
            running.update(status="False", lastUpdateTime=format_time(now), lastTransitionTime=format_time(now))
        set_condition(status, type_, True, reason, message, now)
        status["completionTime"] = format_time(now)

    def _counts(self, replicas: dict[str, int], pods: dict[tuple[str, int], Object]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for type_ in replicas:
            counts = {"active": 0, "succeeded": 0, "failed": 0}
            for (pt, _), pod in pods.items():
                if pt == type_.lower():
                    phase = _phase(pod)
                    counts["succeeded" if phase == "Succeeded" else "failed" if phase == "Failed" else "active"] += 1
            out[type_] = {k: v for k, v in counts.items() if v}  # omitempty, as the operator writes them
        return out

    def _clean(self, run_policy: dict[str, Any], pods: dict[tuple[str, int], Object]) -> None:
        policy = run_policy.get("cleanPodPolicy") or "None"
        if policy == "All":
            self._delete(list(pods.values()))
        elif policy == "Running":
            self._delete([p for p in pods.values() if _phase(p) not in ("Succeeded", "Failed")])

    def _delete(self, pods: list[Object]) -> None:
        for pod in pods:
            with contextlib.suppress(NotFound):
                self.store.delete("Pod", pod["metadata"].get("namespace", ""), pod["metadata"]["name"])

    def _events(self, job: Object, status: dict[str, Any], now: float) -> None:
        before = {c.get("type"): c for c in (job.get("status") or {}).get("conditions") or []}
        meta = job["metadata"]
        ref = ObjectRef(self.family.kind, meta.get("namespace", ""), meta["name"], meta.get("uid", ""), KUBEFLOW_API_VERSION)
        for c in status.get("conditions") or []:
            old = before.get(c["type"]) or {}
            if (old.get("status"), old.get("reason")) != (c["status"], c["reason"]) and c["status"] == "True":
                self.events.record(ref, WARNING if c["type"] == FAILED else NORMAL, c["reason"], c["message"], now)
        self.events.flush(self.store)


def controllers(store: Store, clock: Clock, create: Callable[[Object], Object] | None = None) -> dict[str, KubeflowController]:
    """The operator's controllers by kind, for the dev-cluster's owner controllers."""
    return {kind: KubeflowController(store, clock, family, create) for kind, family in FAMILY.items()}
