"""Each copy of a hub workload kept as a Workload object in the worker cluster.

As Kueue's MultiKueue does, the copy carries the origin label
(``kueue.x-k8s.io/multikueue-origin``), so ``kubectl get workloads`` on the
worker shows it, with its local admission in ``status``. The annotation
``mkhub.dev/agent-copy`` holds what the agent needs to take the copy back after
a restart (the hub's uid, the dispatch, the Job template, whether and when its
run started): the worker's objects are the agent's state in this mode, as the
data directory is in embedded mode. A restarted agent restores every copy it
finds, follows the Jobs of those that ran, and so never starts one twice. A copy
that runs as a worker object (a Job, a JobSet...) is not written at run start:
that object, annotated with the copy's dispatch id, is the record that it
started (one request per won Job fewer than writing the annotation again).

:meth:`Mirror.collect` is the agent's garbage collector: Workloads and Jobs
carrying the origin label that no copy accounts for (the hub withdrew them
while the agent was down, or a crash left them half made) are deleted.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hub.api import fastjson
from hub.api.errors import ValidationError
from hub.api.others import MULTIKUEUE_ORIGIN_LABEL
from hub.api.registry import parse_object
from hub.api.selectors import parse_label_selector
from hub.api.workload import PODS_READY, Workload, workload_status_to_dict
from hub.federation.mkwire import DISPATCH_ID_ANNOTATION
from hub.store.interface import AlreadyExists, EventType, NotFound, Object, Store, StoreError, WatchEvent
from hub.store.kube.store import CREATE, DELETE, STATUS

from ..agent import Agent, Copy, copy_uid
from .cluster import Writer, run_kinds
from .jobs import KubeJobs, adapter_of, job_key_of, job_ref
from .pods import PREBUILT_WORKLOAD_LABEL, is_pod_list

log = logging.getLogger(__name__)

COPY_ANNOTATION = "mkhub.dev/agent-copy"
# Not sent_ready: pods becoming ready write nothing (Kueue writes PodsReady only with waitForPodsReady,
# and then the copy's own status says it). A restarted agent without it reports them ready again,
# which the hub takes once.
_FLAGS = ("started", "interrupted", "sent_reserved", "sent_admitted", "sent_running", "sent_final")


# Read from the worker object of a copy that runs as one (see the module docstring), not recorded.
_RUN_FLAGS = ("started", "sent_running")
# Read from the copy's own status (its QuotaReserved and Admitted conditions), not recorded: the
# status is written after the report that it was reserved or admitted is queued, as the record was,
# so a restarted agent knows as much; and a copy created before its local admission (a burst of
# Dispatches the engine admits over several turns) needs no second write of its annotation when
# admitted, beside the status write. A record written before carries them and is read as it says.
_STATUS_FLAGS = ("sent_reserved", "sent_admitted")


def _runs_as_object(c: Copy) -> bool:
    return c.job is not None and not is_pod_list(c.job)


def _copy_record(c: Copy) -> str:
    data: dict[str, Any] = {"uid": c.uid, "did": c.did, "job": c.job}
    if _runs_as_object(c):
        data.update({flag: getattr(c, flag) for flag in _FLAGS if flag not in _RUN_FLAGS and flag not in _STATUS_FLAGS})
    else:
        data["startedAt"] = c.started_at
        data.update({flag: getattr(c, flag) for flag in _FLAGS if flag not in _STATUS_FLAGS})
    # No nulls (a copy not started has no startedAt; :meth:`Mirror.restore` reads a missing key as
    # None): a null sends fastjson to the standard json, several times slower, on every sync.
    return fastjson.dumps_sorted({k: v for k, v in data.items() if v is not None})


@dataclass(frozen=True, slots=True)
class Wanted:
    """A copy's Workload as it should be in the worker."""

    manifest: dict[str, Any]
    record: str
    status: dict[str, Any]
    status_json: str


# Garbage collection's wish: delete the Workload whether or not this process wrote it.
COLLECT = Wanted({}, "", {}, "")


class Mirror:
    def __init__(self, store: Store, agent: Agent, jobs: KubeJobs, writer: Writer) -> None:
        self.store = store
        self.agent = agent
        self.jobs = jobs
        self.writer = writer
        self.origin = agent.origin
        self.selector = parse_label_selector(f"{MULTIKUEUE_ORIGIN_LABEL}={self.origin}")
        # key -> (copy record, status JSON) last asked of the writer; the keys are the copies wanted in the worker.
        self.written: dict[str, tuple[str, str]] = {}
        # key -> (uid, copy record, status JSON) of the Workload as the writer last wrote it (writer threads).
        self.live: dict[str, tuple[str, str, str]] = {}
        self.dirty = True
        self.collected = 0
        # key -> (the copy's job, the other inputs of its record, the record): see _record_of.
        self._records: dict[str, tuple[dict[str, Any] | None, tuple[object, ...], str]] = {}
        agent.touched = set(agent.copies)  # from here on the agent names the copies that change

    def mark(self) -> None:
        self.dirty = True

    # ------------------------------------------------------------------ writes

    def sync(self) -> None:
        """Ask the writer for what changed about the copies since the last sync: only the copies
        the agent touched since then (:attr:`Agent.touched`) are looked at, so a sync costs what
        changed, not the whole backlog of copies held."""
        if not self.dirty:
            return
        self.dirty = False
        agent = self.agent
        touched, agent.touched = agent.touched or set(), set()
        copies, workloads = agent.copies, agent.engine.workloads
        for key in sorted(touched):
            c = copies.get(key)
            if c is None:
                self._records.pop(key, None)
                if self.written.pop(key, None) is not None:
                    self.writer.desire(f"Workload:{key}", None)
                continue
            wl = workloads.get(key)
            if wl is None or c.gone:
                agent.touched.add(key)  # until the agent drops it (its next flush)
                continue
            record = self._record_of(c)
            status = workload_status_to_dict(wl.status)
            status_json = fastjson.dumps_sorted(status)
            if self.written.get(key) == (record, status_json):
                continue
            self.written[key] = (record, status_json)
            self.writer.desire(f"Workload:{key}", Wanted(c.manifest, record, status, status_json))

    def _record_of(self, c: Copy) -> str:
        """:func:`_copy_record`, made again only when what it holds changed: the Job manifest in it
        is the bulk of its serialization, and a copy is touched several times (its Dispatch, its
        admission, its Start...). A copy's ``job`` is replaced when it changes, never changed in place."""
        inputs = (c.uid, c.did, c.started_at, *(getattr(c, flag) for flag in _FLAGS))
        memo = self._records.get(c.key)
        if memo is not None and memo[0] is c.job and memo[1] == inputs:
            return memo[2]
        record = _copy_record(c)
        self._records[c.key] = (c.job, inputs, record)
        return record

    def apply(self, key: str, wanted: Wanted | None) -> None:
        """Writer thread: make the Workload ``key`` what ``wanted`` says (None: gone; COLLECT: delete
        whatever is there)."""
        ns, _, name = key.partition("/")
        live = self.live.get(key)
        if wanted is None or wanted is COLLECT:
            if self.live.pop(key, None) is None and wanted is None:
                return  # never written (withdrawn before its turn): nothing to delete
            with contextlib.suppress(NotFound):
                self.store.delete("Workload", ns, name)
            return
        if live is None:
            manifest = _with_annotation(wanted.manifest, wanted.record)
            try:
                out = self.store.create({**manifest, "status": wanted.status})
            except AlreadyExists:  # left by an earlier process: take it over
                current = self.store.get("Workload", ns, name)
                if current is None:
                    raise
                meta = manifest["metadata"]
                out = self.store.update({**current, "metadata": {**current["metadata"], "annotations": meta.get("annotations"),
                                                                 "labels": meta.get("labels"), "resourceVersion": None}})
                out = self.store.update_status({**out, "metadata": {**out["metadata"], "resourceVersion": None},
                                                "status": wanted.status})
            self.live[key] = (str(out["metadata"].get("uid", "")), wanted.record, wanted.status_json)
            return
        uid, record, status_json = live
        current = self._current(ns, name)
        if current is None or str(current["metadata"].get("uid", "")) != uid:
            self.live.pop(key, None)  # deleted by someone else: the watch tells the agent
            return
        if record != wanted.record:
            annotations = {**(current["metadata"].get("annotations") or {}), COPY_ANNOTATION: wanted.record}
            current = self.store.update({**current, "metadata": {**current["metadata"], "annotations": annotations,
                                                                 "resourceVersion": None}})
        if status_json != wanted.status_json:
            self.store.update_status({**current, "metadata": {**current["metadata"], "resourceVersion": None},
                                      "status": wanted.status})
        self.live[key] = (uid, wanted.record, wanted.status_json)

    def _current(self, ns: str, name: str) -> Object | None:
        """The copy's Workload as the cache holds it, for a status write's base or a record's annotations:
        read only, so its nested maps (managedFields, spec) are shared, not deep-copied per write."""
        get: Callable[[str, str, str], Object | None] = getattr(self.store, "get_shared", self.store.get)
        return get("Workload", ns, name)

    def plan(self, key: str, wanted: Wanted | None) -> tuple[str, dict[str, Any]] | None:
        """Writer thread, the gathered form of :meth:`apply`: the one write (CREATE, STATUS or
        DELETE of :meth:`hub.store.kube.KubeStore.write_gathered`) that makes the Workload ``key``
        what ``wanted`` says, to be sent with others and its outcome given to :meth:`landed`; None
        when there is nothing to write. What needs more than one request in order (a record
        changed) is written here, one by one, as :meth:`apply` does, and its status write, if any,
        is returned."""
        ns, _, name = key.partition("/")
        if wanted is None or wanted is COLLECT:
            if self.live.pop(key, None) is None and wanted is None:
                return None  # never written (withdrawn before its turn): nothing to delete
            return DELETE, {"kind": "Workload", "metadata": {"namespace": ns, "name": name}}
        live = self.live.get(key)
        if live is None:  # one left by an earlier process is taken over in landed()
            return CREATE, {**_with_annotation(wanted.manifest, wanted.record), "status": wanted.status}
        uid, record, status_json = live
        current = self._current(ns, name)
        if current is None or str(current["metadata"].get("uid", "")) != uid:
            self.live.pop(key, None)  # deleted by someone else: the watch tells the agent
            return None
        if record != wanted.record:
            annotations = {**(current["metadata"].get("annotations") or {}), COPY_ANNOTATION: wanted.record}
            current = self.store.update({**current, "metadata": {**current["metadata"], "annotations": annotations,
                                                                 "resourceVersion": None}})
            self.live[key] = (uid, wanted.record, status_json)
        if status_json == wanted.status_json:
            return None
        return STATUS, {**current, "metadata": {**current["metadata"], "resourceVersion": None}, "status": wanted.status}

    def landed(self, key: str, wanted: Wanted | None, op: str, got: Object | StoreError) -> StoreError | None:
        """Writer thread: the outcome of :meth:`plan`'s write; the error to report, if any."""
        if op == DELETE:
            return got if isinstance(got, StoreError) and not isinstance(got, NotFound) else None
        assert wanted is not None and wanted is not COLLECT
        if isinstance(got, AlreadyExists) and op == CREATE:  # left by an earlier process: take it over
            try:
                self.apply(key, wanted)
            except StoreError as exc:
                return exc
            return None
        if isinstance(got, StoreError):
            return got
        if op == CREATE:
            self.live[key] = (str(got["metadata"].get("uid", "")), wanted.record, wanted.status_json)
        else:
            live = self.live.get(key)
            if live is not None:
                self.live[key] = (live[0], wanted.record, wanted.status_json)
        return None

    # ------------------------------------------------------------------ watch

    def on_workload(self, event: WatchEvent, now: float) -> None:
        """A copy's Workload deleted in the worker by someone else: the copy is gone (the hub re-dispatches)."""
        if event.type != EventType.DELETED:
            return
        meta = event.object["metadata"]
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        live = self.live.get(key)
        if live is None or live[0] != meta.get("uid") or key not in self.agent.copies:
            return  # ours (withdrawn, collected), or an older object of that name
        self.live.pop(key, None)
        self.written.pop(key, None)
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
            wl.meta.uid = copy_uid(self.agent.cluster_name, str(data.get("did", "")))  # as before the restart
            c = Copy(key, str(data.get("uid", "")), str(data.get("did", "")), _clean(obj, status=False), data.get("job"))
            for flag in _FLAGS:
                setattr(c, flag, bool(data.get(flag)))
            if "sent_admitted" not in data and not c.interrupted:
                c.sent_admitted = wl.is_admitted
                c.sent_reserved = wl.is_admitted or wl.is_quota_reserved
            if "started" not in data and _runs_as_object(c) and not c.interrupted:
                c.started = c.sent_running = self._ran(c)
            c.sent_ready = bool(data.get("sent_ready")) or (c.started and wl.status.is_true(PODS_READY))
            c.started_at = data.get("startedAt")
            self.agent.restore(c, wl, now)  # a copy that ran follows its Job (KubeJobs.start never makes it twice)
            self.live[key] = (str(meta.get("uid", "")), raw, "")
            self.written[key] = (raw, "")
            restored += 1
        return restored

    def _ran(self, c: Copy) -> bool:
        """Whether the worker holds the object this copy's run created (annotated with its dispatch:
        an object left by an earlier dispatch of the same name is not this copy's run)."""
        job_key = job_key_of(c.job, c.key.partition("/")[0])
        if job_key is None:
            return False
        ns, _, name = job_key.partition("/")
        obj = self.store.get(adapter_of(c.job).kind, ns, name)
        return (((obj or {}).get("metadata") or {}).get("annotations") or {}).get(DISPATCH_ID_ANNOTATION) == c.did

    def collect(self) -> int:
        """Delete origin-labelled Workloads and Jobs no copy of this agent accounts for."""
        deleted = 0
        # Read-only: the cache's objects shared, not deep copies of every copy, Job and Pod held.
        listing = getattr(self.store, "list_shared", self.store.list)
        wls, _ = listing("Workload", None, self.selector)
        for obj in wls:
            meta = obj["metadata"]
            key = f"{meta.get('namespace', '')}/{meta['name']}"
            if key not in self.agent.copies and key not in self.written and not meta.get("deletionTimestamp"):
                self.writer.desire(f"Workload:{key}", COLLECT)
                deleted += 1
        for kind in run_kinds():  # the copies' Pods too
            jobs, _ = listing(kind, None, self.selector)
            for obj in jobs:
                meta = obj["metadata"]
                ref = job_ref(kind, f"{meta.get('namespace', '')}/{meta['name']}")
                # An object another one controls is its owner's (a RayJob's RayCluster, which KubeRay labels
                # as its RayJob): the cluster's garbage collector takes it with its owner.
                owned = any(isinstance(r, dict) and r.get("controller") for r in meta.get("ownerReferences") or [])
                # A Pod of a held copy's group that its copy does not list yet: a previous process
                # created it from a Dispatch it did not live to save; the hub sends the group again.
                joining = f"{meta.get('namespace', '')}/{(meta.get('labels') or {}).get(PREBUILT_WORKLOAD_LABEL)}" \
                    in self.agent.copies
                if ref not in self.jobs.by_job and not meta.get("deletionTimestamp") and not owned and not joining:
                    self.jobs.collect(ref)
                    deleted += 1
        if deleted:
            log.info("garbage collection: deleting %d orphaned Workload(s)/Job(s) in the worker", deleted)
        self.collected += deleted
        return deleted


def _with_annotation(manifest: dict[str, Any], record: str) -> dict[str, Any]:
    meta = dict(manifest.get("metadata") or {})
    meta.pop("uid", None)  # the API server gives the stored copy its own
    meta["annotations"] = {**(meta.get("annotations") or {}), COPY_ANNOTATION: record}
    return {**manifest, "metadata": meta}


def _clean(obj: Object, *, status: bool = True) -> dict[str, Any]:
    out = {k: v for k, v in obj.items() if status or k != "status"}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items()
            if k not in ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation")}
    out["metadata"] = meta
    return out
