"""The fleet view on real processes: ``mkhub serve`` with the capacity-aware dispatcher, one
``mkagent`` connected (worker-1) and one that never connects (worker-2).

``mkhub top --once`` and ``mkhub describe multikueuecluster`` show, per worker, whether it is
connected, its quota per ClusterQueue, flavor and resource (from the agent's capacity
reports) and the fleet totals; the MultiKueueCluster's ``status.fleet`` holds the same. The
worker without an agent shows Active=False with a reason.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_harness import run_cli

from hub.api.meta import parse_time
from hub.demo.processes import AgentProcess, HubProcess, free_port

pytestmark = pytest.mark.timeout(120)

SAMPLES = Path(__file__).resolve().parents[1] / "manifests" / "samples" / "multikueue"
CONFIG = """
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
multiKueue:
  dispatcherName: mkhub.dev/capacity-aware
"""


def _cond(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def test_top_and_describe_show_the_fleet(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(CONFIG)
    hub = HubProcess(tmp_path / "hub", extra_args=["--config", str(tmp_path / "config.yaml")],
                     log_path=tmp_path / "hub.log").start()
    agent = None
    try:
        with hub.channel() as channel:
            client = hub.client(channel)
            applied = client.apply((SAMPLES / "hub.yaml").read_text())
            assert not applied.rejected
            agent = AgentProcess("worker-1", hub.address, SAMPLES / "worker-1.yaml",
                                 log_path=tmp_path / "worker-1.log").start()
            deadline = time.monotonic() + 60
            while True:
                fleet = (client.get("MultiKueueCluster", "worker-1").get("status") or {}).get("fleet") or {}
                if fleet.get("connected") and fleet.get("quota"):
                    break
                assert time.monotonic() < deadline, (tmp_path / "hub.log").read_text()[-3000:]
                time.sleep(0.1)
            assert fleet["capacityVersion"] == 1
            assert {"clusterQueue": "gpu-cq", "flavor": "cpu-pool", "resource": "cpu", "nominal": "16", "usage": "0"} in fleet["quota"]
            lonely = client.get("MultiKueueCluster", "worker-2")
            active = _cond(lonely, "Active")
            assert active is not None and active["status"] == "False" and active["reason"], lonely
            assert (lonely.get("status") or {}).get("fleet", {}).get("connected") is False

        top = run_cli(["top", "--once", *hub.connection_args()])
        assert top.returncode == 0, top.stderr
        rows = {line.split()[0]: line for line in top.stdout.splitlines() if line.startswith("worker-")}
        assert rows["worker-1"].split()[1:3] == ["yes", "yes"], top.stdout
        assert rows["worker-2"].split()[1:4] == ["no", "no", "never"], top.stdout
        assert "fleet: 1/2 workers connected" in top.stdout
        assert "cpu-pool/cpu: 0/" in top.stdout

        described = run_cli(["describe", "multikueuecluster", "worker-1", *hub.connection_args()])
        assert described.returncode == 0, described.stderr
        assert "Connected:" in described.stdout and "yes since" in described.stdout
        assert "gpu-cq" in described.stdout and "cpu-pool" in described.stdout
        described = run_cli(["describe", "multikueuecluster", "worker-2", *hub.connection_args()])
        assert "no (never connected)" in described.stdout, described.stdout
        assert "ClientConnectionFailed" in described.stdout
    finally:
        if agent is not None:
            agent.terminate()
        hub.terminate()


KUBECTL = shutil.which("kubectl")
FLEET = "jsonpath={.status.fleet.connected}|{.status.fleet.since}|{.status.fleet.lastHeartbeat}"


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_the_last_heartbeat_is_kept_after_a_disconnection_and_a_hub_restart(tmp_path: Path) -> None:
    """``kubectl get``/``mkhub describe multikueuecluster`` against ``mkhub serve --kube-listen``: the last
    heartbeat is never dated before the connection, and an agent's death or a hub restart does not
    blank it ("Last Heartbeat: <none>" while ``mkhub top`` still showed when it was last heard)."""
    port = free_port()
    hub = HubProcess(tmp_path / "hub", extra_args=["--kube-listen", f"127.0.0.1:{port}"], log_path=tmp_path / "hub.log")
    agent = None

    def fleet() -> list[str]:
        out = subprocess.run([str(KUBECTL), "--server", f"http://127.0.0.1:{port}", "get", "multikueuecluster", "worker-1",
                              "-o", FLEET], capture_output=True, text=True, timeout=60, check=False)
        return out.stdout.split("|")

    def until(want: Callable[[list[str]], bool]) -> list[str]:
        deadline = time.monotonic() + 60
        while not want(got := fleet()):
            assert time.monotonic() < deadline, f"{got}\n{(tmp_path / 'hub.log').read_text()[-3000:]}"
            time.sleep(0.3)
        return got

    def described() -> str:
        out = run_cli(["describe", "multikueuecluster", "worker-1", *hub.connection_args()])
        assert out.returncode == 0, out.stderr
        return next(line for line in out.stdout.splitlines() if line.startswith("Last Heartbeat:"))

    try:
        hub.start()
        assert run_cli(["apply", "-f", str(SAMPLES / "hub.yaml"), *hub.connection_args()]).returncode == 0
        agent = AgentProcess("worker-1", hub.address, SAMPLES / "worker-1.yaml", log_path=tmp_path / "worker-1.log").start()
        _, since, beat = until(lambda f: f[0] == "true" and f[2] != "")
        assert parse_time(beat) >= parse_time(since), (since, beat)

        agent.kill()
        _, _, kept = until(lambda f: f[0] == "false")
        assert kept != "" and parse_time(kept) >= parse_time(beat), (beat, kept)
        assert kept in described()

        hub.terminate()
        hub.start()
        until(lambda f: f[0] == "false" and f[1] == "")  # the restarted hub has rewritten the fleet view
        assert fleet()[2] == kept
        assert kept in described()
        # Neither view says the worker never connected: the new process only has not heard it yet.
        shown = run_cli(["describe", "multikueuecluster", "worker-1", *hub.connection_args()]).stdout
        assert "Connected:      no\n" in shown, shown
        top = run_cli(["top", "--once", *hub.connection_args()])
        row = next(line.split() for line in top.stdout.splitlines() if line.startswith("worker-1 "))
        assert row[1:4] == ["no", "no", "-"] and row[4].endswith("s") and row[5] == "ago", top.stdout
    finally:
        if agent is not None:
            agent.terminate()
        hub.kill()
