"""Positions, reasons and the workloads ahead through a real hub: the control service's PendingWorkloads,
``mkhub get wl -o wide`` and ``mkhub describe``."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from cli_harness import run_cli

from hub.demo.processes import HubProcess
from tests.controllers.hub_objects import cluster_queue, flavor, local_queue, namespace, workload


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
