"""``mkhub dev-cluster`` as a process running the simulated apps and CronJob controllers, driven
by the real kubectl: ``kubectl create deployment`` (a protobuf body) and ``kubectl scale`` give
Running pods and a finished rollout, ``kubectl set image`` and ``rollout undo`` move between
ReplicaSets, a StatefulSet's ordinal pods come up in order, a CronJob
creates its Job on schedule, a gated pod waits for its gates to go, and deleting a Deployment takes its ReplicaSet and pods along."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_dev_cluster import NODES, DevClusterProcess, wait_for

pytestmark = pytest.mark.timeout(240)

STATEFULSET = """apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres}]}
"""


@pytest.fixture
def cluster(tmp_path: Path, kubectl_required: None) -> Iterator[DevClusterProcess]:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(NODES)
    dc = DevClusterProcess(tmp_path / "dev", nodes)
    dc.start()
    try:
        yield dc
    finally:
        dc.stop()


def _running(dc: DevClusterProcess, selector: str) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = dc.get("pods", "-l", selector)["items"]
    return [p for p in pods if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


def test_deployment_scale_statefulset_and_cronjob(cluster: DevClusterProcess) -> None:
    out = cluster.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2")
    assert out.stdout.strip() == "deployment.apps/web created"
    wait_for(lambda: len(_running(cluster, "app=web")) == 2, what="two Running pods of the Deployment")
    assert cluster.kubectl("scale", "deployment/web", "--replicas=3").stdout.strip() == "deployment.apps/web scaled"
    wait_for(lambda: len(_running(cluster, "app=web")) == 3, what="three Running pods after kubectl scale")
    rollout = cluster.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    assert 'deployment "web" successfully rolled out' in rollout.stdout
    (rs,) = cluster.get("replicasets", "-l", "app=web")["items"]
    assert rs["metadata"]["ownerReferences"][0]["name"] == "web" and rs["spec"]["replicas"] == 3
    assert all(p["metadata"]["name"].startswith(rs["metadata"]["name"] + "-") for p in _running(cluster, "app=web"))
    table = cluster.kubectl("get", "deployment", "web").stdout
    assert table.splitlines()[1].split()[:4] == ["web", "3/3", "3", "3"], table
    cluster.kubectl("set", "image", "deployment/web", "nginx=nginx:2")  # a new template: a new ReplicaSet
    cluster.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    wait_for(lambda: {p["spec"]["containers"][0]["image"] for p in _running(cluster, "app=web")} == {"nginx:2"},
             what="the pods of the new template")
    assert "rolled back" in cluster.kubectl("rollout", "undo", "deployment/web").stdout
    wait_for(lambda: {p["spec"]["containers"][0]["image"] for p in _running(cluster, "app=web")} == {"nginx"}
             and len(_running(cluster, "app=web")) == 3, what="the pods of the first template again")

    cluster.kubectl("apply", "-f", "-", stdin=STATEFULSET)
    wait_for(lambda: len(_running(cluster, "app=db")) == 3, what="the StatefulSet's three pods")
    pods = sorted(_running(cluster, "app=db"), key=lambda p: p["metadata"]["name"])
    assert [p["metadata"]["name"] for p in pods] == ["db-0", "db-1", "db-2"]
    started = [p["metadata"]["creationTimestamp"] for p in pods]
    assert started == sorted(started)  # OrderedReady: each after the one below it was Ready
    assert "partitioned roll out complete" in cluster.kubectl("rollout", "status", "sts/db", "--timeout=60s").stdout

    # A real schedule that fires within seconds, so no clock needs driving (robfig/cron's @every).
    cluster.kubectl("create", "cronjob", "tick", "--image=busybox", "--schedule=@every 2s")
    wait_for(lambda: bool(cluster.get("jobs")["items"]), what="the CronJob's Job")
    job = cluster.get("jobs")["items"][0]
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    assert job["metadata"]["name"].startswith("tick-") and job["metadata"]["name"][5:].isdigit()
    cronjob = cluster.get("cronjob", "tick")
    assert cronjob["status"].get("lastScheduleTime"), json.dumps(cronjob["status"])

    gated = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gated", "namespace": "default"},
             "spec": {"schedulingGates": [{"name": "example.com/hold"}], "containers": [{"name": "c", "image": "busybox"}]}}
    cluster.kubectl("create", "-f", "-", stdin=json.dumps(gated))
    wait_for(lambda: "SchedulingGated" in cluster.kubectl("get", "pod", "gated").stdout, what="a gated pod")
    cluster.kubectl("patch", "pod", "gated", "--type=json", "-p", '[{"op":"remove","path":"/spec/schedulingGates"}]')
    wait_for(lambda: cluster.get("pod", "gated")["status"].get("phase") == "Running", what="the ungated pod running")

    cluster.kubectl("delete", "deployment", "web")
    wait_for(lambda: not cluster.get("replicasets", "-l", "app=web")["items"] and not _running(cluster, "app=web"),
             what="the Deployment's ReplicaSet and pods collected")
