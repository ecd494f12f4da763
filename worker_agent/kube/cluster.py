"""The worker cluster's API server as the agent's world (``mkagent --kubeconfig``).

:class:`KubeCluster` owns the :class:`hub.store.kube.KubeStore` of the worker
(an informer per kind, reads from its cache) and two threads:

* the watch thread follows the cache's change log and hands the events to the
  agent's event loop (``wake``), where :meth:`KubeCluster.tick` (a plugin of the
  ClusterController) applies them: the cluster's own Kueue objects
  (ResourceFlavors, Cohorts, ClusterQueues, LocalQueues,
  WorkloadPriorityClasses, AdmissionChecks, Namespaces) go into the engine as
  ``kubectl apply`` would change them; Job events feed the runner
  (:class:`worker_agent.kube.jobs.KubeJobs`); a copy's Workload deleted by
  someone else deletes the copy;
* the writer thread sends the agent's writes (Jobs, Workload copies and their
  status) in the order they were queued, so the event loop never waits on the
  API server: the desired state of each object, coalesced per object (see
  :class:`Writer`). A failed write is logged; the garbage collector and the next
  change of the copy repair what did not land.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from hub.api.errors import ValidationError
from hub.api.jobkinds import JOB_KINDS, external_kinds
from hub.api.registry import parse_object
from hub.controllers.cluster import ClusterController
from hub.engine.events import EngineEvent
from hub.store.interface import EventType, Object, Store, StoreError, WatchEvent
from hub.store.kube.cache import CacheWatch

from ..objects import _ORDER as OBJECT_ORDER
from ..objects import ALLOWED_KINDS

log = logging.getLogger(__name__)

# The worker objects a won copy runs as: its kind's (Pods for Kueue's pod integration: worker_agent.kube.pods).
RUN_KINDS = (*JOB_KINDS, "Pod")
STORE_KINDS = (*OBJECT_ORDER, "Workload", *RUN_KINDS)
# A worker may not run every kind's operator: those kinds are empty until their CRDs come.
# DRA's claims and templates, and Topology (Kueue's CRDs before v0.9 lack it), likewise.
OPTIONAL_KINDS = (*(k for k in JOB_KINDS if k != "Job"), "ResourceClaim", "ResourceClaimTemplate", "Topology")


def run_kinds() -> tuple[str, ...]:
    """RUN_KINDS and the Configuration's external frameworks' kinds (MultiKueue's generic adapter)."""
    return (*RUN_KINDS, *external_kinds())


class Writer:
    """The agent's writes to its API server: the *desired state* of each object, reconciled by a
    few threads. A key is never worked on by two threads at once, so the writes of one object land
    in order; a key whose desired state changes again before its turn is written once, to the
    latest (a copy withdrawn before its Workload was created is never created). Jobs go before
    Workloads (the Job is what the user waits for).

    With ``apply_many`` a thread takes every key queued when it wakes (up to ``batch``) and hands
    them over together, so that their requests go out gathered (libcurl, all in flight at once: a
    fraction of urllib3's client CPU per request) instead of one round trip each; it returns each
    key's error or None, in order."""

    def __init__(self, apply: Callable[[str, object], None], threads: int = 4,
                 apply_many: Callable[[list[tuple[str, object]]], list[BaseException | None]] | None = None,
                 batch: int = 64) -> None:
        self._apply = apply
        self._apply_many = apply_many
        self._batch = max(1, batch)
        self._lock = threading.Lock()
        self._pending: dict[str, object] = {}
        self._inflight: set[str] = set()
        self._queue: queue.PriorityQueue[tuple[int, int, str]] = queue.PriorityQueue()
        self._seq = 0
        self.failures = 0
        self.done = 0
        self.batches = 0
        self._stopping = False
        self._threads = [threading.Thread(target=self._run, name=f"mkagent-writer-{i}", daemon=True) for i in range(threads)]
        for t in self._threads:
            t.start()

    def desire(self, key: str, state: object) -> None:
        """Make the object ``key`` (``"Job:ns/name"`` or ``"Workload:ns/name"``) reach ``state``. Any thread."""
        with self._lock:
            queued = key in self._pending
            self._pending[key] = state
            if not queued and key not in self._inflight:
                self._enqueue(key)

    def _enqueue(self, key: str) -> None:
        self._seq += 1
        self._queue.put((1 if key.startswith("Workload:") else 0, self._seq, key))

    def pending(self) -> int:
        with self._lock:
            return len(self._pending) + len(self._inflight)

    def _take(self) -> tuple[list[tuple[str, object]], bool]:
        """The next keys to write, with their states (marked in flight), and whether a stop was taken."""
        keys = [self._queue.get()[2]]
        if self._apply_many is not None:
            while keys[-1] and len(keys) < self._batch:
                try:
                    keys.append(self._queue.get_nowait()[2])
                except queue.Empty:
                    break
        stop = not keys[-1]  # a stop sorts after every write: it ends the batch, one per thread
        items: list[tuple[str, object]] = []
        with self._lock:
            for key in keys:
                if key and key in self._pending and key not in self._inflight:
                    items.append((key, self._pending.pop(key)))
                    self._inflight.add(key)
        return items, stop

    def _run(self) -> None:
        while True:
            items, stop = self._take()
            if items:
                self._write(items)
            if stop:
                return

    def _write(self, items: list[tuple[str, object]]) -> None:
        errors: list[BaseException | None]
        try:
            if self._apply_many is not None and len(items) > 1:
                self.batches += 1
                errors = self._apply_many(items)
            else:
                errors = [self._apply_one(key, state) for key, state in items]
        except Exception as exc:  # a bug must not stop every later write
            errors = [exc] * len(items)
        for (key, _), error in zip(items, errors, strict=True):
            if isinstance(error, StoreError):
                self.failures += 1
                log.warning("writing %s to the worker: %s", key, error)
            elif error is not None:
                self.failures += 1
                log.error("writing %s to the worker failed", key, exc_info=error)
        with self._lock:
            for key, _ in items:
                self._inflight.discard(key)
                self.done += 1
                if key in self._pending:
                    self._enqueue(key)

    def _apply_one(self, key: str, state: object) -> BaseException | None:
        try:
            self._apply(key, state)
        except Exception as exc:
            return exc
        return None

    def stop(self, timeout: float = 5.0) -> None:
        """Let the queued writes land (for ``timeout`` at most), then stop the threads."""
        deadline = time.monotonic() + timeout
        while self.pending() and time.monotonic() < deadline:
            time.sleep(0.02)
        for _ in self._threads:
            self._queue.put((9, 0, ""))
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()) + 0.5)


class KubeCluster:
    """See the module docstring. ``on_job(obj)`` and ``on_workload(event)`` are set by the agent process."""

    def __init__(self, store: Store, controller: ClusterController, *, partial_admission: bool, wake: Callable[[], None],
                 apply: Callable[[str, object], None],
                 apply_many: Callable[[list[tuple[str, object]]], list[BaseException | None]] | None = None) -> None:
        self.store = store
        self.controller = controller
        self.partial_admission = partial_admission
        self.wake = wake
        self.writer = Writer(apply, apply_many=apply_many)
        self.on_job: Callable[[Object], None] | None = None
        self.on_workload: Callable[[WatchEvent], None] | None = None
        self.on_pod: Callable[[WatchEvent, float], bool] | None = None  # TAS (worker_agent.kube.tas)
        self._events: deque[WatchEvent] = deque()
        self._since = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._invalid: dict[tuple[str, str, str], str] = {}  # objects refused, to log each once
        self._run_kinds = frozenset(run_kinds())  # the Configuration's external frameworks are known by now

    # ------------------------------------------------------------------ start-up

    def load(self, now: float) -> int:
        """Put the cluster's Kueue objects into the engine; returns how many."""
        loaded = 0
        since = 0
        for kind in OBJECT_ORDER:
            objs, rv = self.store.list(kind)
            since = max(since, rv)
            for obj in objs:
                loaded += self._apply(obj, now)
        for kind in run_kinds():
            objs, rv = self.store.list(kind)
            since = max(since, rv)
            if kind == "Pod":  # the pods already there: TAS's first tick takes them (gates, usage)
                self._events.extend(WatchEvent(EventType.ADDED, obj, rv) for obj in objs)
        self._since = since
        return loaded

    def start(self) -> None:
        self._thread = threading.Thread(target=self._watch, name="mkagent-watch", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        watch = self.store.watch((*STORE_KINDS, *external_kinds()), since=self._since)
        if isinstance(watch, CacheWatch):
            # Of the Workloads the agent needs only deletions (a copy's, by someone else: tick); the
            # rest are mostly the echoes of its own writes, each a deep copy and a loop wake-up.
            watch.only(_wanted_change)
        try:
            while not self._stop.is_set():
                event = watch.next(timeout=0.5)
                if event is None:
                    continue
                self._events.append(event)
                self.wake()
        except StoreError as exc:
            if not self._stop.is_set():
                log.error("the watch of the worker cluster ended: %s", exc)
        finally:
            watch.close()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)
        self.writer.stop()
        self.store.close()

    # ------------------------------------------------------------------ Plugin

    def on_events(self, events: list[EngineEvent], now: float) -> None:
        return None

    def tick(self, now: float) -> bool:
        changed = False
        events = self._events
        while events:
            event = events.popleft()
            kind = event.key.kind
            if kind == "Pod" and self.on_pod is not None:
                changed = self.on_pod(event, now) or changed
            if kind in ALLOWED_KINDS:
                if event.type == EventType.DELETED:
                    meta = event.object["metadata"]
                    self.controller.delete(kind, meta.get("namespace", ""), meta["name"], now)
                else:
                    self._apply(event.object, now)
                changed = True
            elif kind in self._run_kinds and event.type != EventType.DELETED and self.on_job is not None:
                self.on_job(event.object)
                changed = True
            elif kind == "Workload" and self.on_workload is not None:
                self.on_workload(event)
                changed = True
        return changed

    def _apply(self, obj: Object, now: float) -> int:
        ident = (str(obj.get("kind")), obj["metadata"].get("namespace", ""), obj["metadata"].get("name", ""))
        try:
            parsed = parse_object(_without_status(obj), partial_admission=self.partial_admission)
        except ValidationError as exc:
            if self._invalid.get(ident) != str(exc):
                self._invalid[ident] = str(exc)
                log.warning("ignoring %s %s: %s", ident[0], "/".join(p for p in ident[1:] if p), exc)
            return 0
        self._invalid.pop(ident, None)
        self.controller.apply(parsed, now)
        return 1


def _wanted_change(type_: EventType, kind: str) -> bool:
    return kind != "Workload" or type_ == EventType.DELETED


def _without_status(obj: Object) -> dict[str, Any]:
    """The object as its owner applied it (what status the worker holds is not ours to read), but
    a Node's: its allocatable and conditions are TAS's inventory."""
    out = {k: v for k, v in obj.items() if k != "status" or obj.get("kind") == "Node"}
    meta = dict(out.get("metadata") or {})
    for name in ("managedFields", "resourceVersion"):
        meta.pop(name, None)
    out["metadata"] = meta
    return out
