"""The reconciler thread: watch in, rounds out, calls answered, Gone and failed commits recovered."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hub_objects import is_true, seed, setup_objects, workload

from hub.api.config import Configuration
from hub.controllers.hub_runtime import HubRuntime
from hub.store import Gone, SQLiteStore, StoreError
from hub.store.sqlite_watch import SQLiteWatch

pytestmark = pytest.mark.timeout(60)


def eventually(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def reserved(store: SQLiteStore) -> set[str]:
    return {o["metadata"]["name"] for o in store.list("Workload")[0] if is_true(o, "QuotaReserved")}


@contextmanager
def running(store: SQLiteStore) -> Iterator[HubRuntime]:
    rt = HubRuntime(store, Configuration(), default_duration=3600.0)
    rt.start()
    assert rt.ready.wait(20), "the runtime did not restore"
    try:
        yield rt
    finally:
        rt.stop()


def test_changes_flow_from_the_store_through_the_engine_and_back(store: SQLiteStore) -> None:
    seed(store, setup_objects(cpu=2))
    with running(store) as rt:
        seed(store, [workload(f"w{i}") for i in range(3)])
        eventually(lambda: len(reserved(store)) == 2, "two admissions")
        usage = rt.call(lambda rec: rec.engine.usage_of("cq")).result(timeout=10)
        assert usage == {("default", "cpu"): 2000}
        store.delete("Workload", "team", sorted(reserved(store))[0])
        eventually(lambda: len(reserved(store)) == 2 and len(store.list("Workload")[0]) == 2, "the third admitted")


class RacingStore(SQLiteStore):
    """Writes land between the hub's list and its watch, and by then the change log has moved on."""

    def __init__(self, racing: list[dict[str, Any]]) -> None:
        super().__init__(":memory:")
        self.racing = racing
        self.gone = 0

    def watch(self, kinds: Iterable[str] | None = None, since: int = 0) -> SQLiteWatch:
        if self.racing:
            seed(self, self.racing)
            self.racing = []
            self.gone += 1
            _, rv = self.list("Namespace")
            raise Gone(since, rv, rv)  # what the store says once compaction passed `since`
        return super().watch(kinds, since)


def test_gone_relists_and_misses_nothing() -> None:
    store = RacingStore([workload(f"late{i}") for i in range(3)])
    seed(store, setup_objects(cpu=5))
    try:
        with running(store) as rt:
            eventually(lambda: reserved(store) == {"late0", "late1", "late2"}, "the racing workloads admitted")
            assert store.gone == 1 and rt.rebuilds == 1
            keys = rt.call(lambda rec: sorted(rec.engine.workloads)).result(timeout=10)
            assert keys == ["team/late0", "team/late1", "team/late2"]
    finally:
        store.close()


class FlakyStore(SQLiteStore):
    """The real store whose next N transactions fail at commit (disk full, I/O error...)."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.failures = 0
        self._nesting = threading.local()

    @contextmanager
    def batch(self) -> Iterator[None]:
        depth = getattr(self._nesting, "depth", 0)
        self._nesting.depth = depth + 1
        try:
            with super().batch():
                yield
                if depth == 0 and self.failures and threading.current_thread().name == "mkhub-reconciler":
                    self.failures -= 1
                    raise StoreError("disk I/O error (simulated)")
        finally:
            self._nesting.depth = depth


def test_a_round_that_cannot_commit_is_redone_from_the_store() -> None:
    store = FlakyStore()
    seed(store, setup_objects(cpu=2))
    try:
        with running(store) as rt:
            store.failures = 1  # the next round (the admissions) fails to commit
            seed(store, [workload(f"w{i}") for i in range(3)])
            eventually(lambda: len(reserved(store)) == 2, "admissions after the rebuild")
            assert rt.rebuilds == 1
            usage = rt.call(lambda rec: rec.engine.usage_of("cq")).result(timeout=10)
            assert usage == {("default", "cpu"): 2000}  # not 4000: the lost round left no trace
    finally:
        store.close()


def test_a_rebuild_whose_first_round_fails_is_retried_not_fatal() -> None:
    """The store refuses the round and the rebuilds' first rounds (the same write, refused again):
    before, the second refusal ended the reconciler and with it the process."""
    store = FlakyStore()
    seed(store, setup_objects(cpu=2))
    try:
        with running(store) as rt:
            store.failures = 3  # the round, then the first rounds of two rebuilds
            seed(store, [workload(f"w{i}") for i in range(3)])
            eventually(lambda: len(reserved(store)) == 2, "admissions after the rebuilds")
            assert not rt.done.done()
            assert rt.failed_rebuilds == 2
            usage = rt.call(lambda rec: rec.engine.usage_of("cq")).result(timeout=10)
            assert usage == {("default", "cpu"): 2000}
    finally:
        store.close()


def test_stopped_while_the_store_refuses_every_write_ends_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    """The leader Lease lost: every write is refused and the hub stops its reconciler during the
    rebuilds' pauses. Before, the refusal came out of the rebuild as a traceback and a failure."""
    store = FlakyStore()
    seed(store, setup_objects(cpu=2))
    try:
        with running(store) as rt:
            store.failures = 10**6  # refused from now on
            seed(store, [workload("w0")])
            eventually(lambda: rt.failed_rebuilds >= 1, "a rebuild refused")
        assert rt.done.done() and rt.done.exception() is None
        assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
        assert any("stopped with its store refusing writes" in r.getMessage() for r in caplog.records)
    finally:
        store.close()


def test_stop_commits_and_refuses_later_calls(store: SQLiteStore) -> None:
    seed(store, setup_objects(cpu=1) + [workload("w0")])
    with running(store) as rt:
        eventually(lambda: reserved(store) == {"w0"}, "the admission")
    assert rt.done.done() and rt.done.exception() is None
    with pytest.raises(RuntimeError):
        rt.call(lambda rec: rec.rounds).result(timeout=5)


def test_calls_see_the_state_after_the_round(store: SQLiteStore) -> None:
    seed(store, setup_objects(cpu=1) + [workload("w0"), workload("w1")])
    with running(store) as rt:
        explained = rt.call(lambda rec: rec.engine.explain("team/w1")).result(timeout=10)
        assert "insufficient unused quota" in explained or "pending" in explained
        with pytest.raises(KeyError):
            rt.call(lambda rec: rec.engine.workloads["team/none"]).result(timeout=10)
