"""The state store contract shared by every back end.

Objects are plain JSON-able Kubernetes-style manifests (``apiVersion``, ``kind``,
``metadata``, ``spec``, ``status``) keyed by (kind, namespace, name); cluster-scoped
objects have namespace ``""``. The store knows no schemas.
"""

from __future__ import annotations

import enum
import os
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, NamedTuple, Protocol, cast, runtime_checkable

from hub.api.selectors import Selector as Selector  # re-exported for the back ends

Object = dict[str, Any]
"""A manifest as stored and returned: a plain, JSON-able dict."""

ObjectList = list[Object]


# --------------------------------------------------------------------------- errors


class StoreError(Exception):
    """Base class of every error the store raises."""


class InvalidObject(StoreError, ValueError):
    """The manifest cannot be stored (no kind or name, not JSON-able...)."""


class _KeyedError(StoreError):
    """An error about one object; the message names its kind, namespace and name."""

    reason = ""

    def __init__(self, key: ObjectKey, detail: str = "") -> None:
        self.key = key
        super().__init__(f"{key}: {self.reason}" + (f" ({detail})" if detail else ""))


class NotFound(_KeyedError):
    reason = "not found"


class AlreadyExists(_KeyedError):
    reason = "already exists"


class Conflict(_KeyedError):
    """Optimistic concurrency failure: the caller's resourceVersion is stale."""

    reason = "conflict: the object has been modified; re-read it and retry"


class Gone(StoreError):
    """The requested resourceVersion is no longer (or not yet) in the change log: re-list."""

    def __init__(self, resource_version: int, oldest: int, newest: int) -> None:
        self.resource_version = resource_version
        self.oldest = oldest  # the log holds the changes after this one
        self.newest = newest
        super().__init__(
            f"resourceVersion {resource_version} is gone: the change log holds "
            f"({oldest}, {newest}]; list again and watch from the list's resourceVersion"
        )


# --------------------------------------------------------------------------- keys & events


class ObjectKey(NamedTuple):
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectKey:
        """The key of a manifest; raises InvalidObject when kind or name is missing."""
        if type(obj) is dict:  # the common case, without the abstract-class checks below
            meta = obj.get("metadata")
            if type(meta) is dict:
                kind, name, namespace = obj.get("kind"), meta.get("name"), meta.get("namespace") or ""
                if type(kind) is str and kind and type(name) is str and name and type(namespace) is str:
                    return cls(kind, namespace, name)
        if not isinstance(obj, Mapping):
            raise InvalidObject(f"an object must be a mapping, not {type(obj).__name__}")
        kind = obj.get("kind")
        meta = obj.get("metadata")
        if not isinstance(kind, str) or not kind:
            raise InvalidObject("object has no kind")
        if not isinstance(meta, Mapping):
            raise InvalidObject(f"{kind} has no metadata")
        name = meta.get("name")
        namespace = meta.get("namespace") or ""
        if not isinstance(name, str) or not name:
            raise InvalidObject(f"{kind} has no metadata.name")
        if not isinstance(namespace, str):
            raise InvalidObject(f"{kind} {name}: metadata.namespace must be a string")
        return cls(kind, namespace, name)

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


# Kubernetes' name generator: lower-case consonants and digits that spell no words.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_NAME_SUFFIX_LEN = 5
_NAME_MAX_BASE = 63 - _NAME_SUFFIX_LEN
GENERATE_NAME_ATTEMPTS = 8
"""How many generated names create() tries before it reports AlreadyExists (the
API server retries a collision too, since Kubernetes 1.30)."""


def generated_name(base: str) -> str:
    """``base`` (cut to leave room) plus a random 5-character suffix, as the API server does."""
    suffix = "".join(secrets.choice(_NAME_ALPHABET) for _ in range(_NAME_SUFFIX_LEN))
    return base[:_NAME_MAX_BASE] + suffix


def needs_generated_name(obj: Mapping[str, Any]) -> bool:
    """True when a manifest has metadata.generateName and no metadata.name."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    return (
        isinstance(meta, Mapping)
        and not meta.get("name")
        and isinstance(meta.get("generateName"), str)
        and bool(meta.get("generateName"))
    )


def with_generated_name(obj: Mapping[str, Any]) -> Object:
    """A shallow copy of ``obj`` whose metadata.name is generated from its generateName."""
    meta = dict(obj["metadata"])
    meta["name"] = generated_name(meta["generateName"])
    return {**obj, "metadata": meta}


class EventType(enum.StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: EventType
    object: Object
    """The object after the change; for DELETED, the last state with the deletion's resourceVersion."""
    resource_version: int

    @property
    def key(self) -> ObjectKey:
        return ObjectKey.of(self.object)


@runtime_checkable
class Watch(Protocol):
    """A stream of changes in commit order. Single consumer; close() may come from any thread."""

    def next(self, timeout: float | None = None) -> WatchEvent | None:
        """The next event; None on timeout or once closed. May raise Gone if the
        consumer fell behind the retained change log."""
        ...

    def close(self) -> None: ...

    def __iter__(self) -> Iterator[WatchEvent]:
        """Blocks for events until close()."""
        ...

    def __enter__(self) -> Watch: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


# --------------------------------------------------------------------------- the store


@runtime_checkable
class Store(Protocol):
    """Synchronous, thread-safe object store with optimistic concurrency and watch.

    Every returned dict is the caller's own deep copy. resourceVersions are strings of
    one global, strictly increasing integer counter shared by all kinds.
    """

    def create(self, obj: Mapping[str, Any]) -> Object:
        """Store a new object; sets uid and creationTimestamp (unless present),
        generation=1 and resourceVersion. An object with metadata.generateName and
        no name gets a generated name (retried on collision). Raises AlreadyExists."""
        ...

    def update(self, obj: Mapping[str, Any]) -> Object:
        """Replace metadata and spec, keeping the stored status. generation grows only
        when the spec changes. A no-op update writes nothing. Raises NotFound, Conflict."""
        ...

    def update_status(self, obj: Mapping[str, Any]) -> Object:
        """Replace only status. Raises NotFound, Conflict."""
        ...

    def delete(
        self, kind: str, namespace: str, name: str, *, resource_version: str | int | None = None
    ) -> Object:
        """Delete and return the object. With finalizers it is only marked
        (metadata.deletionTimestamp) and goes once an update clears them.
        Raises NotFound, Conflict."""
        ...

    def get(self, kind: str, namespace: str, name: str) -> Object | None: ...

    def list(
        self, kind: str, namespace: str | None = None, label_selector: Selector | None = None
    ) -> tuple[ObjectList, int]:
        """Objects sorted by (namespace, name), and the store's resourceVersion at that
        moment, to watch from. namespace None means all namespaces."""
        ...

    def watch(self, kinds: Iterable[str] | None = None, since: int = 0) -> Watch:
        """Changes with resourceVersion > since. Raises Gone if since is older than the
        retained change log (or newer than the store)."""
        ...

    def batch(self) -> AbstractContextManager[None]:
        """All writes inside commit together or not at all; events are published after
        commit. Nested batches join the outer one."""
        ...

    def close(self) -> None: ...


Refused = AlreadyExists | NotFound | Conflict | InvalidObject
"""The refusals of one write: what its own call raises before it changes anything."""


@runtime_checkable
class BulkWrites(Protocol):
    """A store that takes many independent writes in one call, for less than one call each
    (SQLite: a few statements for all of them instead of three each).

    Each result is what that object's own call would have given: the object written, or the
    refusal it would have raised (returned in its place; the other writes go ahead). Any other
    error is raised, and the enclosing batch is then aborted. Writes land in the order given,
    one resourceVersion each, as if made one by one. A result is the caller's own, but may share
    nested values with the object given.
    """

    def create_many(self, objs: Sequence[Mapping[str, Any]]) -> list[Object | Refused]: ...

    def update_status_many(
        self, objs: Sequence[Mapping[str, Any]], *, brief: bool = False
    ) -> list[Object | Refused]:
        """``brief``: a result need hold only the object's kind, name, namespace, resourceVersion
        and status (for callers that keep only the resourceVersion)."""
        ...


def create_each(store: Store, objs: Sequence[Mapping[str, Any]]) -> list[Object | Refused]:
    """``create`` of each object, with each refusal in its place: in one call where the store
    takes many (BulkWrites), else one by one."""
    if isinstance(store, BulkWrites):
        return store.create_many(objs)
    return [outcome_of(store.create, obj) for obj in objs]


@runtime_checkable
class ConcurrentWrites(Protocol):
    """A store whose independent writes go out together, each a round trip of its own (an API
    server: all in flight at once). Each result, in its place, is what that write's own call gave:
    the object written (brief: kind, metadata, status) or the StoreError it would have raised."""

    def write_concurrently(self, writes: Sequence[tuple[bool, Mapping[str, Any]]]) -> list[Object | StoreError]:
        """Creates (True) and status writes (False)."""
        ...


def create_independent(store: Store, objs: Sequence[Mapping[str, Any]]) -> list[Object | Refused]:
    """:func:`create_each` of objects that do not depend on each other (Events): where the store
    takes concurrent writes (``write_concurrency``: an API server, each write a round trip),
    several are in flight at once and they may land in any order."""
    if isinstance(store, BulkWrites):
        return store.create_many(objs)
    if isinstance(store, ConcurrentWrites):
        return _refused_only(store.write_concurrently([(True, obj) for obj in objs]))
    width = int(getattr(store, "write_concurrency", 1))
    if width > 1 and len(objs) > 1:
        pool = _writers(width)
        return list(pool.map(lambda obj: outcome_of(store.create, obj), objs))
    return [outcome_of(store.create, obj) for obj in objs]


_POOLS: dict[int, ThreadPoolExecutor] = {}


def _writers(width: int) -> ThreadPoolExecutor:
    """A shared pool of ``width`` writer threads (made once per width, kept for the process)."""
    pool = _POOLS.get(width)
    if pool is None:
        pool = _POOLS.setdefault(width, ThreadPoolExecutor(width, thread_name_prefix="mkhub-store-writes"))
    return pool


def update_status_each(
    store: Store, objs: Sequence[Mapping[str, Any]], *, brief: bool = False
) -> list[Object | Refused]:
    """``update_status`` of each object, as :func:`create_each`; ``brief`` as
    :meth:`BulkWrites.update_status_many` (a store without bulk writes gives whole objects)."""
    if isinstance(store, BulkWrites):
        return store.update_status_many(objs, brief=brief)
    if brief and isinstance(store, ConcurrentWrites):
        return _refused_only(store.write_concurrently([(False, obj) for obj in objs]))
    return [outcome_of(store.update_status, obj) for obj in objs]


def _refused_only(results: list[Object | StoreError]) -> list[Object | Refused]:
    """Results of :meth:`ConcurrentWrites.write_concurrently`: refusals stay in their places, any other
    error (the connection, leadership lost) is raised, as the write's own call would have."""
    for out in results:
        if isinstance(out, StoreError) and not isinstance(out, AlreadyExists | NotFound | Conflict | InvalidObject):
            raise out
    return cast(list[Object | Refused], results)  # every StoreError left is a Refused


def outcome_of(write: Callable[[Mapping[str, Any]], Object], obj: Mapping[str, Any]) -> Object | Refused:
    """One write's result, or its refusal in its place (what BulkWrites returns for each object)."""
    try:
        return write(obj)
    except (AlreadyExists, NotFound, Conflict, InvalidObject) as e:
        return e


def random_uids(count: int) -> list[str]:
    """``count`` random (version 4) UUIDs as text, from one read of the system's randomness:
    about a third of the cost of ``str(uuid.uuid4())`` each, which bulk creates pay per object."""
    raw = os.urandom(16 * count)
    out = []
    for i in range(0, 16 * count, 16):
        b = bytearray(raw[i : i + 16])
        b[6] = (b[6] & 0x0F) | 0x40  # version 4
        b[8] = (b[8] & 0x3F) | 0x80  # the RFC 4122 variant
        h = b.hex()
        out.append(f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
    return out


def modify(
    store: Store,
    kind: str,
    namespace: str,
    name: str,
    change: Callable[[Object], bool],
    *,
    status: bool = False,
    attempts: int = 5,
) -> Object | None:
    """client-go's ``RetryOnConflict``: ``change`` edits the current object in place (False: nothing
    to write), the result is written with the version it was read at, and a conflict reads again
    and re-applies ``change``: another writer's fields are never overwritten by a stale copy.
    ``status``: the change is to status. None when nothing was written: the object is gone, or
    ``change`` found nothing to change. A store that must read fresh from elsewhere (the
    Kubernetes store) has its own ``modify``."""
    own = getattr(store, "modify", None)
    if own is not None:
        result: Object | None = own(kind, namespace, name, change, status=status)
        return result
    for attempt in range(attempts):
        current = store.get(kind, namespace, name)
        if current is None:
            return None
        if not change(current):
            return None
        try:
            return store.update_status(current) if status else store.update(current)
        except NotFound:
            return None
        except Conflict:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
