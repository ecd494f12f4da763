"""A status write that changes nothing is answered with the object's current resourceVersion:
someone else's change, maybe one the hub's watch has not delivered yet. The hub must not take it
for the echo of its own write and skip it (hub.store.journal, hub.controllers.own_writes)."""

from __future__ import annotations

from hub_objects import T0, seed, setup_objects, workload

from hub.api.config import Configuration
from hub.controllers.hub import HubReconciler
from hub.store import SQLiteStore
from hub.store.journal import committed


def new_hub(store: SQLiteStore, now: float) -> HubReconciler:
    hub = HubReconciler(store, Configuration(), now, ready_delay=0.0)
    hub.load(now)
    return hub


def feed(hub: HubReconciler, store: SQLiteStore, since: int, now: float) -> int:
    """Deliver every committed change after ``since``; the last resourceVersion."""
    with store.watch(since=since) as watch:
        while (ev := watch.next(timeout=0)) is not None:
            hub.observe(ev, now)
            since = ev.resource_version
    return since


def test_a_no_op_status_write_does_not_swallow_an_edit_the_hub_has_not_seen(store: SQLiteStore) -> None:
    seed(store, setup_objects(cpu=1) + [workload("w0", duration="100s")])
    hub = new_hub(store, T0)
    _, since = store.list("Workload")
    hub.round(T0)
    store.create(workload("w1"))
    since = feed(hub, store, since, T0)  # the hub knows w1 and will write the queues' new counts
    # Before it does, another replica writes those very statuses, then a user edits the queue.
    new_hub(store, T0 + 1).round(T0 + 1)
    cq = store.get("ClusterQueue", "", "cq")
    assert cq is not None and cq["status"]["pendingWorkloads"] == 1
    cq["spec"]["queueingStrategy"] = "StrictFIFO"
    edit = int(store.update(cq)["metadata"]["resourceVersion"])
    hub.round(T0 + 1)  # its queue status writes change nothing now: answered at the edit's version
    delivered = {}
    with store.watch(since=since) as watch:
        watch.skip_changes(hub.take_own_write)
        while (ev := watch.next(timeout=0)) is not None:
            delivered[ev.resource_version] = hub.observe(ev, T0 + 1)
    assert delivered.get(edit) is True, f"the user's edit at {edit} was skipped as the hub's own write: {delivered}"
    assert hub.engine.cqs["cq"].spec.queueing_strategy == "StrictFIFO"


def test_only_the_changes_a_batch_made_are_journaled(store: SQLiteStore) -> None:
    seed(store, setup_objects())
    cq = store.get("ClusterQueue", "", "cq")
    assert cq is not None
    with store.batch():
        written = store.update_status({**cq, "status": {"pendingWorkloads": 2}})
        again = store.update_status({**written, "status": {"pendingWorkloads": 2}})  # no change
    rv, same = int(written["metadata"]["resourceVersion"]), int(again["metadata"]["resourceVersion"])
    assert committed([rv]) == [rv]
    with store.batch():
        noop = store.update_status({**written, "status": {"pendingWorkloads": 2}})
    assert int(noop["metadata"]["resourceVersion"]) == same == rv
    assert committed([rv]) == []  # the last batch changed nothing: the answer is not its own
