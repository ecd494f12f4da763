"""change_stamp (hub.store.sqlite_watch) is None inside the caller's own batch once that wrote the
kind, by the batch's set of kinds (no scan of its changes), and a number again once it commits or
rolls back (branch h21)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hub.store.sqlite import SQLiteStore
from hub.store.sqlite_watch import change_stamp


def _cm(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


def test_none_in_the_own_batch_after_a_write_of_the_kind(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        before = change_stamp(store, "ConfigMap")
        assert before is not None
        store.open_batch()
        assert change_stamp(store, "ConfigMap") == before
        store.create(_cm("a"))
        assert change_stamp(store, "ConfigMap") is None
        assert change_stamp(store, "Namespace") is not None  # another kind
        seen: list[int | None] = []
        other = threading.Thread(target=lambda: seen.append(change_stamp(store, "ConfigMap")))
        other.start()
        other.join(5)
        assert seen == [before]  # another thread: the committed state
        store.close_batch()
        after = change_stamp(store, "ConfigMap")
        assert after is not None and after > before
        with store.batch():  # the next batch of this thread starts with no kinds written
            assert change_stamp(store, "ConfigMap") == after

        store.update_status_many([])  # nothing: no kinds
        with pytest.raises(RuntimeError), store.batch():
            store.create(_cm("b"))
            assert change_stamp(store, "ConfigMap") is None
            raise RuntimeError("rolled back")
        assert change_stamp(store, "ConfigMap") == after

        with store.batch():
            store.create_many([_cm("c"), _cm("d")])
            assert change_stamp(store, "ConfigMap") is None
        assert (change_stamp(store, "ConfigMap") or 0) > after
    finally:
        store.close()
