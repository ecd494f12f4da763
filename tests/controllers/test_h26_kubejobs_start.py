"""A Job's start on a cluster that runs it (Kueue's ``RunWithPodSetsInfo``): from the template the
Workload's pod sets kept, so what a half-done stop left (the stopping mark, a stale injected
template) is gone, and the admitted flavor's pod set info is what the Job carries."""

from __future__ import annotations

import copy
from typing import Any

from hub_objects import T0, cluster_queue, job, local_queue, namespace, seed
from test_kubejobs import ClusterStore, hub, tainted_flavor

import hub.controllers.kubejobs as kj
from hub.controllers.kubejobs import STOPPING_ANNOTATION


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
