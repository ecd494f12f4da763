"""``mkhub bench kube --client-requests N``: the Kubernetes store's client CPU per batched write.

The hub writes its Workload statuses and Events as batches of independent requests
(``ApiClientTransport.send_many``, libcurl's multi interface). This sends ``N`` Event creations
as one batch, twice: without a client-side rate limit, and under ``--qps`` (the hub's default
500) with the burst spent first, so every token is waited for, as in a long admission run.
Figures: this process's CPU per request and each batch's requests per second, with
``machine_ms`` (:mod:`.machine`).

The server is another process, so its CPU is not counted: by default a minimal HTTP/1.1 server
that reads each request and answers ``201`` with a small Event after a millisecond, so the
client's rate is its own or the limit's; ``--dev-cluster`` sends to a fresh ``mkhub
dev-cluster`` instead (which, on a busy 2-core machine, answers slower than 500 per second).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .kube_bench import _start_dev_cluster, _transport, print_figures, started
from .machine import machine_speed

NS = "default"
ANSWER = b'{"apiVersion":"v1","kind":"Event","metadata":{"name":"e","namespace":"default","resourceVersion":"7"}}'


def _events(prefix: str, n: int) -> list[Any]:
    from hub.store.kube import requests as rq

    resource = rq.resource_for("Event", "v1")
    out = []
    for i in range(n):
        body = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{prefix}-{i:06d}", "namespace": NS},
                "involvedObject": {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "namespace": NS,
                                   "name": f"w-{i:06d}"},
                "reason": "QuotaReserved", "message": "Quota reserved in ClusterQueue bench-cq", "type": "Normal",
                "source": {"component": "kueue-admission"}, "count": 1}
        out.append(rq.create(resource, body))
    return out


def _batch(transport: Any, requests: list[Any]) -> tuple[float, float]:
    """CPU seconds of this process and wall seconds to send ``requests`` as one batch."""
    cpu, wall = time.process_time(), time.perf_counter()
    answers = transport.send_many(requests)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    refused = [a for a in answers if getattr(a, "status", 0) != 201]
    if refused:
        raise RuntimeError(f"{len(refused)} of {len(requests)} creates failed, e.g. {refused[0]!r}")
    return cpu, wall


def run(kubeconfig: Path, n: int, qps: float) -> dict[str, float]:
    from hub.store.kube.ratelimit import TokenBucket

    transport = _transport(kubeconfig)
    try:
        _batch(transport, _events("warm", 64))  # connections open, handles made
        cpu, wall = _batch(transport, _events("free", n))
        figures = {"unpaced_cpu_us_per_request": cpu / n * 1e6, "unpaced_requests_per_s": n / wall}
        transport.limiter = TokenBucket(qps, 1)  # burst spent: every token waited for
        cpu, wall = _batch(transport, _events("paced", n))
        figures.update({"paced_cpu_us_per_request": cpu / n * 1e6, "paced_requests_per_s": n / wall, "qps": qps})
        return figures
    finally:
        transport.close()


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    head = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(ANSWER)
    try:
        while True:
            request = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in request.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            await asyncio.sleep(0.001)
            writer.write(head + ANSWER)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


def _serve(data: Path) -> None:
    """The minimal server: listens on a free port, writes ``data/kubeconfig``, answers until killed."""
    from .standin import write_kubeconfig

    async def main() -> None:
        server = await asyncio.start_server(_answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        write_kubeconfig(data / "kubeconfig.tmp", f"http://127.0.0.1:{port}").rename(data / "kubeconfig")
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def _start_minimal(data: Path) -> subprocess.Popen[bytes]:
    data.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "hub.bench.kube_client_bench", "--serve", str(data)])
    return started(proc, data / "kubeconfig", "the minimal server")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mkhub bench kube --client-requests", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--client-requests", type=int, default=2000, help="Event creations per batch (default 2000)")
    parser.add_argument("--qps", type=float, default=500.0, help="the paced batch's rate limit (default 500, the hub's)")
    parser.add_argument("--dev-cluster", action="store_true", help="send to mkhub dev-cluster, not the minimal server")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if args.client_requests < 1 or args.qps <= 0:
        parser.error("--client-requests must be at least 1 and --qps above 0")
    if args.serve is not None:
        _serve(args.serve)
        return 0
    with tempfile.TemporaryDirectory(prefix="mkhub-bench-client-") as tmp, machine_speed() as machine:
        data = Path(tmp) / "api"
        proc = _start_dev_cluster(data) if args.dev_cluster else _start_minimal(data)
        try:
            figures = run(data / "kubeconfig", args.client_requests, args.qps)
        finally:
            proc.terminate()
            proc.wait(30)
    figures["machine_ms"] = machine.median_ms
    return print_figures(figures, args.json)


if __name__ == "__main__":
    sys.exit(main())
