"""The dashboard's index fed by two sources: the store's watch and the status writes the hub's
reconciler hands over after each commit (no second decode). Each part of a row (spec, status)
keeps its newest resourceVersion, whichever source brings it first."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from controllers.hub_objects import seed, setup_objects, workload

from hub.api.config import Configuration
from hub.controllers.hub_runtime import HubRuntime
from hub.store import SQLiteStore
from hub.ui.index import WorkloadIndex, parse_query, row_of
from hub.ui.live import Follower

pytestmark = pytest.mark.timeout(60)


def eventually(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def stored(name: str, rv: int, *, priority: int = 0, status: dict[str, Any] | None = None) -> dict[str, Any]:
    pending = {"conditions": [{"type": "QuotaReserved", "status": "False", "message": "waits"}]}
    return {"kind": "Workload", "metadata": {"namespace": "team", "name": name, "resourceVersion": str(rv)},
            "spec": {"queueName": "lq", "priority": priority}, "status": status or pending}


def admitted_status() -> dict[str, Any]:
    return {"conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}],
            "admission": {"clusterQueue": "cq"}}


def test_a_status_handed_over_replaces_the_status_part_and_an_older_event_does_not_undo_it() -> None:
    index = WorkloadIndex()
    index.load([stored("w", 5)])
    changed, missing = index.apply_statuses([("team/w", 7, admitted_status()), ("team/gone", 8, admitted_status())])
    assert changed == {"team/w"} and [m[0] for m in missing] == ["team/gone"]
    assert index.rows["team/w"].state == "running" and index.rows["team/w"].cluster_queue == "cq"
    # The watch brings a user's change of the spec (rv 6) after the hub's status write (rv 7) was handed over:
    # the row takes the new priority and keeps the newer status.
    assert index.apply_many([(stored("w", 6, priority=9), False, 6)]) == {"team/w"}
    row = index.rows["team/w"]
    assert (row.priority, row.state, row.status_rv) == (9, "running", 7)
    # The echo of the handed-over write itself, or anything older, changes nothing.
    assert index.apply_many([(stored("w", 7, priority=9, status=admitted_status()), False, 7), (stored("w", 4), False, 4)]) == set()
    assert index.apply_statuses([("team/w", 6, {"conditions": []})])[0] == set()
    assert index.rows["team/w"].state == "running"


def test_the_follower_takes_the_hubs_status_writes_from_the_hub_and_ends_equal_to_the_store() -> None:
    store = SQLiteStore(":memory:")
    seed(store, setup_objects(cpu=2))
    runtime = HubRuntime(store, Configuration(), default_duration=3600.0)
    runtime.start()
    index = WorkloadIndex()
    follower = Follower(store, index, lambda _keys: None)
    try:
        assert runtime.ready.wait(20)
        follower.start()
        runtime.workload_sinks.append(follower.written)
        assert follower.synced.wait(10)
        seed(store, [workload(f"w{i}", duration="1s" if i < 6 else "1h", created=f"2026-01-01T00:00:{i:02d}Z")
                     for i in range(10)])
        eventually(lambda: sum(r.state == "finished" for r in list(index.rows.values())) == 6, "six finished runs")
        w9 = store.get("Workload", "team", "w9")
        assert w9 is not None
        store.update({**w9, "spec": {**w9["spec"], "active": False}})  # a user's change: through the watch
        store.delete("Workload", "team", "w8")

        def same() -> bool:
            want = {o["metadata"]["name"]: row_of(o).to_dict() for o in store.list("Workload")[0]}
            have = {r.name: r.to_dict() for r in list(index.rows.values())}
            return want == have and want["w9"]["state"] == "inactive"

        eventually(same, "the index to equal the store")
        assert follower.handed >= 6  # the hub's own status writes came handed over, not through a second decode
    finally:
        follower.stop()
        runtime.stop()
        store.close()


def test_the_state_order_follows_handed_over_statuses() -> None:
    index = WorkloadIndex()
    index.load([stored(f"w{i}", i + 1) for i in range(4)])
    by_state = parse_query({"sort": "state"})
    assert [r.name for r in index.page(by_state).rows] == ["w0", "w1", "w2", "w3"]  # all pending: by key
    index.apply_statuses([("team/w1", 10, admitted_status())])
    assert [(r.name, r.state) for r in index.page(by_state).rows][-1] == ("w1", "running")
    index.apply_many([(stored("w3", 11, status=admitted_status()), False, 11)])
    assert [r.name for r in index.page(by_state).rows] == ["w0", "w2", "w1", "w3"]
