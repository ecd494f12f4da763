"""Watch: the store's blocking :class:`~hub.store.interface.Watch` as a chunked JSON event stream.

Events are written as newline-separated ``{"type": ..., "object": ...}`` chunks.
Over a SQLite store the event loop serves every watch itself, woken by the store's
commits (:mod:`hub.kubeapi.watchfeed`). Any other store's watch blocks its caller,
so each HTTP watch gets one daemon thread that pulls events (``next`` with a short
timeout, so a closed connection is noticed) and hands them to the event loop with
``call_soon_threadsafe``. The loop never blocks on the store.

As the API server: a watch without ``resourceVersion`` (or with ``"0"``) first
sends the current objects as ADDED; one from a resourceVersion the change log no
longer holds gets a single ERROR event carrying a 410 ``Expired`` Status;
``allowWatchBookmarks=true`` adds BOOKMARK events carrying the store's global
resourceVersion up to which this watch has seen every change (changes of other
kinds move it too, as etcd's revision moves kube-apiserver's bookmarks, so an
idle kind's watch can resume after the change window moved on); a
resourceVersion the store has not reached is waited for a few seconds, then
answered as kube-apiserver does (an ERROR event: 504 Timeout, cause
ResourceVersionTooLarge); ``timeoutSeconds`` ends the stream. With a label
selector, an object that stops matching is sent as DELETED and one that starts
matching as ADDED.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hub.store.interface import Gone, Object, ObjectKey, Store, StoreError, WatchEvent

from .bodies import encode_json
from .errors import bad_request, expired
from .reads import TOO_LARGE_WAIT, Selection, Target, external, too_large
from .watchfeed import CommitFeed, follow

DEFAULT_TIMEOUT = 1800.0  # the API server's --min-request-timeout
POLL = 0.25  # how often the pulling thread looks for a closed watch
GONE_CHECK = 2.0  # how often a quiet watch looks whether its client is still there


@dataclass(frozen=True, slots=True)
class WatchOptions:
    since: int | None  # None: send the current state first
    bookmarks: bool
    timeout: float
    initial_events: bool

    @classmethod
    def of(cls, query: Mapping[str, str]) -> WatchOptions:
        rv = query.get("resourceVersion", "")
        try:
            since = None if rv in ("", "0") else int(rv)
        except ValueError:
            raise bad_request(f'invalid resource version "{rv}"') from None
        timeout_text = query.get("timeoutSeconds", "")
        try:
            timeout = float(timeout_text) if timeout_text else DEFAULT_TIMEOUT
        except ValueError:
            raise bad_request(f'invalid timeoutSeconds "{timeout_text}"') from None
        bookmarks = query.get("allowWatchBookmarks", "").lower() in ("true", "1")
        initial = query.get("sendInitialEvents", "").lower() in ("true", "1")
        return cls(since, bookmarks, max(0.0, timeout), initial)


_END = object()


@dataclass(frozen=True, slots=True)
class _Progress:
    """The pump's store watch has handed over every change up to ``rv`` (of any kind)."""

    rv: int


class _Pump:
    """A thread moving store events onto the event loop's queue."""

    def __init__(self, store: Store, kind: str, since: int, loop: asyncio.AbstractEventLoop) -> None:
        self.queue: asyncio.Queue[object] = asyncio.Queue()
        self._loop = loop
        self._stop = threading.Event()
        self._watch = store.watch([kind], since)  # raises Gone before the thread starts
        self._thread = threading.Thread(target=self._run, name=f"kubeapi-watch-{kind}", daemon=True)
        self._thread.start()

    def _put(self, item: object) -> None:
        try:
            self._loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            self._stop.set()

    def _run(self) -> None:
        try:
            reported = 0
            while not self._stop.is_set() and not self._loop.is_closed():
                event = self._watch.next(POLL)
                if event is not None:
                    self._put(event)
                    continue
                if getattr(self._watch, "closed", False):  # its store closed: next() would return at once
                    break
                position = getattr(self._watch, "position", None)  # caught up: how far?
                if position is not None and position > reported:
                    reported = position
                    self._put(_Progress(position))
        except Gone as exc:
            self._put(exc)
        except StoreError:
            pass
        finally:
            self._watch.close()
            self._put(_END)

    def stop(self) -> None:
        self._stop.set()
        self._watch.close()


def event_line(type_: str, obj: Object) -> bytes:
    return encode_json({"type": type_, "object": obj}) + b"\n"


def _too_old(rv: int, why: object) -> bytes:
    """The ERROR event (410) of a watch whose position the change log no longer holds."""
    return event_line("ERROR", expired(f"too old resource version: {rv} ({why})").status())


Render = Callable[[Object, Object], Object]
"""(stored object, client-version object) -> what an event carries (the object, or a Table)."""
Write = Callable[[bytes], Awaitable[None]]


async def stream(
    store: Store,
    target: Target,
    query: Mapping[str, str],
    write: Write,
    render: Render,
    *,
    bookmark_interval: float,
    initial: Callable[[], Awaitable[tuple[list[Object], int]]],
    opened: Callable[[], Awaitable[None]] | None = None,
    connected: Callable[[], bool] | None = None,
    feed: CommitFeed | None = None,
    spliceable: bool = False,
) -> None:
    """Write a watch's events with ``write`` until its timeout, a 410, or the client goes away.
    ``opened`` runs once the query is known to be valid: as the API server, the response's
    headers go out then, not with the first event, so a client never waits a bookmark
    interval for them (and can close the watch at once). ``connected`` says whether the client
    is still there: a quiet watch looks every :data:`GONE_CHECK` seconds, so one whose client left
    ends (and stops its thread) instead of waiting for an event to fail on. With ``feed`` (a SQLite
    store's commits), served on the event loop (:mod:`hub.kubeapi.watchfeed`), not by a thread.
    ``spliceable``: ``render`` returns the client-version object, so an event whose stored JSON already
    is that may be sent as stored, without decoding and encoding it."""
    opts = WatchOptions.of(query)
    selection = Selection.of(query, target.res.kind)
    if opened is not None:
        await opened()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + opts.timeout
    namespace = target.store_namespace
    matching: dict[ObjectKey, bool] = {}
    since = opts.since
    if since is None:
        items, since = await initial()
        for obj in items:
            matching[ObjectKey.of(obj)] = ok = selection.matches(obj)
            if ok:
                await write(event_line("ADDED", render(obj, external(target, obj))))
    if opts.initial_events or opts.since is None and opts.bookmarks:
        mark = {"k8s.io/initial-events-end": "true"} if opts.initial_events else {}
        await write(event_line("BOOKMARK", _bookmark(target, since, mark)))
    current = await asyncio.to_thread(_reached, store, target.res.kind, since, TOO_LARGE_WAIT)
    if current < since:
        await write(event_line("ERROR", too_large(since, current).status()))
        return
    if feed is not None:
        await _follow(feed, target, since, opts, selection, matching, write, render, spliceable=spliceable,
                      bookmark_interval=bookmark_interval, deadline=deadline, connected=connected)
        return
    try:
        pump = await asyncio.to_thread(_Pump, store, target.res.kind, since, loop)
    except Gone as exc:
        await write(_too_old(since, exc))
        return
    last = since
    quiet_since = loop.time()  # a bookmark goes out after bookmark_interval with nothing from the pump
    try:
        while True:
            now = loop.time()
            remaining = deadline - now
            if remaining <= 0:
                return
            if connected is not None and not connected():
                return
            wait = min(remaining, quiet_since + bookmark_interval - now) if opts.bookmarks else remaining
            if connected is not None:
                wait = min(wait, GONE_CHECK)
            try:
                item = await _next_item(pump.queue, wait)
            except TimeoutError:
                now = loop.time()
                if opts.bookmarks and deadline - now > 0 and now - quiet_since >= bookmark_interval:
                    await write(event_line("BOOKMARK", _bookmark(target, last, {})))
                    quiet_since = now
                continue
            quiet_since = loop.time()
            if item is _END:
                return
            if isinstance(item, _Progress):
                last = max(last, item.rv)
                continue
            if isinstance(item, Gone):
                await write(_too_old(last, item))
                return
            assert isinstance(item, WatchEvent)
            last = item.resource_version
            type_ = _visible(item, namespace, target.res.namespaced, selection, matching)
            if type_:
                await write(event_line(type_, render(item.object, external(target, item.object))))
    finally:
        pump.stop()


async def _follow(
    feed: CommitFeed, target: Target, since: int, opts: WatchOptions, selection: Selection,
    matching: dict[ObjectKey, bool], write: Write, render: Render, *, spliceable: bool,
    bookmark_interval: float, deadline: float, connected: Callable[[], bool] | None,
) -> None:
    kind, namespace, namespaced = target.res.kind, target.store_namespace, target.res.namespaced
    try:
        watch = feed.open(kind, since)
    except Gone as exc:
        await write(_too_old(since, exc))
        return
    # The stored JSON is what the client gets when it names this version and kind first (as every
    # write through hub.kubeapi stores it); Namespaces are shown with defaults (reads.external).
    prefix = f'{{"apiVersion":"{target.api_version}","kind":"{kind}",' if spliceable and kind != "Namespace" else None
    plain = selection.labels is None and not selection.fields

    def line(event: WatchEvent) -> bytes:
        type_ = _visible(event, namespace, namespaced, selection, matching)
        if not type_:
            return b""
        if prefix is not None and plain:
            stored = getattr(event, "stored_json", None)
            if stored is not None and stored.startswith(prefix):
                return b'{"type":"%s","object":%s}\n' % (type_.encode(), stored.encode())
        return event_line(type_, render(event.object, external(target, event.object)))

    async def bookmark(rv: int) -> None:
        await write(event_line("BOOKMARK", _bookmark(target, rv, {})))

    async def gone(rv: int, exc: Gone) -> None:
        await write(_too_old(rv, exc))

    await follow(feed, watch, kind, since, line=line, write=write, bookmark=bookmark if opts.bookmarks else None,
                 bookmark_interval=bookmark_interval, deadline=deadline, connected=connected, gone_check=GONE_CHECK,
                 expired=gone)


async def _next_item(queue: asyncio.Queue[object], wait: float) -> object:
    """The queue's next item, or TimeoutError after ``wait`` seconds. Not ``asyncio.wait_for``: it
    wraps each get in a task of its own, which cost a twentieth of the dev-cluster's CPU (one per event)."""
    if not queue.empty():
        await asyncio.sleep(0)  # still one turn of the loop per event: a deep queue must not starve requests
        return queue.get_nowait()
    async with asyncio.timeout(max(0.0, wait)):
        return await queue.get()


def _reached(store: Store, kind: str, rv: int, wait: float) -> int:
    """The store's resourceVersion once it is at least ``rv``, or as it is after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        _, now = store.list(kind, "\x00")  # no object lives there: only the version
        if now >= rv or time.monotonic() >= deadline:
            return now
        time.sleep(0.05)


def _visible(
    event: WatchEvent, namespace: str, namespaced: bool, selection: Selection, matching: dict[ObjectKey, bool]
) -> str:
    """The event type this watch shows for ``event``, or "" to skip it. ``matching`` remembers
    whether each object matched the selector when last seen (absent: not seen yet)."""
    key = event.key
    if namespaced and namespace and key.namespace != namespace:
        return ""
    if selection.labels is None and not selection.fields:
        return event.type.value
    matches = selection.matches(event.object)
    was = matching.get(key)
    if event.type.value == "DELETED":
        matching.pop(key, None)
        return "DELETED" if was or (was is None and matches) else ""
    matching[key] = matches
    if matches:
        return "ADDED" if event.type.value == "ADDED" or was is False else "MODIFIED"
    return "DELETED" if was else ""


def _bookmark(target: Target, rv: int, annotations: dict[str, str]) -> Object:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if annotations:
        meta["annotations"] = annotations
    return {"kind": target.res.kind, "apiVersion": target.api_version, "metadata": meta}
