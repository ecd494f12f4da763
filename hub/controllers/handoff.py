"""Objects the control service has just parsed, handed to the reconciler so nothing is parsed twice.

``Apply`` parses and validates every Workload before it stores it; the store's
watch then delivers the stored manifest to the reconciler, which would parse and
validate it again. Instead the control service leaves the parsed object here,
keyed by the resourceVersion and key the store gave it, once its transaction has
committed (so the resourceVersion is final: a rolled-back write's number may be
reused). The reconciler takes it when it observes that very change; an event
without an entry (another writer, an entry not yet left, a restart) is parsed
from the store as always. The store stays the only truth: an entry is the parse
of exactly the manifest committed under that resourceVersion (the parse of what
was sent plus the metadata the store set, read from the stored metadata).
"""

from __future__ import annotations

import threading

from hub.api.registry import ApiObject
from hub.store.interface import ObjectKey

# Entries the reconciler has passed without taking (it observed the change first, or skipped it)
# are dropped once it is this many resourceVersions beyond them.
_PURGE_EVERY = 4096


class ParsedObjects:
    """resourceVersion -> (key, parsed object); any thread leaves, the reconciler's thread takes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[int, tuple[ObjectKey, ApiObject]] = {}
        self._passed = 0  # the reconciler has observed every change up to here
        self._purged = 0

    def leave(self, rv: int, key: ObjectKey, obj: ApiObject) -> None:
        """After the commit of the write that stored ``obj`` under ``key`` at ``rv``."""
        with self._lock:
            if rv > self._passed:  # otherwise the reconciler has parsed it already
                self._entries[rv] = (key, obj)

    def take(self, rv: int, key: ObjectKey) -> ApiObject | None:
        """The parsed object of the change at ``rv`` (None: parse the stored manifest). Called in
        resourceVersion order; everything left for an earlier change is dropped in passing."""
        with self._lock:
            self._passed = max(self._passed, rv)
            entry = self._entries.pop(rv, None)
            if rv - self._purged >= _PURGE_EVERY:
                self._entries = {k: v for k, v in self._entries.items() if k > rv}
                self._purged = rv
        if entry is None or entry[0] != key:
            return None
        return entry[1]

    def passed(self, rv: int) -> None:
        """The reconciler has observed (or restored from a list) every change up to ``rv``."""
        with self._lock:
            self._passed = max(self._passed, rv)

    def __len__(self) -> int:
        return len(self._entries)
