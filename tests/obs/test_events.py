"""Kubernetes Events recorded into the real SQLite store, aggregated as client-go's recorder does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from hub.api.config import Configuration
from hub.api.meta import format_time
from hub.controllers.hub import HubReconciler
from hub.obs.events import (
    COMBINED_PREFIX,
    EVENT_TTL,
    SPAM_BURST,
    SPAM_REFILL_SECONDS,
    SWEEP_PERIOD,
    EventRecorder,
    ObjectRef,
    events_for,
)
from hub.obs.metrics import DecisionMetrics
from hub.obs.observer import ClusterObserver
from hub.store import SQLiteStore
from tests.controllers.hub_objects import T0, cluster_queue, flavor, local_queue, namespace, workload

WL = ObjectRef("Workload", "team", "a", "uid-a", "kueue.x-k8s.io/v1beta2")


@pytest.fixture
def store() -> Iterator[SQLiteStore]:
    s = SQLiteStore(":memory:")
    yield s
    s.close()


def events(store: SQLiteStore) -> list[dict[str, Any]]:
    return store.list("Event")[0]


def test_a_repeated_event_is_one_event_with_a_count(store: SQLiteStore) -> None:
    rec = EventRecorder("kueue-admission", host="h")
    rec.record(WL, "Normal", "Pending", "waiting", T0)
    rec.flush(store)
    rec.record(WL, "Normal", "Pending", "waiting", T0 + 5)
    rec.record(WL, "Normal", "Pending", "waiting", T0 + 9)
    rec.flush(store)
    [ev] = events(store)
    assert ev["count"] == 3
    assert ev["firstTimestamp"] == format_time(T0) and ev["lastTimestamp"] == format_time(T0 + 9)
    assert ev["involvedObject"] == {"kind": "Workload", "namespace": "team", "name": "a", "uid": "uid-a",
                                    "apiVersion": "kueue.x-k8s.io/v1beta2"}
    assert ev["source"] == {"component": "kueue-admission", "host": "h"} and ev["type"] == "Normal"
    assert ev["metadata"]["namespace"] == "team" and ev["metadata"]["name"].startswith("a.")
    # A different message is a different Event.
    rec.record(WL, "Normal", "Pending", "still waiting", T0 + 10)
    rec.flush(store)
    assert sorted(e["message"] for e in events(store)) == ["still waiting", "waiting"]


def test_the_spam_filter_drops_past_the_burst_and_refills(store: SQLiteStore) -> None:
    rec = EventRecorder("kueue-admission")
    accepted = [rec.record(WL, "Normal", "Pending", "same", T0) for _ in range(SPAM_BURST + 5)]
    assert accepted.count(True) == SPAM_BURST and rec.dropped == 5
    assert not rec.record(WL, "Normal", "Pending", "same", T0 + SPAM_REFILL_SECONDS / 2)
    assert rec.record(WL, "Normal", "Pending", "same", T0 + SPAM_REFILL_SECONDS + 1)
    rec.flush(store)
    [ev] = events(store)
    assert ev["count"] == SPAM_BURST + 1


def test_many_different_messages_of_one_reason_are_combined(store: SQLiteStore) -> None:
    rec = EventRecorder("kueue-admission")
    for i in range(15):
        rec.record(WL, "Normal", "Pending", f"message {i}", T0 + i)
    rec.flush(store)
    listed = events(store)
    combined = [e for e in listed if e["message"].startswith(COMBINED_PREFIX)]
    assert len(listed) == 10  # nine distinct, then one combined Event
    assert len(combined) == 1 and combined[0]["count"] == 6
    assert combined[0]["message"] == COMBINED_PREFIX + "message 14"


def test_old_events_are_collected(store: SQLiteStore) -> None:
    rec = EventRecorder("kueue-admission")
    rec.record(WL, "Normal", "Pending", "old", T0)
    rec.record(ObjectRef("Workload", "team", "b"), "Normal", "Pending", "new", T0 + EVENT_TTL)
    rec.flush(store)
    assert len(rec.collect(store, T0 + EVENT_TTL + 10)) == 1
    assert [e["message"] for e in events(store)] == ["new"]



def test_between_sweeps_only_the_recorders_own_events_are_looked_at(store: SQLiteStore) -> None:
    """The recorder's Events expire from its heap; anyone else's wait for the next full listing."""
    rec = EventRecorder("kueue-admission")
    assert rec.collect(store, T0) == []  # the first collection is a full sweep (of nothing yet)
    rec.record(WL, "Normal", "Pending", "mine", T0)
    rec.record(ObjectRef("Workload", "team", "b"), "Normal", "Pending", "again", T0)
    rec.flush(store)
    rec.record(ObjectRef("Workload", "team", "b"), "Normal", "Pending", "again", T0 + 120)  # count 2, seen later
    rec.flush(store)
    store.create({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "theirs", "namespace": "team"},
                  "involvedObject": {"kind": "Workload", "name": "c"}, "reason": "Pending", "message": "theirs",
                  "lastTimestamp": format_time(T0)})
    later = T0 + EVENT_TTL + 60
    assert rec.collect(store, later - 60) == []  # a sweep (the last was an hour ago): nothing is old enough
    assert len(rec.collect(store, later)) == 1  # no sweep: the heap's due entries only
    assert sorted(e["message"] for e in events(store)) == ["again", "theirs"]  # b was written again later
    assert len(rec.collect(store, later + 120)) == 1  # b's newer entry is due now
    assert [e["message"] for e in events(store)] == ["theirs"]
    assert len(rec.collect(store, later - 60 + SWEEP_PERIOD)) == 1  # the next sweep finds theirs
    assert events(store) == []


def test_the_hub_writes_kueues_events_in_its_round(store: SQLiteStore) -> None:
    for manifest in (namespace(), flavor(), cluster_queue(cpu=1), local_queue(), workload("a"), workload("b")):
        store.create(manifest)
    observer = ClusterObserver(metrics=DecisionMetrics(CollectorRegistry()), recorder=EventRecorder("kueue-admission"))
    rec = HubReconciler(store, Configuration(), T0, ready_delay=0.0, observer=observer)
    rec.load(T0)
    rec.round(T0)
    a = store.get("Workload", "team", "a")
    assert a is not None
    reasons = [e["reason"] for e in events_for(store, "Workload", "team", "a", a["metadata"]["uid"])]
    assert reasons == ["QuotaReserved", "Admitted"]
    pending = events_for(store, "Workload", "team", "b")
    assert [e["reason"] for e in pending] == ["Pending"]
    assert "insufficient unused quota for cpu in flavor default" in pending[0]["message"]
    # Event writes are the hub's own: their watch events change nothing.
    since = 0
    with store.watch(since=since) as watch:
        while (ev := watch.next(timeout=0)) is not None:
            if ev.key.kind == "Event":
                assert rec.observe(ev, T0 + 1) is False
