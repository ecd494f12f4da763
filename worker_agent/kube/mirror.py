"""Each copy of a hub workload kept as a Workload object in the worker cluster.

As Kueue's MultiKueue does, the copy carries the origin label
(``kueue.x-k8s.io/multikueue-origin``), so ``kubectl get workloads`` on the
worker shows it, with its local admission in ``status``. The annotation
``mkhub.dev/agent-copy`` holds what the agent needs to take the copy back after
a restart (the hub's uid, the dispatch, the Job template, whether and when its
run started): the worker's objects are the agent's state in this mode, as the
data directory is in embedded mode. A restarted agent restores every copy it
finds, follows the Jobs of those that ran, and so never starts one twice.

:meth:`Mirror.collect` is the agent's garbage collector: Workloads and Jobs
carrying the origin label that no copy accounts for (the hub withdrew them
while the agent was down, or a crash left them half made) are deleted.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
from typing import Any

from hub.api.errors import ValidationError
from hub.api.others import MULTIKUEUE_ORIGIN_LABEL
from hub.api.registry import parse_object
from hub.api.selectors import parse_label_selector
from hub.api.workload import Workload, workload_status_to_dict
from hub.store.interface import AlreadyExists, EventType, NotFound, Object, Store, WatchEvent

from ..agent import Agent, Copy
from .cluster import Writer
from .jobs import KubeJobs

log = logging.getLogger(__name__)

COPY_ANNOTATION = "mkhub.dev/agent-copy"
_FLAGS = ("started", "interrupted", "sent_reserved", "sent_admitted", "sent_running", "sent_ready", "sent_final")


def _copy_record(c: Copy) -> str:
    data: dict[str, Any] = {"uid": c.uid, "did": c.did, "job": c.job, "startedAt": c.started_at}
    data.update({flag: getattr(c, flag) for flag in _FLAGS})
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


class Mirror:
    def __init__(self, store: Store, agent: Agent, jobs: KubeJobs, writer: Writer) -> None:
        self.store = store
        self.agent = agent
        self.jobs = jobs
        self.writer = writer
        self.origin = agent.origin
        self.selector = parse_label_selector(f"{MULTIKUEUE_ORIGIN_LABEL}={self.origin}")
        # key -> (copy record, status JSON) last written; the keys are the copies that exist in the worker.
        self.written: dict[str, tuple[str, str]] = {}
        self.dirty = True
        self.deleting: set[str] = set()  # copies this agent deletes (their DELETED events are expected)
        self.collected = 0

    def mark(self) -> None:
        self.dirty = True

    # ------------------------------------------------------------------ writes

    def sync(self) -> None:
        """Write what changed about the copies since the last sync (writes run on the writer thread)."""
        if not self.dirty:
            return
        self.dirty = False
        engine = self.agent.engine
        for key, c in self.agent.copies.items():
            wl = engine.workloads.get(key)
            if wl is None or c.gone:
                continue
            record = _copy_record(c)
            status = workload_status_to_dict(wl.status)
            status_json = json.dumps(status, separators=(",", ":"), sort_keys=True)
            last = self.written.get(key)
            if last == (record, status_json):
                continue
            self.written[key] = (record, status_json)
            if last is None:
                self.writer.submit(f"create Workload {key} in the worker",
                                   functools.partial(self._create, _with_annotation(c.manifest, record), status))
            else:
                changed = record if last[0] != record else None
                self.writer.submit(f"update Workload {key} in the worker", functools.partial(self._update, key, changed, status))
        for key in [k for k in self.written if k not in self.agent.copies]:
            del self.written[key]
            self.deleting.add(key)
            self.writer.submit(f"delete Workload {key} in the worker", functools.partial(self._delete, "Workload", key))

    def _create(self, manifest: dict[str, Any], status: dict[str, Any]) -> None:
        try:
            self.store.create({**manifest, "status": status})
        except AlreadyExists:  # left by an earlier process: take it over
            meta = manifest["metadata"]
            current = self.store.get("Workload", meta["namespace"], meta["name"])
            if current is not None:
                self.store.update({**current, "metadata": {**current["metadata"], "annotations": meta.get("annotations"),
                                                           "labels": meta.get("labels"), "resourceVersion": None}})
            self.store.update_status({"apiVersion": manifest["apiVersion"], "kind": "Workload",
                                      "metadata": {"namespace": meta["namespace"], "name": meta["name"]}, "status": status})

    def _update(self, key: str, record: str | None, status: dict[str, Any]) -> None:
        ns, _, name = key.partition("/")
        current = self.store.get("Workload", ns, name)
        if current is None:
            return  # deleted meanwhile (by the hub's Withdraw, or by a user: the watch says so)
        if record is not None:
            annotations = {**(current["metadata"].get("annotations") or {}), COPY_ANNOTATION: record}
            current = self.store.update({**current, "metadata": {**current["metadata"], "annotations": annotations, "resourceVersion": None}})
        self.store.update_status({**current, "metadata": {**current["metadata"], "resourceVersion": None}, "status": status})

    def _delete(self, kind: str, key: str) -> None:
        ns, _, name = key.partition("/")
        with contextlib.suppress(NotFound):
            self.store.delete(kind, ns, name)

    # ------------------------------------------------------------------ watch

    def on_workload(self, event: WatchEvent, now: float) -> None:
        """A copy's Workload deleted in the worker by someone else: the copy is gone (the hub re-dispatches)."""
        meta = event.object["metadata"]
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        if event.type != EventType.DELETED:
            return
        if key in self.deleting:
            self.deleting.discard(key)
            return
        if key in self.written and key in self.agent.copies:
            del self.written[key]
            log.warning("Workload %s was deleted in the worker; dropping its copy", key)
            self.agent.controller.delete("Workload", meta.get("namespace", ""), meta.get("name", ""), now)

    # ------------------------------------------------------------------ restart and garbage

    def restore(self, now: float) -> int:
        """Take back the copies a previous agent process left in the worker; returns how many."""
        objs, _ = self.store.list("Workload", None, self.selector)
        restored = 0
        for obj in objs:
            meta = obj["metadata"]
            raw = (meta.get("annotations") or {}).get(COPY_ANNOTATION)
            key = f"{meta.get('namespace', '')}/{meta['name']}"
            if not raw:
                continue
            try:
                data = json.loads(raw)
                wl = parse_object(_clean(obj), partial_admission=self.agent.partial_admission)
            except (ValueError, ValidationError) as exc:
                log.warning("not restoring copy %s: %s", key, exc)
                continue
            if not isinstance(wl, Workload):
                continue
            c = Copy(key, str(data.get("uid", "")), str(data.get("did", "")), _clean(obj, status=False), data.get("job"))
            for flag in _FLAGS:
                setattr(c, flag, bool(data.get(flag)))
            c.started_at = data.get("startedAt")
            self.agent._index(c)
            self.agent.restore(c, wl, now)  # a copy that ran follows its Job (KubeJobs.start never makes it twice)
            self.written[key] = (_copy_record(c), "")
            restored += 1
        return restored

    def collect(self) -> int:
        """Delete origin-labelled Workloads and Jobs no copy of this agent accounts for."""
        deleted = 0
        wls, _ = self.store.list("Workload", None, self.selector)
        for obj in wls:
            meta = obj["metadata"]
            key = f"{meta.get('namespace', '')}/{meta['name']}"
            if key not in self.agent.copies and key not in self.deleting and not meta.get("deletionTimestamp"):
                self.deleting.add(key)
                self.writer.submit(f"collect Workload {key}", functools.partial(self._delete, "Workload", key))
                deleted += 1
        jobs, _ = self.store.list("Job", None, self.selector)
        for obj in jobs:
            meta = obj["metadata"]
            job_key = f"{meta.get('namespace', '')}/{meta['name']}"
            if job_key not in self.jobs.by_job and not meta.get("deletionTimestamp"):
                self.writer.submit(f"collect Job {job_key}", functools.partial(self._delete, "Job", job_key))
                deleted += 1
        if deleted:
            log.info("garbage collection: deleting %d orphaned Workload(s)/Job(s) in the worker", deleted)
        self.collected += deleted
        return deleted


def _with_annotation(manifest: dict[str, Any], record: str) -> dict[str, Any]:
    meta = dict(manifest.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), COPY_ANNOTATION: record}
    return {**manifest, "metadata": meta}


def _clean(obj: Object, *, status: bool = True) -> dict[str, Any]:
    out = {k: v for k, v in obj.items() if status or k != "status"}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items()
            if k not in ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation")}
    out["metadata"] = meta
    return out
