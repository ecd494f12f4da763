"""The hub and its agents as child processes, for the demo (and the end-to-end tests): start,
wait until healthy, kill, restart."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hub.ctl.client import ControlClient
from hub.ports import free_port

MKHUB = [sys.executable, "-m", "hub.cli"]
MKAGENT = [sys.executable, "-m", "worker_agent"]


def wait_serving(channel: grpc.Channel, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Until gRPC health says SERVING (the hub restored its state)."""
    stub = health_pb2_grpc.HealthStub(channel)
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the hub exited with code {proc.returncode}")
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1.0)
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                return
            last = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        except grpc.RpcError as err:
            last = str(err.code())
        time.sleep(0.05)
    raise TimeoutError(f"the hub was not SERVING within {timeout}s (last: {last})")


class HubProcess:
    """``mkhub serve`` on 127.0.0.1 with a data dir; insecure unless ``tls_dir`` is given."""

    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        tls_dir: Path | None = None,
        extra_args: Sequence[str] = (),
        log_path: Path | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.tls_dir = tls_dir
        self.extra_args = list(extra_args)
        self.log_path = log_path or self.data_dir.parent / f"{self.data_dir.name}-hub.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def connection_args(self) -> list[str]:
        tls = ["--tls-dir", str(self.tls_dir)] if self.tls_dir else ["--insecure"]
        return ["--server", self.address, *tls]

    def start(self, timeout: float = 30.0) -> HubProcess:
        tls = ["--tls-dir", str(self.tls_dir)] if self.tls_dir else ["--insecure"]
        cmd = [*MKHUB, "serve", "--data-dir", str(self.data_dir), "--listen", self.address, *tls, *self.extra_args]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        try:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        finally:
            log.close()
        with self.channel() as channel:
            wait_serving(channel, timeout, self.proc)
        return self

    def channel(self) -> grpc.Channel:
        if self.tls_dir is None:
            return grpc.insecure_channel(self.address)
        from hub.service.certs import admin_channel_credentials

        return grpc.secure_channel(self.address, admin_channel_credentials(self.tls_dir))

    def client(self, channel: grpc.Channel) -> ControlClient:
        return ControlClient(channel, server=self.address, timeout=30.0)

    def kill(self) -> None:
        """SIGKILL: no shutdown, no last commit."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; returns the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait(timeout=timeout)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def __enter__(self) -> HubProcess:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.kill()


class AgentProcess:
    """``mkagent`` for one cluster, dialling ``hub`` (``HOST:PORT``); insecure unless ``tls_dir`` is given."""

    def __init__(
        self,
        cluster: str,
        hub: str,
        objects: Path,
        *,
        tls_dir: Path | None = None,
        data_dir: Path | None = None,
        log_path: Path,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.cluster = cluster
        self.hub = hub
        self.objects = Path(objects)
        self.tls_dir = tls_dir
        self.data_dir = data_dir
        self.log_path = log_path
        self.extra_args = list(extra_args)
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        tls = ["--tls-dir", str(self.tls_dir)] if self.tls_dir else ["--insecure"]
        data = ["--data-dir", str(self.data_dir)] if self.data_dir else []
        return [*MKAGENT, "--hub", self.hub, "--cluster", self.cluster, *tls, "--objects", str(self.objects), *data, *self.extra_args]

    def start(self) -> AgentProcess:
        """Start the process (it dials the hub and retries on its own); does not wait for a connection."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        try:
            self.proc = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
            )
        finally:
            log.close()
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: no goodbye to the hub, no last save of its state."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait (SIGKILL if it does not stop in time); returns the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=30)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def __enter__(self) -> AgentProcess:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.kill()

