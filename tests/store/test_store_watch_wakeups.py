"""A commit wakes only the watches of the kinds it changed (and those of every kind): an API server
over the store has a thread per watch, and waking all of them per commit cost more than the commit."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from hub.store import SQLiteStore
from hub.store.sqlite_watch import Wakers


class _Counting(threading.Condition):
    def __init__(self, lock: Any) -> None:
        super().__init__(lock)
        self.notified = 0

    def notify(self, n: int = 1) -> None:
        self.notified += 1
        super().notify(n)


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default", "name": name}}


def test_a_commit_wakes_the_watches_of_its_kind_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[_Counting] = []
    original = Wakers.add

    def counting(self: Wakers, kinds: frozenset[str] | None) -> threading.Condition:
        cond = original(self, kinds)
        counted = _Counting(self._lock)
        self.remove(cond, kinds)
        if kinds is None:
            self._any.add(counted)
        for kind in kinds or ():
            self._by_kind[kind].add(counted)
        made.append(counted)
        return counted

    monkeypatch.setattr(Wakers, "add", counting)
    store = SQLiteStore(tmp_path / "s.db")
    try:
        secrets_watch, maps_watch, every = store.watch(["Secret"]), store.watch(["ConfigMap"]), store.watch()
        for i in range(5):
            store.create(_cm(f"cm-{i}"))
        assert [c.notified for c in made] == [0, 5, 5]
        event = maps_watch.next(5)
        assert event is not None and event.object["metadata"]["name"] == "cm-0"
        for w in (secrets_watch, maps_watch, every):
            w.close()
    finally:
        store.close()


def test_an_idle_kinds_watch_still_moves_its_position_past_other_kinds(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        idle = store.watch(["Secret"])
        for i in range(3):
            store.create(_cm(f"cm-{i}"))
        _, now = store.list("ConfigMap", "\x00")
        assert idle.next(0.05) is None and idle.position == now
        idle.close()
    finally:
        store.close()
