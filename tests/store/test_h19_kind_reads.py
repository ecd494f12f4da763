"""hub.store.sqlite_reads.KindReads: a Namespace read is kept until a Namespace change commits."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from hub.store import SQLiteStore
from hub.store.sqlite_reads import KindReads


def _ns(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def _counting(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    asked: list[tuple[str, str, str]] = []
    real = store.get

    def get(kind: str, namespace: str, name: str) -> Any:
        asked.append((kind, namespace, name))
        return real(kind, namespace, name)

    monkeypatch.setattr(store, "get", get)
    return asked


def test_kept_until_a_namespace_change_commits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        store.create(_ns("a", v="1"))
        reads = KindReads(store, "Namespace")
        asked = _counting(store, monkeypatch)
        assert reads.get("", "a")["metadata"]["labels"] == {"v": "1"}  # type: ignore[index]
        assert reads.get("", "gone") is None
        assert reads.get("", "a") is not None and reads.get("", "gone") is None
        assert len(asked) == 2  # each read once
        store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a"}})
        reads.get("", "a")
        assert len(asked) == 2  # another kind's change: still kept
        # Another thread changes the Namespace: the next read sees it.
        other = threading.Thread(target=lambda: store.update({**_ns("a", v="2")}))
        other.start()
        other.join(5)
        assert reads.get("", "a")["metadata"]["labels"] == {"v": "2"}  # type: ignore[index]
        other = threading.Thread(target=lambda: store.create(_ns("gone")))
        other.start()
        other.join(5)
        assert reads.get("", "gone") is not None
    finally:
        store.close()


def test_inside_a_batch_that_wrote_a_namespace_the_store_is_read(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        reads = KindReads(store, "Namespace")
        assert reads.get("", "b") is None
        with store.batch():
            store.create(_ns("b"))
            assert reads.get("", "b") is not None  # its own uncommitted write
            store.delete("Namespace", "", "b")
            assert reads.get("", "b") is None
        assert reads.get("", "b") is None
    finally:
        store.close()


class _Plain:
    """A store that is not SQLite: no change stamp, so every get reads it."""

    def __init__(self) -> None:
        self.asked = 0

    def get(self, kind: str, namespace: str, name: str) -> Any:
        self.asked += 1
        return {"metadata": {"name": name}}


def test_other_stores_are_always_read() -> None:
    plain = _Plain()
    reads = KindReads(plain, "Namespace")  # type: ignore[arg-type]
    reads.get("", "a")
    reads.get("", "a")
    assert plain.asked == 2
