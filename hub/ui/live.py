"""Live updates: the store's Workload watch feeds the index; changes go out debounced and aggregated.

One thread follows the watch (relisting after it falls behind); the event loop
gathers what changed for ``DEBOUNCE`` seconds and sends every subscriber one
message per window, however many workloads changed in it. A subscriber that
cannot keep up loses its backlog and is told to reload.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from hub.controllers.own_writes import OwnWrites
from hub.store.interface import EventType, Gone, Store, StoreError

from .index import WorkloadIndex

log = logging.getLogger("mkhub.ui")

DEBOUNCE = 0.5  # seconds: a burst of changes within it is one message
MAX_ROWS_PER_MESSAGE = 200  # beyond this the message says "reload" instead of carrying the rows
SUBSCRIBER_BACKLOG = 8
MINUTES = 60
BATCH = 5000  # watch events applied to the index under one lock
PAUSE = 0.4  # seconds the follower rests after a batch, so that changes gather (under DEBOUNCE)


class Follower:
    """The thread that keeps the index equal to the store's Workloads.

    Two sources: the store's watch (every change others make, decoded here) and the Workload status
    writes the hub's reconciler hands over after each commit (:meth:`written`, already decoded: the
    same objects the hub built). The watch skips the changes handed over, so the status writes of a
    busy hub (one or two per admission) cost this thread no decoding. Each source carries
    resourceVersions, and the index keeps per row the newest of each part (spec, status).
    """

    def __init__(self, store: Store, index: WorkloadIndex, changed: Callable[[set[str]], None]) -> None:
        self.store = store
        self.index = index
        self.changed = changed
        self._stop = threading.Event()
        self._watch: Any = None
        self._thread = threading.Thread(target=self._run, name="mkhub-ui-follow", daemon=True)
        self.synced = threading.Event()
        self._handed: deque[list[Mapping[str, Any]]] = deque()  # from the reconciler's thread
        self._skip = OwnWrites()  # resourceVersions handed over whose watch events are dropped unread
        self._skipping = False  # the current watch drops them (a store's watch without skip_changes does not)
        self._parked: list[tuple[str, int, Mapping[str, Any]]] = []  # handed over before the watch brought the workload
        self.handed = 0  # status writes the hub handed over (none of them decoded here)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        watch = self._watch
        if watch is not None:
            watch.close()
        self._thread.join(timeout=5)

    def written(self, objects: list[Mapping[str, Any]]) -> None:
        """The reconciler's thread, after a commit: Workload status writes (metadata and status). Only
        remembered here; the follower applies them on its own thread."""
        if self._skipping:
            self._skip.add((int(o["metadata"]["resourceVersion"]) for o in objects), 0)
        self._handed.append(objects)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                objects, rv = self.store.list("Workload")
                self.index.load(objects)
                self.synced.set()
                self.changed({"*"})
                self._watch = self.store.watch(["Workload"], rv)
                skip_changes = getattr(self._watch, "skip_changes", None)
                if skip_changes is not None:
                    skip_changes(self._skip.take)
                # Else the watch brings the hub's writes too, decoded here: handed over as well, they change nothing.
                self._skipping = skip_changes is not None
                while not self._stop.is_set():
                    self._step(self._watch)
            except Gone:
                log.info("the dashboard's watch fell behind; relisting Workloads")
            except StoreError as exc:
                if self._stop.is_set():
                    return
                log.warning("the dashboard's watch failed (%s); relisting", exc)
                self._stop.wait(1.0)
            finally:
                if self._watch is not None:
                    self._watch.close()
                    self._watch = None

    def _step(self, watch: Any) -> None:
        """One batch: what came in a short while is applied under one lock, so a busy hub's burst costs
        the reconciler's thread a few switches of the GIL, not one per change."""
        # Rest first, then take what came: woken by each commit instead, this thread would read the hub's
        # status writes before the hub hands them over, and decode them after all.
        self._stop.wait(PAUSE)
        latest: dict[Any, Any] = {}
        count = 0
        while count < BATCH and (event := watch.next(0)) is not None:
            # Only a workload's last change in the batch is decoded and indexed; the key needs no decoding.
            latest.pop(event.key, None)
            latest[event.key] = event  # kept in commit order: the last change of each key
            count += 1
        newest: dict[str, tuple[str, int, Mapping[str, Any]]] = {w[0]: w for w in self._parked}
        while self._handed:
            for o in self._handed.popleft():  # a workload written twice in the batch: its last write only
                m = o["metadata"]
                key = f"{m.get('namespace') or ''}/{m.get('name')}"
                newest[key] = (key, int(m["resourceVersion"]), o.get("status") or {})
                self.handed += 1
        writes = list(newest.values())
        changed: set[str] = set()
        if latest:
            changed |= self.index.apply_many(
                (e.object, e.type == EventType.DELETED, e.resource_version) for e in latest.values())
        if writes:
            done, missing = self.index.apply_statuses(writes)
            changed |= done
            # A write whose workload the watch has not brought yet waits for it; once the watch is past
            # the write, the workload was deleted in between.
            position = getattr(watch, "position", None)
            self._parked = [w for w in missing if position is None or w[1] > position]
        else:
            self._parked = []
        position = getattr(watch, "position", None)
        if position is not None:  # those read before they were handed over are dropped
            self._skip.add((), position)
        if changed:
            self.changed(changed)


class Activity:
    """Admissions and evictions per minute over the last hour, sampled from Kueue's counters."""

    def __init__(self, read: Callable[[], tuple[float, float]]) -> None:
        self.read = read
        self.minutes: deque[tuple[int, float, float]] = deque(maxlen=MINUTES)  # (minute, admitted, evicted)
        self._last = (0.0, 0.0)  # the counters start with the process, as this does

    def sample(self, now: float) -> None:
        admitted, evicted = self.read()
        last = self._last
        self._last = (admitted, evicted)
        minute = int(now // 60)
        da, de = max(0.0, admitted - last[0]), max(0.0, evicted - last[1])
        if self.minutes and self.minutes[-1][0] == minute:
            _, a, e = self.minutes[-1]
            self.minutes[-1] = (minute, a + da, e + de)
        else:
            self.minutes.append((minute, da, de))

    def series(self, now: float) -> dict[str, list[int]]:
        """Per minute, oldest first, the last ``MINUTES`` minutes (zeros where nothing was sampled)."""
        current = int(now // 60)
        by_minute = {m: (a, e) for m, a, e in self.minutes}
        minutes = range(current - MINUTES + 1, current + 1)
        return {
            "admitted": [int(by_minute.get(m, (0, 0))[0]) for m in minutes],
            "evicted": [int(by_minute.get(m, (0, 0))[1]) for m in minutes],
        }


class Broadcaster:
    """Subscribers' queues; one aggregated message per debounce window."""

    def __init__(self, index: WorkloadIndex, loop: asyncio.AbstractEventLoop, debounce: float = DEBOUNCE) -> None:
        self.index = index
        self.loop = loop
        self.debounce = debounce
        self.subscribers: set[asyncio.Queue[dict[str, Any]]] = set()
        self._keys: set[str] = set()
        self._lock = threading.Lock()
        self._scheduled = False
        self.messages = 0

    def changed(self, keys: set[str]) -> None:
        """Any thread: these workloads changed ("*": everything)."""
        with self._lock:
            self._keys |= keys
            if self._scheduled:
                return
            self._scheduled = True
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody listens any more
            self.loop.call_soon_threadsafe(self.loop.call_later, self.debounce, self._flush)

    def _flush(self) -> None:
        with self._lock:
            keys, self._keys = self._keys, set()
            self._scheduled = False
        if not self.subscribers or not keys:
            return
        message = self.message(keys)
        self.messages += 1
        for queue in list(self.subscribers):
            if queue.full():
                while not queue.empty():
                    queue.get_nowait()
                queue.put_nowait({"reload": True, "version": message["version"]})
            else:
                queue.put_nowait(message)

    def message(self, keys: set[str]) -> dict[str, Any]:
        reload = "*" in keys or len(keys) > MAX_ROWS_PER_MESSAGE
        rows: list[dict[str, Any]] = []
        removed: list[str] = []
        with self.index.lock:
            version = self.index.version
            if not reload:
                for key in sorted(keys):
                    row = self.index.rows.get(key)
                    if row is None:
                        removed.append(key)
                    else:
                        rows.append(row.to_dict())
        return {"version": version, "reload": reload, "rows": rows, "removed": removed,
                "changed": len(keys), "counts": self.index.counts()}

    def subscribe(self) -> asyncio.Queue[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(SUBSCRIBER_BACKLOG)
        self.subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        self.subscribers.discard(queue)
