"""Runs the hub's reconciler on one thread: the store's watch in, rounds out.

Every engine call happens on this thread. Other threads (the gRPC control
service) reach the engine only through :meth:`HubRuntime.call`, which runs a
function between rounds and hands back its result. The wall clock is read
here and nowhere below.

Inputs arrive through one queue: store changes (from a watch thread), calls,
pokes (:meth:`HubRuntime.wake`: the federation has agent messages) and stop.
A round runs when a change was observed, a poke arrived or a timer (simulated
run, backoff, podsReady timeout, lost worker) is due. When the watch reports
``Gone`` (this hub fell behind the store's change log) or a round cannot be
committed, the reconciler is rebuilt from a fresh list, which is exactly the
restart path; ``on_rebuild`` runs first (the federation forgets what the lost
round meant to send). A rebuild whose own first round cannot be committed either
(the store refuses the same write again) is retried after a growing pause
(``REBUILD_BACKOFF``) instead of ending the reconciler: a refusal the store keeps
giving must not turn into a crash loop of the whole process.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

from hub.api.config import Configuration
from hub.store.interface import Gone, Store, StoreError, WatchEvent
from hub.tuning import GcPacer, tune_gc

from .handoff import ParsedObjects
from .hub import EventLog, Federation, HubObserver, HubReconciler
from .simrunner import DEFAULT_DURATION, DEFAULT_READY_DELAY

log = logging.getLogger(__name__)

T = TypeVar("T")

# Upper bound on how long the loop sleeps without input; time-driven work has its own wakeups.
MAX_IDLE = 30.0
# Queue statuses are rewritten at most this often (see HubReconciler.queue_status_interval): with
# a thousand ClusterQueues, writing all of them every round costs more than the round itself.
QUEUE_STATUS_INTERVAL = 0.5
# A round stops scheduling once this many workloads changed status, commits, and the next round
# goes on: a round that admits a whole backlog would hold every decision (and every finished run's
# released quota) until one huge transaction commits.
ROUND_BUDGET = 2000
# Seconds between rebuilds whose first round could not be committed: doubling from the first
# value up to the second, so a store that keeps refusing costs a retry now and then, not a storm.
REBUILD_BACKOFF = (0.1, 10.0)


@dataclass(frozen=True, slots=True)
class _Change:
    feed: int  # which watch it came from; changes of a replaced watch are dropped
    event: WatchEvent


@dataclass(frozen=True, slots=True)
class _Relist:
    feed: int


@dataclass(frozen=True, slots=True)
class _FeedFailed:
    feed: int
    error: BaseException


@dataclass(frozen=True, slots=True)
class _Call:
    fn: Callable[[HubReconciler], Any]
    future: Future[Any]


_STOP = object()
_POKE = object()


class _Feed:
    """A thread that moves one store watch into the runtime's inbox."""

    def __init__(
        self,
        store: Store,
        since: int,
        feed_id: int,
        put: Callable[[object], None],
        skip: Callable[[int], bool] | None = None,
    ) -> None:
        self.id = feed_id
        self._store = store
        self._since = since
        self._put = put
        self._skip = skip  # where the store's watch can drop changes unread (SQLite): our own writes
        self._lock = threading.Lock()
        self._closed = False
        self._watch: Any = None
        self._thread = threading.Thread(target=self._run, name=f"mkhub-watch-{feed_id}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            watch = self._store.watch(since=self._since)
            skip_changes = getattr(watch, "skip_changes", None)
            if self._skip is not None and skip_changes is not None:
                skip_changes(self._skip)
            with self._lock:
                if self._closed:
                    watch.close()
                    return
                self._watch = watch
            while (event := watch.next()) is not None:
                self._put(_Change(self.id, event))
        except Gone:
            self._put(_Relist(self.id))
        except StoreError as exc:
            if not self._closed:
                self._put(_FeedFailed(self.id, exc))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            watch = self._watch
        if watch is not None:
            watch.close()
        self._thread.join(timeout=5.0)


class HubRuntime:
    """Owns the reconciler thread. ``start()``, wait for ``ready``, ``call()``, ``stop()``."""

    def __init__(
        self,
        store: Store,
        config: Configuration,
        *,
        clock: Callable[[], float] = time.time,
        default_duration: float = DEFAULT_DURATION,
        ready_delay: float = DEFAULT_READY_DELAY,
        max_events_per_round: int = 5000,
        federation: Federation | None = None,
        on_rebuild: Callable[[], None] | None = None,
        observer: HubObserver | None = None,
        queue_status_interval: float = QUEUE_STATUS_INTERVAL,
        round_budget: int = ROUND_BUDGET,
    ) -> None:
        self.queue_status_interval = queue_status_interval
        self.round_budget = round_budget
        # The control service's Applier leaves here what it parsed; the reconciler takes it.
        self.handoff = ParsedObjects()
        self._gc = GcPacer()
        self.store = store
        self.config = config
        self.clock = clock
        self.default_duration = default_duration
        self.ready_delay = ready_delay
        self.max_events_per_round = max_events_per_round
        self.federation = federation
        self.on_rebuild = on_rebuild
        self.observer = observer
        self.events = EventLog()
        # Each reconciler tells these of its committed Workload status writes (HubReconciler.workload_sinks).
        self.workload_sinks: list[Callable[[list[Any]], None]] = []
        self.ready = threading.Event()
        self.done: Future[None] = Future()
        self.rebuilds = 0
        self.failed_rebuilds = 0  # rebuilds whose first round could not be committed (retried)
        self._stopping = threading.Event()
        self._inbox: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._feed: _Feed | None = None
        self._feed_ids = 0
        self._poked = False  # a poke is queued and not yet taken: later pokes add nothing
        self._thread = threading.Thread(target=self._run, name="mkhub-reconciler", daemon=True)

    # ------------------------------------------------------------------ other threads

    def start(self) -> None:
        self._thread.start()

    def call(self, fn: Callable[[HubReconciler], T]) -> Future[T]:
        """Run ``fn(reconciler)`` on the reconciler thread after the current round."""
        future: Future[T] = Future()
        if self.done.done():
            future.set_exception(RuntimeError("the hub's reconciler has stopped"))
            return future
        self._inbox.put(_Call(fn, future))
        if self.done.done():  # stopped while we queued: nobody will run it
            self._fail_pending_calls()
        return future

    def wake(self) -> None:
        """Run a round soon (any thread). The federation calls it after queueing agent messages."""
        if not self._poked:
            self._poked = True
            self._inbox.put(_POKE)

    def stop(self, timeout: float | None = 30.0) -> None:
        """Finish the current round (committed), then stop. The store stays open."""
        self._stopping.set()
        self._inbox.put(_STOP)
        if self._thread.is_alive():
            self._thread.join(timeout)

    # ------------------------------------------------------------------ the thread

    def _run(self) -> None:
        try:
            self._loop()
        except StoreError as exc:
            if not self._stopping.is_set():
                log.exception("the hub's reconciler failed")
                self.done.set_exception(exc)
            else:  # stopped while the store refused it (the leader Lease lost): one line, no traceback
                log.warning("the hub's reconciler stopped with its store refusing writes: %s", exc)
                self.done.set_result(None)
        except BaseException as exc:
            log.exception("the hub's reconciler failed")
            self.done.set_exception(exc)
        else:
            self.done.set_result(None)
        finally:
            if self._feed is not None:
                self._feed.close()
            self._fail_pending_calls()

    def _build(self) -> HubReconciler:
        """A reconciler from a full list of the store, its first round committed, its watch started.
        A first round the store refuses is not committed: the engine is ahead of the store, so the
        reconciler is built again from the store, after a pause (until ``stop``)."""
        pause = REBUILD_BACKOFF[0]
        while True:
            try:
                return self._build_once()
            except StoreError as exc:
                if self._stopping.is_set():
                    raise
                self.failed_rebuilds += 1
                log.error("the first round after a rebuild could not be committed; rebuilding in %.1fs: %s", pause, exc)
                if self._stopping.wait(pause):
                    raise
                pause = min(pause * 2, REBUILD_BACKOFF[1])
                if self.on_rebuild is not None:
                    self.on_rebuild()

    def _build_once(self) -> HubReconciler:
        if self._feed is not None:
            self._feed.close()
            self._feed = None
        now = self.clock()
        rec = HubReconciler(
            self.store,
            self.config,
            now,
            events=self.events,
            default_duration=self.default_duration,
            ready_delay=self.ready_delay,
            federation=self.federation,
            observer=self.observer,
            queue_status_interval=self.queue_status_interval,
            round_budget=self.round_budget,
            handoff=self.handoff,
        )
        rec.workload_sinks = self.workload_sinks  # the same list: a sink added later reaches every reconciler
        since = rec.load(now)
        rec.round(now)
        self._feed_ids += 1
        self._feed = _Feed(self.store, since, self._feed_ids, self._inbox.put, rec.take_own_write)
        return rec

    def _rebuild(self, why: str) -> HubReconciler:
        self.rebuilds += 1
        log.warning("rebuilding the engine from the store: %s", why)
        if self.on_rebuild is not None:
            self.on_rebuild()
        return self._build()

    def _loop(self) -> None:
        rec = self._build()
        # The restored state is long-lived: keep the collector off it. No full collection before
        # serving (a third of a second with 10,000 Workloads): the pacer's next one reclaims.
        tune_gc(collect=False)
        self.ready.set()
        stopping = False
        while not stopping:
            items = self._take(self._timeout(rec), rec.is_own_write)
            now = self.clock()
            feed = self._feed.id if self._feed is not None else -1
            calls: list[_Call] = []
            observed = poked = False
            relist: str | None = None
            for item in items:
                if isinstance(item, _Change):
                    if item.feed == feed and relist is None:
                        observed = rec.observe(item.event, now) or observed
                elif isinstance(item, _Call):
                    calls.append(item)
                elif item is _POKE:
                    # Cleared before the round: a message queued from now on pokes again.
                    self._poked = False
                    poked = True
                elif isinstance(item, _Relist) and item.feed == feed:
                    relist = "the store's change log no longer holds our position (Gone)"
                elif isinstance(item, _FeedFailed) and item.feed == feed:
                    raise item.error
                elif item is _STOP:
                    stopping = True
            if relist is not None:
                rec = self._rebuild(relist)
            elif observed or poked or self._due(rec, now):
                try:
                    rec.round(now)
                except StoreError as exc:
                    # Nothing of the round was committed; the store is still the truth.
                    rec = self._rebuild(f"a round could not be committed: {exc}")
                self._gc.after_round()
            for call in calls:
                self._run_call(call, rec)

    def _timeout(self, rec: HubReconciler) -> float:
        wake = rec.next_wakeup()
        if wake is None:
            return MAX_IDLE
        return min(MAX_IDLE, max(0.0, wake - self.clock()))

    @staticmethod
    def _due(rec: HubReconciler, now: float) -> bool:
        wake = rec.next_wakeup()
        return wake is not None and wake <= now

    def _take(self, timeout: float, own: Callable[[int], bool] = lambda _rv: False) -> list[object]:
        """The first item (waiting up to ``timeout``), then whatever else is queued, bounded. The
        echoes of the reconciler's own writes (``own``) cost nothing and do not count: a round may
        write more than the bound, and its echoes must not pile up in the inbox."""
        try:
            items = [self._inbox.get(timeout=timeout)]
        except queue.Empty:
            return []
        counted = 0
        while counted < self.max_events_per_round:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                break
            items.append(item)
            if not (isinstance(item, _Change) and own(item.event.resource_version)):
                counted += 1
        return items

    @staticmethod
    def _run_call(call: _Call, rec: HubReconciler) -> None:
        if not call.future.set_running_or_notify_cancel():
            return
        try:
            call.future.set_result(call.fn(rec))
        except BaseException as exc:
            call.future.set_exception(exc)

    def _fail_pending_calls(self) -> None:
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Call) and item.future.set_running_or_notify_cancel():
                item.future.set_exception(RuntimeError("the hub's reconciler has stopped"))
