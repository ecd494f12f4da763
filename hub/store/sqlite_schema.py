"""The embedded store's file: its schema, the migrations to it, and the lock that keeps a second
process from writing the same file."""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Callable

from hub.store.interface import StoreError

SCHEMA_VERSION = 2


class SchemaTooNew(StoreError):
    """The database was written by a newer mkhub."""


def _schema_v1(conn: sqlite3.Connection) -> None:
    # A rowid table plus a unique key index rather than WITHOUT ROWID: bodies are
    # kilobytes, too large to keep inside index pages.
    conn.execute(
        """CREATE TABLE objects (
             id INTEGER PRIMARY KEY,
             kind TEXT NOT NULL,
             namespace TEXT NOT NULL,
             name TEXT NOT NULL,
             uid TEXT NOT NULL,
             resource_version INTEGER NOT NULL,
             body TEXT NOT NULL)"""
    )
    # Serves get, list by kind and list by kind+namespace, already in (namespace, name) order.
    conn.execute("CREATE UNIQUE INDEX objects_key ON objects (kind, namespace, name)")
    conn.execute(
        """CREATE TABLE changes (
             rv INTEGER PRIMARY KEY,
             type TEXT NOT NULL,
             kind TEXT NOT NULL,
             namespace TEXT NOT NULL,
             name TEXT NOT NULL,
             body TEXT NOT NULL)"""
    )
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
    conn.execute("INSERT INTO meta VALUES ('resource_version', 0), ('compacted_through', 0)")


def _schema_v2(conn: sqlite3.Connection) -> None:
    # Where the status begins in a body the bulk status write stored (hub.store.sqlite_status);
    # NULL for every other body, which existing rows all are.
    conn.execute("ALTER TABLE objects ADD COLUMN status_at INTEGER")


# MIGRATIONS[v] upgrades a database at user_version v to v + 1, inside one transaction.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {0: _schema_v1, 1: _schema_v2}


# --------------------------------------------------------------------------- process lock

if sys.platform != "win32":
    import fcntl

    def lock_file(path: str) -> int:
        """Hold an exclusive lock for the store's lifetime: two processes writing one
        file would hand out the same resourceVersions. The kernel drops it on kill -9."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreError(f"{path[: -len('.lock')]} is in use by another store (lock {path})") from None
        return fd

else:  # pragma: no cover

    def lock_file(path: str) -> int:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


def unlock_file(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)  # closing the descriptor releases the flock
