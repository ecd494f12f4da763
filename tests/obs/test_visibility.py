"""Kueue's visibility API shapes over the engine's queues, and the same through a real hub and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from hub.api.config import Configuration
from hub.api.registry import parse_object
from hub.controllers.cluster import ClusterController
from hub.controllers.simrunner import SimRunner
from hub.engine.engine import Engine
from hub.obs import visibility
from hub.service.testing import HubProcess, run_cli
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


def test_the_cli_shows_positions_reasons_and_the_workloads_ahead(tmp_path: Path) -> None:
    objects = [namespace(), flavor(), cluster_queue(cpu=1), local_queue("lq")]
    objects += [workload(f"w{i}", duration="1h") for i in range(4)]
    with HubProcess(tmp_path / "hub") as hub:
        done = run_cli(["apply", "-f", "-", *hub.connection_args()], stdin=yaml.safe_dump_all(objects))
        assert done.returncode == 0, done.stderr
        with hub.channel() as channel:
            client = hub.client(channel)
            summary = client.pending_workloads(cluster_queue="cq")
            for _ in range(100):
                if len(summary["items"]) == 3:
                    break
                summary = client.pending_workloads(cluster_queue="cq")
            assert [(i["metadata"]["name"], i["positionInClusterQueue"]) for i in summary["items"]] == [
                ("w1", 0), ("w2", 1), ("w3", 2),
            ]
            lq = client.pending_workloads(namespace="team", local_queue="lq", offset=1, limit=1)
            assert [(i["metadata"]["name"], i["positionInLocalQueue"]) for i in lq["items"]] == [("w2", 1)]
        wide = run_cli(["get", "wl", "-n", "team", "-o", "wide", *hub.connection_args()])
        assert wide.returncode == 0, wide.stderr
        header, *rows = wide.stdout.splitlines()
        assert header.split()[-3:] == ["POSITION", "REASON", "WORKER"]
        by_name = {r.split()[0]: r.split() for r in rows}
        assert by_name["w0"][-2:] == ["Admitted", "Admitted"]  # STATUS and REASON; no POSITION, no WORKER
        assert by_name["w2"][-3:] == ["Pending", "1", "WaitingForQuota"]
        described = run_cli(["describe", "wl", "w3", "-n", "team", *hub.connection_args()])
        assert described.returncode == 0, described.stderr
        assert "2 in ClusterQueue cq, 2 in its LocalQueue (2 ahead)" in described.stdout
        ahead = described.stdout.split("Workloads Ahead:", 1)[1]
        assert "team/w1" in ahead and "team/w2" in ahead
        missing = run_cli(["get", "wl", "-n", "team", "-o", "json", *hub.connection_args()])
        assert visibility_key_absent(json.loads(missing.stdout))


def visibility_key_absent(listed: dict[str, object]) -> bool:
    return "__mkhubPosition" not in json.dumps(listed)
