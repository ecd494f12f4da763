"""The dev-cluster's simulated batch/v1 CronJob controller, after Kubernetes'
pkg/controller/cronjob (v2), on the runtime's clock (tests drive it).

What it does, as the real one: at each time of ``spec.schedule`` (in ``spec.timeZone``, else
UTC) it creates a Job from ``spec.jobTemplate`` named ``<cronjob>-<scheduled time in minutes
since the epoch>``, owned by the CronJob (``controller: true``), with the template's labels
and annotations and ``batch.kubernetes.io/cronjob-scheduled-timestamp``; only the most recent
missed time is started (after a restart or a suspension), and not at all past
``startingDeadlineSeconds``; ``concurrencyPolicy`` Allow, Forbid (skip while a Job runs; the
time stays pending) or Replace (delete the running Jobs first); ``suspend`` creates nothing;
``status.active`` lists the running Jobs, ``status.lastScheduleTime`` and
``lastSuccessfulTime`` follow them; finished Jobs beyond ``successfulJobsHistoryLimit`` /
``failedJobsHistoryLimit`` are deleted oldest first (their pods go with them through the
garbage collector).

Jobs are created through ``create`` (mkhub dev-cluster passes its API, so admission webhooks,
the hub's included, see them as on a cluster). What it is not: no Events; a schedule that cannot be parsed (only possible through the store) is
skipped with a log line.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable
from datetime import UTC, tzinfo
from typing import Any

from hub.api import cron
from hub.api.meta import parse_time
from hub.store.interface import AlreadyExists, Conflict, InvalidObject, NotFound, Object, Store

from .apps import Key, controller_ref
from .jobs import COMPLETE, FAILED, condition_true, format_time, is_finished

log = logging.getLogger(__name__)

Clock = Callable[[], float]
SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
MAX_MISSED = 100  # the real controller also gives up counting missed times past 100


def job_name(cronjob: str, scheduled: float) -> str:
    return f"{cronjob}-{int(scheduled // 60)}"


def _time(value: Any) -> float | None:
    try:
        return parse_time(value) if isinstance(value, str) and value else None
    except ValueError:
        return None


class CronJobController:
    """Reconciles CronJobs; :meth:`reconcile` returns the next scheduled time (None: suspended)."""

    KINDS = ("CronJob",)

    def __init__(self, store: Store, clock: Clock, create: Callable[[Object], Object] | None = None) -> None:
        self.store = store
        self.clock = clock
        self.create = create or store.create  # raises AlreadyExists, or InvalidObject when refused

    def keys_for(self, obj: Object) -> list[Key]:
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        if obj.get("kind") == "CronJob":
            return [("CronJob", ns, meta["name"])]
        ref = controller_ref(obj)
        if obj.get("kind") == "Job" and ref is not None and ref.get("kind") == "CronJob":
            return [("CronJob", ns, str(ref.get("name", "")))]
        return []

    def all_keys(self) -> list[Key]:
        objs, _ = self.store.list("CronJob")
        return [("CronJob", o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objs]

    def reconcile(self, kind: str, namespace: str, name: str) -> float | None:
        for _ in range(5):
            try:
                cj = self.store.get("CronJob", namespace, name)
                if cj is None or cj["metadata"].get("deletionTimestamp"):
                    return None
                return self._reconcile(cj)
            except NotFound:
                return None
            except Conflict:
                continue
        return None

    def _reconcile(self, cj: Object) -> float | None:
        meta, spec = cj["metadata"], cj.get("spec") or {}
        ns, name = meta.get("namespace", ""), meta["name"]
        status: dict[str, Any] = copy.deepcopy(cj.get("status") or {})
        jobs = [j for j in self.store.list("Job", ns)[0] if (controller_ref(j) or {}).get("uid") == meta["uid"]]
        active = [j for j in jobs if not is_finished(j) and not j["metadata"].get("deletionTimestamp")]
        try:
            schedule = cron.parse(str(spec.get("schedule") or ""))
        except cron.CronError as exc:
            log.warning("CronJob %s/%s: unparseable schedule: %s", ns, name, exc)
            return None
        zone: tzinfo = cron.time_zone(str(spec["timeZone"])) or UTC if spec.get("timeZone") else UTC
        now = self.clock()
        due: float | None = None
        self._history(jobs, status, spec)
        if not spec.get("suspend"):
            since = _time(status.get("lastScheduleTime")) or _time(meta.get("creationTimestamp")) or now
            scheduled, due = self._most_recent(schedule, zone, since, now)
            deadline = spec.get("startingDeadlineSeconds")
            if scheduled is not None and (deadline is None or now - scheduled <= int(deadline)):
                started = self._start(cj, scheduled, active, str(spec.get("concurrencyPolicy") or "Allow"))
                if started is not None:
                    active = started
                    status["lastScheduleTime"] = format_time(scheduled)
        refs = [{"apiVersion": "batch/v1", "kind": "Job", "name": j["metadata"]["name"], "namespace": ns,
                 "uid": j["metadata"]["uid"], "resourceVersion": str(j["metadata"].get("resourceVersion", ""))}
                for j in sorted(active, key=lambda j: str(j["metadata"]["name"]))]
        if refs:
            status["active"] = refs
        else:
            status.pop("active", None)
        if status != (cj.get("status") or {}):
            self.store.update_status({**cj, "status": status})
        return due

    @staticmethod
    def _most_recent(schedule: cron.Schedule, zone: tzinfo, since: float, now: float) -> tuple[float | None, float]:
        """The latest scheduled time in (since, now], and the first one after now."""
        latest, t = None, schedule.next_after(since, zone)
        for _ in range(MAX_MISSED * 10):
            if t > now:
                break
            latest, t = t, schedule.next_after(t, zone)
        else:
            latest, t = t, schedule.next_after(now, zone)
        return latest, t

    def _start(self, cj: Object, scheduled: float, active: list[Object], policy: str) -> list[Object] | None:
        """Create the Job for ``scheduled`` as the concurrency policy allows; the active Jobs after, or None."""
        meta = cj["metadata"]
        ns = meta.get("namespace", "")
        name = job_name(meta["name"], scheduled)
        if any(j["metadata"]["name"] == name for j in active) or self.store.get("Job", ns, name) is not None:
            return None  # already created for this time
        if active and policy == "Forbid":
            return None
        if policy == "Replace":
            for job in active:
                with contextlib.suppress(NotFound):
                    self.store.delete("Job", ns, job["metadata"]["name"])
            active = []
        template = (cj.get("spec") or {}).get("jobTemplate") or {}
        tmeta = template.get("metadata") or {}
        job_meta: dict[str, Any] = {
            "name": name, "namespace": ns, "labels": dict(tmeta.get("labels") or {}),
            "annotations": {**(tmeta.get("annotations") or {}), SCHEDULED_ANNOTATION: format_time(scheduled)},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": meta["name"], "uid": meta["uid"],
                                 "controller": True, "blockOwnerDeletion": True}],
        }
        if not job_meta["labels"]:
            del job_meta["labels"]
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta,
               "spec": copy.deepcopy(template.get("spec") or {})}
        try:
            return [*active, self.create(job)]
        except AlreadyExists:
            return None
        except InvalidObject as exc:  # refused (a webhook, validation): tried again at the next time
            log.warning("CronJob %s/%s: Job %s refused: %s", ns, meta["name"], name, exc)
            return None

    def _history(self, jobs: list[Object], status: dict[str, Any], spec: dict[str, Any]) -> None:
        """lastSuccessfulTime, and the finished Jobs past the history limits deleted oldest first."""
        done = [j for j in jobs if is_finished(j) and not j["metadata"].get("deletionTimestamp")]
        succeeded = [j for j in done if condition_true(j.get("status") or {}, COMPLETE)]
        failed = [j for j in done if condition_true(j.get("status") or {}, FAILED)]
        finished_at = [_time((j.get("status") or {}).get("completionTime")) for j in succeeded]
        latest = max((t for t in finished_at if t is not None), default=None)
        if latest is not None and latest > (_time(status.get("lastSuccessfulTime")) or 0):
            status["lastSuccessfulTime"] = format_time(latest)
        for group, key, default in ((succeeded, "successfulJobsHistoryLimit", 3), (failed, "failedJobsHistoryLimit", 1)):
            limit = spec.get(key)
            limit = default if limit is None else int(limit)
            group.sort(key=lambda j: str((j.get("status") or {}).get("completionTime")
                                         or j["metadata"].get("creationTimestamp", "")))
            for job in group[: max(0, len(group) - limit)]:
                with contextlib.suppress(NotFound):
                    self.store.delete("Job", job["metadata"].get("namespace", ""), job["metadata"]["name"])
