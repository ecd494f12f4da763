"""A kind's objects as they were at an earlier resourceVersion, from the store's change log.

etcd keeps every revision until compaction, so kube-apiserver answers a list at
an exact older resourceVersion (``resourceVersionMatch=Exact``, and every
``continue`` page after the first: each page shows the state of the first) and
410 once that revision is compacted. The store keeps the current objects and a
change log of the last changes (the dev-cluster's watch window), which is
enough to go back within the window:

* the objects no change touched since ``at`` are as they are now;
* a touched object was, at ``at``, what its last logged change up to ``at``
  made it (gone if that change was a delete), or absent if its first change
  after ``at`` created it;
* anything else happened before the window: 410 Expired, as after compaction.
"""

from __future__ import annotations

import time

from hub.store.interface import EventType, Gone, Object, ObjectKey, ObjectList, Store, Watch, WatchEvent

# How long to wait for the change log to show a change a list already saw (the store publishes
# events a moment after they commit).
_CATCH_UP = 2.0


class TooOld(Exception):
    """``at`` is older than the change log can take us back to."""


def _changes(store: Store, kind: str, since: int, upto: int) -> list[WatchEvent]:
    """The kind's changes in (since, upto]. Raises TooOld when the log no longer starts at ``since``."""
    try:
        watch: Watch = store.watch([kind], since)
    except Gone:
        raise TooOld() from None
    out: list[WatchEvent] = []
    deadline = time.monotonic() + _CATCH_UP
    try:
        while True:
            try:
                event = watch.next(0.05)
            except Gone:
                raise TooOld() from None
            if event is not None:
                if event.resource_version > upto:
                    break
                out.append(event)
                continue
            # Caught up with what is published. A store without a position, or one whose last
            # commits are not published yet after the wait, is taken as it is.
            position = getattr(watch, "position", None)
            if position is None or position >= upto or time.monotonic() >= deadline:
                break
    finally:
        watch.close()
    return out


def _oldest(store: Store, kind: str) -> int:
    try:
        store.watch([kind], 0).close()
    except Gone as exc:
        return exc.oldest
    return 0


def objects_at(store: Store, kind: str, namespace: str | None, at: int) -> tuple[ObjectList, int]:
    """The kind's objects (in ``namespace``; None: all) at resourceVersion ``at``, sorted as a
    list is, and the store's current resourceVersion. Raises TooOld."""
    items, now = store.list(kind, namespace)
    if at >= now:
        return items, now
    after: dict[ObjectKey, list[WatchEvent]] = {}
    for event in _changes(store, kind, at, now):
        if namespace is None or event.key.namespace == namespace:
            after.setdefault(event.key, []).append(event)
    if not after:
        return items, now
    before: dict[ObjectKey, WatchEvent] = {}
    for event in _changes(store, kind, _oldest(store, kind), at):
        if event.key in after:
            before[event.key] = event
    state: dict[ObjectKey, Object] = {ObjectKey.of(o): o for o in items}
    for key, changes in after.items():
        state.pop(key, None)
        last = before.get(key)
        if last is not None:
            if last.type != EventType.DELETED:
                state[key] = last.object
        elif changes[0].type != EventType.ADDED:
            raise TooOld()  # it existed at ``at``, as changed before the log begins
    return [state[k] for k in sorted(state, key=lambda k: (k.namespace, k.name))], now
