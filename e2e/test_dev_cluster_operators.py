"""The operators ``mkhub dev-cluster`` simulates, as a process driven by the real kubectl: Kueue's
published JobSet sample runs to completion and its LeaderWorkerSet sample reaches its replicas
ready (e2e/operators/ holds both, without their queue label as no hub runs here); with
``--without-operators`` the kinds are not served, as on a cluster without those operators."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_dev_cluster import NODES, DevClusterProcess, wait_for

pytestmark = pytest.mark.timeout(240)

SAMPLES = Path(__file__).resolve().parent / "operators"


def start(tmp_path: Path, *flags: str) -> DevClusterProcess:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(NODES)
    dc = DevClusterProcess(tmp_path / "dev", nodes, *flags)
    dc.start()
    return dc


@pytest.fixture
def cluster(tmp_path: Path, kubectl_required: None) -> Iterator[DevClusterProcess]:
    dc = start(tmp_path)
    try:
        yield dc
    finally:
        dc.stop()


def test_kueues_jobset_sample_completes(cluster: DevClusterProcess) -> None:
    dc = cluster
    assert "No resources found" in dc.kubectl("get", "jobsets").stderr  # served from the start
    created = dc.kubectl("create", "-f", str(SAMPLES / "sample-jobset.yaml")).stdout.strip()
    assert created.startswith("jobset.jobset.x-k8s.io/sleep-job-") and created.endswith(" created"), created
    name = created.split("/")[1].split()[0]
    dc.kubectl("wait", "--for=condition=Completed", f"jobset/{name}", "--timeout=120s")

    js = dc.get("jobset", name)
    assert js["status"]["terminalState"] == "Completed"
    assert sorted((r["name"], r["succeeded"]) for r in js["status"]["replicatedJobsStatus"]) == [("driver", 1), ("workers", 1)]
    assert js["spec"]["replicatedJobs"][1]["replicas"] == 1  # the CRD's default
    jobs = dc.get("jobs", "-l", f"jobset.sigs.k8s.io/jobset-name={name}")["items"]
    assert sorted(j["metadata"]["name"] for j in jobs) == [f"{name}-driver-0", f"{name}-workers-0"]
    assert all(j["status"]["succeeded"] == 1 for j in jobs)
    pods = dc.get("pods", "-l", f"jobset.sigs.k8s.io/jobset-name={name}")["items"]
    assert len(pods) == 2 and {p["status"]["phase"] for p in pods} == {"Succeeded"}
    table = dc.kubectl("get", "jobsets").stdout.splitlines()
    assert table[0].split() == ["NAME", "TERMINALSTATE", "RESTARTS", "COMPLETED", "SUSPENDED", "AGE"]
    assert table[1].split()[:4] == [name, "Completed", "0", "True"]

    dc.kubectl("delete", "jobset", name)
    wait_for(lambda: not dc.get("jobs")["items"], what="the JobSet's Jobs garbage-collected")


def test_kueues_leaderworkerset_sample_reaches_its_replicas_ready_and_scales(cluster: DevClusterProcess) -> None:
    dc = cluster
    dc.kubectl("apply", "-f", str(SAMPLES / "sample-leaderworkerset.yaml"))
    dc.kubectl("wait", "--for=condition=Available", "lws/nginx-leaderworkerset", "--timeout=60s")
    lws = dc.get("lws", "nginx-leaderworkerset")
    assert (lws["status"]["replicas"], lws["status"]["readyReplicas"]) == (2, 2)
    pods = dc.get("pods", "-l", "leaderworkerset.sigs.k8s.io/name=nginx-leaderworkerset")["items"]
    assert sorted(p["metadata"]["name"] for p in pods) == [
        "nginx-leaderworkerset-0", "nginx-leaderworkerset-0-1", "nginx-leaderworkerset-0-2",
        "nginx-leaderworkerset-1", "nginx-leaderworkerset-1-1", "nginx-leaderworkerset-1-2"]
    assert {p["status"]["phase"] for p in pods} == {"Running"}

    dc.kubectl("scale", "lws", "nginx-leaderworkerset", "--replicas=1")
    wait_for(lambda: len(dc.get("pods", "-l", "leaderworkerset.sigs.k8s.io/name=nginx-leaderworkerset")["items"]) == 3,
             what="one group left")
    scale = json.loads(dc.kubectl("get", "--raw", "/apis/leaderworkerset.x-k8s.io/v1/namespaces/default/"
                                  "leaderworkersets/nginx-leaderworkerset/scale").stdout)
    assert scale["spec"]["replicas"] == 1
    wait_for(lambda: dc.get("lws", "nginx-leaderworkerset")["status"].get("replicas") == 1, what="status.replicas 1")


def test_without_operators_their_kinds_are_not_served(tmp_path: Path, kubectl_required: None) -> None:
    dc = start(tmp_path, "--without-operators")
    try:
        got = dc.kubectl("get", "jobsets", check=False)
        assert got.returncode != 0
        assert 'the server doesn\'t have a resource type "jobsets"' in got.stderr
        assert dc.kubectl("get", "crds", "-o", "name").stdout.strip() == ""
    finally:
        dc.stop()
