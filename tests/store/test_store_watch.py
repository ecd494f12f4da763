from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hub.store import EventType, Gone, SQLiteStore, SQLiteWatch, WatchEvent

Manifest = Callable[..., dict[str, Any]]


def take(w: SQLiteWatch, n: int, timeout: float = 5.0) -> list[WatchEvent]:
    events = []
    for _ in range(n):
        ev = w.next(timeout)
        assert ev is not None, f"watch delivered only {len(events)} of {n} events"
        events.append(ev)
    return events


def names(events: list[WatchEvent]) -> list[str]:
    return [e.object["metadata"]["name"] for e in events]


def test_watch_from_zero_replays_everything(store: SQLiteStore, mk: Manifest) -> None:
    a = store.create(mk(name="a"))
    store.create(mk(name="b", kind="Job"))
    store.update_status({**a, "status": {"x": 1}})
    store.delete("Workload", "default", "a")
    w = store.watch(since=0)
    events = take(w, 4)
    assert [(e.type, e.resource_version) for e in events] == [
        (EventType.ADDED, 1),
        (EventType.ADDED, 2),
        (EventType.MODIFIED, 3),
        (EventType.DELETED, 4),
    ]
    assert events[2].object["status"] == {"x": 1}
    assert all(e.object["metadata"]["resourceVersion"] == str(e.resource_version) for e in events)
    assert events[0].key.name == "a"
    assert w.next(0) is None


def test_watch_filters_kinds(store: SQLiteStore, mk: Manifest) -> None:
    for i in range(3):
        store.create(mk(name=f"w{i}"))
        store.create(mk(name=f"j{i}", kind="Job"))
    w = store.watch(kinds=["Job"])
    assert names(take(w, 3)) == ["j0", "j1", "j2"]
    assert w.next(0) is None
    assert names(take(store.watch("Workload"), 3)) == ["w0", "w1", "w2"]  # a bare string is one kind


def test_resume_after_list_sees_writes_in_between(store: SQLiteStore, mk: Manifest) -> None:
    store.create(mk(name="before"))
    items, rv = store.list("Workload")
    assert names_of(items) == ["before"]
    store.create(mk(name="between"))  # after the list, before the watch
    w = store.watch(since=rv)
    store.create(mk(name="after"))
    assert names(take(w, 2)) == ["between", "after"]
    assert w.next(0) is None


def names_of(items: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in items]


def test_blocking_next_wakes_on_commit(store: SQLiteStore, mk: Manifest) -> None:
    w = store.watch()
    got: list[WatchEvent | None] = []
    t = threading.Thread(target=lambda: got.append(w.next(10)))
    t.start()
    store.create(mk())
    t.join(10)
    assert got and got[0] is not None and got[0].type is EventType.ADDED


def test_next_times_out(store: SQLiteStore) -> None:
    w = store.watch()
    assert w.next(0) is None
    assert w.next(0.01) is None


def test_close_unblocks_iteration(store: SQLiteStore, mk: Manifest) -> None:
    store.create(mk(name="a"))
    w = store.watch()
    seen: list[str] = []

    def consume() -> None:
        for ev in w:
            seen.append(ev.object["metadata"]["name"])

    t = threading.Thread(target=consume)
    t.start()
    store.create(mk(name="b"))
    while len(seen) < 2:  # both events arrive before we close
        t.join(0.01)
    w.close()
    t.join(10)
    assert not t.is_alive()
    assert seen == ["a", "b"]


def test_store_close_ends_watches(mk: Manifest) -> None:
    store = SQLiteStore(":memory:")
    w = store.watch()
    t = threading.Thread(target=lambda: list(w))
    t.start()
    store.close()
    t.join(10)
    assert not t.is_alive()
    assert w.next(0) is None


def test_event_objects_are_private(store: SQLiteStore, mk: Manifest) -> None:
    store.create(mk())
    w1, w2 = store.watch(), store.watch()
    e1 = take(w1, 1)[0]
    e1.object["spec"]["queueName"] = "mutated"
    assert take(w2, 1)[0].object["spec"]["queueName"] == "q"


def test_gone_after_compaction(mk: Manifest) -> None:
    store = SQLiteStore(":memory:", log_retention=10)
    for i in range(30):
        store.create(mk(name=f"w{i:02}"))
    with pytest.raises(Gone, match="resourceVersion 0 is gone"):
        store.watch(since=0)
    with pytest.raises(Gone):
        store.watch(since=19)
    assert names(take(store.watch(since=20), 10)) == [f"w{i:02}" for i in range(20, 30)]
    # The remedy: list, then watch from the list's resourceVersion.
    items, rv = store.list("Workload")
    assert len(items) == 30 and rv == 30
    w = store.watch(since=rv)
    store.create(mk(name="next"))
    assert names(take(w, 1)) == ["next"]


def test_gone_for_future_resource_version(store: SQLiteStore, mk: Manifest) -> None:
    store.create(mk())
    with pytest.raises(Gone):
        store.watch(since=2)


def test_slow_watcher_gets_gone(mk: Manifest) -> None:
    # A one-event ring forces the watcher onto the persisted log, which compaction trims.
    store = SQLiteStore(":memory:", log_retention=5, watch_cache=1)
    w = store.watch(since=0)
    for i in range(20):
        store.create(mk(name=f"w{i}"))
    with pytest.raises(Gone):
        w.next(0)


def test_reads_the_log_beyond_the_ring(
    store: SQLiteStore, mk: Manifest, monkeypatch: pytest.MonkeyPatch
) -> None:
    store._ring_cap = 2  # keep almost nothing in memory
    monkeypatch.setattr(SQLiteWatch, "_CHUNK", 3)  # and page the log in small chunks
    w_all = store.watch()
    w_jobs = store.watch(kinds={"Job"})
    for i in range(20):
        store.create(mk(name=f"w{i:02}", kind="Job" if i % 4 == 0 else "Workload"))
    events = take(w_all, 20)
    assert [e.resource_version for e in events] == list(range(1, 21))
    assert names(take(w_jobs, 5)) == ["w00", "w04", "w08", "w12", "w16"]
    assert w_all.next(0) is None and w_jobs.next(0) is None


def test_watch_resumes_from_disk_after_reopen(tmp_path: Path, mk: Manifest) -> None:
    path = tmp_path / "mkhub.db"
    with SQLiteStore(path) as store:
        for i in range(5):
            store.create(mk(name=f"w{i}"))
    with SQLiteStore(path) as store:
        assert names(take(store.watch(since=2), 3)) == ["w2", "w3", "w4"]


def test_concurrent_writers_and_watcher(store: SQLiteStore, mk: Manifest) -> None:
    w = store.watch()
    threads = [
        threading.Thread(target=lambda t=t: [store.create(mk(name=f"t{t}-{i}")) for i in range(50)])
        for t in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    events = take(w, 200)
    assert [e.resource_version for e in events] == list(range(1, 201))
    assert sorted(names(events)) == sorted(f"t{t}-{i}" for t in range(4) for i in range(50))
    assert len(store.list("Workload")[0]) == 200


def test_list_then_watch_under_concurrent_writes(store: SQLiteStore, mk: Manifest) -> None:
    """Informer pattern: a list plus the events after its resourceVersion must rebuild
    exactly the final state, whatever the writers were doing meanwhile."""

    def writer(prefix: str) -> None:
        for i in range(300):
            with store.batch():
                obj = store.create(mk(name=f"{prefix}{i}"))
                store.update_status({**obj, "status": {"n": i}})
            if i % 3 == 0:
                store.delete("Workload", "default", f"{prefix}{i}")

    writers = [threading.Thread(target=writer, args=(p,)) for p in "ab"]
    for t in writers:
        t.start()
    mirrors = []
    for _ in range(3):  # informers starting at different moments
        items, rv = store.list("Workload")
        mirror = {o["metadata"]["name"]: o for o in items}
        mirrors.append((mirror, store.watch(kinds=["Workload"], since=rv)))
    for t in writers:
        t.join()
    final = {o["metadata"]["name"]: o for o in store.list("Workload")[0]}
    for mirror, w in mirrors:
        while (ev := w.next(0)) is not None:
            name = ev.object["metadata"]["name"]
            if ev.type is EventType.DELETED:
                del mirror[name]
            else:
                mirror[name] = ev.object
        assert mirror == final
