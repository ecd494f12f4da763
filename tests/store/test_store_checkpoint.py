"""The SQLite store checkpoints its write-ahead log on a thread of its own, not inside COMMIT."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from hub.store import SQLiteStore
from hub.store.sqlite_checkpoint import BACKSTOP_PAGES


def _workload(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": f"w{i}", "namespace": "default"},
        "spec": {"queueName": "q", "padding": "x" * 2000},
    }


def test_the_log_reaches_the_database_file_without_a_checkpoint_in_commit(tmp_path: Path) -> None:
    db = tmp_path / "hub.db"
    store = SQLiteStore(db)
    try:
        assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == BACKSTOP_PAGES
        empty = db.stat().st_size
        for start in range(0, 3000, 500):  # about 1,500 pages: past SQLite's own 1,000-page checkpoint
            with store.batch():
                store.create_many([_workload(i) for i in range(start, start + 500)])
        deadline = time.monotonic() + 10.0
        while db.stat().st_size < empty + 3000 * 2000 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert db.stat().st_size >= empty + 3000 * 2000, "the checkpoint thread never copied the log"
        assert store._checkpointer is not None and store._checkpointer.checkpoints >= 1
    finally:
        store.close()
    assert not os.path.exists(f"{db}-wal")  # the last connection to close checkpointed and removed it
    with SQLiteStore(db) as reopened:
        assert len(reopened.list("Workload")[0]) == 3000


def test_a_store_in_memory_has_no_checkpoint_thread() -> None:
    with SQLiteStore(":memory:") as store:
        assert store._checkpointer is None
        store.create(_workload(1))
