"""One page of a list from the embedded store, as etcd gives kube-apiserver one: by key range.

A ``limit``/``continue`` list reads only its page: the objects after the continue key, in
(namespace, name) order from the key index, until ``limit`` are kept, so a page of 500
costs what 500 objects cost however many come before it. A page at an older version
(every continue page shows the first page's state) takes the objects changed since then
back through the change log, in the same read snapshot as the objects:

* an object with no change after ``at`` is as it is now;
* one changed after ``at`` was what its last logged change up to ``at`` made it (gone if
  that was a delete), or absent if its first change after ``at`` created it;
* anything older than the log (compacted) cannot be taken back: :class:`TooOld`, which
  kube-apiserver answers with 410 Expired, as etcd after compaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hub.api import fastjson
from hub.store.interface import EventType, Object, ObjectList

Key = tuple[str, str]  # (namespace, name): the order of a list

# Names per SELECT of the change log: well under SQLite's limit on bound parameters.
_NAMES_PER_SELECT = 400


class TooOld(Exception):
    """``at`` is older than the change log can take the list back to."""


@dataclass(frozen=True, slots=True)
class Chunk:
    items: ObjectList
    resource_version: int  # the version the items show
    more: bool  # kept objects follow the last item
    remaining: int | None  # how many (None when a predicate chose the items: not counted)


def _changed_since(
    conn: sqlite3.Connection, kind: str, namespace: str | None, at: int, after: Key | None
) -> dict[Key, str]:
    """Keys of ``kind`` changed after ``at`` (and after the key ``after``), with the type of their first change then."""
    sql = "SELECT namespace, name, type FROM changes WHERE rv > ? AND kind = ?"
    params: list[object] = [at, kind]
    if namespace is not None:
        sql += " AND namespace = ?"
        params.append(namespace)
    first: dict[Key, str] = {}
    for ns, name, type_ in conn.execute(sql + " ORDER BY rv", params):
        key = (ns, name)
        if key not in first and (after is None or key > after):
            first[key] = type_
    return first


def _states_at(conn: sqlite3.Connection, kind: str, at: int, compacted: int, first: dict[Key, str]) -> dict[Key, Object]:
    """What each key of ``first`` was at ``at`` (absent keys left out). Raises TooOld."""
    last: dict[Key, tuple[str, str]] = {}
    by_namespace: dict[str, list[str]] = {}
    for ns, name in first:
        by_namespace.setdefault(ns, []).append(name)
    for ns, names in by_namespace.items():
        for i in range(0, len(names), _NAMES_PER_SELECT):
            chunk = names[i : i + _NAMES_PER_SELECT]
            rows = conn.execute(
                "SELECT name, type, body FROM changes WHERE rv > ? AND rv <= ? AND kind = ? AND namespace = ? "
                f"AND name IN ({','.join('?' * len(chunk))}) ORDER BY rv",
                (compacted, at, kind, ns, *chunk),
            )
            for name, type_, body in rows:
                last[(ns, name)] = (type_, body)
    out: dict[Key, Object] = {}
    for key, first_type in first.items():
        found = last.get(key)
        if found is None:
            if first_type != EventType.ADDED.value:
                raise TooOld()  # it existed at ``at``, as changed before the log begins
            continue
        if found[0] != EventType.DELETED.value:
            out[key] = fastjson.loads(found[1])
    return out


def _current(conn: sqlite3.Connection, kind: str, namespace: str | None, after: Key | None) -> Iterator[tuple[Key, str]]:
    """The kind's stored bodies after ``after``, in list order, read lazily from the key index."""
    if namespace is not None:
        sql = "SELECT namespace, name, body FROM objects WHERE kind = ? AND namespace = ?"
        params: list[object] = [kind, namespace]
        if after is not None:
            if after[0] > namespace:
                return
            if after[0] == namespace:
                sql += " AND name > ?"
                params.append(after[1])
        sql += " ORDER BY name"
    else:
        sql = "SELECT namespace, name, body FROM objects WHERE kind = ?"
        params = [kind]
        if after is not None:
            sql += " AND (namespace > ? OR (namespace = ? AND name > ?))"
            params += [after[0], after[0], after[1]]
        sql += " ORDER BY namespace, name"
    for ns, name, body in conn.execute(sql, params):
        yield (ns, name), body


def _count_after(conn: sqlite3.Connection, kind: str, namespace: str | None, after: Key) -> int:
    if namespace is not None:
        if after[0] != namespace:
            return 0 if after[0] > namespace else int(
                conn.execute("SELECT COUNT(*) FROM objects WHERE kind = ? AND namespace = ?", (kind, namespace)).fetchone()[0]
            )
        row = conn.execute("SELECT COUNT(*) FROM objects WHERE kind = ? AND namespace = ? AND name > ?", (kind, namespace, after[1]))
    else:
        row = conn.execute(
            "SELECT COUNT(*) FROM objects WHERE kind = ? AND (namespace > ? OR (namespace = ? AND name > ?))",
            (kind, after[0], after[0], after[1]),
        )
    return int(row.fetchone()[0])


def read_chunk(
    conn: sqlite3.Connection,
    kind: str,
    namespace: str | None,
    *,
    now: int,
    compacted: int,
    after: Key | None,
    at: int | None,
    limit: int,
    keep: Callable[[Object], bool] | None,
) -> Chunk:
    """Up to ``limit`` objects (0: all) of ``kind`` after the key ``after``, as they were at ``at``
    (None: now), that ``keep`` keeps; ``conn`` is inside one read snapshot whose version is ``now``."""
    version = now if at is None or at >= now else at
    changed: dict[Key, str] = {}
    past: dict[Key, Object] = {}
    if version < now:
        if version < compacted:
            raise TooOld()
        changed = _changed_since(conn, kind, namespace, version, after)
        past = _states_at(conn, kind, version, compacted, changed)
    # The current objects not changed since, merged in key order with the past states of those changed.
    history = sorted(past)
    h = 0
    items: ObjectList = []
    last: Key | None = None
    more = False

    def take(key: Key, obj: Object) -> bool:
        """Keep ``obj`` if chosen; True once the page is full and one more was found."""
        nonlocal last, more
        if keep is not None and not keep(obj):
            return False
        if limit > 0 and len(items) >= limit:
            more = True
            return True
        items.append(obj)
        last = key
        return False

    done = False
    for key, body in _current(conn, kind, namespace, after):
        while h < len(history) and history[h] < key:
            if take(history[h], past[history[h]]):
                done = True
                break
            h += 1
        if done:
            break
        if key in changed:
            continue
        if take(key, fastjson.loads(body)):
            done = True
            break
    while not done and h < len(history):
        if take(history[h], past[history[h]]):
            break
        h += 1
    remaining: int | None = None
    if more and keep is None and last is not None:
        # The current objects after the page, corrected by those that differ at ``version``.
        remaining = _count_after(conn, kind, namespace, last)
        remaining -= sum(1 for key in changed if key > last and _exists_now(conn, kind, key))
        remaining += sum(1 for key in past if key > last)
    return Chunk(items, version, more, remaining)


def _exists_now(conn: sqlite3.Connection, kind: str, key: Key) -> bool:
    row = conn.execute("SELECT 1 FROM objects WHERE kind = ? AND namespace = ? AND name = ?", (kind, *key)).fetchone()
    return row is not None
