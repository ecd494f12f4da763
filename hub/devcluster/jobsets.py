"""A simulated JobSet controller (``jobset.x-k8s.io/v1alpha2``), after kubernetes-sigs/jobset's,
as far as Kueue's examples use it.

What it does, as the real controller does it:

- for each ``replicatedJobs[i]`` and index ``j < replicas`` a child ``batch/v1`` Job named
  ``<jobset>-<replicatedJob>-<j>``, from the replicatedJob's template, with JobSet's labels and
  annotations on the Job and on its pod template (``jobset.sigs.k8s.io/jobset-name``,
  ``jobset-uid``, ``replicatedjob-name``, ``replicatedjob-replicas``, ``global-replicas``,
  ``job-index``, ``job-global-index``, ``job-key``, ``group-name``, ``group-replicas``,
  ``job-group-index``, ``restart-attempt``), owned by the JobSet (``controller: true``: the
  garbage collector deletes them with it); the dev-cluster's Job controller runs them;
- ``spec.suspend``: children are created suspended and suspended again when the JobSet is; on
  resume each suspended child gets the labels, annotations, nodeSelector, tolerations and
  schedulingGates of its replicatedJob's pod template merged in (what Kueue injects on
  admission) and is unsuspended; condition ``Suspended`` (``SuspendedJobs``/``ResumeJobs``);
- ``status.replicatedJobsStatus`` (ready/succeeded/failed/active/suspended Jobs per
  replicatedJob, in spec order), ``status.restarts``, ``status.terminalState``;
- success by ``successPolicy`` (``All``: every Job of the target replicatedJobs, all when none
  is named; ``Any``: one): condition ``Completed`` (``AllJobsCompleted``), active children
  deleted;
- a failed child: without ``failurePolicy`` the JobSet fails (``FailedJobs``); with one, all
  children are recreated (``status.restarts`` + 1, the old ones, labelled with a lower
  ``restart-attempt``, deleted) until ``maxRestarts``, then ``Failed``
  (``ReachedMaxRestarts``);
- the webhook's defaults that a schema can give are the CRD's (:mod:`.operators`); the
  children's pods get ``restartPolicy: OnFailure`` when the template has none, as the webhook
  sets it;
- a JobSet whose ``spec.managedBy`` names another controller (MultiKueue:
  ``kueue.x-k8s.io/multikueue``) is left alone.

Child names are fixed, so a restart of the dev-cluster reconciles from the store and never
makes two children of one name (a create that finds one is a no-op).

``startupPolicy: InOrder``: the Jobs of a replicatedJob are created (or resumed) only once those
of the ones before it are ready, with the conditions ``StartupPolicyInProgress`` then
``StartupPolicyCompleted``.

Not done (the real controller does): failurePolicy rules and the other restart strategies
(every failure is ``RestartJobSet``), ``dependsOn`` (all replicatedJobs start at once), the
headless Service (``network.enableDNSHostnames``, on by default, only sets the pods'
``subdomain``), coordinator labels, exclusive placement, ``ttlSecondsAfterFinished``, volume
claim policies, the webhook's ``completionMode: Indexed`` default (the Job controller here has
no Indexed mode) and its validation beyond the CRD schema. Events are recorded per condition
change (``jobset-controller``), none for failed creations.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
from collections.abc import Callable
from typing import Any

from hub.obs.events import NORMAL, WARNING, EventRecorder, ObjectRef
from hub.store.interface import AlreadyExists, Conflict, NotFound, Object, Store

from .jobs import COMPLETE, FAILED, condition_true, format_time
from .operators import JOBSET_API_VERSION, JOBSET_KIND

CONTROLLER_NAME = "jobset.sigs.k8s.io/jobset-controller"
PREFIX = "jobset.sigs.k8s.io/"
JOBSET_NAME = PREFIX + "jobset-name"
JOBSET_UID = PREFIX + "jobset-uid"
REPLICATED_JOB_NAME = PREFIX + "replicatedjob-name"
REPLICATED_JOB_REPLICAS = PREFIX + "replicatedjob-replicas"
GLOBAL_REPLICAS = PREFIX + "global-replicas"
JOB_INDEX = PREFIX + "job-index"
JOB_GLOBAL_INDEX = PREFIX + "job-global-index"
JOB_KEY = PREFIX + "job-key"
GROUP_NAME = PREFIX + "group-name"
GROUP_REPLICAS = PREFIX + "group-replicas"
JOB_GROUP_INDEX = PREFIX + "job-group-index"
RESTART_ATTEMPT = PREFIX + "restart-attempt"

COMPLETED, SUSPENDED, RESTARTING = "Completed", "Suspended", "RestartingJobSet"
IN_PROGRESS, STARTUP_COMPLETED = "StartupPolicyInProgress", "StartupPolicyCompleted"

Clock = Callable[[], float]
Condition = tuple[str, str, str, str]  # type, status, reason, message


def _replicated_jobs(js: Object) -> list[dict[str, Any]]:
    return [r for r in (js.get("spec") or {}).get("replicatedJobs") or [] if isinstance(r, dict) and r.get("name")]


def _replicas(rjob: dict[str, Any]) -> int:
    value = rjob.get("replicas")
    return 1 if value is None else int(value)


def _group(rjob: dict[str, Any]) -> str:
    return str(rjob.get("groupName") or "default")


def child_name(jobset: str, rjob: str, index: int) -> str:
    return f"{jobset}-{rjob}-{index}"


def jobset_labels(js: Object, rjob: dict[str, Any], index: int, restarts: int) -> dict[str, str]:
    """JobSet's labels (the same keys are written as annotations) of one child Job and its pods."""
    meta, rjobs = js["metadata"], _replicated_jobs(js)
    name = child_name(meta["name"], rjob["name"], index)
    before = rjobs[: next(i for i, r in enumerate(rjobs) if r["name"] == rjob["name"])]
    same_group = [r for r in rjobs if _group(r) == _group(rjob)]
    in_group_before = [r for r in before if _group(r) == _group(rjob)]
    return {
        JOBSET_NAME: meta["name"],
        JOBSET_UID: str(meta.get("uid", "")),
        REPLICATED_JOB_NAME: rjob["name"],
        RESTART_ATTEMPT: str(restarts),
        REPLICATED_JOB_REPLICAS: str(_replicas(rjob)),
        GLOBAL_REPLICAS: str(sum(_replicas(r) for r in rjobs)),
        JOB_INDEX: str(index),
        JOB_KEY: hashlib.sha1(f"{meta.get('namespace', '')}/{name}".encode()).hexdigest(),
        JOB_GLOBAL_INDEX: str(sum(_replicas(r) for r in before) + index),
        GROUP_NAME: _group(rjob),
        GROUP_REPLICAS: str(sum(_replicas(r) for r in same_group)),
        JOB_GROUP_INDEX: str(sum(_replicas(r) for r in in_group_before) + index),
    }


def _stamp(target: dict[str, Any], stamp: dict[str, str]) -> None:
    target["labels"] = {**(target.get("labels") or {}), **stamp}
    target["annotations"] = {**(target.get("annotations") or {}), **stamp}


def new_child(js: Object, rjob: dict[str, Any], index: int, restarts: int) -> Object:
    """The child Job ``index`` of ``rjob``, as JobSet's constructJob builds it."""
    meta = js["metadata"]
    template = copy.deepcopy(rjob.get("template") or {})
    job_meta: dict[str, Any] = {"name": child_name(meta["name"], rjob["name"], index),
                                "namespace": meta.get("namespace", ""),
                                **{k: dict(v) for k, v in (template.get("metadata") or {}).items()
                                   if k in ("labels", "annotations") and isinstance(v, dict)}}
    stamp = jobset_labels(js, rjob, index, restarts)
    _stamp(job_meta, stamp)
    job_meta["ownerReferences"] = [{"apiVersion": JOBSET_API_VERSION, "kind": JOBSET_KIND, "name": meta["name"],
                                    "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}]
    spec = dict(template.get("spec") or {})
    pod_template = dict(spec.get("template") or {})
    pod_meta = dict(pod_template.get("metadata") or {})
    _stamp(pod_meta, stamp)
    pod_template["metadata"] = pod_meta
    pod_spec = dict(pod_template.get("spec") or {})
    pod_spec.setdefault("restartPolicy", "OnFailure")  # JobSet's webhook default
    network = (js.get("spec") or {}).get("network") or {}
    if network.get("enableDNSHostnames"):  # pods are reachable as <pod hostname>.<subdomain> (no Service here)
        pod_spec["subdomain"] = network.get("subdomain") or meta["name"]
    pod_template["spec"] = pod_spec
    spec["template"] = pod_template
    spec["suspend"] = bool((js.get("spec") or {}).get("suspend"))
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta, "spec": spec}


def _merged_list(current: list[Any], extra: list[Any]) -> list[Any]:
    return current + [item for item in extra if item not in current]


def resumed_child(job: Object, rjob: dict[str, Any]) -> Object:
    """A suspended child unsuspended, with what Kueue set on the JobSet's template while it was
    suspended merged into the child's pod template (JobSet's resumeJob)."""
    source = (rjob.get("template") or {}).get("spec", {}).get("template") or {}
    src_meta, src_spec = source.get("metadata") or {}, source.get("spec") or {}
    spec = copy.deepcopy(job.get("spec") or {})
    template = spec.setdefault("template", {})
    tmeta, tspec = template.setdefault("metadata", {}), template.setdefault("spec", {})
    for key, into, src in (("labels", tmeta, src_meta), ("annotations", tmeta, src_meta), ("nodeSelector", tspec, src_spec)):
        if src.get(key):
            into[key] = {**(into.get(key) or {}), **src[key]}
    for key in ("tolerations", "schedulingGates"):
        if src_spec.get(key):
            tspec[key] = _merged_list(list(tspec.get(key) or []), list(src_spec[key]))
    spec["suspend"] = False
    return {**job, "spec": spec}


def set_condition(status: dict[str, Any], cond: Condition, now: float) -> None:
    """metav1.Condition as JobSet's updateCondition sets it: a False condition is only recorded
    over an existing one; lastTransitionTime moves when the status changes."""
    type_, value, reason, message = cond
    conds: list[dict[str, Any]] = status.setdefault("conditions", [])
    for c in conds:
        if c.get("type") == type_:
            if c.get("status") != value:
                c["lastTransitionTime"] = format_time(now)
            c.update(status=value, reason=reason, message=message)
            return
    if value == "True":
        conds.append({"type": type_, "status": value, "reason": reason, "message": message,
                      "lastTransitionTime": format_time(now)})
    if not conds:
        status.pop("conditions")


def set_exclusive(status: dict[str, Any], cond: Condition, other: str, now: float) -> None:
    """A True condition that turns ``other`` (its mutually exclusive partner) False, as JobSet does."""
    for c in status.get("conditions") or []:
        if c.get("type") == other and c.get("status") == "True":
            c.update(status="False", lastTransitionTime=format_time(now))
    set_condition(status, cond, now)


def _job_state(job: Object) -> str:
    status = job.get("status") or {}
    if condition_true(status, FAILED):
        return "failed"
    return "succeeded" if condition_true(status, COMPLETE) else "active"


class JobSetController:
    """Reconciles one JobSet at a time (no timers: every change it waits for is an event)."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.events = EventRecorder("jobset-controller", clock=clock)

    def reconcile_all(self) -> None:
        jobsets, _ = self.store.list(JOBSET_KIND)
        for js in jobsets:
            self.reconcile(js["metadata"].get("namespace", ""), js["metadata"]["name"])

    def reconcile(self, namespace: str, name: str) -> None:
        for _ in range(5):  # a conflicting writer (Kueue, kubectl) moved the JobSet: read again
            try:
                self._reconcile(namespace, name)
                return
            except NotFound:
                return
            except Conflict:
                continue

    def children(self, js: Object) -> list[Object]:
        jobs, _ = self.store.list("Job", js["metadata"].get("namespace", ""), f"{JOBSET_UID}={js['metadata'].get('uid', '')}")
        uid = js["metadata"].get("uid")
        return [j for j in jobs if any(r.get("uid") == uid and r.get("controller")
                                       for r in j["metadata"].get("ownerReferences") or [])]

    def _reconcile(self, namespace: str, name: str) -> None:
        js = self.store.get(JOBSET_KIND, namespace, name)
        if js is None or js["metadata"].get("deletionTimestamp"):
            return
        spec = js.get("spec") or {}
        if spec.get("managedBy") not in (None, "", CONTROLLER_NAME):
            return
        now = self.clock()
        status: dict[str, Any] = copy.deepcopy(js.get("status") or {})
        restarts = int(status.get("restarts") or 0)
        current: list[Object] = []
        previous: list[Object] = []
        for job in self.children(js):
            attempt = (job["metadata"].get("labels") or {}).get(RESTART_ATTEMPT, "")
            (current if attempt.isdigit() and int(attempt) >= restarts else previous).append(job)
        by_state: dict[str, list[Object]] = {"active": [], "succeeded": [], "failed": []}
        for job in current:
            by_state[_job_state(job)].append(job)
        status["replicatedJobsStatus"] = self._counts(js, by_state)
        with self.store.batch():
            if condition_true(status, COMPLETED) or condition_true(status, FAILED):
                self._delete(by_state["active"])
            else:
                self._delete(previous)
                self._run(js, status, by_state, restarts, now)
            status.setdefault("restarts", 0)
            if status != (js.get("status") or {}):
                self.store.update_status({**js, "status": status})
                self._events(js, status, now)

    def _events(self, js: Object, status: dict[str, Any], now: float) -> None:
        """An Event per condition that changed, as JobSet records them (reason and message of the condition)."""
        before = {c.get("type"): c for c in (js.get("status") or {}).get("conditions") or []}
        meta = js["metadata"]
        ref = ObjectRef(JOBSET_KIND, meta.get("namespace", ""), meta["name"], meta.get("uid", ""), JOBSET_API_VERSION)
        for c in status.get("conditions") or []:
            old = before.get(c["type"]) or {}
            if (old.get("status"), old.get("reason")) != (c["status"], c["reason"]):
                warn = c["type"] == FAILED or (c["type"] == RESTARTING and c["status"] == "True")
                self.events.record(ref, WARNING if warn else NORMAL, c["reason"], c["message"], now)
        self.events.flush(self.store)

    def _run(self, js: Object, status: dict[str, Any], by_state: dict[str, list[Object]], restarts: int, now: float) -> None:
        spec = js.get("spec") or {}
        if by_state["failed"]:
            self._fail_or_restart(js, status, by_state["failed"], now)
            return
        if by_state["succeeded"] and self._succeeded(js, by_state["succeeded"]):
            set_condition(status, (COMPLETED, "True", "AllJobsCompleted", "jobset completed successfully"), now)
            set_condition(status, (RESTARTING, "False", "JobSetCompleted", "jobset completed successfully"), now)
            status["terminalState"] = COMPLETED
            self._delete(by_state["active"])
            return
        existing = {j["metadata"]["name"] for states in by_state.values() for j in states}
        rows = {row["name"]: row for row in status["replicatedJobsStatus"]}
        in_order = (spec.get("startupPolicy") or {}).get("startupPolicyOrder") == "InOrder"

        def started(rjob: dict[str, Any]) -> bool:  # InOrder: this one is up, the next may start
            row = rows[rjob["name"]]
            return _replicas(rjob) == int(row["failed"]) + int(row["ready"]) + int(row["succeeded"])

        for rjob in _replicated_jobs(js):
            if in_order and not spec.get("suspend") and started(rjob):
                continue
            for index in range(_replicas(rjob)):
                if child_name(js["metadata"]["name"], rjob["name"], index) not in existing:
                    with contextlib.suppress(AlreadyExists):  # written before a crash: it stays
                        by_state["active"].append(self.store.create(new_child(js, rjob, index, restarts)))
            if in_order and not spec.get("suspend"):
                break  # the next replicatedJob waits for this one's Jobs to be ready
        if spec.get("suspend"):
            for job in by_state["active"]:
                if not (job.get("spec") or {}).get("suspend"):
                    self.store.update({**job, "spec": {**job["spec"], "suspend": True}})
            set_condition(status, (SUSPENDED, "True", "SuspendedJobs", "jobset is suspended"), now)
            set_condition(status, (RESTARTING, "False", "JobSetSuspended", "jobset is suspended"), now)
            return
        for rjob in _replicated_jobs(js):
            if in_order and started(rjob):
                continue
            for job in by_state["active"]:
                labels = job["metadata"].get("labels") or {}
                if labels.get(REPLICATED_JOB_NAME) == rjob["name"] and (job.get("spec") or {}).get("suspend"):
                    self.store.update(resumed_child(job, rjob))
            if in_order:
                set_exclusive(status, (IN_PROGRESS, "True", "InOrderStartupPolicyInProgress",
                                       "in order startup policy is in progress"), STARTUP_COMPLETED, now)
                return
        if in_order:
            set_exclusive(status, (STARTUP_COMPLETED, "True", "InOrderStartupPolicyCompleted",
                                   "in order startup policy has completed"), IN_PROGRESS, now)
        set_condition(status, (SUSPENDED, "False", "ResumeJobs", "jobset is resumed"), now)

    def _fail_or_restart(self, js: Object, status: dict[str, Any], failed: list[Object], now: float) -> None:
        first = min(failed, key=_failed_at)["metadata"]["name"]
        policy = (js.get("spec") or {}).get("failurePolicy")
        if policy is None:
            self._failed(status, "FailedJobs", f"jobset failed due to one or more job failures (first failed job: {first})", now)
            return
        counted = int(status.get("restartsCountTowardsMax") or 0)
        if counted >= int(policy.get("maxRestarts") or 0):
            self._failed(status, "ReachedMaxRestarts",
                         f"jobset failed due to reaching max number of restarts (first failed job: {first})", now)
            return
        status["restarts"] = int(status.get("restarts") or 0) + 1
        status["restartsCountTowardsMax"] = counted + 1
        message = f"applying RestartJobSet failure policy action (first failed job: {first})"
        set_condition(status, (RESTARTING, "True", "DefaultFailurePolicy", message), now)

    def _failed(self, status: dict[str, Any], reason: str, message: str, now: float) -> None:
        set_condition(status, (FAILED, "True", reason, message), now)
        set_condition(status, (RESTARTING, "False", "JobSetFailed", "jobset failed"), now)
        status["terminalState"] = FAILED

    @staticmethod
    def _succeeded(js: Object, succeeded: list[Object]) -> bool:
        policy = (js.get("spec") or {}).get("successPolicy") or {}
        targets = set(policy.get("targetReplicatedJobs") or [])

        def target(rjob_name: str) -> bool:
            return not targets or rjob_name in targets

        matching = sum(1 for j in succeeded if target((j["metadata"].get("labels") or {}).get(REPLICATED_JOB_NAME, "")))
        if policy.get("operator") == "Any":
            return matching >= 1
        return matching >= sum(_replicas(r) for r in _replicated_jobs(js) if target(r["name"]))

    @staticmethod
    def _counts(js: Object, by_state: dict[str, list[Object]]) -> list[dict[str, Any]]:
        counts = {r["name"]: dict.fromkeys(("ready", "succeeded", "failed", "active", "suspended"), 0)
                  for r in _replicated_jobs(js)}

        def of(job: Object) -> dict[str, int] | None:
            return counts.get((job["metadata"].get("labels") or {}).get(REPLICATED_JOB_NAME, ""))

        for job in by_state["active"]:
            row, spec, st = of(job), job.get("spec") or {}, job.get("status") or {}
            if row is None:
                continue
            parallelism = spec.get("parallelism")
            pods = 1 if parallelism is None else int(parallelism)
            if spec.get("completions") is not None:
                pods = min(pods, int(spec["completions"]))
            row["ready"] += int(int(st.get("succeeded") or 0) + int(st.get("ready") or 0) >= pods)
            row["active"] += int(int(st.get("active") or 0) > 0)
            row["suspended"] += int(bool(spec.get("suspend")))
        for state in ("succeeded", "failed"):
            for job in by_state[state]:
                row = of(job)
                if row is not None:
                    row[state] += 1
        return [{"name": name, **row} for name, row in counts.items()]

    def _delete(self, jobs: list[Object]) -> None:
        """Children removed (superseded, or the JobSet finished); their pods go with them (GC)."""
        for job in jobs:
            with contextlib.suppress(NotFound):
                self.store.delete("Job", job["metadata"].get("namespace", ""), job["metadata"]["name"])


def _failed_at(job: Object) -> tuple[str, str]:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == FAILED and c.get("status") == "True":
            return (str(c.get("lastTransitionTime") or ""), job["metadata"]["name"])
    return ("~", job["metadata"]["name"])
