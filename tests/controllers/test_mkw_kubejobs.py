"""A Job created unsuspended (no webhook) and not yet admitted is stopped by one write: its
template is the original and it never started, so Kueue's staged stop (suspend with the stopping
annotation, clear startTime, restore) has nothing after the suspend (issue 26: three Job writes
per MultiKueue Job in `bench kube --workers 2`, two of them for this stop)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from hub_objects import T0, cluster_queue, job, local_queue, namespace, seed
from test_kubejobs import StrictStore, feed, hub, tainted_flavor, the_job

from hub.controllers.kubejobs import STOPPING_ANNOTATION
from hub.store.interface import StoreError, modify


def test_a_job_created_unsuspended_is_stopped_in_one_write_then_started_in_one() -> None:
    store = StrictStore(":memory:")
    running = job("j2")
    running["spec"]["suspend"] = False
    seed(store, [namespace(), tainted_flavor(), cluster_queue(0), local_queue(), running])
    rec = hub(store)
    _, since = store.list("ClusterQueue")
    rec.round(T0)
    stopped = the_job(store, "j2")
    assert store.job_writes == ["spec"]  # before: suspend with the stopping annotation, then a write dropping it
    assert stopped["spec"]["suspend"] is True
    assert STOPPING_ANNOTATION not in (stopped["metadata"].get("annotations") or {})
    assert stopped["spec"]["template"] == running["spec"]["template"]
    rec.round(T0 + 1)
    assert store.job_writes == ["spec"]  # stopped: nothing left to do
    cq = store.get("ClusterQueue", "", "cq")
    assert cq is not None
    seed_quota = cluster_queue(2)
    store.update({**cq, "spec": seed_quota["spec"]})
    feed(rec, store, since, T0 + 2)
    store.job_writes.clear()
    rec.round(T0 + 2)
    started = the_job(store, "j2")
    assert store.job_writes == ["spec"] and started["spec"]["suspend"] is False
    assert started["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "spot"}
    store.close()


class ConcurrentStore(StrictStore):
    """A store that takes concurrent writes (as the Kubernetes store: ``write_concurrency``), whose
    Job spec writes each wait until ``together`` of them are in flight at once."""

    write_concurrency = 4

    def __init__(self, together: int) -> None:
        super().__init__(":memory:")
        self.barrier = threading.Barrier(together, timeout=30)
        self.order: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        yield  # each write lands alone, as on an API server (SQLite's batch would hold its lock)

    def update(self, obj: Any) -> dict[str, Any]:
        if obj.get("kind") == "Job":
            self.barrier.wait()  # a round writing its Jobs one after another never gets past this
        with self.lock:
            out = super().update(obj)
            self.order.append((obj["metadata"]["name"], "spec"))
            return out

    def update_status(self, obj: Any) -> dict[str, Any]:
        with self.lock:
            out = super().update_status(obj)
            if obj.get("kind") == "Job":
                self.order.append((obj["metadata"]["name"], "status"))
            return out


def admit_three_multikueue_jobs(store: StrictStore) -> None:
    """Three MultiKueue Jobs, room for them all: one hub round admits and starts them."""
    managed = [job(f"mk{i}") for i in range(3)]
    for j in managed:
        j["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    seed(store, [namespace(), tainted_flavor(), cluster_queue(3), local_queue(), *managed])
    hub(store).round(T0)


def test_a_rounds_job_writes_are_in_flight_together_each_jobs_in_order() -> None:
    """MultiKueue Jobs admitted in one round: their unsuspends are sent at once (before: one round
    trip after another, in the round), each Job's status (with its startTime) after its
    unsuspend, which kube-apiserver refuses to inject a nodeSelector into once it has one."""
    store = ConcurrentStore(together=3)
    admit_three_multikueue_jobs(store)
    for i in range(3):
        stored = the_job(store, f"mk{i}")
        assert stored["spec"]["suspend"] is False
        assert stored["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "spot"}
        assert stored["status"].get("startTime")  # the hub keeps a MultiKueue Job's status
        assert [w for name, w in store.order if name == f"mk{i}"] == ["spec", "status"]
    store.close()


class GatheringStore(ConcurrentStore):
    """As :class:`ConcurrentStore`, and it sends independent writes together (the Kubernetes store's
    ``write_concurrently``): each call noted, with what it carried."""

    def __init__(self, together: int) -> None:
        super().__init__(together)
        self.gathered: list[list[tuple[str, str]]] = []

    def write_concurrently(self, writes: Any) -> list[Any]:
        self.gathered.append([(obj["kind"], obj["metadata"]["name"]) for _, obj in writes])
        out: list[Any] = []
        for create, obj in writes:
            try:
                out.append(self.create(obj) if create else self.update_status(obj))
            except StoreError as exc:
                out.append(exc)
        return out


def test_a_rounds_job_statuses_go_out_in_one_gathered_batch_after_the_unsuspends() -> None:
    store = GatheringStore(together=3)
    admit_three_multikueue_jobs(store)
    job_batches = [sorted(b) for b in store.gathered if any(kind == "Job" for kind, _ in b)]
    assert job_batches == [[("Job", "mk0"), ("Job", "mk1"), ("Job", "mk2")]]  # one batch, not a call each
    assert [w for _, w in store.order] == ["spec"] * 3 + ["status"] * 3  # every unsuspend before any status
    for i in range(3):
        assert the_job(store, f"mk{i}")["status"].get("startTime")
    store.close()


class ChangeGatheringStore(GatheringStore):
    """As :class:`GatheringStore`, and it takes a batch of changes at once (the Kubernetes store's
    ``modify_gathered``): each batch's objects noted."""

    def __init__(self) -> None:
        super().__init__(together=1)
        self.modified: list[list[str]] = []

    def modify_gathered(self, changes: Any) -> list[Any]:
        self.modified.append(sorted(name for _, _, name, _, _ in changes))
        out: list[Any] = []
        for kind, ns, name, change, status in changes:
            try:
                out.append(modify(self, kind, ns, name, change, status=status))
            except StoreError as exc:
                out.append(exc)
        return out


def test_a_rounds_job_starts_go_out_in_one_gathered_batch_per_step() -> None:
    """On an API server the round's starts are not a thread and a round trip each: each step of
    Kueue's start (clear a stale startTime, then unsuspend with the pod set info) is one batch of
    all the Jobs, before their statuses."""
    store = ChangeGatheringStore()
    admit_three_multikueue_jobs(store)
    assert store.modified == [["mk0", "mk1", "mk2"]] * 2
    assert [w for _, w in store.order] == ["spec"] * 3 + ["status"] * 3
    for i in range(3):
        stored = the_job(store, f"mk{i}")
        assert stored["spec"]["suspend"] is False and stored["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "spot"}
        assert stored["status"].get("startTime")
    store.close()
