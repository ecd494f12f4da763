"""The Kubernetes-mode agent's Writer hands every key queued when a thread wakes to ``apply_many``
at once (issue 26: their requests then go out gathered), and keeps what it promised one key at a
time: a key's states in order and never on two threads at once, the latest state of a key desired
again while queued written once, a failure logged against its own key only."""

from __future__ import annotations

import threading
import time

import pytest

from hub.store.interface import StoreError
from worker_agent.kube.cluster import Writer

pytestmark = pytest.mark.timeout(30)


def _wait(predicate: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_the_keys_queued_meanwhile_go_to_apply_many_together_each_once_at_its_latest() -> None:
    release = threading.Event()
    batches: list[list[tuple[str, object]]] = []

    def apply_many(items: list[tuple[str, object]]) -> list[BaseException | None]:
        batches.append(items)
        return [StoreError("refused") if state == "bad" else None for _, state in items]

    def apply(key: str, state: object) -> None:
        batches.append([(key, state)])
        release.wait(5)  # the first write holds the only thread while the others are queued

    writer = Writer(apply, threads=1, apply_many=apply_many)
    try:
        writer.desire("Workload:ns/first", 1)
        _wait(lambda: batches)
        writer.desire("Workload:ns/a", 1)
        writer.desire("Job:ns/j", "create")
        writer.desire("Workload:ns/b", "bad")
        writer.desire("Workload:ns/a", 2)  # desired again while queued: written once, at 2
        writer.desire("Workload:ns/first", 2)  # in flight: written again after, not beside it
        release.set()
        _wait(lambda: writer.pending() == 0)
    finally:
        writer.stop()
    assert batches[0] == [("Workload:ns/first", 1)]
    # The Job first (what the user waits for), then the Workloads in the order queued.
    assert batches[1] == [("Job:ns/j", "create"), ("Workload:ns/a", 2), ("Workload:ns/b", "bad"), ("Workload:ns/first", 2)]
    assert len(batches) == 2
    assert writer.failures == 1 and writer.done == 5 and writer.batches == 1


def test_a_bug_in_apply_many_fails_that_batch_and_the_writer_goes_on() -> None:
    calls: list[int] = []

    def apply_many(items: list[tuple[str, object]]) -> list[BaseException | None]:
        calls.append(len(items))
        if len(calls) == 1:
            raise RuntimeError("bug")
        return [None] * len(items)

    gate = threading.Event()
    writer = Writer(lambda key, state: gate.wait(5), threads=1, apply_many=apply_many)
    try:
        writer.desire("Workload:ns/hold", 0)
        _wait(lambda: writer.pending() == 1 and not writer._queue.qsize())
        writer.desire("Workload:ns/a", 1)
        writer.desire("Workload:ns/b", 1)
        gate.set()
        _wait(lambda: writer.pending() == 0)
        writer.desire("Workload:ns/a", 2)
        writer.desire("Workload:ns/c", 2)
        _wait(lambda: writer.pending() == 0)
    finally:
        writer.stop()
    assert writer.failures == 2 and writer.done == 5
