"""Kueue's visibility API shapes over the engine's queues (the CLI's view: e2e/test_observability_cli.py)."""

from __future__ import annotations

from hub.api.config import Configuration
from hub.api.registry import parse_object
from hub.controllers.cluster import ClusterController
from hub.controllers.simrunner import SimRunner
from hub.engine.engine import Engine
from hub.obs import visibility
from tests.controllers.hub_objects import T0, cluster_queue, flavor, local_queue, namespace, workload


def cluster() -> ClusterController:
    engine = Engine(Configuration(), T0)
    controller = ClusterController(engine, SimRunner(lambda wl: None, default_duration=100.0, ready_delay=0.0))
    for manifest in (namespace(), flavor(), cluster_queue(cpu=1), local_queue("lq-a"), local_queue("lq-b")):
        controller.apply(parse_object(manifest), T0)
    return controller


def submit(controller: ClusterController, name: str, lq: str, priority: int, at: float) -> None:
    manifest = workload(name, queueName=lq, priority=priority)
    manifest["metadata"]["creationTimestamp"] = f"2027-01-15T08:00:{int(at):02d}Z"
    controller.apply(parse_object(manifest), T0 + at)


def test_positions_follow_kueues_queue_order_in_cluster_and_local_queues() -> None:
    c = cluster()
    submit(c, "running", "lq-a", 0, 0)
    c.settle(T0)
    for i, (name, lq, prio) in enumerate([("a1", "lq-a", 0), ("b1", "lq-b", 0), ("a2", "lq-a", 5), ("b2", "lq-b", 0)]):
        submit(c, name, lq, prio, i + 1)
    c.settle(T0 + 10)  # every one of them is inadmissible now: positions count them all
    cq = visibility.cluster_queue_pending(c.engine, "cq")
    assert cq is not None
    assert [(p.name, p.position_in_cluster_queue, p.position_in_local_queue) for p in cq] == [
        ("a2", 0, 0), ("a1", 1, 1), ("b1", 2, 0), ("b2", 3, 1),
    ]
    summary = visibility.summary(cq, limit=2, offset=1)
    assert summary["kind"] == "PendingWorkloadsSummary" and summary["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta2"
    assert [i["metadata"]["name"] for i in summary["items"]] == ["a1", "b1"]
    assert summary["items"][0] == {
        "metadata": {"name": "a1", "namespace": "team", "creationTimestamp": "2027-01-15T08:00:01Z"},
        "priority": 0, "localQueueName": "lq-a", "positionInClusterQueue": 1, "positionInLocalQueue": 1,
    }
    lq = visibility.local_queue_pending(c.engine, "team", "lq-b")
    assert lq is not None and [(p.name, p.position_in_cluster_queue, p.position_in_local_queue) for p in lq] == [
        ("b1", 2, 0), ("b2", 3, 1),
    ]
    me, ahead = visibility.ahead_of(c.engine, "team/b2")
    assert me is not None and me.position_in_cluster_queue == 3 and [p.name for p in ahead] == ["a2", "a1", "b1"]
    assert visibility.cluster_queue_pending(c.engine, "nope") is None
    assert visibility.local_queue_pending(c.engine, "team", "nope") is None
    assert visibility.ahead_of(c.engine, "team/running") == (None, [])
