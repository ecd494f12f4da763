"""kubectl against a running ``mkhub serve --kube-listen`` with the kubeconfig of ``mkhub certs``:
mutual TLS, the engine reacting to writes made through the API, ``kubectl get wl -w`` seeing a
workload go from pending to admitted to finished, ``kubectl wait``, and an agent refused."""

from __future__ import annotations

import base64
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hub.demo.processes import MKHUB, HubProcess, free_port

from .conftest import KUBECTL, SAMPLES, Kubectl, kubectl_or_skip


def _run_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MKHUB, *args], capture_output=True, text=True, timeout=60, check=False)

pytestmark = pytest.mark.timeout(180)

JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: quick
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: user-queue}
  annotations: {mkhub.dev/sim-duration: 2s}
spec:
  parallelism: 1
  completions: 1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
"""
NO_QUOTA = '{"spec":{"resourceGroups":[{"coveredResources":["cpu","memory"],"flavors":[{"name":"default-flavor","resources":[{"name":"cpu","nominalQuota":0},{"name":"memory","nominalQuota":"32Gi"}]}]}]}}'
QUOTA = NO_QUOTA.replace('"nominalQuota":0', '"nominalQuota":8')


def _agent_kubeconfig(certs: Path, out: Path) -> Path:
    text = (certs / "kubeconfig").read_text()
    crt = base64.b64encode((certs / "agents" / "worker-1" / "worker-1.crt").read_bytes()).decode()
    key = base64.b64encode((certs / "agents" / "worker-1" / "worker-1.key").read_bytes()).decode()
    lines = []
    for line in text.splitlines():
        if "client-certificate-data:" in line:
            line = line.split(":")[0] + f": {crt}"
        elif "client-key-data:" in line:
            line = line.split(":")[0] + f": {key}"
        lines.append(line)
    out.write_text("\n".join(lines) + "\n")
    return out


class Lines:
    """The output lines of a running process, read by one thread."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        self._queue: queue.Queue[str] = queue.Queue()
        stdout = proc.stdout
        threading.Thread(target=lambda: [self._queue.put(line) for line in stdout], daemon=True).start()

    def until(self, predicate: Callable[[str], bool], timeout: float) -> list[str]:
        """Lines until one satisfies ``predicate`` (or the timeout)."""
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            seen.append(line.rstrip("\n"))
            if predicate(line):
                break
        return seen


def test_kubectl_against_mkhub_serve(tmp_path: Path) -> None:
    kubectl_or_skip()
    certs = tmp_path / "certs"
    port = free_port()
    made = _run_cli(["certs", "--out", str(certs), "--agent", "worker-1", "--kube-server", f"https://127.0.0.1:{port}"])
    assert made.returncode == 0, made.stderr
    home = tmp_path / "home"
    home.mkdir()
    kubectl = Kubectl(certs / "kubeconfig", home)
    with HubProcess(tmp_path / "data", tls_dir=certs, extra_args=["--kube-listen", f"127.0.0.1:{port}"]):
        applied = kubectl("apply", "-f", str(SAMPLES / "1-queues.yaml"))
        assert applied.returncode == 0, applied.stderr
        assert kubectl("patch", "cq", "cluster-queue", "--type=merge", "-p", NO_QUOTA).returncode == 0

        watcher = subprocess.Popen(
            [KUBECTL, "get", "wl", "-n", "team-a", "-w", "--no-headers"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env={"HOME": str(home), "KUBECONFIG": str(certs / "kubeconfig"), "PATH": "/usr/bin:/bin"},
        )
        output = Lines(watcher)
        try:
            created = kubectl("apply", "-f", "-", stdin=JOB)
            assert created.returncode == 0, created.stderr
            # The hub makes the Job's Workload; with no quota it stays pending.
            pending = output.until(lambda line: "user-queue" in line, 30)
            assert pending and "True" not in pending[-1].split()
            quota = kubectl("patch", "cq", "cluster-queue", "--type=merge", "-p", QUOTA)
            assert quota.returncode == 0 and "patched" in quota.stdout, quota.stderr
            rows = output.until(lambda line: line.split().count("True") == 2, 60)
        finally:
            watcher.terminate()
            watcher.wait(10)
        states = [row.split() for row in pending + rows]
        admitted = [i for i, cells in enumerate(states) if "cluster-queue" in cells and "True" in cells]
        finished = [i for i, cells in enumerate(states) if cells.count("True") == 2]
        assert admitted and finished and admitted[0] <= finished[0], states
        assert "True" not in states[0]

        name = states[-1][0]
        waited = kubectl("wait", "--for=condition=Finished", f"wl/{name}", "-n", "team-a", "--timeout=60s")
        assert waited.returncode == 0 and "condition met" in waited.stdout, waited.stderr
        got = kubectl("get", "cq")
        assert got.returncode == 0 and got.stdout.split("\n")[0].split() == ["NAME", "COHORT", "PENDING", "WORKLOADS"]

        agent = Kubectl(_agent_kubeconfig(certs, tmp_path / "agent.kubeconfig"), home)
        refused = agent("get", "cq")
        assert refused.returncode != 0 and "Forbidden" in refused.stderr and 'User "worker-1"' in refused.stderr
        missing_cert = Kubectl(tmp_path / "nocert.kubeconfig", home)
        (tmp_path / "nocert.kubeconfig").write_text(
            (certs / "kubeconfig").read_text().split("users:")[0]
            + "users:\n- name: mkhub-admin\n  user: {}\ncontexts:\n- name: mkhub\n  context: {cluster: mkhub, user: mkhub-admin}\n"
            "current-context: mkhub\n"
        )
        assert missing_cert("get", "cq", "--request-timeout=10s").returncode != 0


def test_insecure_kube_listen_is_loopback_only(tmp_path: Path) -> None:
    out = subprocess.run(
        [*MKHUB, "serve", "--data-dir", str(tmp_path / "d"), "--insecure",
         "--listen", f"127.0.0.1:{free_port()}", "--kube-listen", f"0.0.0.0:{free_port()}"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert out.returncode == 1 and "loopback" in out.stderr
