"""mTLS smoke test: `mkhub certs`, `mkhub serve --tls-dir`, the CLI with the admin certificate;
plaintext clients and agents' certificates are refused by the control service."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from cli_harness import run_cli
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hub.demo.processes import HubProcess
from hub.federation import tls
from mkhub.v1 import control_pb2 as pb
from mkhub.v1 import control_pb2_grpc as pb_grpc

pytestmark = pytest.mark.timeout(120)


def test_mtls_end_to_end(tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    made = run_cli(["certs", "--out", str(certs), "--agent", "worker-1"])
    assert made.returncode == 0, made.stderr
    assert (certs / "admin.crt").exists() and (certs / "agents" / "worker-1" / "worker-1.crt").exists()

    with HubProcess(tmp_path / "data", tls_dir=certs) as hub:
        secure = ["--server", hub.address, "--tls-dir", str(certs)]
        applied = run_cli(
            ["apply", "-f", "-", *secure], stdin="apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\n"
        )
        assert applied.returncode == 0 and "created" in applied.stdout, applied.stderr
        got = run_cli(["get", "rf", *secure])
        assert got.returncode == 0 and "f " in got.stdout + " "

        plain = run_cli(["get", "rf", "--server", hub.address, "--insecure", "--timeout", "5"])
        assert plain.returncode == 1 and len(plain.stderr.strip().splitlines()) == 1
        assert "it expects TLS; use --tls-dir DIR" in plain.stderr, plain.stderr  # not a bare "Socket closed"

        agent = grpc.secure_channel(hub.address, tls.agent_channel_credentials(certs, "worker-1"))
        with agent:
            # Health checking is open to every client the CA signed...
            health = health_pb2_grpc.HealthStub(agent).Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
            assert health.status == health_pb2.HealthCheckResponse.SERVING
            # ...but only the admin may use the control service.
            with pytest.raises(grpc.RpcError) as refused:
                pb_grpc.ControlStub(agent).List(pb.ListRequest(kind="rf"), timeout=10)
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED

        missing = run_cli(["get", "rf", "--server", hub.address, "--tls-dir", str(tmp_path / "nowhere")])
        assert missing.returncode == 1 and "mkhub certs --out" in missing.stderr
