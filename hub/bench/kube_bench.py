"""``mkhub bench kube``: the Kubernetes API path, end to end, over real sockets.

Against an API server (``--kubeconfig FILE``; by default ``mkhub dev-cluster``,
started on a free loopback port with its state in a temp dir):

* **writes/s**: Workload creates, one client thread and ``--threads`` threads;
* **list**: one GET of every Workload (``--workloads``, 10,000), and the same in
  pages of 500 (what the informer does);
* **watch latency**: from a write's request to its event on an open watch, p50/p99.

Then the hub on the Kubernetes store (``mkhub serve --kubeconfig``, a real
process) against that server:

* **admissions/s with N pending**: N Workloads pending in one ClusterQueue big
  enough for all; the hub starts, lists them and admits them; measured from the
  first to the last ``QuotaReserved`` seen on a watch of the API server, and from
  the hub's start;
* **creation -> QuotaReserved visible**: Workloads created one by one into the
  running hub; the time from the create request until a watch of the API server
  shows the Workload with QuotaReserved=True, p50/p99.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

NS = "bench"
CONTAINERS = [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]


def _transport(kubeconfig: Path) -> Any:
    from hub.store.kube import ApiClientTransport

    return ApiClientTransport.from_kubeconfig(kubeconfig)


def workload(name: str, queue: str = "bench-lq") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": NS, "annotations": {"mkhub.dev/sim-duration": "10h"}},
        "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": CONTAINERS}}}]},
    }


def _send(transport: Any, req: Any, ok: tuple[int, ...] = (200, 201)) -> Any:
    resp = transport.send(req)
    if resp.status not in ok:
        raise RuntimeError(f"{req.method} {req.path}: HTTP {resp.status}: {resp.body[:300]!r}")
    return resp.json()


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc), or NaN elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def setup(transport: Any, cpu: int) -> None:
    from hub.store.kube import requests as rq

    for obj in (
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "bench-flavor"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "bench-cq"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
             {"name": "bench-flavor", "resources": [{"name": "cpu", "nominalQuota": str(cpu)}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "bench-lq", "namespace": NS},
         "spec": {"clusterQueue": "bench-cq"}},
    ):
        _send(transport, rq.create(rq.resource_for(str(obj["kind"])), obj), ok=(200, 201, 409))


def create_many(transport: Any, names: list[str], threads: int) -> float:
    """Create Workloads named ``names``; returns the elapsed seconds."""
    from hub.store.kube import requests as rq

    res = rq.resource_for("Workload")
    start = time.perf_counter()
    if threads <= 1:
        for name in names:
            _send(transport, rq.create(res, workload(name)))
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda n: _send(transport, rq.create(res, workload(n))), names))
    return time.perf_counter() - start


class EventClock:
    """A thread on one watch of Workloads noting when each name was first seen matching."""

    def __init__(self, transport: Any, predicate: Callable[[dict[str, Any]], bool], prefix: str = "") -> None:
        from hub.store.kube import requests as rq

        listed = _send(transport, rq.list_(rq.resource_for("Workload"), NS, limit=1))
        self.seen: dict[str, float] = {}
        self.predicate = predicate
        self.prefix = prefix
        self._cond = threading.Condition()
        self._stream = transport.stream(
            rq.watch(rq.resource_for("Workload"), listed["metadata"]["resourceVersion"], namespace=NS, timeout_seconds=3600),
            read_timeout=3600,
        )
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for line in self._stream.lines():
                event = json.loads(line)
                obj = event.get("object") or {}
                name = (obj.get("metadata") or {}).get("name")
                if (
                    event.get("type") in ("ADDED", "MODIFIED")
                    and name
                    and name.startswith(self.prefix)
                    and name not in self.seen
                    and self.predicate(obj)
                ):
                    with self._cond:
                        self.seen[name] = time.perf_counter()
                        self._cond.notify_all()
        except Exception:  # the stream closed at the end of the run
            return

    def wait(self, count: int, timeout: float) -> bool:
        deadline = time.perf_counter() + timeout
        with self._cond:
            while len(self.seen) < count:
                left = deadline - time.perf_counter()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 1.0))
        return True

    def close(self) -> None:
        self._stream.close()


def reserved(obj: dict[str, Any]) -> bool:
    return any(c.get("type") == "QuotaReserved" and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def bench_api(kubeconfig: Path, n: int, threads: int, latency_samples: int) -> dict[str, float]:
    from hub.store.kube import requests as rq

    transport = _transport(kubeconfig)
    figures: dict[str, float] = {}
    try:
        setup(transport, 1)
        single = min(1000, n)
        t = create_many(transport, [f"w1-{i:05d}" for i in range(single)], 1)
        figures["writes_per_s_1_thread"] = single / t
        rest = n - single
        if rest > 0:
            t = create_many(transport, [f"wn-{i:05d}" for i in range(rest)], threads)
            figures[f"writes_per_s_{threads}_threads"] = rest / t
        res = rq.resource_for("Workload")
        start = time.perf_counter()
        body = _send(transport, rq.list_(res, NS))
        figures["list_ms"] = (time.perf_counter() - start) * 1000
        figures["listed"] = len(body["items"])
        start = time.perf_counter()
        cont, pages = None, 0
        while True:
            page = _send(transport, rq.list_(res, NS, limit=500, continue_=cont))
            pages += 1
            cont = page["metadata"].get("continue")
            if not cont:
                break
        figures["list_paged_500_ms"] = (time.perf_counter() - start) * 1000
        clock = EventClock(transport, lambda obj: bool((obj.get("metadata") or {}).get("labels", {}).get("lat")))
        sent: dict[str, float] = {}
        for i in range(latency_samples):
            name = f"w1-{i % single:05d}"
            current = _send(transport, rq.get(res, NS, name))
            current["metadata"].setdefault("labels", {})["lat"] = str(i)
            sent[name] = time.perf_counter()
            _send(transport, rq.replace(res, current))
            clock.wait(i + 1, 10)
        clock.close()
        lat = [(clock.seen[k] - sent[k]) * 1000 for k in sent if k in clock.seen]
        figures["watch_latency_p50_ms"] = _pct(lat, 0.5)
        figures["watch_latency_p99_ms"] = _pct(lat, 0.99)
        # Clean up so the hub run starts from its own backlog.
        for name in [o["metadata"]["name"] for o in body["items"]]:
            transport.send(rq.delete(res, NS, name))
    finally:
        transport.close()
    return figures


class Hub:
    def __init__(self, kubeconfig: Path, log: Path, extra: list[str]) -> None:
        self.log = log
        cmd = [sys.executable, "-m", "hub.cli", "serve", "--kubeconfig", str(kubeconfig), "--insecure",
               "--listen", "127.0.0.1:0", "--sim-duration", "10h", "--leader-elect", "false", *extra]
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def wait_serving(self, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while "state restored; serving" not in self.log.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the hub did not start:\n{self.log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def bench_hub(
    kubeconfig: Path, n: int, threads: int, latency_samples: int, work: Path, hub_args: list[str], server_pid: int | None = None
) -> dict[str, float]:
    transport = _transport(kubeconfig)
    figures: dict[str, float] = {}
    hub: Hub | None = None
    try:
        setup(transport, n + latency_samples + 10)
        create_many(transport, [f"p-{i:05d}" for i in range(n)], threads)
        clock = EventClock(transport, reserved, "p-")
        start = time.perf_counter()
        server_cpu = cpu_seconds(server_pid) if server_pid else float("nan")
        hub = Hub(kubeconfig, work / "hub.log", hub_args)
        hub.wait_serving()
        serving = time.perf_counter()
        if not clock.wait(n, 900):
            raise RuntimeError(f"only {len(clock.seen)} of {n} workloads got QuotaReserved")
        figures["hub_cpu_ms_per_admission"] = cpu_seconds(hub.proc.pid) * 1000 / n  # start-up included
        if server_pid:
            figures["server_cpu_ms_per_admission"] = (cpu_seconds(server_pid) - server_cpu) * 1000 / n
        times = sorted(clock.seen.values())
        figures["hub_start_to_serving_s"] = serving - start
        figures["admissions_per_s"] = n / max(1e-9, times[-1] - times[0])
        figures["admissions_per_s_from_start"] = n / (times[-1] - start)
        clock.close()
        # Creation -> QuotaReserved visible, one at a time into the idle hub.
        clock = EventClock(transport, reserved, "l-")
        from hub.store.kube import requests as rq

        res = rq.resource_for("Workload")
        sent: dict[str, float] = {}
        for i in range(latency_samples):
            name = f"l-{i:05d}"
            sent[name] = time.perf_counter()
            _send(transport, rq.create(res, workload(name)))
            clock.wait(i + 1, 30)
        clock.close()
        lat = [(clock.seen[k] - sent[k]) * 1000 for k in sent if k in clock.seen]
        figures["create_to_reserved_p50_ms"] = _pct(lat, 0.5)
        figures["create_to_reserved_p99_ms"] = _pct(lat, 0.99)
        figures["create_to_reserved_samples"] = len(lat)
    finally:
        if hub is not None:
            hub.stop()
        transport.close()
    return figures


def _start_dev_cluster(data: Path, *extra: str) -> subprocess.Popen[bytes]:
    data.mkdir(parents=True, exist_ok=True)
    with open(data.parent / f"{data.name}-dev-cluster.log", "ab") as log:
        proc = subprocess.Popen(
            # kube-apiserver's watch cache grows to hold 75 s of history under a burst (up to
            # 102,400 events a resource): the benchmark's bursts get a window that big.
            [sys.executable, "-m", "hub.cli", "dev-cluster", "--data-dir", str(data), "--listen", "127.0.0.1:0",
             "--watch-window", "102400", *extra],
            stdout=log, stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while not (data / "kubeconfig").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("mkhub dev-cluster did not start")
        time.sleep(0.05)
    return proc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mkhub bench kube", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", type=Path, default=None, help="an API server to measure (default: start mkhub dev-cluster)")
    parser.add_argument("--workloads", type=int, default=10_000, help="Workloads to write and list (default 10000)")
    parser.add_argument("--pending", type=int, default=10_000, help="pending Workloads for the hub to admit (default 10000)")
    parser.add_argument("--threads", type=int, default=8, help="client threads for bulk writes")
    parser.add_argument("--samples", type=int, default=200, help="latency samples")
    parser.add_argument("--skip-api", action="store_true", help="only the hub part")
    parser.add_argument("--hub-arg", action="append", default=[], help="extra argument for mkhub serve (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    figures: dict[str, float] = {}

    with tempfile.TemporaryDirectory(prefix="mkhub-bench-kube-") as tmp:
        work = Path(tmp)
        procs: list[subprocess.Popen[bytes]] = []
        try:
            def server(name: str) -> Path:
                if args.kubeconfig is not None:
                    return Path(args.kubeconfig)
                procs.append(_start_dev_cluster(work / name))
                return work / name / "kubeconfig"

            def server_pid() -> int | None:
                return procs[-1].pid if args.kubeconfig is None else None

            if not args.skip_api:
                figures.update(bench_api(server("api"), args.workloads, args.threads, args.samples))
            # A fresh server for the hub: its backlog is the only thing in it.
            kubeconfig = server("hub")
            hub_figures = bench_hub(kubeconfig, args.pending, args.threads, args.samples, work, args.hub_arg, server_pid())
            figures.update({f"hub_{k}" if not k.startswith("hub_") else k: v for k, v in hub_figures.items()})
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(30)
    return print_figures(figures, args.json)


def print_figures(figures: dict[str, float], as_json: bool) -> int:
    figures = {k: round(v, 3) for k, v in figures.items()}
    if as_json:
        print(json.dumps(figures, sort_keys=True))
    else:
        width = max(len(k) for k in figures)
        for key, value in figures.items():
            print(f"{key:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
