from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from hub.store import AlreadyExists, SQLiteStore

Manifest = Callable[..., dict[str, Any]]


class Boom(Exception):
    pass


def test_batch_commits_together(store: SQLiteStore, mk: Manifest) -> None:
    w = store.watch()
    with store.batch():
        a = store.create(mk(name="a"))
        store.create(mk(name="b"))
        store.update_status({**a, "status": {"admitted": True}})
        assert w.next(0) is None  # nothing is published before commit
        # The batch's own thread reads its uncommitted writes.
        got = store.get("Workload", "default", "a")
        assert got is not None and got["status"] == {"admitted": True}
        assert len(store.list("Workload")[0]) == 2
    assert [w.next(0).resource_version for _ in range(3)] == [1, 2, 3]  # type: ignore[union-attr]
    assert store.list("Workload")[1] == 3


def test_exception_rolls_everything_back(store: SQLiteStore, mk: Manifest) -> None:
    existing = store.create(mk(name="existing"))
    w = store.watch(since=1)
    with pytest.raises(Boom), store.batch():
        store.create(mk(name="a"))
        store.update_status({**existing, "status": {"x": 1}})
        store.delete("Workload", "default", "existing")
        raise Boom
    assert store.get("Workload", "default", "a") is None
    assert store.get("Workload", "default", "existing") == existing
    assert w.next(0) is None
    # The rolled-back resourceVersions were never visible; the counter carries on from 1.
    assert store.create(mk(name="b"))["metadata"]["resourceVersion"] == "2"
    assert w.next(0).object["metadata"]["name"] == "b"  # type: ignore[union-attr]


def test_store_error_inside_batch_rolls_back(store: SQLiteStore, mk: Manifest) -> None:
    store.create(mk(name="dup"))
    with pytest.raises(AlreadyExists), store.batch():
        store.create(mk(name="a"))
        store.create(mk(name="dup"))
    assert [o["metadata"]["name"] for o in store.list("Workload")[0]] == ["dup"]


def test_nested_batch_joins_outer(store: SQLiteStore, mk: Manifest) -> None:
    with pytest.raises(Boom), store.batch():
        with store.batch():
            store.create(mk(name="inner"))
        store.create(mk(name="outer"))
        raise Boom
    assert store.list("Workload") == ([], 0)


def test_caught_inner_failure_undoes_only_the_inner_part(store: SQLiteStore, mk: Manifest) -> None:
    w = store.watch()
    with store.batch():
        store.create(mk(name="a"))
        try:
            with store.batch():
                store.create(mk(name="b"))
                raise Boom
        except Boom:
            pass
        store.create(mk(name="c"))
    assert [o["metadata"]["name"] for o in store.list("Workload")[0]] == ["a", "c"]
    events = [w.next(0), w.next(0), w.next(0)]
    assert [(e.object["metadata"]["name"], e.resource_version) for e in events if e] == [("a", 1), ("c", 2)]


def test_failed_single_write_inside_batch_keeps_the_rest(store: SQLiteStore, mk: Manifest) -> None:
    with store.batch():
        store.create(mk(name="a"))
        with pytest.raises(AlreadyExists):
            store.create(mk(name="a"))
        store.create(mk(name="b"))
    assert [o["metadata"]["name"] for o in store.list("Workload")[0]] == ["a", "b"]


def test_other_threads_do_not_see_an_open_batch(file_store: SQLiteStore, mk: Manifest) -> None:
    store = file_store
    store.create(mk(name="a"))
    seen: list[Any] = []
    with store.batch():
        store.update_status({**mk(name="a"), "status": {"phase": "uncommitted"}})
        # Pooled read connections read the last committed snapshot without waiting.
        t = threading.Thread(target=lambda: seen.append(store.get("Workload", "default", "a")))
        t.start()
        t.join(10)
        assert not t.is_alive()
    assert seen[0] is not None and "status" not in seen[0]
    assert store.get("Workload", "default", "a")["status"] == {"phase": "uncommitted"}  # type: ignore[index]


def test_writers_in_other_threads_wait_for_the_batch(store: SQLiteStore, mk: Manifest) -> None:
    started = threading.Event()
    done = threading.Event()

    def writer() -> None:
        started.set()
        store.create(mk(name="other-thread"))
        done.set()

    with store.batch():
        store.create(mk(name="mine"))
        t = threading.Thread(target=writer)
        t.start()
        started.wait(10)
        assert not done.wait(0.05)  # blocked on the batch, not joined to it
    t.join(10)
    items, rv = store.list("Workload")
    assert [o["metadata"]["name"] for o in items] == ["mine", "other-thread"]
    assert rv == 2
