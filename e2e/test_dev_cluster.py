"""``mkhub dev-cluster`` as a process, driven by the real kubectl: CRDs applied, Jobs run
to completion with the right counts and pods, the node check, garbage collection, and
state kept across a restart (a run in progress resumes and is not repeated)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hub.devcluster.operators import operator_crds
from hub.devcluster.podbased_crds import podbased_crds

pytestmark = pytest.mark.timeout(240)

REPO = Path(__file__).resolve().parents[1]
KUBECTL = "/usr/bin/kubectl"

NODES = """
nodes:
- name: cpu-1
  labels: {pool: cpu}
- name: gpu-1
  labels: {pool: gpu}
  taints: [{key: gpu, value: "yes", effect: NoSchedule}]
"""


def job(name: str, *, parallelism: int, completions: int, duration: str, pod_spec: dict[str, Any] | None = None) -> str:
    return json.dumps({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "annotations": {"mkhub.dev/sim-duration": duration}},
        "spec": {"parallelism": parallelism, "completions": completions, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox", "command": ["true"]}],
            **(pod_spec or {})}}},
    })


class DevClusterProcess:
    def __init__(self, data_dir: Path, nodes: Path, *extra_args: str) -> None:
        self.data_dir = data_dir
        self.nodes = nodes
        self.extra_args = extra_args  # more `mkhub dev-cluster` flags, e.g. --without-operators
        self.proc: subprocess.Popen[str] | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfig"

    def start(self) -> None:
        self.kubeconfig.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hub.cli", "dev-cluster", "--data-dir", str(self.data_dir), "--listen", "127.0.0.1:0",
             "--nodes", str(self.nodes), "--sim-duration", "1s", *self.extra_args],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.proc.stdout.read() if self.proc.stdout else ""
            if self.kubeconfig.exists():
                server = next(line.split("server:")[1].strip() for line in self.kubeconfig.read_text().splitlines()
                              if "server:" in line)
                with urllib.request.urlopen(f"{server}/readyz", timeout=5) as resp:
                    assert resp.status == 200
                return
            time.sleep(0.2)
        raise AssertionError("dev-cluster did not write its kubeconfig in 60 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                assert self.proc.wait(30) == 0
            finally:
                if self.proc.poll() is None:
                    self.proc.kill()
                    self.proc.wait()
        self.proc = None

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.data_dir.parent),
               "KUBECONFIG": str(self.kubeconfig)}
        result = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True, env=env, timeout=90, check=False)
        if check:
            assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)


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


def wait_for(predicate: Any, timeout: float = 60, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def pods_of(dc: DevClusterProcess, job_name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = dc.get("pods", "-l", f"batch.kubernetes.io/job-name={job_name}")["items"]
    return items


def test_dev_cluster_runs_jobs_and_keeps_state_across_restarts(cluster: DevClusterProcess) -> None:
    dc = cluster
    applied = dc.kubectl("apply", "-f", str(REPO / "manifests" / "crds")).stdout
    assert applied.count("created") == 9, applied

    dc.kubectl("apply", "-f", "-", stdin=job("hello", parallelism=2, completions=3, duration="1s"))
    dc.kubectl("apply", "-f", "-", stdin=job("on-gpu", parallelism=1, completions=1, duration="1s", pod_spec={
        "nodeSelector": {"pool": "gpu"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}))
    dc.kubectl("apply", "-f", "-", stdin=job("nowhere", parallelism=1, completions=1, duration="1s",
                                             pod_spec={"nodeSelector": {"pool": "tpu"}}))
    dc.kubectl("wait", "--for=condition=Complete", "job/hello", "job/on-gpu", "--timeout=60s")

    hello = dc.get("job", "hello")["status"]
    assert hello["succeeded"] == 3 and "failed" not in hello and "active" not in hello
    assert {c["type"] for c in hello["conditions"] if c["status"] == "True"} == {"SuccessCriteriaMet", "Complete"}
    pods = pods_of(dc, "hello")
    assert len(pods) == 3 and {p["status"]["phase"] for p in pods} == {"Succeeded"}
    assert {p["spec"]["nodeName"] for p in pods} == {"cpu-1"}  # the gpu node's taint repels them
    assert [p["spec"]["nodeName"] for p in pods_of(dc, "on-gpu")] == ["gpu-1"]
    (stuck,) = pods_of(dc, "nowhere")
    assert stuck["status"]["phase"] == "Pending" and stuck["status"]["conditions"][0]["reason"] == "Unschedulable"
    described = dc.kubectl("describe", "pod", stuck["metadata"]["name"]).stdout
    assert ("Warning  FailedScheduling" in described and "default-scheduler" in described
            and "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not helpful "
            "for scheduling." in described), described
    (ran,) = pods_of(dc, "on-gpu")
    described = dc.kubectl("describe", "pod", ran["metadata"]["name"]).stdout
    assert f"Successfully assigned default/{ran['metadata']['name']} to gpu-1" in described, described
    nodes = dc.kubectl("get", "nodes", "-o", "wide").stdout.splitlines()
    assert nodes[0].split()[:5] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"], nodes
    assert [line.split()[:3] for line in nodes[1:]] == [["cpu-1", "Ready", "<none>"], ["gpu-1", "Ready", "<none>"]]
    assert dc.get("nodes", "-l", "pool=gpu")["items"][0]["spec"]["taints"][0]["key"] == "gpu"
    dc.kubectl("delete", "node", "gpu-1")  # as on a cluster: its pods go (PodGC), none is bound there again
    assert [n["metadata"]["name"] for n in dc.get("nodes")["items"]] == ["cpu-1"]
    assert not [p for p in pods_of(dc, "on-gpu") if p["metadata"].get("deletionTimestamp") is None
                and p["status"]["phase"] not in ("Succeeded", "Failed")]
    table = dc.kubectl("get", "jobs").stdout
    assert "hello" in table and "3/3" in table

    # A long run in progress when the dev-cluster stops resumes after the restart.
    dc.kubectl("apply", "-f", "-", stdin=job("long", parallelism=1, completions=1, duration="6s"))
    wait_for(lambda: [p["status"]["phase"] for p in pods_of(dc, "long")] == ["Running"], what="the long pod to run")
    (long_pod,) = pods_of(dc, "long")
    dc.stop()
    dc.start()

    crds = [c["spec"]["group"] for c in dc.get("crds")["items"]]
    assert crds.count("kueue.x-k8s.io") == 9 and len(crds) == 9 + len(operator_crds()) + len(podbased_crds())  # and the simulated operators'
    assert dc.get("job", "hello")["status"]["succeeded"] == 3
    assert len(pods_of(dc, "hello")) == 3
    dc.kubectl("wait", "--for=condition=Complete", "job/long", "--timeout=60s")
    (after,) = pods_of(dc, "long")  # the same pod, run once
    assert after["metadata"]["uid"] == long_pod["metadata"]["uid"]
    assert after["status"]["startTime"] == long_pod["status"]["startTime"]
    assert dc.get("job", "long")["status"]["succeeded"] == 1

    # Deleting a Job takes its pods with it (propagationPolicy Background).
    dc.kubectl("delete", "job", "hello")
    wait_for(lambda: pods_of(dc, "hello") == [], what="the pods of a deleted job to go")
    assert len(pods_of(dc, "long")) == 1
