"""A minimal batch/v1 Job controller over the Store, after Kubernetes' pkg/controller/job.

What it does, as the real controller does it:

- an unsuspended Job gets ``min(parallelism, completions - succeeded)`` active pods
  (``parallelism`` when ``completions`` is unset, until one pod succeeds), named
  ``<job>-<5 random characters>``, labelled ``batch.kubernetes.io/job-name`` and
  ``batch.kubernetes.io/controller-uid`` (and the legacy ``job-name``/``controller-uid``),
  owned by the Job (``controller: true``) and holding the
  ``batch.kubernetes.io/job-tracking`` finalizer until their end is counted;
- finished pods are counted into ``status.succeeded``/``status.failed`` and their
  finalizer removed in the same store transaction, so a crash never counts one twice;
- ``status.startTime`` is set when the Job first runs and reset when it is resumed;
  ``status.active``/``ready``/``terminating`` follow the pods;
- ``spec.suspend``: active pods are deleted (not counted as failures) and the
  ``Suspended`` condition is True (``JobSuspended``/``Job suspended``); resuming sets it
  False (``JobResumed``/``Job resumed``);
- success: ``SuccessCriteriaMet`` then ``Complete`` (reason ``CompletionsReached``),
  ``status.completionTime``; failure past ``backoffLimit`` (default 6): ``FailureTarget``
  and ``Failed`` (``BackoffLimitExceeded``); past ``activeDeadlineSeconds``:
  (``DeadlineExceeded``), active pods deleted;
- a Job whose ``spec.managedBy`` names another controller (MultiKueue) is left alone.

Not done: Indexed completion mode (treated as NonIndexed), pod failure and success
policies, the failed-pod backoff delay, ``ttlSecondsAfterFinished``.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from typing import Any

from hub.api.meta import format_time as _format_time
from hub.api.meta import parse_time
from hub.store.interface import Conflict, NotFound, Object, Store

from .job_pods import CONTROLLER_UID_LABEL, PodIndex, controller_uid, not_newer

CONTROLLER_NAME = "kubernetes.io/job-controller"
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL = "job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
DEFAULT_BACKOFF_LIMIT = 6

COMPLETE, FAILED, SUSPENDED = "Complete", "Failed", "Suspended"
SUCCESS_CRITERIA_MET, FAILURE_TARGET = "SuccessCriteriaMet", "FailureTarget"
FINISHED_PHASES = ("Succeeded", "Failed")

Clock = Callable[[], float]


def format_time(t: float) -> str:
    """metav1.Time: RFC 3339 in whole seconds, as the API server writes it."""
    return _format_time(float(int(t)))


def _conditions(status: dict[str, Any]) -> list[dict[str, Any]]:
    conds = status.setdefault("conditions", [])
    assert isinstance(conds, list)
    return conds


def condition_true(status: dict[str, Any], type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in status.get("conditions") or [])


def set_condition(status: dict[str, Any], type_: str, value: str, reason: str, message: str, now: float) -> None:
    """Add or update a JobCondition; lastTransitionTime moves only when the status changes."""
    conds = _conditions(status)
    stamp = format_time(now)
    for c in conds:
        if c.get("type") == type_:
            if c.get("status") != value:
                c["lastTransitionTime"] = stamp
            c.update(status=value, reason=reason, message=message, lastProbeTime=stamp)
            return
    conds.append({"type": type_, "status": value, "reason": reason, "message": message,
                  "lastProbeTime": stamp, "lastTransitionTime": stamp})


def is_finished(job: Object) -> bool:
    status = job.get("status") or {}
    return condition_true(status, COMPLETE) or condition_true(status, FAILED)


def managed_elsewhere(job: Object) -> bool:
    """``spec.managedBy`` names another controller (MultiKueue's): the Job is not this controller's to sync."""
    return (job.get("spec") or {}).get("managedBy") not in (None, "", CONTROLLER_NAME)


def pod_ready(pod: Object) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def job_pods(store: Store, namespace: str, uid: str) -> list[Object]:
    """The Job's pods, listed by their controller-uid label."""
    return store.list("Pod", namespace, f"{CONTROLLER_UID_LABEL}={uid}")[0]


class JobController:
    """Reconciles one Job at a time; :meth:`reconcile` returns when it needs to look again
    (the active deadline), or None."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        # Per Job, from its last completed sync: the Job's version it read or wrote, and the version of each pod
        # it read or created (see :meth:`acted_on`, :meth:`saw_pod`).
        self.seen: dict[tuple[str, str], tuple[int, dict[str, int]]] = {}
        # The pods by controller-uid, kept by the dev-cluster from its watch (None: each sync lists them).
        self.pods: PodIndex | None = None

    def acted_on(self, namespace: str, name: str, resource_version: str) -> bool:
        """Whether a Job event is no newer than the version the last sync read or wrote (its status write
        succeeded against the version read, which held every earlier change): that sync armed the Job's
        timer, and its pods' changes come as Pod events. Such an event (most often the echo of the
        controller's own status write) needs no sync."""
        seen = self.seen.get((namespace, name))
        return not_newer(resource_version, None if seen is None else seen[0])

    def saw_pod(self, namespace: str, name: str, pod: str, resource_version: str) -> bool:
        """Whether a change of the Job's pod ``pod`` is no newer than what the last sync read of it or
        created: the pod's own creation, the kubelet's writes of a pod started before the Job's sync."""
        seen = self.seen.get((namespace, name))
        return seen is not None and not_newer(resource_version, seen[1].get(pod))

    def forget(self, namespace: str, name: str) -> None:
        self.seen.pop((namespace, name), None)

    def reconcile_all(self) -> float | None:
        jobs, _ = self.store.list("Job")
        due = [self.reconcile(j["metadata"].get("namespace", ""), j["metadata"]["name"]) for j in jobs]
        return min((d for d in due if d is not None), default=None)

    def reconcile(self, namespace: str, name: str) -> float | None:
        for _ in range(5):  # a conflicting writer (the hub, kubectl) moved the Job: read again
            try:
                return self._reconcile(namespace, name)
            except NotFound:
                return None
            except Conflict:
                continue
        return None

    def _reconcile(self, namespace: str, name: str) -> float | None:
        job = self.store.get("Job", namespace, name)
        if job is None:
            return None
        meta, spec = job["metadata"], job.get("spec") or {}
        if meta.get("deletionTimestamp"):
            return None
        if managed_elsewhere(job):
            return None
        now = self.clock()
        uid = meta["uid"]
        status: dict[str, Any] = copy.deepcopy(job.get("status") or {})
        pods = self.pods_of(namespace, uid)
        read = {p["metadata"]["name"]: int(p["metadata"]["resourceVersion"]) for p in pods}
        version = int(meta["resourceVersion"])
        with self.store.batch():
            self._count_finished(pods, status)
            active = [p for p in pods if not _done(p)]
            due: float | None = None
            if is_finished(job):
                self._delete_pods(active)
                active = []
            elif spec.get("suspend"):
                self._delete_pods(active)
                active = []
                if not condition_true(status, SUSPENDED):
                    set_condition(status, SUSPENDED, "True", "JobSuspended", "Job suspended", now)
            else:
                active, due = self._run(job, status, active, now, read)
            status["active"] = len(active)
            status["ready"] = sum(1 for p in active if pod_ready(p))
            status["terminating"] = 0
            status.setdefault("succeeded", 0)
            status.setdefault("failed", 0)
            status["uncountedTerminatedPods"] = {}
            for key in ("active", "succeeded", "failed"):  # omitted when zero, as the API writes them
                if not status[key]:
                    status.pop(key)
            if status != (job.get("status") or {}):
                version = int(self.store.update_status({**job, "status": status})["metadata"]["resourceVersion"])
        # Only once committed: a rolled-back write's version may be given again.
        self.seen[(namespace, name)] = (version, read)
        return due

    def pods_of(self, namespace: str, uid: str) -> list[Object]:
        """The pods the selector of the Job with ``uid`` matches, each as read now: the index's candidates,
        each read and the selector applied to it, or (no index) a list."""
        if self.pods is None:
            return job_pods(self.store, namespace, uid)
        out = []
        for name in self.pods.names(namespace, uid):
            pod = self.store.get("Pod", namespace, name)
            if pod is None:
                self.pods.drop(namespace, name)  # its DELETED event is still to come
            elif controller_uid(pod) == uid:
                out.append(pod)
        return out

    def _count_finished(self, pods: list[Object], status: dict[str, Any]) -> None:
        for pod in pods:
            phase = (pod.get("status") or {}).get("phase")
            finalizers = pod["metadata"].get("finalizers") or []
            if phase in FINISHED_PHASES and TRACKING_FINALIZER in finalizers:
                key = "succeeded" if phase == "Succeeded" else "failed"
                status[key] = int(status.get(key) or 0) + 1
                self._release(pod)

    def _release(self, pod: Object) -> None:
        meta = dict(pod["metadata"])
        meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != TRACKING_FINALIZER]
        if not meta["finalizers"]:
            del meta["finalizers"]
        with contextlib.suppress(NotFound):
            self.store.update({**pod, "metadata": meta})

    def _delete_pods(self, pods: list[Object]) -> None:
        """Pods the controller removes (suspension, excess, a finished Job): gone at once,
        and not counted as failures."""
        for pod in pods:
            self._release(pod)
            with contextlib.suppress(NotFound):
                self.store.delete("Pod", pod["metadata"].get("namespace", ""), pod["metadata"]["name"])

    def _run(self, job: Object, status: dict[str, Any], active: list[Object], now: float,
             read: dict[str, int]) -> tuple[list[Object], float | None]:
        spec = job.get("spec") or {}
        if condition_true(status, SUSPENDED):
            set_condition(status, SUSPENDED, "False", "JobResumed", "Job resumed", now)
            status["startTime"] = format_time(now)  # the active deadline starts again
        status.setdefault("startTime", format_time(now))
        succeeded = int(status.get("succeeded") or 0)
        failed = int(status.get("failed") or 0)
        backoff_limit = spec.get("backoffLimit")
        backoff_limit = DEFAULT_BACKOFF_LIMIT if backoff_limit is None else int(backoff_limit)
        deadline = spec.get("activeDeadlineSeconds")
        ends_at = parse_time(status["startTime"]) + int(deadline) if deadline is not None else None
        completions = spec.get("completions")
        parallelism = spec.get("parallelism")
        parallelism = 1 if parallelism is None else int(parallelism)
        failure = None
        if failed > backoff_limit:
            failure = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
        elif ends_at is not None and now >= ends_at:
            failure = ("DeadlineExceeded", "Job was active longer than specified deadline")
        if failure is not None:
            self._delete_pods(active)
            set_condition(status, FAILURE_TARGET, "True", *failure, now)
            set_condition(status, FAILED, "True", *failure, now)
            return [], None
        done = succeeded >= int(completions) if completions is not None else succeeded >= 1 and not active
        if done:
            self._delete_pods(active)
            message = "Reached expected number of succeeded pods"
            set_condition(status, SUCCESS_CRITERIA_MET, "True", "CompletionsReached", message, now)
            set_condition(status, COMPLETE, "True", "CompletionsReached", message, now)
            status["completionTime"] = format_time(now)
            return [], None
        if completions is not None:
            want = max(0, min(parallelism, int(completions) - succeeded))
        else:
            want = 0 if succeeded else parallelism
        if len(active) > want:
            # As the real controller: drop the pods least far along first (unscheduled, not ready, newest).
            ranked = sorted(active, key=_progress)
            self._delete_pods(ranked[: len(active) - want])
            active = ranked[len(active) - want:]
        for _ in range(want - len(active)):
            pod = self.store.create(new_pod(job))
            active.append(pod)
            read[pod["metadata"]["name"]] = int(pod["metadata"]["resourceVersion"])  # its ADDED event: nothing new
            if self.pods is not None:
                self.pods.put(pod)
        return active, ends_at


def _done(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in FINISHED_PHASES or bool(pod["metadata"].get("deletionTimestamp"))


def _progress(pod: Object) -> tuple[int, int, str]:
    bound = 1 if (pod.get("spec") or {}).get("nodeName") else 0
    return (bound, 1 if pod_ready(pod) else 0, "~" + str(pod["metadata"].get("creationTimestamp", "")))


def new_pod(job: Object) -> Object:
    """A pod of ``job`` from its template, as the Job controller creates it."""
    meta = job["metadata"]
    template = (job.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata") or {}
    name, uid = meta["name"], meta["uid"]
    labels = {
        **(tmeta.get("labels") or {}),
        CONTROLLER_UID_LABEL: uid,
        JOB_NAME_LABEL: name,
        LEGACY_CONTROLLER_UID_LABEL: uid,
        LEGACY_JOB_NAME_LABEL: name,
    }
    pod_meta: dict[str, Any] = {
        "generateName": f"{name}-",
        "namespace": meta.get("namespace", ""),
        "labels": labels,
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": uid,
                             "controller": True, "blockOwnerDeletion": True}],
        "finalizers": [TRACKING_FINALIZER],
    }
    if tmeta.get("annotations"):
        pod_meta["annotations"] = dict(tmeta["annotations"])
    spec = copy.deepcopy(template.get("spec") or {})
    spec.setdefault("restartPolicy", "Never")
    spec.setdefault("schedulerName", "default-scheduler")
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec,
            "status": {"phase": "Pending", "qosClass": "BestEffort"}}
