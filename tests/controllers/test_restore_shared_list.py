"""A take-over lists Workloads without the Kubernetes store's deep copies (``list_shared``): the
restore must change none of those manifests (they are the cache's) and reach the same state."""

from __future__ import annotations

from typing import Any

from hub_objects import T0, is_true, job, seed, setup_objects, workload

from hub.api.config import Configuration
from hub.api.conversion import json_copy
from hub.controllers.hub import HubReconciler
from hub.store import SQLiteStore


class SharedListStore(SQLiteStore):
    """Offers ``list_shared`` as the Kubernetes store does: the same objects on every call, kept
    here as the cache keeps its entries, so a restore that changed one would be seen."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.shared: dict[str, list[dict[str, Any]]] = {}
        self.handed: dict[str, list[dict[str, Any]]] = {}  # copies of them as handed out

    def list_shared(self, kind: str) -> tuple[list[dict[str, Any]], int]:
        objects, rv = self.list(kind)
        self.shared[kind] = objects
        self.handed[kind] = json_copy(objects)
        return objects, rv


def state(rec: HubReconciler) -> dict[str, Any]:
    eng = rec.engine
    return {
        "usage": eng.usage_of("cq"),
        "workloads": {str(k): (wl.is_quota_reserved, wl.is_admitted, wl.status.admission) for k, wl in eng.workloads.items()},
        "running": sorted(rec.runner.running),
        "jobs": sorted(map(str, rec.controller.jobs.jobs)),
    }


def test_restore_through_shared_lists_changes_nothing_and_restores_the_same_state() -> None:
    store = SharedListStore()
    seed(store, setup_objects(cpu=3) + [workload(f"w{i}") for i in range(5)] + [job("j1"), job("j2")])
    first = HubReconciler(store, Configuration(), T0, ready_delay=0.0)
    first.load(T0)
    first.round(T0)  # three admitted (v1beta1 manifests, converted on restore), the rest waiting
    assert sum(is_true(o, "QuotaReserved") for o in store.list("Workload")[0]) == 3

    taken = HubReconciler(store, Configuration(), T0 + 1, ready_delay=0.0)
    taken.load(T0 + 1)
    assert set(store.shared) == {"Workload"}  # only Workloads: other kinds' manifests are kept by the restore
    taken.round(T0 + 1)
    assert store.shared["Workload"] == store.handed["Workload"]  # not a field changed, not even the apiVersion

    assert state(taken) == state(first)  # the state the store was written from
