"""The hub reconciler against a real (in-memory) SQLite store: restore, write-back, crash windows.

Time is passed in; a "crash" is a reconciler abandoned without committing,
followed by a fresh one loading the same store, which is what a restarted
process does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hub_objects import T0, is_true, job, seed, setup_objects, workload

from hub.api.config import Configuration
from hub.controllers.hub import HubReconciler
from hub.store import SQLiteStore, StoreError
from hub.store.interface import WatchEvent


class CountingStore(SQLiteStore):
    """The real store, counting top-level transactions and refusing writes outside one."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.transactions = 0
        self._depth_seen = 0
        self.fail_commit = False

    @contextmanager
    def batch(self) -> Iterator[None]:
        outer = self._depth_seen == 0
        self._depth_seen += 1
        try:
            with super().batch():
                yield
                if outer and self.fail_commit:
                    # kill -9 between the engine's decisions and COMMIT: the transaction never lands.
                    raise StoreError("simulated crash before commit")
        finally:
            self._depth_seen -= 1
        if outer:
            self.transactions += 1


def new_hub(store: SQLiteStore, now: float = T0) -> HubReconciler:
    rec = HubReconciler(store, Configuration(), now, ready_delay=0.0)
    rec.load(now)
    return rec


def workloads(store: SQLiteStore) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in store.list("Workload")[0]}


def reserved(store: SQLiteStore) -> set[str]:
    return {n for n, o in workloads(store).items() if is_true(o, "QuotaReserved") and not is_true(o, "Finished")}


def feed(rec: HubReconciler, store: SQLiteStore, since: int, now: float) -> int:
    """Deliver every committed change after ``since`` to the reconciler; returns the last rv."""
    with store.watch(since=since) as watch:
        while (ev := watch.next(timeout=0)) is not None:
            rec.observe(ev, now)
            since = ev.resource_version
    return since


def test_one_round_is_one_transaction() -> None:
    store = CountingStore()
    seed(store, setup_objects(cpu=3) + [workload(f"w{i}") for i in range(10)])
    before = store.transactions
    rec = new_hub(store)
    stats = rec.round(T0)
    assert store.transactions == before + 1
    assert stats.workloads == 10  # 3 admitted, 7 told why they wait: all in that one transaction
    assert len(reserved(store)) == 3
    waiting = [o for o in workloads(store).values() if not is_true(o, "QuotaReserved")]
    assert len(waiting) == 7 and all(o["status"]["conditions"] for o in waiting)
    cq = store.get("ClusterQueue", "", "cq")
    assert cq is not None
    assert cq["status"]["reservingWorkloads"] == 3 and cq["status"]["pendingWorkloads"] == 7
    lq = store.get("LocalQueue", "team", "lq")
    assert lq is not None and lq["status"]["admittedWorkloads"] == 3
    store.close()


def test_a_quiet_round_writes_nothing(store: SQLiteStore) -> None:
    seed(store, setup_objects() + [workload("w0")])
    rec = new_hub(store)
    rec.round(T0)
    _, rv = store.list("Workload")
    assert rec.round(T0 + 0.001).writes == 0
    assert store.list("Workload")[1] == rv


def test_restore_rederives_usage_and_resumes_runs(store: SQLiteStore) -> None:
    seed(store, setup_objects(cpu=3) + [workload(f"w{i}", duration="10s") for i in range(5)])
    first = new_hub(store, T0)
    first.round(T0)
    held = reserved(store)
    # A restart 4 s later: same reservations, same usage, the runs carry on where they were.
    second = new_hub(store, T0 + 4)
    assert second.engine.usage_of("cq") == {("default", "cpu"): 3000}
    assert {k.split("/")[1] for k in second.runner.running} == held
    second.round(T0 + 4)
    assert reserved(store) == held  # nothing admitted twice, nothing dropped
    second.round(T0 + 9.9)
    assert not any(is_true(o, "Finished") for o in workloads(store).values())
    second.round(T0 + 10.0)
    finished = {n for n, o in workloads(store).items() if is_true(o, "Finished")}
    assert finished == held  # they ran exactly their 10 s, counted from the original admission
    assert len(reserved(store)) == 2  # the two that waited got the freed quota


def test_crash_before_commit_loses_only_that_round() -> None:
    store = CountingStore()
    seed(store, setup_objects(cpu=2) + [workload(f"w{i}", duration="1s") for i in range(4)])
    first = new_hub(store, T0)
    first.round(T0)
    held = reserved(store)
    assert len(held) == 2
    # The first two finish and two more are admitted, but the process dies before COMMIT.
    store.fail_commit = True
    with pytest.raises(StoreError):
        first.round(T0 + 1)
    store.fail_commit = False
    assert reserved(store) == held  # the store still holds the last committed round
    assert not any(is_true(o, "Finished") for o in workloads(store).values())
    # Restart: the finished-but-uncommitted runs finish again (once, from the store's view),
    # and the admissions are decided again against the committed usage.
    second = new_hub(store, T0 + 1.5)
    second.round(T0 + 1.5)
    objs = workloads(store)
    assert {n for n, o in objs.items() if is_true(o, "Finished")} == held
    assert len(reserved(store)) == 2 and reserved(store).isdisjoint(held)


def test_finished_workloads_are_never_run_again(store: SQLiteStore) -> None:
    seed(store, setup_objects(cpu=1) + [workload("w0", duration="1s"), workload("w1", duration="1s")])
    rec = new_hub(store, T0)
    rec.round(T0)
    rec.round(T0 + 1)
    done = workloads(store)["w0"]
    assert is_true(done, "Finished")
    again = new_hub(store, T0 + 5)
    assert "team/w0" not in again.runner.running
    again.round(T0 + 5)
    again.round(T0 + 50)
    after = workloads(store)["w0"]
    assert after["status"] == done["status"]  # untouched: no second run, no second finish


def test_restore_keeps_creation_order(store: SQLiteStore) -> None:
    seed(
        store,
        setup_objects(cpu=1)
        + [
            workload("late", created="2026-01-01T00:00:00.300000Z"),
            workload("early", created="2026-01-01T00:00:00.100000Z"),
            workload("middle", created="2026-01-01T00:00:00.200000Z"),
        ],
    )
    rec = new_hub(store)
    rec.round(T0)
    assert reserved(store) == {"early"}


def test_jobs_get_one_workload_and_are_adopted_after_restart(store: SQLiteStore) -> None:
    seed(store, setup_objects(cpu=2) + [job("j1", parallelism=2), job("j2")])
    rec = new_hub(store, T0)
    rec.round(T0)
    wls = workloads(store)
    assert len(wls) == 2
    running = store.get("Job", "team", "j1")
    assert running is not None and running["spec"]["suspend"] is False and running["status"]["active"] == 2
    waiting = store.get("Job", "team", "j2")
    assert waiting is not None and waiting["spec"]["suspend"] is True
    owner = wls[next(n for n in wls if "j1" in n)]["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "Job" and owner["name"] == "j1"
    again = new_hub(store, T0 + 1)
    stats = again.round(T0 + 1)
    assert len(workloads(store)) == 2 and stats.workloads == 0  # adopted, not created again
    again.round(T0 + 10)
    done = store.get("Job", "team", "j1")
    assert done is not None and done["status"]["succeeded"] == 2
    assert done["status"]["conditions"][0]["type"] == "Complete"
    started = store.get("Job", "team", "j2")
    assert started is not None and started["spec"]["suspend"] is False


def test_workload_of_a_job_deleted_while_down_is_collected(store: SQLiteStore) -> None:
    seed(store, setup_objects() + [job("j1")])
    rec = new_hub(store, T0)
    rec.round(T0)
    assert len(workloads(store)) == 1
    store.delete("Job", "team", "j1")  # committed, but the hub dies before acting on it
    again = new_hub(store, T0 + 1)
    again.round(T0 + 1)
    assert workloads(store) == {}
    assert again.engine.usage_of("cq") == {("default", "cpu"): 0}


def test_deleting_a_job_deletes_its_workload_and_frees_quota(store: SQLiteStore) -> None:
    seed(store, setup_objects(cpu=1) + [job("j1"), workload("w0")])
    rec = new_hub(store, T0)
    rec.round(T0)
    _, rv = store.list("Job")
    store.delete("Job", "team", "j1")
    feed(rec, store, rv, T0 + 1)
    rec.round(T0 + 1)
    assert set(workloads(store)) == {"w0"}
    assert reserved(store) == {"w0"}


def _edited_while_the_hub_writes(store: SQLiteStore) -> tuple[HubReconciler, int]:
    """A hub that ran two rounds while a user edited its waiting workload w1, and the
    resourceVersion to watch from to see all of it."""
    seed(store, setup_objects(cpu=1) + [workload("w0", duration="1s"), workload("w1")])
    rec = new_hub(store, T0)
    _, since = store.list("Workload")
    rec.round(T0)
    # A user edits the waiting workload; the hub writes its status before it sees the edit.
    edited = store.get("Workload", "team", "w1")
    assert edited is not None
    edited["metadata"]["labels"] = {"edited": "yes"}
    store.update(edited)
    rec.round(T0 + 1)  # w0 finishes, w1 is admitted: the status write lands after the edit
    return rec, since


def test_watch_echo_of_own_writes_is_skipped_but_user_edits_are_not(store: SQLiteStore) -> None:
    rec, since = _edited_while_the_hub_writes(store)
    observed = []
    with store.watch(since=since) as watch:
        while (ev := watch.next(timeout=0)) is not None:
            observed.append((ev.key.name, rec.observe(ev, T0 + 1)))
    applied = [name for name, used in observed if used]
    assert applied == ["w1"]  # exactly the user's edit; every echo of the hub's own writes skipped
    w1 = rec.engine.workloads["team/w1"]
    assert w1.meta.labels == {"edited": "yes"}
    assert w1.is_admitted  # the engine's status survived the user's (status-less) update


def test_a_watch_drops_the_echoes_of_own_writes_unread_and_delivers_user_edits(store: SQLiteStore) -> None:
    """The runtime's feed hands ``take_own_write`` to its SQLite watch (hub.controllers.own_writes):
    the echoes never become events; the user's edit still does, and nothing of ours is left over."""
    rec, since = _edited_while_the_hub_writes(store)
    with store.watch(since=since) as watch:
        watch.skip_changes(rec.take_own_write)
        delivered = []
        while (ev := watch.next(timeout=0)) is not None:
            delivered.append((ev.key.kind, ev.key.name, rec.observe(ev, T0 + 1)))
    assert delivered == [("Workload", "w1", True)]
    assert len(rec._own) == 0  # every echo was taken: nothing waits for a prune
    w1 = rec.engine.workloads["team/w1"]
    assert w1.meta.labels == {"edited": "yes"} and w1.is_admitted


def test_status_written_by_the_hub_is_not_read_back_over_newer_engine_state(store: SQLiteStore) -> None:
    seed(store, setup_objects(cpu=1) + [workload("w0", duration="1s")])
    rec = new_hub(store, T0)
    _, since = store.list("Workload")
    rec.round(T0)
    # A stale event for w0 (its pre-admission version) arrives after the admission.
    stale = store.get("Workload", "team", "w0")
    assert stale is not None
    stale.pop("status")
    rec.observe(WatchEvent("MODIFIED", stale, 10**9), T0)  # type: ignore[arg-type]
    assert rec.engine.workloads["team/w0"].is_admitted


def test_invalid_stored_object_is_ignored(store: SQLiteStore) -> None:
    seed(store, setup_objects() + [{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "bad", "namespace": "team"}, "spec": {}}])
    rec = new_hub(store)
    rec.round(T0)
    assert "team/bad" not in rec.engine.workloads


def test_preemption_completes_within_one_round(store: SQLiteStore) -> None:
    """Evict, stop the victim's run, release its quota, admit the preemptor: one round, one commit."""
    cq = setup_objects(cpu=2)
    cq[2]["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    seed(store, cq + [workload("low0", priority=0), workload("low1", priority=0)])
    rec = new_hub(store, T0)
    rec.round(T0)
    assert reserved(store) == {"low0", "low1"}
    _, since = store.list("Workload")
    seed(store, [workload("high", priority=100)])
    feed(rec, store, since, T0 + 1)
    rec.round(T0 + 1)
    objs = workloads(store)
    assert "high" in reserved(store) and is_true(objs["high"], "Admitted")
    victims = [n for n in ("low0", "low1") if is_true(objs[n], "Evicted")]
    assert len(victims) == 1 and not is_true(objs[victims[0]], "QuotaReserved")
    assert is_true(objs[victims[0]], "Requeued")
    assert rec.engine.usage_of("cq") == {("default", "cpu"): 2000}


def test_a_workload_recreated_under_its_name_is_a_new_one(store: SQLiteStore) -> None:
    # Deleted and created again while the hub was disconnected: the next word about it is a
    # modification with another uid. It must not inherit the old one's admission.
    seed(store, setup_objects(cpu=1) + [workload("w0", duration="1h")])
    rec = new_hub(store, T0)
    rec.round(T0)
    assert rec.engine.workloads["team/w0"].is_admitted
    again = store.get("Workload", "team", "w0")
    assert again is not None
    again.pop("status")
    again["metadata"]["uid"] = "a-new-uid"
    rec.observe(WatchEvent("MODIFIED", again, 10**9), T0 + 1)  # type: ignore[arg-type]
    w0 = rec.engine.workloads["team/w0"]
    assert w0.meta.uid == "a-new-uid" and not w0.is_admitted and not w0.is_quota_reserved
