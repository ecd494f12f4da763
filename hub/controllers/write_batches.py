"""A round's independent store writes, in as few calls (or as many at once) as the store allows."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from hub.store import journal
from hub.store.interface import (
    AlreadyExists,
    BulkWrites,
    ConcurrentWrites,
    NotFound,
    Object,
    Store,
    StoreError,
)

_POOLS: dict[int, ThreadPoolExecutor] = {}  # writers for stores that take concurrent writes, by width


def independent_writes(store: Store, writes: list[tuple[bool, Object]]) -> list[Object | BaseException]:
    """Creates (True) and status writes (False) that do not depend on each other: in bulk where
    the store takes it (one call for each kind of write), else concurrently where it allows."""
    if isinstance(store, ConcurrentWrites):
        return list(store.write_concurrently(writes))
    if not isinstance(store, BulkWrites):
        return concurrently(store, [partial(store.create if create else store.update_status, body) for create, body in writes])
    results: list[Object | BaseException] = [{} for _ in writes]  # every place is filled below
    for create in (True, False):
        where = [i for i, w in enumerate(writes) if w[0] is create]
        if where:
            bodies = [writes[i][1] for i in where]
            written = store.create_many(bodies) if create else store.update_status_many(bodies, brief=True)
            for i, out in zip(where, written, strict=True):
                results[i] = out
    return results


def concurrently(store: Store, calls: list[Callable[[], Object]]) -> list[Object | BaseException]:
    """Run independent store writes, at once when the store allows (``write_concurrency``)."""
    width = int(getattr(store, "write_concurrency", 1))
    if width <= 1 or len(calls) <= 1:
        results: list[Object | BaseException] = []
        for call in calls:
            try:
                results.append(call())
            except (NotFound, AlreadyExists) as exc:
                results.append(exc)
        return results
    pool = _POOLS.get(width)
    if pool is None:
        pool = _POOLS[width] = ThreadPoolExecutor(width, thread_name_prefix="mkhub-writes")

    def guarded(call: Callable[[], Object]) -> Object | BaseException:
        try:
            return call()
        except StoreError as exc:
            return exc

    return list(pool.map(guarded, [journal.carry(call) for call in calls]))  # the round's batch goes along
