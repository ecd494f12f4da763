"""The embedded back end: one SQLite file in WAL mode.

Layout: ``objects`` holds the current manifests, ``changes`` the change log that
watches resume from, ``meta`` the resourceVersion counter and the compaction mark.
Every write runs in one transaction (or joins the open batch); watch events are
published to an in-memory ring after COMMIT, so watchers never see rolled-back
changes, and fall back to the ``changes`` table when they are further behind.

Concurrency: one writer connection guarded by an RLock (SQLite has one writer
anyway). On a file, reads from other threads use pooled read-only connections,
which WAL lets run alongside a writer, so a long batch does not stall readers.
The watch is in ``sqlite_watch``.
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from hub.api import fastjson
from hub.api.selectors import parse_label_selector
from hub.store import journal
from hub.store.interface import (
    GENERATE_NAME_ATTEMPTS,
    AlreadyExists,
    BulkWrites,
    Conflict,
    EventType,
    Gone,
    InvalidObject,
    NotFound,
    Object,
    ObjectKey,
    ObjectList,
    Refused,
    Selector,
    Store,
    StoreError,
    Watch,
    needs_generated_name,
    outcome_of,
    random_uids,
    with_generated_name,
)
from hub.store.sqlite_checkpoint import Checkpointer
from hub.store.sqlite_checks import SYSTEM_FIELDS, check_rv, key_or_refusal, spec_part
from hub.store.sqlite_lists import read_list, snapshot
from hub.store.sqlite_pages import Chunk, read_chunk
from hub.store.sqlite_recent import RecentBodies
from hub.store.sqlite_schema import MIGRATIONS, SCHEMA_VERSION, SchemaTooNew, lock_file, unlock_file
from hub.store.sqlite_status import encode_status_layout, splice_status, stored_status
from hub.store.sqlite_watch import SQLiteWatch, Wakers, _Change, _Changes


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _rfc3339(dt: datetime) -> str:
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def _encode(key: ObjectKey, obj: Object) -> str:
    try:
        return fastjson.dumps(obj)
    except (TypeError, ValueError) as e:
        raise InvalidObject(f"{key}: not JSON-serializable: {e}") from e


# A stored row as a status write reads it: id, resourceVersion, body, status offset (sqlite_status).
_Row = tuple[int, int, str, int | None]


def _brief(key: ObjectKey, rv: int, status: Any) -> Object:
    """A status write's result for callers that keep only the resourceVersion (``brief``)."""
    meta = {"name": key.name, "resourceVersion": str(rv)}
    if key.namespace:
        meta["namespace"] = key.namespace
    return {"kind": key.kind, "metadata": meta, "status": status}


def _status_refusal(key: ObjectKey, has_status: bool, status: Any) -> InvalidObject | None:
    """The refusal of a status JSON cannot hold (what update_status says before NotFound or Conflict)."""
    try:
        if has_status:
            _encode(key, status)
    except InvalidObject as e:
        return e
    return None


def _copy(key: ObjectKey, obj: Mapping[str, Any]) -> Object:
    """A deep, JSON-normalized copy (tuples become lists...), so comparisons are exact."""
    copied: Object = fastjson.loads(_encode(key, dict(obj)))
    if not isinstance(copied.get("metadata"), dict):
        raise InvalidObject(f"{key}: metadata must be a mapping")
    return copied


# Keys per SELECT of a bulk write: well under SQLite's limit on bound parameters.
_KEYS_PER_SELECT = 500


class SQLiteStore:
    """The embedded Store. ``path=":memory:"`` keeps everything in one private connection."""

    def __init__(
        self,
        path: str | Path,
        *,
        now: Callable[[], datetime] = _utcnow,
        log_retention: int = 100_000,
        watch_cache: int = 4096,
    ) -> None:
        if log_retention < 1:
            raise ValueError("log_retention must be at least 1")
        self._path = str(path)
        self._memory = self._path == ":memory:"
        self._now = now
        self._retention = log_retention
        # Compact in chunks so a steady write load does not pay a DELETE per commit.
        self._compact_slack = log_retention // 16
        self._lock = threading.RLock()  # the writer connection and batch state
        cond_lock = threading.Lock()
        self._cond = threading.Condition(cond_lock)  # committed state and the ring
        self._wakers = Wakers(cond_lock)  # the watches waiting, by kind
        self._closed = False
        self._depth = 0
        self._owner: int | None = None  # thread holding the open batch
        self._pending: list[_Change] = []
        self._pending_kinds: set[str] = set()  # the kinds of _pending (change_stamp), or more after a rollback
        self._recent = RecentBodies()  # cleared on every rollback (see its module)
        self._pool: list[sqlite3.Connection] = []
        self._pool_lock = threading.Lock()
        self._ring: list[_Change] = []
        self._ring_cap = max(1, watch_cache)
        self._lock_fd: int | None = None
        if not self._memory:
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
            self._lock_fd = lock_file(self._path + ".lock")
        try:
            self._conn = self._connect(reader=False)
            self._migrate()
            rv, compacted = self._read_meta(self._conn)
            self._checkpointer = None if self._memory else Checkpointer(self._path)
        except BaseException:
            if hasattr(self, "_conn"):
                self._conn.close()
            unlock_file(self._lock_fd)
            raise
        self._rv = self._committed_rv = self._wakers.floor = rv
        self._compacted = compacted

    # ------------------------------------------------------------------ setup

    def _connect(self, *, reader: bool) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False, timeout=10.0)
        if reader:
            conn.execute("PRAGMA query_only = ON")
        elif not self._memory:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                conn.close()
                raise StoreError(f"{self._path}: cannot switch to WAL journal mode (got {mode})")
            # NORMAL in WAL mode: a killed process loses nothing committed; only an OS
            # crash or power cut may lose the last transactions.
            conn.execute("PRAGMA synchronous = NORMAL")
            Checkpointer.configure_writer(conn)  # checkpoints run on their own thread, not in COMMIT
        return conn

    def _migrate(self) -> None:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise SchemaTooNew(
                    f"{self._path}: schema version {version} is newer than this mkhub supports "
                    f"({SCHEMA_VERSION}); upgrade mkhub or use another data dir"
                )
            while version < SCHEMA_VERSION:
                MIGRATIONS[version](conn)
                version += 1
                conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _read_meta(conn: sqlite3.Connection) -> tuple[int, int]:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        return int(meta["resource_version"]), int(meta["compacted_through"])

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"store {self._path} is closed")

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def batch(self) -> Iterator[None]:
        """One transaction for every write inside; nested batches become savepoints,
        so an exception caught inside the outer batch undoes only the inner part."""
        with self._lock:
            self._check_open()
            conn = self._conn
            depth = self._depth
            if depth == 0:
                conn.execute("BEGIN IMMEDIATE")
                self._owner = threading.get_ident()
                journal.begin()
            elif not conn.in_transaction:
                # SQLite rolled the whole transaction back (e.g. disk full): refuse
                # to continue, or later writes would autocommit outside the batch.
                raise StoreError("the enclosing batch was aborted by an earlier error")
            else:
                conn.execute(f"SAVEPOINT s{depth}")
            mark, rv_mark = len(self._pending), self._rv
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if depth == 0:
                    self._abort()
                elif conn.in_transaction:
                    conn.execute(f"ROLLBACK TO s{depth}")
                    conn.execute(f"RELEASE s{depth}")
                    del self._pending[mark:]
                    self._rv = rv_mark
                    self._recent.clear()
                raise
            self._depth -= 1
            if depth == 0:
                self._commit()
            else:
                conn.execute(f"RELEASE s{depth}")

    def open_batch(self) -> None:
        """``batch`` split in two, for a caller that cannot hold a ``with`` block (the dev-cluster's event
        loop gathers a turn's writes in one transaction): this thread's writes join it until
        :meth:`close_batch`, other threads' wait."""
        self._lock.acquire()
        try:
            self._check_open()
            if self._depth != 0:
                raise StoreError("open_batch inside an open batch")
            self._conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._lock.release()
            raise
        self._owner = threading.get_ident()
        journal.begin()
        self._depth = 1

    def close_batch(self) -> None:
        """Commit :meth:`open_batch`'s batch; raises, rolled back, when it cannot commit."""
        if self._depth != 1 or self._owner != threading.get_ident():
            raise StoreError("close_batch without its open_batch")
        try:
            self._depth = 0
            if not self._conn.in_transaction:  # SQLite rolled it back (e.g. disk full)
                self._abort()
                raise StoreError("the batch was aborted by an earlier error")
            self._commit()
        finally:
            self._lock.release()

    @contextmanager
    def _one_write(self) -> Iterator[None]:
        """The statements of one create/update/delete. Alone, a transaction of its own (``batch``).
        Inside this thread's open batch, no savepoint: a write's refusals (NotFound, AlreadyExists,
        Conflict, InvalidObject) come before its first change, so undoing one means only giving back
        its resourceVersions and events; any other error after a change undoes the whole transaction
        (the enclosing batch then refuses to go on, as after SQLite's own rollbacks)."""
        with self._lock:
            if self._depth == 0 or self._owner != threading.get_ident() or not self._conn.in_transaction:
                with self.batch():
                    yield
                return
            mark, rv_mark, changes = len(self._pending), self._rv, self._conn.total_changes
            try:
                yield
            except BaseException:
                if self._conn.total_changes != changes and self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")  # part of this write landed: nothing of the batch may
                del self._pending[mark:]
                self._rv = rv_mark
                self._recent.clear()
                raise

    def _abort(self) -> None:
        try:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
        finally:
            journal.end()
            self._pending.clear()
            self._pending_kinds.clear()
            self._rv = self._committed_rv
            self._recent.clear()
            self._owner = None
            self._depth = 0

    def _commit(self) -> None:
        compacted = self._compacted
        try:
            if self._rv != self._committed_rv:
                self._conn.execute("UPDATE meta SET value = ? WHERE key = 'resource_version'", (self._rv,))
                if self._rv - compacted > self._retention + self._compact_slack:
                    compacted = self._rv - self._retention
                    self._conn.execute("DELETE FROM changes WHERE rv <= ?", (compacted,))
                    self._conn.execute(
                        "UPDATE meta SET value = ? WHERE key = 'compacted_through'", (compacted,)
                    )
            self._conn.execute("COMMIT")
        except BaseException:
            self._abort()
            raise
        if self._checkpointer is not None:
            self._checkpointer.poke()
        events, self._pending = self._pending, []
        self._pending_kinds.clear()
        self._owner = None
        journal.end(c.rv for c in events)  # what a no-op write answered is not in it
        # Still under the write lock, so events reach the ring in commit order.
        with self._cond:
            self._committed_rv = self._rv
            self._compacted = compacted
            if events:
                self._ring.extend(events)
                if len(self._ring) > 2 * self._ring_cap:
                    del self._ring[: len(self._ring) - self._ring_cap]
                self._wakers.notify(events)

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _record(self, type_: EventType, key: ObjectKey, rv: int, body: str) -> None:
        self._conn.execute(
            "INSERT INTO changes (rv, type, kind, namespace, name, body) VALUES (?, ?, ?, ?, ?, ?)",
            (rv, type_.value, key.kind, key.namespace, key.name, body),
        )
        self._pending.append(_Change(rv, type_, key.kind, key.namespace, key.name, body))
        self._pending_kinds.add(key.kind)

    def _stored(self, key: ObjectKey) -> tuple[int, Object]:
        row = self._conn.execute(
            "SELECT resource_version, body FROM objects WHERE kind = ? AND namespace = ? AND name = ?", key
        ).fetchone()
        if row is None:
            raise NotFound(key)
        return int(row[0]), fastjson.loads(row[1])

    def _replace(self, key: ObjectKey, current: Object, new: Object) -> Object:
        """Write new over current (same key) unless nothing changed."""
        if new == current:
            return current
        meta = new["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            return self._remove(key, new)  # the last finalizer is gone
        rv = self._next_rv()
        meta["resourceVersion"] = str(rv)
        body = _encode(key, new)
        self._conn.execute(
            "UPDATE objects SET resource_version = ?, body = ?, status_at = NULL WHERE kind = ? AND namespace = ? AND name = ?",
            (rv, body, *key),
        )
        self._record(EventType.MODIFIED, key, rv, body)
        return new

    def _remove(self, key: ObjectKey, last: Object) -> Object:
        rv = self._next_rv()
        last["metadata"]["resourceVersion"] = str(rv)
        body = _encode(key, last)
        self._conn.execute("DELETE FROM objects WHERE kind = ? AND namespace = ? AND name = ?", key)
        self._record(EventType.DELETED, key, rv, body)
        return last

    # ------------------------------------------------------------------ writes

    def create(self, obj: Mapping[str, Any]) -> Object:
        if not needs_generated_name(obj):
            return self._create(obj)
        for _ in range(GENERATE_NAME_ATTEMPTS - 1):
            try:
                return self._create(with_generated_name(obj))
            except AlreadyExists:
                continue
        return self._create(with_generated_name(obj))

    def _create(self, obj: Mapping[str, Any]) -> Object:
        key = ObjectKey.of(obj)
        new = dict(obj)  # shallow copies suffice: only top level and metadata are touched
        meta = dict(obj["metadata"])
        new["metadata"] = meta
        if not meta.get("uid"):
            meta["uid"] = str(uuid.uuid4())
        if not meta.get("creationTimestamp"):
            meta["creationTimestamp"] = _rfc3339(self._now())
        meta["generation"] = 1
        meta.pop("deletionTimestamp", None)
        with self._one_write():
            rv = self._next_rv()
            meta["resourceVersion"] = str(rv)
            body = _encode(key, new)
            try:
                self._conn.execute(
                    "INSERT INTO objects (kind, namespace, name, uid, resource_version, body) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (*key, str(meta["uid"]), rv, body),
                )
            except sqlite3.IntegrityError:
                raise AlreadyExists(key) from None
            self._record(EventType.ADDED, key, rv, body)
        result: Object = fastjson.loads(body)
        return result

    def update(self, obj: Mapping[str, Any]) -> Object:
        return self._update(obj, with_status=False)

    def update_with_status(self, obj: Mapping[str, Any]) -> Object:
        """:meth:`update`, but the status is ``obj``'s too: one write of both, as kube-apiserver's binding
        subresource sets a Pod's ``spec.nodeName`` and its ``PodScheduled`` condition. For the dev-cluster's
        controllers; the API's updates keep the stored status (:meth:`update`)."""
        return self._update(obj, with_status=True)

    def _update(self, obj: Mapping[str, Any], *, with_status: bool) -> Object:
        key = ObjectKey.of(obj)
        new = _copy(key, obj)
        with self._one_write():
            stored_rv, current = self._stored(key)
            meta = new["metadata"]
            check_rv(key, meta.get("resourceVersion"), stored_rv)
            cur_meta = current["metadata"]
            for field in SYSTEM_FIELDS:
                if field in cur_meta:
                    meta[field] = cur_meta[field]
                else:
                    meta.pop(field, None)
            if not with_status:
                if "status" in current:
                    new["status"] = current["status"]
                else:
                    new.pop("status", None)
            if spec_part(new) != spec_part(current):
                meta["generation"] = int(cur_meta.get("generation", 0)) + 1
            return self._replace(key, current, new)

    def update_status(self, obj: Mapping[str, Any]) -> Object:
        key = ObjectKey.of(obj)
        has_status = "status" in obj
        # Only status is taken, so only status is copied (and normalized, for the no-op check).
        status = fastjson.loads(_encode(key, obj["status"])) if has_status else None
        with self._one_write():
            stored_rv, current = self._stored(key)
            check_rv(key, obj["metadata"].get("resourceVersion"), stored_rv)
            new = dict(current)
            new["metadata"] = dict(current["metadata"])
            if has_status:
                new["status"] = status
            else:
                new.pop("status", None)
            return self._replace(key, current, new)

    # ------------------------------------------------------------------ bulk writes (BulkWrites)

    def create_many(self, objs: Sequence[Mapping[str, Any]]) -> list[Object | Refused]:
        """``create`` of each object, in one INSERT per table for all of them."""
        if not objs:
            return []
        if any(needs_generated_name(obj) for obj in objs):  # names are drawn, and retried, one by one
            return [outcome_of(self.create, obj) for obj in objs]
        results: list[Object | Refused] = []
        with self._one_write():
            keys = [key_or_refusal(obj) for obj in objs]
            taken = set(self._stored_rows(k for k in keys if isinstance(k, ObjectKey)))
            rows: list[tuple[str, str, str, str, int, str]] = []
            changes: _Changes = []
            stamp = ""
            uids = iter(random_uids(len(objs)))
            for obj, key in zip(objs, keys, strict=True):
                if not isinstance(key, ObjectKey):
                    results.append(key)
                    continue
                new = dict(obj)
                meta = dict(obj["metadata"])
                new["metadata"] = meta
                if not meta.get("uid"):
                    meta["uid"] = next(uids)
                if not meta.get("creationTimestamp"):
                    stamp = stamp or _rfc3339(self._now())
                    meta["creationTimestamp"] = stamp
                meta["generation"] = 1
                meta.pop("deletionTimestamp", None)
                meta["resourceVersion"] = str(self._rv + 1)
                try:
                    body = _encode(key, new)
                except InvalidObject as e:
                    results.append(e)
                    continue
                if key in taken:  # after encoding, as create refuses: what cannot be stored says so first
                    results.append(AlreadyExists(key))
                    continue
                rv = self._next_rv()
                taken.add(key)
                rows.append((*key, str(meta["uid"]), rv, body))
                changes.append(_Change(rv, EventType.ADDED, *key, body))
                results.append(new)
            self._conn.executemany(
                "INSERT INTO objects (kind, namespace, name, uid, resource_version, body) VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            self._record_all(changes)
        return results

    def update_status_many(self, objs: Sequence[Mapping[str, Any]], *, brief: bool = False) -> list[Object | Refused]:
        """``update_status`` of each object: one SELECT per few hundred keys, then one UPDATE and
        one change-log INSERT for all of them. (A status write keeps the stored metadata, so it
        never drops the last finalizer of an object being deleted: ``_replace``'s removal cannot
        happen here.) Bodies are stored in the layout of :mod:`sqlite_status`; with ``brief`` a
        body this method stored is not decoded again, and the result of such a write holds only
        the object's kind, name, namespace, resourceVersion and the status given."""
        if not objs:
            return []
        results: list[Object | Refused] = []
        with self._one_write():
            asked: list[tuple[ObjectKey, bool, Any] | Refused] = []
            for obj in objs:
                try:
                    key = ObjectKey.of(obj)
                    has_status = "status" in obj
                    # Not normalized (decoded again) as update_status does: a status that differs
                    # only by tuples for lists is merely written again. What JSON cannot hold is
                    # refused when the new body is encoded, or before a NotFound or Conflict.
                    asked.append((key, has_status, obj["status"] if has_status else None))
                except InvalidObject as e:
                    asked.append(e)
            stored = self._stored_rows(a[0] for a in asked if isinstance(a, tuple))
            updates: list[tuple[int, str, int | None, int]] = []
            changes: _Changes = []
            for obj, item in zip(objs, asked, strict=True):
                if not isinstance(item, tuple):
                    results.append(item)
                    continue
                key, has_status, status = item
                row = stored.get(key)
                refusal: Refused | None = NotFound(key) if row is None else None
                if row is not None:
                    try:
                        check_rv(key, obj["metadata"].get("resourceVersion"), row[1])
                    except Conflict as e:
                        refusal = e
                if refusal is not None:
                    results.append(_status_refusal(key, has_status, status) or refusal)
                    continue
                assert row is not None
                try:
                    written = self._status_written(key, row, has_status, status, brief)
                except InvalidObject as e:
                    results.append(e)
                    continue
                if not isinstance(written, tuple):
                    results.append(written)  # only the status could change, and it did not
                    continue
                rv, body, status_at, result = written
                self._rv = rv
                updates.append((rv, body, status_at, row[0]))
                changes.append(_Change(rv, EventType.MODIFIED, key.kind, key.namespace, key.name, body))
                stored[key] = (row[0], rv, body, status_at)
                results.append(result)
            self._conn.executemany(
                "UPDATE objects SET resource_version = ?, body = ?, status_at = ? WHERE id = ?", updates
            )
            self._record_all(changes)
        return results

    def _status_written(
        self, key: ObjectKey, row: _Row, has_status: bool, status: Any, brief: bool
    ) -> tuple[int, str, int | None, Object] | Object:
        """One object's status write: (resourceVersion, body, status offset, result), or the
        stored object when the status is what it already holds. Raises InvalidObject for a
        status JSON cannot hold."""
        _, stored_rv, body, status_at = row
        rv = self._rv + 1
        if brief and has_status and status_at is not None:
            text = _encode(key, status)
            if stored_status(body, status_at) == text:
                return _brief(key, stored_rv, status)
            spliced = splice_status(body, status_at, stored_rv, rv, text)
            if spliced is not None:
                return rv, spliced[0], spliced[1], _brief(key, rv, status)
        current = self._recent.get(key, stored_rv)  # as written earlier in this call, or lately
        if current is None:
            current = fastjson.loads(body)
        if (has_status, status) == ("status" in current, current.get("status")):
            return current
        new = dict(current)
        meta = new["metadata"] = dict(current["metadata"])
        if has_status:
            new["status"] = status
        else:
            del new["status"]
        meta["resourceVersion"] = str(rv)
        # Decoded JSON and the new status: only the status can fail to encode.
        body, status_at = encode_status_layout(new, partial(_encode, key))
        self._recent.put(key, rv, new)
        return rv, body, status_at, new

    def _stored_rows(self, keys: Iterable[ObjectKey]) -> dict[ObjectKey, _Row]:
        """The row id, resourceVersion, body and status offset (sqlite_status) of each key that exists: one SELECT per
        ``_KEYS_PER_SELECT`` names of one kind and namespace."""
        names: dict[tuple[str, str], dict[str, None]] = {}
        for key in keys:
            names.setdefault((key.kind, key.namespace), {})[key.name] = None
        found: dict[ObjectKey, _Row] = {}
        for (kind, namespace), unique in names.items():
            listed = list(unique)
            for i in range(0, len(listed), _KEYS_PER_SELECT):
                chunk = listed[i : i + _KEYS_PER_SELECT]
                rows = self._conn.execute(
                    "SELECT id, name, resource_version, body, status_at FROM objects "
                    f"WHERE kind = ? AND namespace = ? AND name IN ({','.join('?' * len(chunk))})",
                    (kind, namespace, *chunk),
                )
                for row_id, name, rv, body, status_at in rows:
                    found[ObjectKey(kind, namespace, name)] = (row_id, int(rv), body, status_at)
        return found

    def _record_all(self, changes: _Changes) -> None:
        self._conn.executemany(
            "INSERT INTO changes (rv, type, kind, namespace, name, body) VALUES (?, ?, ?, ?, ?, ?)", changes
        )
        self._pending.extend(changes)
        self._pending_kinds.update(c.kind for c in changes)

    def delete(
        self, kind: str, namespace: str, name: str, *, resource_version: str | int | None = None
    ) -> Object:
        key = ObjectKey(kind, namespace or "", name)
        with self._one_write():
            stored_rv, current = self._stored(key)
            check_rv(key, resource_version, stored_rv)
            meta = current["metadata"]
            if not meta.get("finalizers"):
                return self._remove(key, current)
            if meta.get("deletionTimestamp"):
                return current  # already terminating; waits for its finalizers
            # As the API server does: mark, bump generation, and let finalizers run.
            new = dict(current)
            new["metadata"] = dict(meta)
            new["metadata"]["deletionTimestamp"] = _rfc3339(self._now())
            new["metadata"]["generation"] = int(meta.get("generation", 0)) + 1
            return self._replace(key, current, new)

    # ------------------------------------------------------------------ reads

    @contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection]:
        if self._memory or self._owner == threading.get_ident():
            # In memory there is one connection; inside our own batch we must see its writes.
            with self._lock:
                self._check_open()
                yield self._conn
            return
        self._check_open()
        with self._pool_lock:
            conn = self._pool.pop() if self._pool else None
        if conn is None:
            conn = self._connect(reader=True)
        try:
            yield conn
        finally:
            with self._pool_lock:
                if self._closed:
                    conn.close()
                else:
                    self._pool.append(conn)

    def get(self, kind: str, namespace: str, name: str) -> Object | None:
        with self._reader() as conn:
            row = conn.execute(
                "SELECT body FROM objects WHERE kind = ? AND namespace = ? AND name = ?",
                (kind, namespace or "", name),
            ).fetchone()
        if row is None:
            return None
        result: Object = fastjson.loads(row[0])
        return result

    def list(
        self, kind: str, namespace: str | None = None, label_selector: Selector | None = None
    ) -> tuple[ObjectList, int]:
        selector = parse_label_selector(label_selector) if label_selector is not None else None
        with self._reader() as conn, snapshot(conn):
            objects = read_list(conn, kind, namespace, selector)
            rv = int(conn.execute("SELECT value FROM meta WHERE key = 'resource_version'").fetchone()[0])
        return objects, rv

    def list_chunk(
        self, kind: str, namespace: str | None, *, after: tuple[str, str] | None, at: int | None, limit: int,
        keep: Callable[[Object], bool] | None = None,
    ) -> Chunk:
        """One page of a list, read by key range (:mod:`hub.store.sqlite_pages`). Raises TooOld."""
        with self._reader() as conn, snapshot(conn):
            now, compacted = self._read_meta(conn)
            return read_chunk(conn, kind, namespace, now=now, compacted=compacted, after=after, at=at, limit=limit, keep=keep)

    # ------------------------------------------------------------------ watch

    def watch(self, kinds: Iterable[str] | None = None, since: int = 0) -> SQLiteWatch:
        wanted = None if kinds is None else frozenset((kinds,) if isinstance(kinds, str) else kinds)
        with self._cond:
            self._check_open()
            # Older than the log is fine when the kinds did not change since (kube-apiserver's watch
            # cache is per resource). Compare the upper end with the allocated counter, not
            # _committed_rv: a list() may see a commit a moment before _commit() publishes it.
            start = since if since >= self._compacted else self._wakers.skip_to(wanted, since, self._committed_rv)
            if start < self._compacted or since > self._rv:
                raise Gone(since, self._compacted, self._committed_rv)
        return SQLiteWatch(self, wanted, start)

    def _changes_after(self, after: int, kinds: frozenset[str] | None, limit: int) -> tuple[_Changes, int]:
        """Committed changes with rv > after from the log, and the rv read up to."""
        committed = self._committed_rv  # read first: the snapshot below includes it
        with self._reader() as conn, snapshot(conn):
            rv, compacted = self._read_meta(conn)
            if after < compacted:
                raise Gone(after, compacted, rv)
            upper = min(rv, committed)
            sql = "SELECT rv, type, kind, namespace, name, body FROM changes WHERE rv > ? AND rv <= ?"
            params: list[Any] = [after, upper]
            if kinds is not None:
                sql += f" AND kind IN ({','.join('?' * len(kinds))})"
                params.extend(kinds)
            rows = conn.execute(sql + " ORDER BY rv LIMIT ?", (*params, limit)).fetchall()
        changes = [_Change(r[0], EventType(r[1]), r[2], r[3], r[4], r[5]) for r in rows]
        return changes, (changes[-1].rv if len(changes) == limit else max(after, upper))

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            if self._conn.in_transaction:
                self._abort()
            with self._cond:
                self._closed = True
                self._cond.notify_all()
                self._wakers.notify_all()
            if self._checkpointer is not None:
                self._checkpointer.close()
            with self._pool_lock:
                for conn in self._pool:
                    conn.close()
                self._pool.clear()
            self._conn.close()  # the last connection: SQLite checkpoints and removes the log
            unlock_file(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self._path!r})"


if TYPE_CHECKING:  # mypy proves the back end satisfies the protocols

    def _is_store(s: SQLiteStore) -> Store:
        return s

    def _is_watch(w: SQLiteWatch) -> Watch:
        return w

    def _writes_in_bulk(s: SQLiteStore) -> BulkWrites:
        return s
