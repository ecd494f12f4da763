"""A ``mkhub serve`` child process for the end-to-end benchmarks, and what it cost (Linux /proc)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hub.ctl.client import CliError, ControlClient
from hub.ports import free_port

# Lists of tens of thousands of Workloads exceed gRPC's default 4 MiB message limit.
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]


@dataclass(frozen=True, slots=True)
class ProcStats:
    cpu_s: float  # user + system
    rss_mib: float  # current resident set
    peak_rss_mib: float  # high-water mark (VmHWM)


def proc_stats(pid: int) -> ProcStats:
    """CPU seconds and memory of a live process, from /proc (zeros where /proc is missing)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return ProcStats(0.0, 0.0, 0.0)
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (fields 14 and 15 of stat)

    def kib(name: str) -> float:
        for line in status:
            if line.startswith(name + ":"):
                return float(line.split()[1])
        return 0.0

    return ProcStats(cpu, kib("VmRSS") / 1024, kib("VmHWM") / 1024)


def start_hub(data_dir: Path, log_path: Path, extra_args: Sequence[str] = (), timeout: float = 60.0) -> tuple[subprocess.Popen[bytes], str]:
    """``mkhub serve --insecure`` on a free loopback port; returns once gRPC health says SERVING."""
    address = f"127.0.0.1:{free_port()}"
    cmd = [sys.executable, "-m", "hub.cli", "serve", "--data-dir", str(data_dir), "--listen", address, "--insecure", *extra_args]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)  # type: ignore[no-untyped-call]
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"mkhub serve exited with code {proc.returncode}; see {log_path}")
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1.0)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return proc, address
            except grpc.RpcError:
                pass
            if time.monotonic() > deadline:
                proc.kill()
                raise TimeoutError(f"mkhub serve was not SERVING within {timeout:.0f}s; see {log_path}")
            time.sleep(0.05)


class BenchHub:
    """The hub under test: started, reachable through the control API, stopped at the end."""

    def __init__(self, proc: subprocess.Popen[bytes], address: str) -> None:
        self.proc = proc
        self.server: subprocess.Popen[bytes] | None = None  # the API server of a hub on the Kubernetes store
        self.channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        self.client = ControlClient(self.channel, server=address, timeout=600.0)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stats(self) -> ProcStats:
        return proc_stats(self.pid)

    def apply_json(self, manifests: Sequence[dict[str, Any]] | str) -> Any:
        """One Apply call of a ``kind: List``; raises with the first error when the hub refuses it."""
        import json

        text = manifests if isinstance(manifests, str) else json.dumps({"apiVersion": "v1", "kind": "List", "items": list(manifests)})
        reply = self.client.apply(text, source="bench")
        check_reply(reply)
        return reply

    def top(self) -> Any:
        return next(iter(self.client.top(once=True)))


def check_reply(reply: Any) -> None:
    if reply.rejected:
        errors = [r.error for r in reply.results if r.error]
        raise RuntimeError(f"the hub refused the batch: {errors[0] if errors else 'rejected'}")


def start_profiler(pid: int, out: Path, rate: int = 50) -> subprocess.Popen[bytes]:
    """py-spy (``pip install py-spy``) sampling the thread that holds the GIL of ``pid``, into
    ``out`` as collapsed stacks; it writes them when the process ends or on :func:`stop_profiler`."""
    exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    return subprocess.Popen(
        [exe, "record", "-p", str(pid), "-f", "raw", "--gil", "-r", str(rate), "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop_profiler(spy: subprocess.Popen[bytes]) -> None:
    """Stop sampling a process that goes on running: py-spy writes its file on SIGINT."""
    spy.send_signal(signal.SIGINT)
    spy.wait(timeout=60.0)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=60.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30.0)


@contextmanager
def running_hub(extra_args: Sequence[str] = (), profile: Path | None = None, *, kube: bool = False) -> Iterator[BenchHub]:
    """``mkhub serve`` (embedded store, standalone, insecure loopback) in a temporary directory;
    ``kube``: on the Kubernetes store instead, against a ``mkhub dev-cluster`` started beside it
    (leader election off), whose process is :attr:`BenchHub.server`.

    ``profile``: sample the hub with py-spy into this file, as collapsed stacks, until the hub
    stops (:func:`start_profiler`)."""
    with tempfile.TemporaryDirectory(prefix="mkhub-bench-") as tmp:
        base = Path(tmp)
        server: subprocess.Popen[bytes] | None = None
        if kube:
            from .kube_bench import _start_dev_cluster

            server = _start_dev_cluster(base / "dev")
            extra_args = ["--kubeconfig", str(base / "dev" / "kubeconfig"), "--leader-elect", "false", *extra_args]
        try:
            proc, address = start_hub(base / "hub", base / "hub.log", ["--log-level", "warning", *extra_args],
                                      timeout=600.0 if kube else 60.0)
        except BaseException:
            if server is not None:
                _stop(server)
            raise
        bench = BenchHub(proc, address)
        bench.server = server
        spy: subprocess.Popen[bytes] | None = None
        try:
            if profile is not None:
                spy = start_profiler(bench.pid, profile)
            yield bench
        finally:
            bench.channel.close()
            _stop(proc)
            if spy is not None:
                spy.wait(timeout=60.0)
            if server is not None:
                _stop(server)


def wait_until(predicate: Any, timeout: float, interval: float = 0.5) -> None:
    """Poll ``predicate`` (which asks the hub) until true; a hub too busy to answer is asked again."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except CliError as exc:
            if "busy" not in str(exc):
                raise
        if time.monotonic() > deadline:
            raise TimeoutError(f"not done within {timeout:.0f}s")
        time.sleep(interval)
