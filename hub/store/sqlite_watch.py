"""The SQLite back end's watch: a cursor over the change log that serves from the store's
in-memory ring of recent commits when it can, and reads the ``changes`` table when it is behind.
Events decode their object only when first read."""

from __future__ import annotations

import bisect
import builtins
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import Literal, NamedTuple, Protocol

from hub.api import fastjson
from hub.store.interface import EventType, Object, ObjectKey, StoreError, WatchEvent


class _Change(NamedTuple):
    rv: int
    type: EventType
    kind: str
    namespace: str
    name: str
    body: str


_Changes = list[_Change]  # an alias: inside SQLiteStore, `list` names the method


class Wakers:
    """Which watches wait for which kinds, and the recent changes' resourceVersions of each kind.

    A commit wakes only the watches of the kinds it changed (and those of every kind), not every
    watch of the store: an API server had dozens, each on its own thread, and waking them all per
    commit cost more than the commits (it now serves them on its event loop, told of each commit's
    kinds by ``listeners``). A watch left asleep over other kinds' commits then moves
    its cursor over them in one step (``skip_to``: up to just before its kinds' next change, or to
    the committed version) rather than through the ring: it never falls out of the ring or the log
    for changes that were never its own, as kube-apiserver keeps a watch cache per resource. (Only
    moving it when none of its kinds had changed was not enough: woken by its own kind's next commit
    after a window's worth of others', it found its cursor compacted away and answered 410.) Used
    under the lock it is made with (the store's ``_cond``)."""

    def __init__(self, lock: threading.Lock, floor: int = 0, keep: int = 4096) -> None:
        self._lock = lock
        self._any: weakref.WeakSet[threading.Condition] = weakref.WeakSet()
        # Watches of every kind not woken by a commit of only these kinds (SQLiteWatch.quiet_kinds).
        self._any_but: weakref.WeakKeyDictionary[threading.Condition, frozenset[str]] = weakref.WeakKeyDictionary()
        self._by_kind: dict[str, weakref.WeakSet[threading.Condition]] = {}
        self._rvs: dict[str, list[int]] = {}  # kind -> rvs of its changes committed since opening, rising
        self._dropped: dict[str, int] = {}  # kind -> every change of it after this rv is in _rvs
        self._keep = max(1, keep)
        self.floor = floor  # a kind not in _rvs may have changed up to here (before this process)
        # Called after each commit with the kinds it changed (None: the store closed), under the lock:
        # an event loop serving watches itself (hub.kubeapi.watchfeed) instead of a thread per watch.
        self.listeners: list[Callable[[frozenset[str] | None], None]] = []

    def add(self, kinds: frozenset[str] | None) -> threading.Condition:
        cond = threading.Condition(self._lock)
        if kinds is None:
            self._any.add(cond)
        for kind in kinds or ():
            self._by_kind.setdefault(kind, weakref.WeakSet()).add(cond)
        return cond

    def quiet(self, cond: threading.Condition, kinds: frozenset[str]) -> None:
        """``cond`` (a watch of every kind) is not woken by a commit of only ``kinds``."""
        if cond in self._any:
            self._any.discard(cond)
            self._any_but[cond] = kinds

    def remove(self, cond: threading.Condition, kinds: frozenset[str] | None) -> None:
        self._any.discard(cond)
        self._any_but.pop(cond, None)
        for kind in kinds or ():
            conds = self._by_kind.get(kind)
            if conds is not None:
                conds.discard(cond)

    def skip_to(self, kinds: frozenset[str] | None, rv: int, committed: int) -> int:
        """The highest version (``rv`` to ``committed``) such that no change of ``kinds`` was committed
        after ``rv`` and up to it: a watch at ``rv`` may move its cursor there at once."""
        if kinds is None or rv >= committed:
            return rv
        to = committed
        for kind in kinds:
            rvs = self._rvs.get(kind)
            if rv < self._dropped.get(kind, self.floor):
                return rv  # its changes after rv are not all known here: read them in order
            if rvs:
                i = bisect.bisect_right(rvs, rv)
                if i < len(rvs) and rvs[i] <= to:
                    to = rvs[i] - 1
        return to

    def last_change(self, kind: str) -> int:
        """The version of ``kind``'s last change since the store opened, or the version it opened at."""
        rvs = self._rvs.get(kind)
        return rvs[-1] if rvs else self.floor

    def notify(self, events: list[_Change]) -> None:
        """After a commit of ``events`` (in rv order)."""
        kinds: set[str] = set()
        for e in events:
            rvs = self._rvs.get(e.kind)
            if rvs is None:
                rvs = self._rvs[e.kind] = []
            rvs.append(e.rv)
            kinds.add(e.kind)
        for kind in kinds:
            rvs = self._rvs[kind]
            if len(rvs) > 2 * self._keep:  # amortized: trimmed in chunks
                cut = len(rvs) - self._keep
                self._dropped[kind] = rvs[cut - 1]
                del rvs[:cut]
        for cond in self._any:
            cond.notify_all()
        for cond, quiet in self._any_but.items():
            if not kinds <= quiet:
                cond.notify_all()
        for kind in kinds:
            for cond in self._by_kind.get(kind, ()):
                cond.notify_all()
        if self.listeners:
            changed = frozenset(kinds)
            for listener in self.listeners:
                listener(changed)

    def notify_all(self) -> None:
        for cond in [*self._any, *self._any_but, *(c for conds in self._by_kind.values() for c in conds)]:
            cond.notify_all()
        for listener in self.listeners:
            listener(None)


class _ChangeLog(Protocol):
    """What a watch reads of its store (SQLiteStore): the ring of recent commits and the log."""

    _cond: threading.Condition
    _wakers: Wakers
    _committed_rv: int
    _ring: list[_Change]
    _closed: bool
    _owner: int | None
    _pending: list[_Change]
    _pending_kinds: set[str]

    def _changes_after(self, after: int, kinds: frozenset[str] | None, limit: int) -> tuple[_Changes, int]: ...


_set = builtins.object.__setattr__  # the events are frozen dataclasses


def _decoded_object(event: WatchEvent) -> Object:
    body: str = getattr(event, "_body")  # noqa: B009 - a slot of _StoredEvent
    decoded: Object | None = getattr(event, "_decoded")  # noqa: B009
    if decoded is None:
        decoded = fastjson.loads(body)
        _set(event, "_decoded", decoded)
    assert decoded is not None
    return decoded


class _StoredEvent(WatchEvent):
    """A watch event whose object is decoded from its stored JSON when first read: a consumer
    that recognises its own writes by resourceVersion (the hub's reconciler) never pays for them."""

    __slots__ = ("_body", "_decoded", "_key")

    def __init__(self, type_: EventType, body: str, rv: int, key: ObjectKey) -> None:
        _set(self, "type", type_)
        _set(self, "resource_version", rv)
        _set(self, "_body", body)
        _set(self, "_decoded", None)
        _set(self, "_key", key)

    object = property(_decoded_object)

    @property
    def stored_json(self) -> str:
        """The object's JSON as stored: what an API server may send without decoding it."""
        body: str = getattr(self, "_body")  # noqa: B009 - a slot
        return body

    @property
    def key(self) -> ObjectKey:
        """From the change log's columns: reading the key decodes nothing."""
        key: ObjectKey = getattr(self, "_key")  # noqa: B009 - a slot
        return key

    def __eq__(self, other: builtins.object) -> bool:
        if not isinstance(other, WatchEvent):
            return NotImplemented
        return (self.type, self.object, self.resource_version) == (
            other.type,
            other.object,
            other.resource_version,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"WatchEvent(type={self.type!r}, object={self.object!r}, resource_version={self.resource_version!r})"


def listen_commits(store: _ChangeLog, listener: Callable[[frozenset[str] | None], None]) -> Callable[[], None]:
    """Call ``listener`` after every commit of ``store`` with the kinds it changed, and with None when the
    store closes; on the committing thread, under the store's lock (so it must neither block nor take
    that lock). Returns the function that stops it."""
    with store._cond:
        store._wakers.listeners.append(listener)

    def stop() -> None:
        with store._cond:
            if listener in store._wakers.listeners:
                store._wakers.listeners.remove(listener)

    return stop


def change_stamp(store: _ChangeLog, kind: str) -> int | None:
    """A number that moves whenever a change of ``kind`` is committed (the version of its last change
    since the store opened, or the version it opened at): what a reader of a rarely changed kind may
    key a cache on, reading it before it lists. None inside the caller's own open batch once that wrote
    the kind: its lists see its writes before they are committed.
    Asked several times per write (webhook configurations, Namespaces), so without a scan of the
    batch's changes (``_pending_kinds``: at most more kinds than it holds after a savepoint's
    rollback, and then the store is read) nor the lock: a commit publishes its versions after its
    COMMIT, and one read of a kind's last version sees the state before or after a commit."""
    if store._owner == threading.get_ident() and kind in store._pending_kinds:
        return None
    return store._wakers.last_change(kind)


def _event(change: _Change) -> WatchEvent:
    return _StoredEvent(change.type, change.body, change.rv, ObjectKey(change.kind, change.namespace, change.name))


def _rv_of(change: _Change) -> int:
    return change.rv


class SQLiteWatch:
    """A cursor over the change log; serves from the in-memory ring when it can."""

    _CHUNK = 512

    def __init__(self, store: _ChangeLog, kinds: frozenset[str] | None, since: int) -> None:
        self._store = store
        self._kinds = kinds
        self._cursor = since  # every change <= cursor is delivered or buffered
        self._buf: deque[_Change] = deque()
        self._closed = False
        self._skip: Callable[[int], bool] | None = None
        with store._cond:
            self._wake = store._wakers.add(kinds)  # notified by commits of these kinds

    def quiet_kinds(self, kinds: Iterable[str]) -> None:
        """A watch of every kind: not woken by a commit of only these kinds; their changes are still
        returned, in order, with the next other commit's or once :meth:`next`'s timeout ends. For a
        watcher that acts on few of them (the dev-cluster's controllers and kube Events)."""
        with self._store._cond:
            self._store._wakers.quiet(self._wake, frozenset(kinds))

    def skip_changes(self, skip: Callable[[int], bool]) -> None:
        """Drop each change for whose resourceVersion ``skip`` says True before it becomes an event:
        the hub's reconciler passes the echoes of its own writes (hub.controllers.own_writes)."""
        self._skip = skip

    @property
    def closed(self) -> bool:
        """Closed, or its store is: :meth:`next` returns None at once from now on."""
        return self._closed or self._store._closed

    @property
    def position(self) -> int | None:
        """Every change up to this resourceVersion has been returned by :meth:`next` (None while
        some are buffered): what the API server's bookmarks carry."""
        return None if self._buf else self._cursor

    def next(self, timeout: float | None = None) -> WatchEvent | None:
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        while True:
            if self._buf:
                c = self._buf.popleft()
                if self._skip is not None and self._skip(c.rv):
                    continue
                return _event(c)
            if self._closed:
                return None
            state = self._fill_from_ring(deadline)
            if state == "stop":
                return None
            if state == "log":
                try:
                    self.read_log()
                except StoreError:
                    if self._store._closed:
                        return None
                    raise

    def poll(self, limit: int) -> builtins.list[WatchEvent] | None:
        """Up to ``limit`` events ready now, without waiting: an empty list when there are none, None when
        the next ones must first be read from the log (:meth:`read_log`, a SQLite read for a worker
        thread). For a caller that waits for commits itself (:func:`listen_commits`)."""
        out: builtins.list[WatchEvent] = []
        while len(out) < limit:
            if self._buf:
                c = self._buf.popleft()
                if self._skip is None or not self._skip(c.rv):
                    out.append(_event(c))
                continue
            if self._closed:
                break
            state = self._fill_from_ring(0.0)  # a deadline passed: never waits
            if state == "log":
                return out or None
            if state == "stop":
                break
        return out

    def read_log(self) -> None:
        """Read the next changes from the persisted log (raises Gone once they were compacted away)."""
        changes, self._cursor = self._store._changes_after(self._cursor, self._kinds, self._CHUNK)
        self._buf.extend(changes)

    def _fill_from_ring(self, deadline: float | None) -> Literal["filled", "log", "stop"]:
        store, kinds = self._store, self._kinds
        with store._cond:
            while True:
                if self._closed or store._closed:
                    return "stop"
                if self._cursor < store._committed_rv and kinds is not None:
                    self._cursor = store._wakers.skip_to(kinds, self._cursor, store._committed_rv)
                if self._cursor < store._committed_rv:
                    ring = store._ring
                    if not ring or ring[0].rv > self._cursor + 1:
                        return "log"  # older than the ring: read the persisted log
                    i = bisect.bisect_right(ring, self._cursor, key=_rv_of)
                    chunk = ring[i : i + self._CHUNK]
                    if not chunk:
                        return "log"
                    self._cursor = chunk[-1].rv
                    self._buf.extend(c for c in chunk if kinds is None or c.kind in kinds)
                    return "filled"
                # Woken by a commit of our kinds only: once the wait ends the loop above still moves
                # the cursor over what other kinds committed meanwhile (position, for bookmarks).
                if deadline is None:
                    self._wake.wait()
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return "stop"
                    self._wake.wait(remaining)

    def close(self) -> None:
        self._closed = True
        with self._store._cond:
            self._store._wakers.remove(self._wake, self._kinds)
            self._wake.notify_all()

    def __iter__(self) -> Iterator[WatchEvent]:
        while (event := self.next()) is not None:
            yield event

    def __enter__(self) -> SQLiteWatch:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
