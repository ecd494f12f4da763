"""The SQLite back end's watch: a cursor over the change log that serves from the store's
in-memory ring of recent commits when it can, and reads the ``changes`` table when it is behind.
Events decode their object only when first read."""

from __future__ import annotations

import bisect
import builtins
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
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


class _ChangeLog(Protocol):
    """What a watch reads of its store (SQLiteStore): the ring of recent commits and the log."""

    _cond: threading.Condition
    _committed_rv: int
    _ring: list[_Change]
    _closed: bool

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
                return _StoredEvent(c.type, c.body, c.rv, ObjectKey(c.kind, c.namespace, c.name))
            if self._closed:
                return None
            state = self._fill_from_ring(deadline)
            if state == "stop":
                return None
            if state == "log":
                try:
                    changes, self._cursor = self._store._changes_after(self._cursor, self._kinds, self._CHUNK)
                except StoreError:
                    if self._store._closed:
                        return None
                    raise
                self._buf.extend(changes)

    def _fill_from_ring(self, deadline: float | None) -> Literal["filled", "log", "stop"]:
        store, kinds = self._store, self._kinds
        with store._cond:
            while True:
                if self._closed or store._closed:
                    return "stop"
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
                if deadline is None:
                    store._cond.wait()
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return "stop"
                    store._cond.wait(remaining)

    def close(self) -> None:
        self._closed = True
        with self._store._cond:
            self._store._cond.notify_all()

    def __iter__(self) -> Iterator[WatchEvent]:
        while (event := self.next()) is not None:
            yield event

    def __enter__(self) -> SQLiteWatch:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
