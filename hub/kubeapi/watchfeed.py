"""Watches served on the event loop, for the SQLite store (mkhub dev-cluster's, the hub's own).

A thread per watch cost the dev-cluster a futex wake per watch per commit (``Condition.notify`` was a
sixth of its CPU) and a hop back to the loop per event. Here a :class:`CommitFeed` listens to the
store's commits (:func:`hub.store.sqlite_watch.listen_commits`): a commit schedules at most one call on
the loop (``call_soon_threadsafe`` from another thread, ``call_soon`` from the loop itself, as inline
writes commit; none while one is pending), which wakes the streams of the kinds it changed. Each
stream then takes its new changes from the store's ring without waiting (``SQLiteWatch.poll``) and
writes them in one chunk; only changes older than the ring are read from the log, in a worker thread.

A stream whose client does not read blocks in its own ``write`` (aiohttp waits for the socket to
drain past 64 KiB): nothing is queued for it, others go on, and its cursor stays in the store's change
log until it resumes (or answers 410 once the log has moved past it, as an API server drops a
watcher that fell behind).
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Awaitable, Callable

from hub.store.interface import Gone, StoreError, WatchEvent
from hub.store.sqlite import SQLiteStore
from hub.store.sqlite_watch import SQLiteWatch, listen_commits

BATCH = 256  # events per chunk written; a longer backlog gives the loop a turn between chunks


class Waiter:
    """One stream's wakeup: set by the feed (its kind committed) or by the stream's own timer."""

    __slots__ = ("_future", "_loop", "kind", "pending")

    def __init__(self, loop: asyncio.AbstractEventLoop, kind: str) -> None:
        self._loop = loop
        self._future: asyncio.Future[None] | None = None
        self.kind = kind
        self.pending = True  # look once at the start

    def wake(self) -> None:
        self.pending = True
        future = self._future
        if future is not None and not future.done():
            future.set_result(None)

    async def wait(self) -> None:
        if self.pending:
            await asyncio.sleep(0)  # woken meanwhile: still one turn of the loop, a busy kind must not starve requests
        else:
            self._future = self._loop.create_future()
            try:
                await self._future
            finally:
                self._future = None
        self.pending = False


class CommitFeed:
    """Commits of one store, turned into wakeups of the streams on one event loop. Made on that loop."""

    def __init__(self, store: SQLiteStore) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._lock = threading.Lock()  # _changed and _scheduled: set by committing threads
        self._changed: set[str] = set()
        self._everything = False
        self._scheduled = False
        self._streams: dict[str, set[Waiter]] = {}  # read from committing threads: no await changes it mid-way
        self._store = store
        self._stop = listen_commits(store, self._committed)

    def open(self, kind: str, since: int) -> SQLiteWatch:
        """The store's watch of ``kind`` from ``since`` (raises Gone): under its lock only, no I/O."""
        return self._store.watch([kind], since)

    def register(self, kind: str) -> Waiter:
        waiter = Waiter(self._loop, kind)
        self._streams.setdefault(kind, set()).add(waiter)
        return waiter

    def unregister(self, waiter: Waiter) -> None:
        streams = self._streams.get(waiter.kind)
        if streams is not None:
            streams.discard(waiter)
            if not streams:
                del self._streams[waiter.kind]

    @property
    def streams(self) -> int:
        return sum(len(s) for s in self._streams.values())

    def close(self) -> None:
        self._stop()
        for streams in list(self._streams.values()):
            for waiter in list(streams):
                waiter.wake()

    def _committed(self, kinds: frozenset[str] | None) -> None:
        """After a commit, on the committing thread, under the store's lock. A commit of kinds nobody
        here watches costs nothing more: a stream registered meanwhile looks at the ring first."""
        if kinds is not None and not any(kind in self._streams for kind in kinds):
            return
        with self._lock:
            if kinds is None:
                self._everything = True
            else:
                self._changed.update(kinds)
            if self._scheduled:
                return
            self._scheduled = True
        try:
            if threading.get_ident() == self._thread:
                self._loop.call_soon(self._wake)
            else:
                self._loop.call_soon_threadsafe(self._wake)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            pass

    def _wake(self) -> None:
        with self._lock:
            changed, self._changed = self._changed, set()
            everything, self._everything = self._everything, False
            self._scheduled = False
        for kind in self._streams if everything else changed:
            for waiter in self._streams.get(kind, ()):
                waiter.wake()


async def follow(
    feed: CommitFeed,
    watch: SQLiteWatch,
    kind: str,
    since: int,
    *,
    line: Callable[[WatchEvent], bytes],
    write: Callable[[bytes], Awaitable[None]],
    bookmark: Callable[[int], Awaitable[None]] | None,
    bookmark_interval: float,
    deadline: float,
    connected: Callable[[], bool] | None,
    gone_check: float,
    expired: Callable[[int, Gone], Awaitable[None]],
) -> None:
    """Write ``watch``'s events (``line`` of each; b"" to skip one) until ``deadline`` (the loop's clock),
    the client leaves (looked at every ``gone_check`` seconds), the store closes, or the log no longer
    holds its next change (``expired``). ``bookmark`` (None: none asked for) every ``bookmark_interval``
    seconds with the version up to which every change of the store was seen."""
    loop = asyncio.get_running_loop()
    waiter = feed.register(kind)
    last = since
    now = loop.time()
    next_bookmark = now + bookmark_interval if bookmark is not None else math.inf
    next_check = now + gone_check if connected is not None else math.inf
    timer: asyncio.TimerHandle | None = None  # None once fired
    timer_at = math.inf

    def ring() -> None:
        nonlocal timer
        timer = None
        waiter.wake()

    try:
        while True:
            while (events := watch.poll(BATCH)) is None or events:
                if events is None:  # behind the ring: a SQLite read, off the loop
                    try:
                        await asyncio.to_thread(watch.read_log)
                    except Gone as exc:
                        await expired(last, exc)
                        return
                    continue
                chunk = b"".join([line(e) for e in events])
                last = events[-1].resource_version
                if chunk:
                    await write(chunk)
                if len(events) == BATCH:
                    await asyncio.sleep(0)
            if watch.closed:
                return
            position = watch.position
            if position is not None and position > last:
                last = position
            now = loop.time()
            if now >= deadline:
                return
            if now >= next_check:
                assert connected is not None
                if not connected():
                    return
                next_check = now + gone_check
            if bookmark is not None and now >= next_bookmark:
                await bookmark(last)
                next_bookmark = now + bookmark_interval
            at = min(deadline, next_bookmark, next_check)
            if timer is None or at != timer_at:
                if timer is not None:
                    timer.cancel()
                timer, timer_at = loop.call_at(at, ring), at
            await waiter.wait()
    except StoreError:
        return  # the store closed under a log read
    finally:
        if timer is not None:
            timer.cancel()
        feed.unregister(waiter)
        watch.close()
