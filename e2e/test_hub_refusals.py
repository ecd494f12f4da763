"""Refusals over mutual TLS: who is refused is decided from the certificate before the hub
reads what the caller sends, and each refusal is logged once with the caller's identity."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import grpc
import pytest
from cli_harness import run_cli

from hub.demo.processes import HubProcess
from hub.federation import tls
from mkhub.v1 import federation_pb2 as fpb
from mkhub.v1 import federation_pb2_grpc as fpb_grpc

pytestmark = pytest.mark.timeout(120)

SETUP = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueCluster
metadata: {name: worker-1}
spec:
  kubeConfig: {locationType: Secret, location: worker-1-kubeconfig}
"""


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("certs")
    made = run_cli(["certs", "--out", str(out), "--agent", "worker-1", "--agent", "intruder"])
    assert made.returncode == 0, made.stderr
    return out


def test_the_cli_with_an_agent_certificate_is_forbidden_and_logged_once(tmp_path: Path, certs: Path) -> None:
    # A CLI configuration whose "admin" certificate is really worker-1's.
    wrong = tmp_path / "wrong-certs"
    shutil.copytree(certs, wrong)
    shutil.copy(certs / "agents" / "worker-1" / "worker-1.crt", wrong / "admin.crt")
    shutil.copy(certs / "agents" / "worker-1" / "worker-1.key", wrong / "admin.key")
    with HubProcess(tmp_path / "data", tls_dir=certs) as hub:
        for _ in range(3):
            done = run_cli(["get", "rf", "--server", hub.address, "--tls-dir", str(wrong)])
            assert done.returncode == 1
            assert done.stderr.startswith("Error from server (Forbidden): "), done.stderr
            assert len(done.stderr.strip().splitlines()) == 1
        log = hub.log()
    refusals = [line for line in log.splitlines() if "refused control call" in line]
    assert len(refusals) == 1, log[-2000:]
    assert "'worker-1'" in refusals[0] and "127.0.0.1" in refusals[0]


def test_an_unknown_cluster_is_refused_before_its_hello_is_read(tmp_path: Path, certs: Path) -> None:
    """A certificate our CA signed for a cluster the hub does not know, sending a 48 MiB Hello."""
    with HubProcess(tmp_path / "data", tls_dir=certs) as hub:
        done = run_cli(["apply", "-f", "-", "--server", hub.address, "--tls-dir", str(certs)], stdin=SETUP)
        assert done.returncode == 0, done.stderr
        assert hub.proc is not None
        before = rss_bytes(hub.proc.pid)
        hello = fpb.Hello(cluster_name="intruder", session_id="s", held=[fpb.HeldWorkload(workload_uid="x" * (48 << 20))])
        options = [("grpc.max_send_message_length", -1)]
        with grpc.secure_channel(hub.address, tls.agent_channel_credentials(certs, "intruder"), options=options) as channel:
            stub = fpb_grpc.FederationStub(channel)
            for _ in range(3):
                call = stub.Connect(iter([fpb.AgentMessage(items=[fpb.AgentItem(hello=hello)])]), timeout=30)
                with pytest.raises(grpc.RpcError) as refused:
                    list(call)
                assert refused.value.code() in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.INTERNAL,
                                                grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
        time.sleep(0.5)
        grown = rss_bytes(hub.proc.pid) - before
        log = hub.log()
    assert grown < 32 << 20, f"the hub grew by {grown >> 20} MiB"
    refusals = [line for line in log.splitlines() if "refused agent stream" in line]
    assert len(refusals) == 1, log[-2000:]
    assert "'intruder'" in refusals[0] and "PERMISSION_DENIED" in refusals[0]
    assert "Traceback" not in log
