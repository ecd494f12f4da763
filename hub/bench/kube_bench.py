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
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .latency_proxy import latency_proxy, measured_rtt_ms
from .machine import machine_speed
from .procstat import compile_sources, cpu_seconds, wait_idle

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


def _py_spy(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """py-spy sampling the thread holding ``pid``'s GIL (its CPU), as collapsed stacks into ``out``."""
    exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    return subprocess.Popen([exe, "record", "-p", str(pid), "-f", "raw", "--gil", "-r", "50", "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _release(transport: Any, cpu: int) -> None:
    """Give ``bench-cq`` quota for ``cpu`` one-CPU Workloads: the held backlog becomes admissible."""
    from hub.store.kube import requests as rq

    patch = {"spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "bench-flavor", "resources": [{"name": "cpu", "nominalQuota": str(cpu)}]}]}]}}
    _send(transport, rq.merge_patch(rq.resource_for("ClusterQueue"), "", "bench-cq", patch))


def _pending(obj: dict[str, Any]) -> bool:
    """The hub has seen it and said why it waits (QuotaReserved=False)."""
    return any(c.get("type") == "QuotaReserved" and c.get("status") == "False"
               for c in (obj.get("status") or {}).get("conditions") or [])


def bench_hub(
    kubeconfig: Path, n: int, threads: int, latency_samples: int, work: Path, hub_args: list[str],
    server_pid: int | None = None, *, hub_kubeconfig: Path | None = None, profile: Path | None = None,
    takeover: bool = True, log_name: str = "hub",
) -> dict[str, float]:
    """The hub on the Kubernetes store. ``n`` Workloads wait in ``bench-cq`` with no quota; the hub
    starts (start to serving), says why each waits, goes idle; then the queue gets quota and the
    hub admits them all (admissions/s, CPU per admission of the hub and of the API server). Then
    one at a time into the idle hub (create -> QuotaReserved), and (``takeover``) a second hub
    process taking over the ``n`` admitted Workloads (start to serving). ``hub_kubeconfig``: the
    hub reaches the server through another address (a latency proxy)."""
    transport = _transport(kubeconfig)
    figures: dict[str, float] = {}
    hub: Hub | None = None
    spies: list[Any] = []
    try:
        setup(transport, 0)
        create_many(transport, [f"p-{i:05d}" for i in range(n)], threads)
        waiting = EventClock(transport, _pending, "p-")
        start = time.perf_counter()
        hub = Hub(hub_kubeconfig or kubeconfig, work / f"{log_name}.log", hub_args)
        hub.wait_serving()
        figures["hub_start_to_serving_s"] = time.perf_counter() - start
        if not waiting.wait(n, 900):
            raise RuntimeError(f"only {len(waiting.seen)} of {n} workloads were marked pending")
        waiting.close()
        wait_idle(hub.proc.pid)
        clock = EventClock(transport, reserved, "p-")
        if profile is not None:
            spies = [_py_spy(hub.proc.pid, profile / "hub.txt")]
            if server_pid:
                spies.append(_py_spy(server_pid, profile / "server.txt"))
        hub_cpu = cpu_seconds(hub.proc.pid)
        server_cpu = cpu_seconds(server_pid) if server_pid else float("nan")
        released = time.perf_counter()
        _release(transport, n + latency_samples + 10)
        if not clock.wait(n, 900):
            raise RuntimeError(f"only {len(clock.seen)} of {n} workloads got QuotaReserved")
        last = max(clock.seen.values())
        figures["hub_cpu_ms_per_admission"] = (cpu_seconds(hub.proc.pid) - hub_cpu) * 1000 / n
        if server_pid:
            figures["server_cpu_ms_per_admission"] = (cpu_seconds(server_pid) - server_cpu) * 1000 / n
        for spy in spies:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
            spy.wait(60)
        spies = []
        figures["admissions_per_s"] = n / max(1e-9, last - released)
        clock.close()
        # Creation -> QuotaReserved visible, one at a time into the idle hub. Idle, it has also
        # written what the admissions caused after the last became visible (Events).
        wait_idle(hub.proc.pid)
        figures["settled_cpu_ms_per_admission"] = (cpu_seconds(hub.proc.pid) - hub_cpu) * 1000 / n
        if server_pid:
            figures["server_settled_cpu_ms_per_admission"] = (cpu_seconds(server_pid) - server_cpu) * 1000 / n
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
        if takeover:
            wait_idle(hub.proc.pid)
            hub.stop()
            start = time.perf_counter()
            hub = Hub(hub_kubeconfig or kubeconfig, work / f"{log_name}-takeover.log", hub_args)
            hub.wait_serving()
            figures["hub_takeover_to_serving_s"] = time.perf_counter() - start
            figures["hub_takeover_cpu_s"] = cpu_seconds(hub.proc.pid)
    finally:
        for spy in spies:
            spy.kill()
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
    return started(proc, data / "kubeconfig", "mkhub dev-cluster")


def started(proc: subprocess.Popen[bytes], ready: Path, what: str, timeout: float = 60) -> subprocess.Popen[bytes]:
    """``proc`` once it has written ``ready`` (its kubeconfig: it listens); an error if it exits or times out."""
    deadline = time.monotonic() + timeout
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start")
        time.sleep(0.05)
    return proc


def _proxied_kubeconfig(kubeconfig: Path, port: int, out: Path) -> Path:
    """A copy of ``kubeconfig`` whose server is the latency proxy on ``port``."""
    import yaml

    config = yaml.safe_load(kubeconfig.read_text())
    for cluster in config.get("clusters") or []:
        cluster["cluster"]["server"] = f"http://127.0.0.1:{port}"
    out.write_text(yaml.safe_dump(config))
    return out


def _server_address(kubeconfig: Path) -> tuple[str, int]:
    from urllib.parse import urlsplit

    import yaml

    server = urlsplit(yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"])
    if server.scheme != "http":
        raise RuntimeError("--rtt-ms needs a plain-HTTP API server (the default mkhub dev-cluster)")
    return server.hostname or "127.0.0.1", int(server.port or 80)


def _ratio(kube: float, embedded: float) -> float:
    """``kube / embedded``; NaN when the embedded hub's CPU was below the clock's resolution
    (10 ms of /proc ticks: a backlog of tens of Workloads)."""
    return kube / embedded if embedded > 0 else float("nan")


def _embedded(n: int, hub_args: list[str]) -> dict[str, float]:
    """The embedded hub's admission run (``mkhub bench serve``) with the same backlog: ``n`` one-CPU
    Workloads held in one ClusterQueue, then released; their simulated runs as long as the
    Kubernetes hub's (:class:`Hub`) and its log at the same level (info, the default: a decision
    line per reservation and admission; ``bench serve`` logs warnings only) and ``--hub-arg``
    (a ``--config``, say), so both count the same work."""
    out = subprocess.run(
        [sys.executable, "-m", "hub.bench.serve_bench", "--workloads", str(n), "--cluster-queues", "1", "--cohorts", "1",
         "--hub-arg=--sim-duration=10h", "--hub-arg=--log-level=info", *(f"--hub-arg={a}" for a in hub_args), "--json"],
        capture_output=True, text=True, check=True,
    )
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mkhub bench kube", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", type=Path, default=None, help="an API server to measure (default: start mkhub dev-cluster)")
    parser.add_argument("--workloads", type=int, default=10_000, help="Workloads to write and list (default 10000)")
    parser.add_argument("--pending", type=int, default=10_000, help="pending Workloads for the hub to admit (default 10000)")
    parser.add_argument("--threads", type=int, default=8, help="client threads for bulk writes")
    parser.add_argument("--samples", type=int, default=200, help="latency samples")
    parser.add_argument("--skip-api", action="store_true", help="only the hub part")
    parser.add_argument("--skip-embedded", action="store_true", help="not the embedded hub's admission run")
    parser.add_argument("--rtt-ms", type=float, default=0.0,
                        help="also run the hub part with the hub reaching the API server through a proxy adding this round trip")
    parser.add_argument("--profile", type=Path, default=None, metavar="DIR",
                        help="py-spy the hub and the API server during the admission run into DIR")
    parser.add_argument("--hub-arg", action="append", default=[], help="extra argument for mkhub serve (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    figures: dict[str, float] = {}
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)

    compile_sources()  # start-up figures as a deployment's (bytecode compiled at install)
    with tempfile.TemporaryDirectory(prefix="mkhub-bench-kube-") as tmp, machine_speed() as machine:
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

            def stop_servers() -> None:
                while procs:
                    proc = procs.pop()
                    proc.terminate()
                    proc.wait(30)

            if not args.skip_api:
                figures.update(bench_api(server("api"), args.workloads, args.threads, args.samples))
                stop_servers()
            # A fresh server for the hub: its backlog is the only thing in it.
            kubeconfig = server("hub")
            hub_figures = bench_hub(kubeconfig, args.pending, args.threads, args.samples, work, args.hub_arg, server_pid(),
                                    profile=args.profile)
            figures.update({f"hub_{k}" if not k.startswith("hub_") else k: v for k, v in hub_figures.items()})
            stop_servers()
            if args.rtt_ms > 0:
                kubeconfig = server("hub-rtt")
                with latency_proxy(_server_address(kubeconfig), args.rtt_ms) as proxy:
                    figures["rtt_measured_ms"] = measured_rtt_ms(proxy.port)
                    proxied = _proxied_kubeconfig(kubeconfig, proxy.port, work / "kubeconfig-rtt")
                    rtt_figures = bench_hub(kubeconfig, args.pending, args.threads, 0, work, args.hub_arg, server_pid(),
                                            hub_kubeconfig=proxied, takeover=False, log_name="hub-rtt")
                stop_servers()
                for key in ("admissions_per_s", "hub_cpu_ms_per_admission", "hub_start_to_serving_s"):
                    figures[f"rtt_{key}"] = rtt_figures[key]
                figures["rtt_admissions_ratio"] = rtt_figures["admissions_per_s"] / figures["hub_admissions_per_s"]
            if not args.skip_embedded:
                embedded = _embedded(args.pending, args.hub_arg)
                figures["embedded_admissions_per_s"] = embedded["admissions_per_s"]
                figures["embedded_cpu_ms_per_admission"] = embedded["admit_cpu_ms_per_workload"]
                figures["kube_over_embedded_cpu"] = _ratio(figures["hub_cpu_ms_per_admission"], embedded["admit_cpu_ms_per_workload"])
                figures["embedded_settled_cpu_ms_per_admission"] = embedded["admit_settled_cpu_ms_per_workload"]
                figures["kube_over_embedded_settled_cpu"] = _ratio(
                    figures["hub_settled_cpu_ms_per_admission"], embedded["admit_settled_cpu_ms_per_workload"])
        except (RuntimeError, subprocess.CalledProcessError) as exc:  # a process that did not start or failed
            lines = str(exc).strip().splitlines()  # a RuntimeError's first line, then the process's last
            if isinstance(exc, subprocess.CalledProcessError) and exc.stderr:
                lines += exc.stderr.strip().splitlines()
            print(f"error: {lines[0]}" + (f" ({lines[-1]})" if len(lines) > 1 else ""), file=sys.stderr)
            return 1
        finally:
            stop_servers()
    figures["machine_ms"] = machine.median_ms
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
