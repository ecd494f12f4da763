"""SQLiteWatch.quiet_kinds: a watch of every kind that a commit of only those kinds does not wake
(the dev-cluster's controllers and kube Events); their changes still come, in order."""

from __future__ import annotations

import threading
import time
from typing import Any

from hub.store import SQLiteStore, WatchEvent


def _obj(kind: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": "ns"}}


def _next_after_commit(store: SQLiteStore, kind: str, timeout: float) -> tuple[float, WatchEvent | None]:
    _, rv = store.list("Pod")
    w = store.watch(None, since=rv)
    w.quiet_kinds(["Event"])
    got: list[WatchEvent | None] = []
    waiter = threading.Thread(target=lambda: got.append(w.next(timeout=timeout)))
    started = time.monotonic()
    waiter.start()
    time.sleep(0.1)  # waiting on the watch
    store.create(_obj(kind, f"{kind.lower()}-{rv}"))
    waiter.join()
    w.close()
    return time.monotonic() - started, got[0]


def test_a_quiet_kinds_commit_does_not_wake_the_watch_but_is_delivered(store: SQLiteStore) -> None:
    took, event = _next_after_commit(store, "Event", 1.0)
    assert event is not None and event.object["kind"] == "Event"  # at the timeout, not lost
    assert took >= 0.9


def test_another_kinds_commit_wakes_it(store: SQLiteStore) -> None:
    took, event = _next_after_commit(store, "Pod", 5.0)
    assert event is not None and event.object["kind"] == "Pod"
    assert took < 2.0


def test_a_commit_with_another_kind_brings_the_quiet_changes_first(store: SQLiteStore) -> None:
    _, rv = store.list("Pod")
    w = store.watch(None, since=rv)
    w.quiet_kinds(["Event"])
    store.create(_obj("Event", "e"))
    store.create(_obj("Pod", "p"))
    assert [w.next(timeout=0).object["kind"] for _ in range(2)] == ["Event", "Pod"]  # type: ignore[union-attr]
    w.close()
