"""SQLiteStore.open_batch / close_batch: ``batch`` split in two (the dev-cluster's event loop
gathers a turn's writes in one transaction, hub.kubeapi.server)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hub.store import SQLiteStore, StoreError
from hub.store.interface import AlreadyExists


def _cm(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


def test_writes_between_open_and_close_commit_together(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        watch = store.watch("ConfigMap", since=0)
        store.open_batch()
        a = store.create(_cm("a"))
        with pytest.raises(AlreadyExists), store.batch():  # a refused write undoes itself only
            store.create(_cm("b"))
            store.create(_cm("a"))
        seen: list[object] = []
        other = threading.Thread(target=lambda: seen.append(store.create(_cm("c"))))
        other.start()
        other.join(0.3)
        assert other.is_alive() and not seen  # another thread's write waits for the commit
        assert watch.next(timeout=0.05) is None  # nothing published before the commit
        store.close_batch()
        other.join(5)
        assert [e.object["metadata"]["name"] for e in (watch.next(timeout=1), watch.next(timeout=1))] == ["a", "c"]
        assert store.get("ConfigMap", "default", "a") == a
        assert store.get("ConfigMap", "default", "b") is None
    finally:
        store.close()


def test_close_batch_rolls_back_what_sqlite_aborted(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        store.open_batch()
        store.create(_cm("a"))
        store._conn.execute("ROLLBACK")  # as SQLite does on some errors (disk full)
        with pytest.raises(StoreError):
            store.close_batch()
        assert store.get("ConfigMap", "default", "a") is None
        assert store.create(_cm("a"))["metadata"]["resourceVersion"] == "1"  # its version given back
        with pytest.raises(StoreError):
            store.close_batch()  # none open
    finally:
        store.close()
