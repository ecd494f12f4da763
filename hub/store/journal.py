"""Which resourceVersions the writes of this thread's last batch created.

A write that changes nothing answers, as the API server does, with the object's current
resourceVersion: that of someone else's change, maybe one the caller's watch has not delivered
yet. A caller that skips the echoes of its own writes (hub.controllers.own_writes) must not take
such an answer for its own, or it drops that other change. The stores note here the versions
their writes created during a batch (SQLite: the changes its commit made; Kubernetes: an answer
newer than the cache, to a write made at the cached version), and :func:`committed` keeps, of a
round's answers, only those.

Per thread: a batch's writes run on the thread that opened it. Nested batches add to the outer.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

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
