"""The informers' shared cache: objects as the API server last reported them, and a change log.

resourceVersions, two of them:

* The API server's (``srv``) are parsed as integers. Kubernetes documents them as
  opaque, but every API server backed by etcd hands out etcd's global revision
  (decimal integers that only grow), the API server's own watch cache compares
  them as integers, and Kubernetes 1.34 made that a documented guarantee
  (KEP-5504, comparable resource versions). They order the events of one object
  across the informer's stream and our own write responses, so a late event
  never rolls an object back. A non-integer one is refused with a clear error.
* The Store contract wants one global, strictly increasing integer per store,
  shared by all kinds, with ``watch(since)`` continuing exactly after a
  ``list()``. The informers of different kinds deliver in no common order, so
  the cache numbers every change it applies with its own counter (``seq``) and
  that is the resourceVersion callers of the Store see: in objects, lists and
  watch events. Writes translate it back (the object's current ``seq`` must be
  the one the caller read; the request then carries the API server's
  resourceVersion). The numbering is private to one process and restarts with
  it; callers list again after a restart anyway.

Identity: an object is its uid, not its name. One deleted and created again
under the same name while we did not watch (a disconnection, a 410) arrives as a
modification with a new uid; the cache publishes it as the old object's
DELETED followed by the new one's ADDED, so nothing the hub kept about the old
object (a Workload's admission) carries over to the new one.

Write-through: a write's response is applied here at once (it gets a new
``seq``), so a caller reads its own writes; the informer's event for the same
``srv`` arrives later and is dropped as already known. Deleted objects leave a
tombstone (their last ``srv``) until the kind's stream has moved past it.

Own echoes: the versions our write answers put here (of the kinds an informer follows) are
kept until their echo comes, so the informer can drop that echo by its version alone, before
decoding it (:meth:`Cache.take_echo`); applying it would change nothing: the entry's version
never goes back.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, NamedTuple

from hub.api.selectors import parse_label_selector
from hub.store.interface import (
    EventType,
    Gone,
    InvalidObject,
    Object,
    ObjectKey,
    ObjectList,
    Selector,
    StoreError,
    WatchEvent,
)

DEFAULT_LOG_RETENTION = 200_000


def server_rv(obj: Mapping[str, Any]) -> int:
    """The API server's resourceVersion of a manifest, as an integer."""
    text = (obj.get("metadata") or {}).get("resourceVersion")
    try:
        return int(str(text))
    except ValueError:
        raise StoreError(
            f"{obj.get('kind')} {(obj.get('metadata') or {}).get('name')}: resourceVersion {text!r} is not an "
            "integer; this back end needs an etcd-backed API server (integer resourceVersions)"
        ) from None


def _uid(obj: Mapping[str, Any]) -> str | None:
    """The object's uid; None when it has none (an answer that leaves it out matches any)."""
    return (obj.get("metadata") or {}).get("uid") or None


NESTED = (dict, list)  # a tuple, not ``dict | list``: that builds a union object per element tested


def copy_json(value: Any) -> Any:
    """A deep copy of JSON data (dicts, lists, scalars): several times faster than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: copy_json(v) if isinstance(v, NESTED) else v for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) if isinstance(v, NESTED) else v for v in value]
    return value


def with_seq(obj: Object, seq: int) -> Object:
    """A deep copy of a cached manifest showing the store's resourceVersion."""
    out: Object = copy_json(obj)
    out["metadata"]["resourceVersion"] = str(seq)
    return out


def _seq_shown(obj: Object, seq: int) -> Object:
    """``obj`` showing the store's resourceVersion, sharing everything but the top level and metadata."""
    out = dict(obj)
    out["metadata"] = {**obj["metadata"], "resourceVersion": str(seq)}
    return out


@dataclass(slots=True)
class Entry:
    obj: Object  # as the API server sent it (its resourceVersion included)
    srv: int
    seq: int


class _Logged(NamedTuple):
    """One change in the log (a tuple: built for every change applied, a dataclass cost more)."""

    seq: int
    type: EventType
    kind: str
    obj: Object  # as the API server sent it (shared with the entry); copied, showing seq, on delivery


class Cache:
    """Thread-safe. Informers call :meth:`apply` and :meth:`replace`; writers :meth:`apply`."""

    def __init__(self, log_retention: int = DEFAULT_LOG_RETENTION) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._kinds: dict[str, dict[ObjectKey, Entry]] = {}
        self._tombs: dict[str, dict[ObjectKey, int]] = {}
        self._seq = 0
        self._log: deque[_Logged] = deque(maxlen=max(1, log_retention))
        self._closed = False
        # Open batches (the hub's round of writes): watches are woken once when the last one
        # ends instead of once per change (each wake of a watch thread costs a futex wake).
        self._held = 0
        self._wake_due = False
        # Per followed kind: versions our writes' answers were applied at, whose echo is to come.
        self._own: dict[str, set[int]] = {}

    # ------------------------------------------------------------------ applying changes

    def _publish(self, type_: EventType, key: ObjectKey, obj: Object) -> int:
        self._seq += 1
        # The entry's own object: cached objects are replaced, never changed in place, and a watch
        # copies what it delivers (CacheWatch.next), showing the store's version there. Most
        # changes are never delivered (our own writes' echoes are skipped unread): not copied here.
        self._log.append(_Logged(self._seq, type_, key.kind, obj))
        return self._seq

    def apply(self, type_: str, obj: Object, *, own: bool = False) -> Entry | None:
        """One change as the API server reported it (watch event or write response; ``own``: the
        answer to a write of ours, whose echo :meth:`take_echo` will recognise).
        Returns the entry it became, or None when it was stale, a duplicate or a deletion."""
        key = ObjectKey.of(obj)
        srv = server_rv(obj)
        with self._cond:
            echoes = self._own.get(key.kind)
            if echoes is not None and not own:
                echoes.discard(srv)  # an echo that came decoded (or the version came otherwise)
            entries = self._kinds.setdefault(key.kind, {})
            tombs = self._tombs.setdefault(key.kind, {})
            current = entries.get(key)
            floor = current.srv if current is not None else tombs.get(key, 0)
            # A delete's answer may carry the object's last resourceVersion: equal is enough.
            if srv < floor or (srv == floor and (type_ != "DELETED" or current is None)):
                return None
            if type_ == "DELETED":
                if current is not None:
                    del entries[key]
                    self._publish(EventType.DELETED, key, obj)
                    self._changed()
                tombs[key] = srv
                return None
            tombs.pop(key, None)
            entry = entries[key] = self._put(key, current, obj, srv)
            if own and echoes is not None and type_ != "DELETED":
                echoes.add(srv)
            self._changed()
            return entry

    def _changed(self) -> None:
        """A change was published (the lock held): wake the watches now, or when the batches end."""
        if self._held:
            self._wake_due = True
        else:
            self._cond.notify_all()

    def hold(self) -> None:
        """A batch of writes begins: :meth:`_changed` wakes no watch until :meth:`release`."""
        with self._cond:
            self._held += 1

    def release(self) -> None:
        with self._cond:
            self._held -= 1
            if not self._held and self._wake_due:
                self._wake_due = False
                self._cond.notify_all()

    def _put(self, key: ObjectKey, current: Entry | None, obj: Object, srv: int) -> Entry:
        """Publish ``obj`` replacing ``current``: a MODIFIED, or (another uid) a DELETED and an ADDED."""
        old_uid, new_uid = (None, None) if current is None else (_uid(current.obj), _uid(obj))
        if current is not None and old_uid and new_uid and old_uid != new_uid:
            self._publish(EventType.DELETED, key, current.obj)
            current = None
        seq = self._publish(EventType.MODIFIED if current is not None else EventType.ADDED, key, obj)
        return Entry(obj, srv, seq)

    def replace(self, kind: str, objects: Iterable[Object], list_srv: int) -> None:
        """A fresh list of ``kind`` taken at the server's ``list_srv``: apply what is newer and
        delete what the list no longer holds (unless a write of ours landed after the list)."""
        with self._cond:
            entries = self._kinds.setdefault(kind, {})
            tombs = self._tombs.setdefault(kind, {})
            seen: set[ObjectKey] = set()
            for obj in objects:
                key = ObjectKey.of(obj)
                seen.add(key)
                srv = server_rv(obj)
                current = entries.get(key)
                floor = current.srv if current is not None else tombs.get(key, 0)
                if srv > floor:
                    tombs.pop(key, None)
                    entries[key] = self._put(key, current, obj, srv)
            for key in [k for k, e in entries.items() if k not in seen and e.srv <= list_srv]:
                self._publish(EventType.DELETED, key, entries.pop(key).obj)
                tombs[key] = list_srv
            self._forget(kind, list_srv)
            self._changed()

    def forget_tombstones(self, kind: str, through_srv: int) -> None:
        """The kind's stream is past ``through_srv``: no older event can come, drop their guards
        (and the own versions whose echo it passed without our seeing it: a re-list)."""
        with self._cond:
            self._forget(kind, through_srv)

    def _forget(self, kind: str, through_srv: int) -> None:
        tombs = self._tombs.get(kind)
        if tombs:
            for key in [k for k, srv in tombs.items() if srv <= through_srv]:
                del tombs[key]
        echoes = self._own.get(kind)
        if echoes:
            echoes.difference_update([v for v in echoes if v <= through_srv])

    # ------------------------------------------------------------------ own echoes

    def follow_echoes(self, kind: str) -> None:
        """An informer follows ``kind``: keep its own versions for :meth:`take_echo` (a kind no
        informer follows, an Event, would keep them forever)."""
        with self._cond:
            self._own.setdefault(kind, set())

    def follows(self, kind: str) -> bool:
        """Whether an informer follows ``kind`` (its watch may bring a write's version first)."""
        return kind in self._own

    def expects_echo(self, kind: str) -> bool:
        """Whether any own version of ``kind`` waits for its echo (a hint: read without the lock)."""
        return bool(self._own.get(kind))

    def take_echo(self, kind: str, srv: int) -> bool:
        """True, once, when ``srv`` is the version a write answer of ours put here: its watch
        event would change nothing (the entry is at ``srv`` or later, or a tombstone is), so the
        informer may drop it undecoded."""
        with self._cond:
            echoes = self._own.get(kind)
            if echoes and srv in echoes:
                echoes.discard(srv)
                return True
            return False

    def own_versions(self, kind: str) -> int:
        """How many own versions of ``kind`` wait for their echo (stats, tests)."""
        with self._cond:
            return len(self._own.get(kind, ()))

    # ------------------------------------------------------------------ reading

    def entry(self, key: ObjectKey) -> Entry | None:
        with self._cond:
            return self._kinds.get(key.kind, {}).get(key)

    def get(self, key: ObjectKey, *, shared: bool = False) -> Object | None:
        """A deep copy; ``shared``: as :meth:`list`'s, for a reader that changes nothing."""
        with self._cond:
            entry = self._kinds.get(key.kind, {}).get(key)
            if entry is None:
                return None
            return _seq_shown(entry.obj, entry.seq) if shared else with_seq(entry.obj, entry.seq)

    def list(
        self, kind: str, namespace: str | None = None, label_selector: Selector | None = None, *, shared: bool = False
    ) -> tuple[ObjectList, int]:
        """Deep copies; ``shared``: objects that share all but their top level and metadata with the
        cache (entries are replaced, never changed in place), for a reader that changes nothing."""
        show = _seq_shown if shared else with_seq
        selector = None if label_selector is None else parse_label_selector(label_selector)
        with self._cond:
            picked = [
                (key, entry)
                for key, entry in self._kinds.get(kind, {}).items()
                if namespace is None or key.namespace == namespace
            ]
            if selector is not None:
                picked = [
                    (k, e) for k, e in picked if selector.matches((e.obj.get("metadata") or {}).get("labels") or {})
                ]
            out = [show(e.obj, e.seq) for _, e in sorted(picked, key=lambda ke: (ke[0].namespace, ke[0].name))]
            return out, self._seq

    @property
    def seq(self) -> int:
        with self._cond:
            return self._seq

    def count(self, kind: str) -> int:
        with self._cond:
            return len(self._kinds.get(kind, {}))

    # ------------------------------------------------------------------ watching

    def watch(self, kinds: Iterable[str] | None, since: int) -> CacheWatch:
        with self._cond:
            self._check_since(since)
            return CacheWatch(self, None if kinds is None else frozenset(kinds), since)

    def _check_since(self, since: int) -> None:
        oldest = self._log[0].seq - 1 if self._log else self._seq
        if since < oldest or since > self._seq:
            raise Gone(since, oldest, self._seq)

    def _next_after(self, pos: int, kinds: frozenset[str] | None, deadline: float | None, watch: CacheWatch) -> _Logged | None:
        with self._cond:
            while True:
                if watch.closed or self._closed:
                    return None
                self._check_since(pos)
                if pos < self._seq:
                    first = self._log[0].seq
                    for i in range(pos - first + 1, len(self._log)):
                        item = self._log[i]
                        if kinds is None or item.kind in kinds:
                            return item
                        watch.pos = item.seq  # skipped: another kind
                    pos = watch.pos
                    continue
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class CacheWatch:
    """The Store's :class:`~hub.store.interface.Watch` over the cache's change log."""

    def __init__(self, cache: Cache, kinds: frozenset[str] | None, since: int) -> None:
        self._cache = cache
        self._kinds = kinds
        self.pos = since
        self.closed = False
        self._skip: Callable[[int], bool] | None = None
        self._keep: Callable[[EventType, str], bool] | None = None

    def skip_changes(self, skip: Callable[[int], bool]) -> None:
        """Drop each change for whose resourceVersion ``skip`` says True before it is copied into an
        event: the hub's reconciler passes the echoes of its own writes (as the SQLite store's watch)."""
        self._skip = skip

    def only(self, keep: Callable[[EventType, str], bool]) -> None:
        """Deliver only the changes for whose (event type, kind) ``keep`` says True; the others are
        dropped before they are copied into an event (the Kubernetes-mode agent needs no Workload
        change but a deletion: the rest are the echoes of its own writes)."""
        self._keep = keep

    @property
    def position(self) -> int:
        """Every change up to here has been returned by :meth:`next` (what bookmarks carry)."""
        return self.pos

    def next(self, timeout: float | None = None) -> WatchEvent | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            item = self._cache._next_after(self.pos, self._kinds, deadline, self)
            if item is None:
                return None
            self.pos = item.seq
            if (self._skip is None or not self._skip(item.seq)) and (self._keep is None or self._keep(item.type, item.kind)):
                break
        try:
            return WatchEvent(item.type, with_seq(item.obj, item.seq), item.seq)
        except InvalidObject:  # pragma: no cover - the cache only holds keyed objects
            return None

    def close(self) -> None:
        self.closed = True
        self._cache.wake()

    def __iter__(self) -> Iterator[WatchEvent]:
        while (event := self.next()) is not None:
            yield event

    def __enter__(self) -> CacheWatch:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
