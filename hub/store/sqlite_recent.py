"""Decoded bodies of the rows a store wrote lately, so that writing an object's status again
does not decode the whole stored body.

A status write replaces one field of the stored object and writes the whole body back: the
old body must be decoded first, unless the last write of it was a bulk status write, whose
layout lets the next one splice the status in (hub.store.sqlite_status). The hub writes each
workload's status a few times within a second or so (admitted, then finished) and each queue's
status every round it changes; keeping the last few thousand bodies written saves decoding them
again where the splice does not apply.

An entry answers only for the resourceVersion it was written at, so any other write of the row
(another path, another process) makes it miss. A rolled-back transaction gives its
resourceVersions back to be used again, so the store clears the cache on every rollback:
an entry is then always the row's content at that version.
"""

from __future__ import annotations

from hub.store.interface import Object, ObjectKey

RECENT_BODIES = 4096


class RecentBodies:
    """Two generations of plain dicts: puts go to the young one, which becomes the old one once it
    holds ``size`` entries. Between ``size`` and ``2 * size`` of the latest bodies are kept, with
    no eviction bookkeeping per put; the oldest generation is dropped whole."""

    def __init__(self, size: int = RECENT_BODIES) -> None:
        self._size = size
        self._young: dict[ObjectKey, tuple[int, Object]] = {}
        self._old: dict[ObjectKey, tuple[int, Object]] = {}

    def get(self, key: ObjectKey, resource_version: int) -> Object | None:
        """The body written at exactly ``resource_version`` (the store's: callers must not change it)."""
        entry = self._young.get(key) or self._old.get(key)
        if entry is None or entry[0] != resource_version:
            return None
        return entry[1]

    def put(self, key: ObjectKey, resource_version: int, body: Object) -> None:
        young = self._young
        young[key] = (resource_version, body)
        if len(young) >= self._size:
            self._old, self._young = young, {}

    def clear(self) -> None:
        self._young = {}
        self._old = {}
