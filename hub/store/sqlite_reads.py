"""Reads of a rarely changed kind (Namespaces) kept between writes of a SQLite store.

Every create through mkhub dev-cluster's API reads its Namespace two or three times (is it there,
is it terminating: hub.kubeapi.writes, hub.service.apply), a SELECT and a decoding each, about 4% of
the server's CPU. Here an answer is kept until a change of the kind commits (``change_stamp``):
inside a write's batch every other thread's commit is published, and a Namespace written by the
batch itself makes the stamp None, so the store is read as before. Other stores are always read.
"""

from __future__ import annotations

from hub.store.interface import Object, Store
from hub.store.sqlite import SQLiteStore
from hub.store.sqlite_watch import change_stamp

_MAX_KEPT = 4096  # names asked since the last change, absent ones too: a bound on what a client can make it hold


class KindReads:
    """``store.get`` of one kind, answered from what was read since the kind last changed. The
    objects are shared: callers read them, never change them."""

    def __init__(self, store: Store, kind: str) -> None:
        self.store = store
        self.kind = kind
        # (stamp, answers by (namespace, name)): replaced whole, so a reader never mixes two stamps.
        self._kept: tuple[int | None, dict[tuple[str, str], Object | None]] = (None, {})

    def get(self, namespace: str, name: str) -> Object | None:
        store = self.store
        stamp = change_stamp(store, self.kind) if isinstance(store, SQLiteStore) else None
        if stamp is None:
            return store.get(self.kind, namespace, name)
        kept = self._kept
        if kept[0] != stamp or len(kept[1]) >= _MAX_KEPT:
            kept = self._kept = (stamp, {})
        key = (namespace, name)
        if key in kept[1]:
            return kept[1][key]
        obj = kept[1][key] = store.get(self.kind, namespace, name)  # read after the stamp: as of it or newer
        return obj
