"""A Job's start on a cluster that runs it (Kueue's ``RunWithPodSetsInfo``): from the template the
Workload's pod sets kept, so what a half-done stop left (the stopping mark, a stale injected
template) is gone, and the admitted flavor's pod set info is what the Job carries."""

from __future__ import annotations

import copy
from typing import Any

from hub_objects import T0, cluster_queue, job, local_queue, namespace, seed
from test_kubejobs import ClusterStore, hub, tainted_flavor, the_job
from test_mkw_kubejobs import ChangeGatheringStore, admit_three_multikueue_jobs

import hub.controllers.kubejobs as kj
from hub.controllers.kubejobs import STOPPING_ANNOTATION
from hub.store import SQLiteStore


def admitted_start() -> tuple[dict[str, Any], Any, Any]:
    """The suspended Job the hub started at admission, with its Workload and flavors."""
    seen: list[tuple[dict[str, Any], Any, Any]] = []
    real = kj._started

    def spy(obj: dict[str, Any], wl: Any, flavors: Any) -> bool:
        seen.append((copy.deepcopy(obj), wl, flavors))
        return real(obj, wl, flavors)

    kj._started = spy
    try:
        store = ClusterStore(":memory:")
        seed(store, [namespace(), tainted_flavor(), cluster_queue(2), local_queue(), job("j1")])
        hub(store).round(T0)
        store.close()
    finally:
        kj._started = real
    (start,) = seen
    return start


def test_a_start_drops_what_a_half_done_stop_left_and_injects_the_admitted_flavor() -> None:
    obj, wl, flavors = admitted_start()
    assert obj["spec"]["suspend"] is True
    obj["metadata"]["annotations"] = {**(obj["metadata"].get("annotations") or {}), STOPPING_ANNOTATION: "true"}
    obj["spec"]["template"]["spec"].update(nodeSelector={"pool": "old"}, tolerations=[{"key": "old", "operator": "Exists"}])
    stale = copy.deepcopy(obj)
    assert kj._started(obj, wl, flavors) is True
    assert obj["spec"]["suspend"] is False
    assert STOPPING_ANNOTATION not in (obj["metadata"].get("annotations") or {})
    pod = obj["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "spot"}
    assert pod["tolerations"] == [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]
    # The Workload's kept template is not touched through the started Job's template.
    name = pod["containers"][0]["name"]
    pod["containers"][0]["name"] = "changed"
    again = copy.deepcopy(stale)
    assert kj._started(again, wl, flavors) is True
    assert again["spec"]["template"]["spec"]["containers"][0]["name"] == name


def test_a_running_job_is_not_started_again() -> None:
    obj, wl, flavors = admitted_start()
    assert kj._started(obj, wl, flavors) is True
    running = copy.deepcopy(obj)
    assert kj._started(obj, wl, flavors) is False
    assert obj == running


def test_a_restore_that_changes_nothing_is_no_change() -> None:
    obj, wl, _ = admitted_start()
    assert kj._restored(obj, wl) is False  # suspended with the Workload's template already
    obj["metadata"]["annotations"] = {STOPPING_ANNOTATION: "true"}
    assert kj._restored(obj, wl) is True
    assert "annotations" not in obj["metadata"]


class SharedReadsStore(ChangeGatheringStore):
    """As the Kubernetes store: a cache read that copies nothing (``get_shared``)."""

    def get_shared(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.get(kind, namespace, name)


def test_a_rounds_starts_send_the_start_time_step_only_for_jobs_holding_one() -> None:
    """Clearing a stale startTime is a change to almost no Job: on a store that reads its cache
    without a copy, only the Jobs that hold one are asked (a whole-Job copy each, before)."""
    store = SharedReadsStore()
    admit_three_multikueue_jobs(store)
    assert store.modified == [["mk0", "mk1", "mk2"]]  # the unsuspends alone
    for i in range(3):
        assert the_job(store, f"mk{i}")["spec"]["suspend"] is False
    store.close()


def test_a_job_holding_a_stale_start_time_has_it_cleared_before_its_start() -> None:
    store = SharedReadsStore()
    managed = [job(f"mk{i}") for i in range(3)]
    for j in managed:
        j["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    seed(store, [namespace(), tainted_flavor(), cluster_queue(3), local_queue(), *managed])
    stale = the_job(store, "mk1")
    assert stale["spec"]["suspend"] is True
    SQLiteStore.update_status(store, {**stale, "status": {"startTime": "2026-01-01T00:00:00Z"}})
    hub(store).round(T0)
    assert store.modified == [["mk1"], ["mk0", "mk1", "mk2"]]
    for i in range(3):
        started = the_job(store, f"mk{i}")
        assert started["spec"]["suspend"] is False
        assert started["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "spot"}
    store.close()
