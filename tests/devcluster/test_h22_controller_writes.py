"""What the dev-cluster's scheduler/kubelet and Job controller write per pod, and which events
they look at again (hub.devcluster.kubelet, hub.devcluster.jobs, hub.devcluster.runtime)."""

from __future__ import annotations

from typing import Any

import pytest
from test_devcluster import Clock, cluster, job, pods, status

from hub.devcluster.nodes import Node
from hub.store import SQLiteStore
from hub.store.interface import EventType


def _pod_changes(store: SQLiteStore, since: int) -> list[tuple[EventType, dict[str, Any]]]:
    out = []
    with store.watch(["Pod"], since=since) as w:
        while (event := w.next(timeout=0)) is not None:
            out.append((event.type, event.object))
    return out


def _scheduled(pod: dict[str, Any]) -> str | None:
    return next((c["status"] for c in (pod.get("status") or {}).get("conditions") or []
                 if c["type"] == "PodScheduled"), None)


def test_a_fresh_pod_is_bound_and_started_in_two_writes_never_scheduled_without_a_node(
        store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    _, since = store.list("Pod")
    store.create(job("one"))
    dc.step()
    changes = _pod_changes(store, since)
    assert [t for t, _ in changes] == [EventType.ADDED, EventType.MODIFIED, EventType.MODIFIED]
    _, bound, started = (p for _, p in changes)
    # The binding, as kube-apiserver's binding subresource writes it: nodeName and PodScheduled=True together
    # (SQLiteStore.update_with_status); the kubelet's Running status keeps that condition.
    assert bound["spec"]["nodeName"] == "node-a" and _scheduled(bound) == "True"
    assert bound["status"]["phase"] == "Pending"
    assert started["status"]["phase"] == "Running" and _scheduled(started) == "True"
    assert [c for c in started["status"]["conditions"] if c["type"] == "PodScheduled"] == [
        c for c in bound["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert all(_scheduled(p) != "True" or p["spec"].get("nodeName") for _, p in changes)


def test_a_pod_that_was_unschedulable_is_marked_scheduled_with_its_binding(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock, (Node("cpu-1", {"pool": "cpu"}),))
    store.create(job("gpu", pod_spec={"nodeSelector": {"pool": "gpu"}}))
    dc.step()
    (pod,) = pods(store)
    assert _scheduled(pod) == "False"
    _, since = store.list("Pod")
    dc.kubelet.set_nodes((Node("cpu-1", {"pool": "cpu"}), Node("gpu-1", {"pool": "gpu"})))
    dc.kubelet.reconcile("team-a", pod["metadata"]["name"])
    changes = _pod_changes(store, since)
    bound = [p for _, p in changes if p["spec"].get("nodeName")]
    # Its Unschedulable condition is replaced by PodScheduled=True in the binding's one write.
    assert [(p["status"]["phase"], _scheduled(p)) for p in bound] == [("Pending", "True"), ("Running", "True")]


def test_the_controllers_do_not_reconcile_the_echoes_of_their_own_writes(
        store: SQLiteStore, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    dc = cluster(store, clock)
    calls: list[tuple[str, str]] = []
    for kind, controller in (("Pod", dc.kubelet), ("Job", dc.jobs)):
        real = controller.reconcile

        def counting(namespace: str, name: str, kind: str = kind, real: Any = real) -> float | None:
            calls.append((kind, name))
            return real(namespace, name)  # type: ignore[no-any-return]

        monkeypatch.setattr(controller, "reconcile", counting)
    store.create(job("one"))
    dc.step()
    (pod,) = pods(store)
    assert pod["status"]["phase"] == "Running" and status(store, "one")["ready"] == 1
    # The pod once (its creation; bound and started in that reconcile), never for the echoes of its
    # binding and status. The Job on its creation and on its pod's creation (when the pod was already
    # running: pods go first in a round), not for its own status writes nor the pod's writes it listed.
    assert calls.count(("Pod", pod["metadata"]["name"])) == 1
    assert calls.count(("Job", "one")) == 2
    calls.clear()
    # A change by someone else after the controllers' writes is newer than both: looked at.
    store.delete("Pod", "team-a", pod["metadata"]["name"])
    job_obj = store.get("Job", "team-a", "one")
    assert job_obj is not None
    store.update({**job_obj, "spec": {**job_obj["spec"], "suspend": True}})
    dc.step()
    assert ("Pod", pod["metadata"]["name"]) in calls and ("Job", "one") in calls
    assert pods(store) == [] and status(store, "one").get("active") is None


def test_a_write_rolled_back_is_not_taken_as_acted_on(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(job("one"))
    dc.jobs.reconcile("team-a", "one")
    (pod,) = pods(store)
    name = pod["metadata"]["name"]
    with pytest.raises(RuntimeError), store.batch():
        dc.kubelet._writing.clear()
        dc.kubelet._reconcile("team-a", name)
        raise RuntimeError("the transaction fails")
    assert dc.kubelet.written.get(("team-a", name)) is None
    assert not dc.kubelet.acted_on("team-a", name, str(10**9))
    assert dc.kubelet.reconcile("team-a", name) is not None
    written = dc.kubelet.written[("team-a", name)]
    assert dc.kubelet.acted_on("team-a", name, str(written))
    assert not dc.kubelet.acted_on("team-a", name, str(written + 1))
