"""Decoded bodies of the rows a store wrote lately, so that writing an object's status again
does not decode the whole stored body.

A status write replaces one field of the stored object and writes the whole body back: the
old body must be decoded first. The hub writes each workload's status a few times within a
second or so (admitted, then finished) and each queue's status every round it changes; keeping
the last few thousand bodies it wrote saves decoding them again.

An entry answers only for the resourceVersion it was written at, so any other write of the row
(another path, another process) makes it miss. A rolled-back transaction gives its
resourceVersions back to be used again, so the store clears the cache on every rollback:
an entry is then always the row's content at that version.
"""

from __future__ import annotations

from collections import OrderedDict

from hub.store.interface import Object, ObjectKey

RECENT_BODIES = 4096


class RecentBodies:
    def __init__(self, size: int = RECENT_BODIES) -> None:
        self._size = size
        self._entries: OrderedDict[ObjectKey, tuple[int, Object]] = OrderedDict()

    def get(self, key: ObjectKey, resource_version: int) -> Object | None:
        """The body written at exactly ``resource_version`` (the store's: callers must not change it)."""
        entry = self._entries.get(key)
        if entry is None or entry[0] != resource_version:
            return None
        return entry[1]

    def put(self, key: ObjectKey, resource_version: int, body: Object) -> None:
        entries = self._entries
        entries[key] = (resource_version, body)
        entries.move_to_end(key)
        if len(entries) > self._size:
            entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()
