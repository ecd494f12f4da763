"""Rounds on a store without transactions (the Kubernetes back end): a crash may land any
prefix of a round's writes. For every prefix, the stored state must keep usage within
quota, and a restarted hub must carry on without admitting anything twice.

The store here is the real SQLite store with its batches taken away (each write lands on
its own, as on an API server) and a crash after the k-th write of the round under test.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from hub_objects import T0, flavor, is_true, job, local_queue, namespace, seed, workload

from hub.api.config import Configuration
from hub.controllers.hub import HubReconciler
from hub.store import SQLiteStore, StoreError
from hub.store.interface import Object, ObjectList, Selector, Watch


class Crash(StoreError):
    pass


class NonAtomicStore:
    """Each write on its own; after ``limit`` writes every further write 'dies'."""

    def __init__(self, inner: SQLiteStore, write_concurrency: int = 1) -> None:
        self.inner = inner
        self.limit: int | None = None
        self.writes = 0
        self.write_concurrency = write_concurrency  # > 1: the hub sends a group's writes at once
        self._lock = threading.Lock()

    def _write(self) -> None:
        with self._lock:
            if self.limit is not None and self.writes >= self.limit:
                raise Crash(f"killed after {self.writes} writes")
            self.writes += 1

    def create(self, obj: Mapping[str, Any]) -> Object:
        self._write()
        return self.inner.create(obj)

    def update(self, obj: Mapping[str, Any]) -> Object:
        self._write()
        return self.inner.update(obj)

    def update_status(self, obj: Mapping[str, Any]) -> Object:
        self._write()
        return self.inner.update_status(obj)

    def delete(self, kind: str, namespace: str, name: str, *, resource_version: str | int | None = None) -> Object:
        self._write()
        return self.inner.delete(kind, namespace, name, resource_version=resource_version)

    def get(self, kind: str, namespace: str, name: str) -> Object | None:
        return self.inner.get(kind, namespace, name)

    def list(self, kind: str, namespace: str | None = None, label_selector: Selector | None = None) -> tuple[ObjectList, int]:
        return self.inner.list(kind, namespace, label_selector)

    def watch(self, kinds: Iterable[str] | None = None, since: int = 0) -> Watch:
        return self.inner.watch(kinds, since)

    def batch(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def close(self) -> None:
        self.inner.close()


def hub(store: NonAtomicStore, now: float) -> HubReconciler:
    rec = HubReconciler(store, Configuration(), now, ready_delay=0.0)  # type: ignore[arg-type]
    rec.load(now)
    return rec


def stored(store: NonAtomicStore, kind: str = "Workload") -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in store.list(kind)[0]}


def holding(store: NonAtomicStore) -> set[str]:
    return {n for n, o in stored(store).items() if is_true(o, "QuotaReserved") and not is_true(o, "Finished")}


def admitted_times(store: NonAtomicStore) -> dict[str, str]:
    out = {}
    for name, wl in stored(store).items():
        for c in (wl.get("status") or {}).get("conditions") or []:
            if c["type"] == "Admitted" and c["status"] == "True":
                out[name] = c["lastTransitionTime"]
    return out


def one_cpu_queue() -> list[dict[str, Any]]:
    cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"},
        "spec": {"namespaceSelector": {}, "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}]},
    }
    return [namespace(), flavor(), cq, local_queue()]


def finish_and_admit_store(width: int = 1) -> NonAtomicStore:
    """One cpu; 'z-first' runs; 'a-second' waits (and sorts first by name)."""
    inner = SQLiteStore(":memory:")
    seed(inner, [*one_cpu_queue(), workload("z-first", "1s", created="2027-01-15T08:00:00Z"),
                 workload("a-second", "1s", created="2027-01-15T08:00:05Z")])
    store = NonAtomicStore(inner, width)
    hub(store, T0).round(T0)
    assert holding(store) == {"z-first"}
    return store


def writes_of_the_round(build: Any, now: float) -> int:
    store = build()
    rec = hub(store, now - 0.1)
    before = store.writes
    rec.round(now)
    return int(store.writes - before)


def crash_point(build: Any, now: float, k: int, ks: range) -> None:
    """Fail when the round has grown past the parametrized crash points (k = 0 .. writes - 1): its last writes
    would go untested."""
    total = writes_of_the_round(build, now)
    assert total <= ks.stop, f"the round now writes {total} times: parametrize k over range(0, {total})"
    if k > total:  # a crash after more writes than the round makes is no crash: k == total covers it
        pytest.skip(f"the round writes {total} times")


@pytest.mark.parametrize("width", [1, 4])
@pytest.mark.parametrize("k", RELEASE_KS := range(0, 8))
def test_a_release_lands_before_the_admission_it_made_room_for(k: int, width: int) -> None:
    now = T0 + 1.5  # z-first has run its second: one round finishes it and admits a-second
    assert writes_of_the_round(finish_and_admit_store, now) >= 2
    crash_point(lambda: finish_and_admit_store(width), now, k, RELEASE_KS)
    store = finish_and_admit_store(width)
    rec = hub(store, now - 0.1)
    store.limit = store.writes + k
    with contextlib.suppress(Crash):
        rec.round(now)
    # What a restarting hub will read: never two holders of the one cpu.
    assert len(holding(store)) <= 1, holding(store)
    first_admissions = admitted_times(store)
    store.limit = None
    restarted = hub(store, now + 0.1)
    t = now + 0.1
    while t < now + 5:
        restarted.round(t)
        assert len(holding(store)) <= 1
        t += 0.25
    final = stored(store)
    assert all(is_true(o, "Finished") for o in final.values()), {n: o.get("status") for n, o in final.items()}
    for name, when in first_admissions.items():
        assert admitted_times(store)[name] == when, f"{name} was admitted again after the restart"


def job_store() -> NonAtomicStore:
    inner = SQLiteStore(":memory:")
    seed(inner, [*one_cpu_queue(), job("j", "1s")])
    return NonAtomicStore(inner)


@pytest.mark.parametrize("k", JOB_KS := range(0, 6))
def test_a_job_runs_only_once_its_workload_is_stored_admitted(k: int) -> None:
    crash_point(job_store, T0, k, JOB_KS)
    store = job_store()
    rec = hub(store, T0)
    store.limit = store.writes + k
    with contextlib.suppress(Crash):
        rec.round(T0)
    jobs, workloads = stored(store, "Job"), stored(store)
    if jobs["j"]["spec"].get("suspend") is False:  # unsuspended: its Workload must be stored admitted
        assert any(is_true(w, "Admitted") for w in workloads.values())
    store.limit = None
    restarted = hub(store, T0 + 0.1)
    restarted.round(T0 + 0.1)
    assert stored(store, "Job")["j"]["spec"]["suspend"] is False  # a lost unsuspend is put right
    assert len(stored(store)) == 1
    t = T0 + 0.2
    while t < T0 + 3:
        restarted.round(t)
        t += 0.25
    assert all(is_true(o, "Finished") for o in stored(store).values())


def running_job_store(width: int = 1) -> NonAtomicStore:
    """Job 'j' (1s) admitted and running: the round at T0 + 1.5 finishes it."""
    store = job_store()
    hub(store, T0).round(T0)
    assert stored(store, "Job")["j"]["spec"]["suspend"] is False
    return store


def job_conditions(store: NonAtomicStore) -> set[str]:
    status = stored(store, "Job")["j"].get("status") or {}
    return {c["type"] for c in status.get("conditions") or [] if c["status"] == "True"}


@pytest.mark.parametrize("k", FINISH_KS := range(0, 4))
def test_a_job_is_completed_even_when_the_hub_dies_between_its_workloads_finish_and_its_status(k: int) -> None:
    now = T0 + 1.5
    crash_point(running_job_store, now, k, FINISH_KS)
    store = running_job_store()
    rec = hub(store, now - 0.1)
    store.limit = store.writes + k
    with contextlib.suppress(Crash):
        rec.round(now)
    store.limit = None
    restarted = hub(store, now + 0.1)
    restarted.round(now + 0.1)
    assert all(is_true(o, "Finished") for o in stored(store).values())
    assert "Complete" in job_conditions(store), stored(store, "Job")["j"].get("status")
