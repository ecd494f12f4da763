"""``kubectl get --raw`` of Kueue's visibility API against ``mkhub serve --kube-listen``: Kueue's shapes,
positions in ClusterQueue and LocalQueue order, limit and offset."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from cli_harness import run_cli

from hub.demo.processes import HubProcess, free_port
from tests.controllers.hub_objects import cluster_queue, flavor, local_queue, namespace, workload

pytestmark = pytest.mark.timeout(120)
KUBECTL = "/usr/bin/kubectl"
BASE = "/apis/visibility.kueue.x-k8s.io/v1beta2"


@pytest.mark.usefixtures("kubectl_required")
def test_kubectl_get_raw_pending_workloads(tmp_path: Path) -> None:
    port = free_port()
    objects = [namespace(), flavor(), cluster_queue(cpu=1), local_queue("lq"), local_queue("lq-2")]
    objects += [workload(f"w{i}", duration="1h", queueName="lq-2" if i == 2 else "lq") for i in range(4)]
    with HubProcess(tmp_path / "hub", extra_args=["--kube-listen", f"127.0.0.1:{port}"]) as hub:
        done = run_cli(["apply", "-f", "-", *hub.connection_args()], stdin=yaml.safe_dump_all(objects))
        assert done.returncode == 0, done.stderr

        def raw(path: str) -> dict[str, object]:
            out = subprocess.run([str(KUBECTL), "--server", f"http://127.0.0.1:{port}", "get", "--raw", path],
                                 capture_output=True, text=True, timeout=30, check=False)
            assert out.returncode == 0, out.stderr
            return json.loads(out.stdout)  # type: ignore[no-any-return]

        summary = raw(f"{BASE}/clusterqueues/cq/pendingworkloads")
        for _ in range(50):
            if len(summary["items"]) == 3:  # type: ignore[arg-type]
                break
            time.sleep(0.1)
            summary = raw(f"{BASE}/clusterqueues/cq/pendingworkloads")
        assert summary["kind"] == "PendingWorkloadsSummary"
        assert summary["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta2"
        items = summary["items"]
        assert [(i["metadata"]["name"], i["localQueueName"], i["positionInClusterQueue"], i["positionInLocalQueue"],
                 i["priority"]) for i in items] == [  # type: ignore[union-attr,index]
            ("w1", "lq", 0, 0, 0), ("w2", "lq-2", 1, 0, 0), ("w3", "lq", 2, 1, 0),
        ]
        window = raw(f"{BASE}/clusterqueues/cq/pendingworkloads?limit=1&offset=1")
        assert [i["metadata"]["name"] for i in window["items"]] == ["w2"]  # type: ignore[union-attr,index]
        local = raw(f"{BASE}/namespaces/team/localqueues/lq/pendingworkloads")
        assert [(i["metadata"]["name"], i["positionInLocalQueue"]) for i in local["items"]] == [  # type: ignore[union-attr,index]
            ("w1", 0), ("w3", 1),
        ]
        missing = subprocess.run([str(KUBECTL), "--server", f"http://127.0.0.1:{port}", "get", "--raw",
                                  f"{BASE}/clusterqueues/nope/pendingworkloads"], capture_output=True, text=True, timeout=30)
        assert missing.returncode != 0 and "not found" in missing.stderr

        # Listed in discovery as Kueue's visibility server lists it (kubectl api-versions; raw documents).
        versions = subprocess.run([str(KUBECTL), "--server", f"http://127.0.0.1:{port}", "api-versions"],
                                  capture_output=True, text=True, timeout=30, check=False)
        assert versions.returncode == 0, versions.stderr
        assert {"visibility.kueue.x-k8s.io/v1beta2", "visibility.kueue.x-k8s.io/v1beta1"} <= set(versions.stdout.split())
        assert raw("/apis/visibility.kueue.x-k8s.io")["preferredVersion"] == {
            "groupVersion": "visibility.kueue.x-k8s.io/v1beta2", "version": "v1beta2"}
        listed = {r["name"]: r["verbs"] for r in raw(BASE)["resources"]}  # type: ignore[attr-defined]  # object-typed
        assert listed == {"clusterqueues": [], "clusterqueues/pendingworkloads": ["get"], "localqueues": [],
                          "localqueues/pendingworkloads": ["get"]}
