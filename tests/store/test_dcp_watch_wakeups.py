"""A commit wakes only the watches of the kinds it changed (and those of every kind): an API server
over the store has a thread per watch, and waking all of them per commit cost more than the commit."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from hub.store import SQLiteStore
from hub.store.interface import Gone
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


def _secret(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "default", "name": name}}


def test_an_idle_kinds_watch_is_not_expired_by_other_kinds_commits(tmp_path: Path) -> None:
    # Asleep (not woken: its wait ends at its timeout) while other kinds' commits push the ring and
    # the compacted log past its cursor: none of them was its own, so it moves over them in one step
    # and goes on (kube-apiserver keeps a watch cache per resource), no 410.
    store = SQLiteStore(tmp_path / "s.db", log_retention=10, watch_cache=4)
    try:
        _, since = store.list("Secret", "\x00")
        idle = store.watch(["Secret"], since)
        for i in range(100):
            store.create(_cm(f"cm-{i}"))
        assert idle.next(0.01) is None and idle.position == store.list("Secret", "\x00")[1]
        made = store.create(_secret("s"))
        event = idle.next(5)
        assert event is not None and event.object["metadata"]["name"] == "s"
        assert event.resource_version == int(made["metadata"]["resourceVersion"])
        idle.close()
    finally:
        store.close()


def test_a_kind_changed_before_the_store_opened_is_read_from_the_log(tmp_path: Path) -> None:
    # The last changes per kind are known only for this process's commits: an earlier one is
    # still delivered from the log, not skipped.
    with SQLiteStore(tmp_path / "s.db") as store:
        _, since = store.list("Secret", "\x00")
        store.create(_secret("before"))
        store.create(_cm("cm"))
    with SQLiteStore(tmp_path / "s.db") as store:
        watch = store.watch(["Secret"], since)
        event = watch.next(5)
        assert event is not None and event.object["metadata"]["name"] == "before"
        assert watch.next(0.01) is None
        watch.close()


def test_a_watch_woken_by_its_kind_after_a_window_of_other_kinds_delivers_it(tmp_path: Path) -> None:
    # The e2e dev-clusters keep 200 changes. A Workload watch asleep (not woken by Pods' and Events'
    # commits) while more than a window of them land, then woken by the next Workload commit, used to
    # find its cursor compacted away: 410, and the hub's informer re-listed. Its cursor moves over the
    # others' changes up to its own kind's next change instead; nothing is skipped.
    store = SQLiteStore(tmp_path / "s.db", log_retention=10, watch_cache=4)
    try:
        watch = store.watch(["Secret"], store.list("Secret", "\x00")[1])
        store.create(_secret("s0"))
        first = watch.next(5)
        assert first is not None and first.object["metadata"]["name"] == "s0"
        for i in range(100):  # the watch does not run meanwhile (as a thread not woken)
            store.create(_cm(f"cm-{i}"))
        made = [store.create(_secret(f"s{i}")) for i in (1, 2)]
        store.create(_cm("after"))
        got = [watch.next(5), watch.next(5)]
        assert [e.object["metadata"]["name"] for e in got if e is not None] == ["s1", "s2"]
        assert [e.resource_version for e in got if e is not None] == [int(m["metadata"]["resourceVersion"]) for m in made]
        assert watch.next(0.01) is None and watch.position == store.list("Secret", "\x00")[1]
        watch.close()
    finally:
        store.close()


def test_a_watch_from_before_the_log_is_served_when_its_kind_did_not_change_since(tmp_path: Path) -> None:
    # As kube-apiserver's watch cache per resource: other resources' writes never expire a version.
    store = SQLiteStore(tmp_path / "s.db", log_retention=10, watch_cache=4)
    try:
        store.create(_secret("old"))
        _, since = store.list("Secret", "\x00")
        for i in range(100):
            store.create(_cm(f"cm-{i}"))
        watch = store.watch(["Secret"], since)
        made = store.create(_secret("new"))
        event = watch.next(5)
        assert event is not None and event.resource_version == int(made["metadata"]["resourceVersion"])
        watch.close()
        with pytest.raises(Gone):  # ConfigMaps did change in the compacted part
            store.watch(["ConfigMap", "Secret"], since)
        with pytest.raises(Gone):
            store.watch(None, since)
    finally:
        store.close()
