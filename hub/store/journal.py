"""Which resourceVersions the writes of this thread's last batch created.

A write that changes nothing answers, as the API server does, with the object's current
resourceVersion: that of someone else's change, maybe one the caller's watch has not delivered
yet. A caller that skips the echoes of its own writes (hub.controllers.own_writes) must not take
such an answer for its own, or it drops that other change. The stores note here the versions
their writes created during a batch (SQLite: the changes its commit made; Kubernetes: an answer
newer than the cache, to a write made at the cached version), and :func:`committed` keeps, of a
round's answers, only those.

Per thread: a batch's writes run on the thread that opened it. Nested batches add to the outer.
Writes the batch hands to other threads (a writer pool) carry its record with them (:func:`carry`),
so another writer's changes through the same store, at the same time, are never taken for its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

_local = threading.local()


def begin() -> None:
    """A batch opens on this thread; the outermost one starts a new record."""
    depth: int = getattr(_local, "depth", 0)
    if depth == 0:
        _local.rvs = set()
    _local.depth = depth + 1


def record(rvs: Iterable[int]) -> None:
    """Changes this thread's writes made, inside a batch (outside one, nobody asks)."""
    if getattr(_local, "depth", 0) > 0:
        _local.rvs.update(rvs)


def end(rvs: Iterable[int] = ()) -> None:
    """The batch closes, having made the changes ``rvs`` (if not recorded already)."""
    record(rvs)
    _local.depth = max(0, getattr(_local, "depth", 0) - 1)


def committed(rvs: Iterable[int]) -> list[int]:
    """Of ``rvs`` (the answers to the writes of this thread's last batch), those it created."""
    made: set[int] = getattr(_local, "rvs", set())
    return [rv for rv in rvs if rv in made]


def carry(call: Callable[[], T]) -> Callable[[], T]:
    """``call``, to run on another thread as part of this thread's open batch (if one is open)."""
    if getattr(_local, "depth", 0) == 0:
        return call
    record_of: set[int] = _local.rvs

    def within() -> T:
        outer = (getattr(_local, "depth", 0), getattr(_local, "rvs", None))
        _local.depth, _local.rvs = 1, record_of
        try:
            return call()
        finally:
            _local.depth, _local.rvs = outer

    return within
