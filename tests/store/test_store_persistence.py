from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import hub.store.sqlite as sqlite_backend
from hub.store import SCHEMA_VERSION, SchemaTooNew, SQLiteStore, StoreError

Manifest = Callable[..., dict[str, Any]]
REPO = Path(__file__).resolve().parents[2]


def test_reopen_keeps_objects_and_the_counter(tmp_path: Path, mk: Manifest) -> None:
    path = tmp_path / "data" / "mkhub.db"  # the data dir is created on demand
    with SQLiteStore(path) as store:
        a = store.create(mk(name="a"))
        store.create(mk(name="b"))
        store.update_status({**a, "status": {"x": 1}})
        store.delete("Workload", "default", "b")
        before = store.list("Workload")
    with SQLiteStore(path) as store:
        assert store.list("Workload") == before
        assert before[1] == 4
        # Never reuse a resourceVersion, not even the deleted object's.
        assert store.create(mk(name="c"))["metadata"]["resourceVersion"] == "5"


def test_compaction_mark_survives_reopen(tmp_path: Path, mk: Manifest) -> None:
    path = tmp_path / "mkhub.db"
    with SQLiteStore(path, log_retention=3) as store:
        for i in range(10):
            store.create(mk(name=f"w{i}"))
    with SQLiteStore(path, log_retention=3) as store:
        with pytest.raises(sqlite_backend.Gone):
            store.watch(since=0)
        w = store.watch(since=7)
        assert [w.next(0).resource_version for _ in range(3)] == [8, 9, 10]  # type: ignore[union-attr]


def test_file_is_wal_and_versioned(tmp_path: Path) -> None:
    path = tmp_path / "mkhub.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mkhub.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaTooNew, match="newer than this mkhub supports"):
        SQLiteStore(path)
    # The failed open released the file: a later open reaches the same check.
    with pytest.raises(SchemaTooNew):
        SQLiteStore(path)


def test_migrations_run_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mk: Manifest) -> None:
    path = tmp_path / "mkhub.db"
    with SQLiteStore(path) as store:
        store.create(mk())

    def v2(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE INDEX objects_uid ON objects (uid)")

    monkeypatch.setattr(sqlite_backend, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setitem(sqlite_backend.MIGRATIONS, SCHEMA_VERSION, v2)
    with SQLiteStore(path) as store:
        assert store.get("Workload", "default", "w1") is not None
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'objects_uid'").fetchone()
    conn.close()


def test_one_store_per_file(tmp_path: Path) -> None:
    path = tmp_path / "mkhub.db"
    with SQLiteStore(path), pytest.raises(StoreError, match="in use"):
        SQLiteStore(path)
    SQLiteStore(path).close()  # released on close


CHILD = textwrap.dedent(
    """
    import sys
    from hub.store import SQLiteStore

    store = SQLiteStore(sys.argv[1])
    i = 0
    while True:
        if i % 3 == 2:
            # A batch: its names are printed only once the whole batch committed.
            names = [f"b{i}-{k}" for k in range(5)]
            with store.batch():
                for n in names:
                    store.create({"kind": "Workload", "metadata": {"name": n, "namespace": "ns"},
                                  "spec": {"i": i}})
        else:
            obj = store.create({"kind": "Workload", "metadata": {"name": f"w{i}", "namespace": "ns"},
                                "spec": {"i": i}})
            store.update_status({**obj, "status": {"seen": True}})
            names = [f"w{i}"]
        for n in names:
            print(n)
        sys.stdout.flush()
        i += 1
    """
)


def test_survives_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "mkhub.db"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    committed: list[str] = []
    try:
        while len(committed) < 300:
            line = child.stdout.readline()
            assert line, f"child exited early with {child.wait()}"
            committed.append(line.strip())
        child.send_signal(signal.SIGKILL)  # mid-write, with no chance to clean up
        committed += [n.strip() for n in child.stdout.read().splitlines()]
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL

    with SQLiteStore(path) as store:
        conn = store._conn
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        items, rv = store.list("Workload")
        stored = {o["metadata"]["name"]: o for o in items}
        missing = set(committed) - set(stored)
        assert not missing, f"committed but lost: {sorted(missing)[:5]}"
        # Batches are all or nothing.
        batches: dict[str, int] = {}
        for name in stored:
            if name.startswith("b"):
                batches[name.split("-")[0]] = batches.get(name.split("-")[0], 0) + 1
        assert set(batches.values()) <= {5}
        # Objects, log and counter agree, and the counter carries on.
        rvs = [int(o["metadata"]["resourceVersion"]) for o in items]
        assert len(set(rvs)) == len(rvs)
        assert max(rvs) <= rv
        log_max = conn.execute("SELECT max(rv) FROM changes").fetchone()[0]
        assert log_max == rv
        replayed: dict[str, dict[str, Any]] = {}
        w = store.watch(since=0)
        while (ev := w.next(0)) is not None:
            replayed[ev.object["metadata"]["name"]] = ev.object
        assert replayed == stored
        assert (
            int(
                store.create({"kind": "Workload", "metadata": {"name": "after"}})["metadata"][
                    "resourceVersion"
                ]
            )
            == rv + 1
        )
