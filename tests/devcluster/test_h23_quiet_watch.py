"""The dev-cluster's controllers are not woken by a commit of only Events or Leases (hub.devcluster.runtime
QUIET_KINDS), and lose none of their changes: an Event owned by a Job still goes with it."""

from __future__ import annotations

from test_devcluster import Clock, cluster, job

from hub.store import SQLiteStore


def test_events_do_not_wake_the_controllers_but_are_still_collected(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    assert dc._watch is not None
    wake = dc._watch._wake  # type: ignore[attr-defined]
    assert store._wakers._any_but.get(wake) == frozenset({"Event", "Lease"})
    owner = store.create(job("owner", suspend=True))
    store.create({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "team-a", "ownerReferences": [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "owner", "uid": owner["metadata"]["uid"]}]},
        "involvedObject": {"kind": "Job", "name": "owner", "namespace": "team-a"}, "reason": "Test"})
    dc.step()
    store.delete("Job", "team-a", "owner")
    dc.step()
    assert store.get("Event", "team-a", "e") is None
