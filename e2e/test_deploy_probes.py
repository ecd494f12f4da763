"""The hub Deployment's probes, as the kubelet would run them: two ``mkhub serve --kubeconfig``
replicas (leader election) with ``--health-listen``, asked over plaintext gRPC health
(grpc.health.v1, what a ``grpc:`` probe sends). Both are alive (service ``liveness``),
only the leader is ready (service ``""``); after ``kill -9`` of the leader the standby
becomes ready.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hub.demo.processes import free_port
from tests.store.kube.harness import start_dev_cluster
from tests.store.kube.hubproc import FAST_LEASE, KubeHub

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[1]
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def probe(port: int, service: str) -> int:
    """What the kubelet's grpc probe does: one Check, plaintext; -1 when it cannot connect."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(  # type: ignore[no-untyped-call]
                health_pb2.HealthCheckRequest(service=service), timeout=2)
        except grpc.RpcError:
            return -1
    return int(reply.status)


def wait_probe(port: int, service: str, want: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    got = probe(port, service)
    while got != want:
        assert time.monotonic() < deadline, f"probe {service!r} on {port}: {got}, not {want}"
        time.sleep(0.2)
        got = probe(port, service)


def test_liveness_in_both_replicas_readiness_only_in_the_leader(tmp_path: Path) -> None:
    api = start_dev_cluster(tmp_path / "cluster")
    hubs: list[KubeHub] = []
    try:
        crds = subprocess.run(["kubectl", "--kubeconfig", str(api.kubeconfig), "apply", "-f", str(ROOT / "manifests/crds")],
                              capture_output=True, text=True, timeout=120, check=False)
        assert crds.returncode == 0, crds.stderr
        ports = [free_port(), free_port()]
        leader = KubeHub(api.kubeconfig, tmp_path / "hub-0.log",
                         [*FAST_LEASE, "--health-listen", f"127.0.0.1:{ports[0]}"]).start()
        hubs.append(leader)
        leader.wait_serving()
        standby = KubeHub(api.kubeconfig, tmp_path / "hub-1.log",
                          [*FAST_LEASE, "--health-listen", f"127.0.0.1:{ports[1]}"]).start()
        hubs.append(standby)
        wait_probe(ports[1], "liveness", SERVING)  # waiting for the Lease, alive: not restarted
        assert probe(ports[1], "") == NOT_SERVING  # and not ready: no traffic
        assert probe(ports[0], "liveness") == SERVING and probe(ports[0], "") == SERVING
        assert "state restored; serving" not in standby.log()

        leader.kill()
        standby.wait_serving()
        wait_probe(ports[1], "", SERVING)
        assert probe(ports[0], "liveness") == -1  # the killed one answers nothing
    finally:
        for hub in hubs:
            hub.terminate()
        api.stop()
