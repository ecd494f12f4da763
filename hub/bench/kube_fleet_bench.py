"""``mkhub bench kube --workers N``: MultiKueue on Kubernetes API servers, Job creation to running.

``N + 1`` ``mkhub dev-cluster`` processes (the manager and N workers), the hub on the
manager's API server (``mkhub serve --kubeconfig``) and one ``mkagent --kubeconfig`` per
worker, all real processes on loopback. ``--jobs`` batch/v1 Jobs (one pod each, a
``kueue.x-k8s.io/queue-name`` label) are created in the manager over its REST API
(``POST .../jobs``, as ``kubectl create`` sends it) by ``--threads`` clients; watches of the
workers' API servers note when each Job first has a running pod (``status.active >= 1``).
As in a Kueue deployment, the hub's Job webhook is registered in the manager (HTTPS, the
certificates of ``mkhub certs``) and sets ``spec.suspend`` and ``spec.managedBy:
kueue.x-k8s.io/multikueue`` as the API server creates each Job. ``--no-webhook`` creates them
with ``spec.managedBy`` and without ``spec.suspend`` instead (figures before 2026-11-27,
session 18): the hub then suspends each with a write of its own, which no deployment makes.

Figures: ``jobs_per_s`` (Jobs / (last running - first create request)), ``p50_s``/``p99_s``
(create request to running in a worker, per Job), ``create_per_s`` (how fast the clients
created them), the Jobs each worker ran, and the CPU seconds each process used during
the run (where the time goes) and per Job, and ``machine_ms`` (:mod:`.machine`) beside the run.
``settled_cpu_ms_per_job_*``: the same once every process is idle again (``settle_s`` after the
last Job ran): with the work the run left behind, e.g. the hub's Events, which go out in the
background as client-go's recorder sends them.
``--profile DIR`` samples every process with py-spy during the run (``DIR/<process>.txt``, collapsed stacks).
``--dispatcher NAME`` is the hub's ``multiKueue.dispatcherName`` (default Kueue's, AllAtOnce: a copy in
every worker, the losers' deleted; ``mkhub.dev/capacity-aware``: one nominee at a time).
"""

from __future__ import annotations

import argparse
import http.client
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from hub.api.config import ALL_AT_ONCE, INCREMENTAL
from hub.federation.capacity import CAPACITY_AWARE
from hub.ports import free_port
from hub.service.webhook import webhook_configuration

from .kube_bench import _py_spy
from .machine import machine_speed
from .procstat import compile_sources, cpu_seconds, percentile, wait_idle

MKHUB = [sys.executable, "-m", "hub.cli"]
MKAGENT = [sys.executable, "-m", "worker_agent"]
NS = "bench"
MANAGED_BY = "kueue.x-k8s.io/multikueue"
BIG = 1_000_000


def _objects(workers: list[str], manager: bool) -> list[dict[str, Any]]:
    g = "kueue.x-k8s.io/v1beta1"
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {"apiVersion": g, "kind": "ResourceFlavor", "metadata": {"name": "bench-flavor"}},
    ]
    cq: dict[str, Any] = {"apiVersion": g, "kind": "ClusterQueue", "metadata": {"name": "bench-cq"}, "spec": {
        "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "bench-flavor", "resources": [{"name": "cpu", "nominalQuota": str(BIG)}]}]}]}}
    if manager:
        out += [
            *({"apiVersion": g, "kind": "MultiKueueCluster", "metadata": {"name": w},
               "spec": {"kubeConfig": {"locationType": "Secret", "location": f"{w}-kubeconfig"}}}
              for w in workers),
            {"apiVersion": g, "kind": "MultiKueueConfig", "metadata": {"name": "bench"}, "spec": {"clusters": workers}},
            {"apiVersion": g, "kind": "AdmissionCheck", "metadata": {"name": "multikueue"}, "spec": {
                "controllerName": "kueue.x-k8s.io/multikueue",
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "bench"}}},
        ]
        cq["spec"]["admissionChecks"] = ["multikueue"]
    out += [cq, {"apiVersion": g, "kind": "LocalQueue", "metadata": {"name": "bench-lq", "namespace": NS},
                 "spec": {"clusterQueue": "bench-cq"}}]
    return out


def job(name: str, webhook: bool = True) -> dict[str, Any]:
    """A user's Job; without the webhook, marked for MultiKueue by hand."""
    spec: dict[str, Any] = {"parallelism": 1, "completions": 1, "template": {"spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}
    if not webhook:
        spec = {"managedBy": MANAGED_BY, **spec}
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "bench-lq"},
                     "annotations": {"mkhub.dev/sim-duration": "10h"}},
        "spec": spec,
    }


class Proc:
    def __init__(self, name: str, argv: list[str], log: Path) -> None:
        self.name = name
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait_log(self, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{self.name}: no {text!r}:\n{tail}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class RunningClock:
    """A watch of one worker's Jobs: when each name first had a running pod."""

    def __init__(self, port: int, seen: dict[str, tuple[float, str]], lock: threading.Lock, worker: str) -> None:
        self.port, self.seen, self.lock, self.worker = port, seen, lock, worker
        self.stop = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self.stop.is_set():
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            try:
                conn.request("GET", f"/apis/batch/v1/namespaces/{NS}/jobs?watch=1")
                resp = conn.getresponse()
                while not self.stop.is_set():
                    raw = resp.readline()
                    if not raw:
                        break
                    obj = (json.loads(raw) if raw.strip() else {}).get("object") or {}
                    if int((obj.get("status") or {}).get("active") or 0) >= 1:
                        name = obj["metadata"]["name"]
                        with self.lock:
                            self.seen.setdefault(name, (time.monotonic(), self.worker))
            except (OSError, ValueError):
                time.sleep(0.1)
            finally:
                conn.close()


def _stop_spies(spies: list[subprocess.Popen[bytes]]) -> None:
    while spies:
        spy = spies.pop()
        spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        spy.wait(60)


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> None:
    subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], input=stdin, check=True, capture_output=True,
                   text=True, timeout=120)


DISPATCHERS = (ALL_AT_ONCE, INCREMENTAL, CAPACITY_AWARE)  # the built-in ones: an external one needs its controller


def run(jobs: int, workers: int, threads: int, work: Path, timeout: float,
        profile: Path | None = None, dispatcher: str | None = None, webhook: bool = True) -> dict[str, float]:
    names = [f"w{i}" for i in range(1, workers + 1)]
    procs: dict[str, Proc] = {}
    ports: dict[str, int] = {}
    clocks: list[RunningClock] = []
    spies: list[subprocess.Popen[bytes]] = []
    try:
        for cluster in ("manager", *names):
            ports[cluster] = free_port()
            # A burst-sized watch window, as kube-apiserver's watch cache grows to (75 s of history).
            procs[cluster] = Proc(cluster, [*MKHUB, "dev-cluster", "--data-dir", str(work / cluster), "--listen",
                                            f"127.0.0.1:{ports[cluster]}", "--watch-window", "102400"], work / f"{cluster}.log")
        for cluster in ("manager", *names):
            procs[cluster].wait_log("Kubernetes API on")
            kubectl(work / cluster / "kubeconfig", "apply", "-f", "-",
                    stdin=yaml.safe_dump_all(_objects(names, cluster == "manager")))
        hub_port = free_port()
        config: list[str] = []
        if dispatcher is not None:  # v1beta1: no waitForPodsReady, as without a --config
            (work / "hub-config.yaml").write_text(yaml.safe_dump({
                "apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration",
                "multiKueue": {"dispatcherName": dispatcher}}))
            config = ["--config", str(work / "hub-config.yaml")]
        hooks: list[str] = []
        if webhook:
            certs = work / "certs"
            subprocess.run([*MKHUB, "certs", "--out", str(certs)], check=True, capture_output=True, timeout=60)
            webhook_port = free_port()
            hooks = ["--webhook-listen", f"127.0.0.1:{webhook_port}", "--webhook-tls-dir", str(certs)]
        procs["hub"] = Proc("hub", [*MKHUB, "serve", "--kubeconfig", str(work / "manager" / "kubeconfig"), "--insecure",
                                    "--listen", f"127.0.0.1:{hub_port}", "--leader-elect", "false", *config, *hooks],
                            work / "hub.log")
        procs["hub"].wait_log("state restored; serving")
        if webhook:
            kubectl(work / "manager" / "kubeconfig", "apply", "-f", "-",
                    stdin=yaml.safe_dump(webhook_configuration(webhook_port, certs)))
        for w in names:
            procs[f"agent-{w}"] = Proc(f"agent-{w}", [*MKAGENT, "--hub", f"127.0.0.1:{hub_port}", "--insecure", "--cluster", w,
                                                      "--kubeconfig", str(work / w / "kubeconfig")], work / f"agent-{w}.log")
        for w in names:
            procs[f"agent-{w}"].wait_log("connected to hub")
        seen: dict[str, tuple[float, str]] = {}
        lock = threading.Lock()
        clocks = [RunningClock(ports[w], seen, lock, w) for w in names]
        time.sleep(0.5)  # the watches are open
        if profile is not None:
            spies = [_py_spy(p.proc.pid, profile / f"{n}.txt") for n, p in procs.items()]
        cpu0 = {n: cpu_seconds(p.proc.pid) for n, p in procs.items()}
        created: dict[str, float] = {}
        local = threading.local()

        def create(name: str) -> None:
            conn = getattr(local, "conn", None)
            if conn is None:
                conn = local.conn = http.client.HTTPConnection("127.0.0.1", ports["manager"], timeout=60)
            body = json.dumps(job(name, webhook))
            created[name] = time.monotonic()
            conn.request("POST", f"/apis/batch/v1/namespaces/{NS}/jobs", body, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            resp.read()
            if resp.status != 201:
                raise RuntimeError(f"create {name}: HTTP {resp.status}")

        t0 = time.monotonic()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(create, [f"job-{i:05d}" for i in range(jobs)]))
        created_in = time.monotonic() - t0
        deadline = time.monotonic() + timeout
        while True:
            with lock:
                done = len(seen)
            if done >= jobs or time.monotonic() > deadline:
                break
            for p in procs.values():
                if p.proc.poll() is not None:
                    raise RuntimeError(f"{p.name} exited: {p.log}")
            time.sleep(0.2)
        cpu = {n: cpu_seconds(p.proc.pid) - cpu0[n] for n, p in procs.items()}
        running_at = time.monotonic()
        for p in procs.values():  # work the run left behind (Events sent in the background, late statuses)
            wait_idle(p.proc.pid, quiet=0.03, every=0.3, timeout=30.0)
        settled = {n: cpu_seconds(p.proc.pid) - cpu0[n] for n, p in procs.items()}
        settle_s = time.monotonic() - running_at
        _stop_spies(spies)
        with lock:
            final = dict(seen)
        if len(final) < jobs:
            raise RuntimeError(f"only {len(final)} of {jobs} Jobs running in a worker within {timeout:.0f}s")
        latencies = [final[n][0] - created[n] for n in created]
        span = max(t for t, _ in final.values()) - min(created.values())
        out = {
            "jobs": float(jobs), "workers": float(workers), "jobs_per_s": jobs / span,
            "create_per_s": jobs / created_in, "p50_s": percentile(latencies, 0.50), "p99_s": percentile(latencies, 0.99),
        }
        for w in names:
            out[f"ran_on_{w}"] = float(sum(1 for _, where in final.values() if where == w))
        for n, c in cpu.items():
            out[f"cpu_s_{n.replace('-', '_')}"] = c
            out[f"cpu_ms_per_job_{n.replace('-', '_')}"] = c * 1000 / jobs
        out["cpu_ms_per_job_total"] = sum(cpu.values()) * 1000 / jobs
        for n, c in settled.items():
            out[f"settled_cpu_ms_per_job_{n.replace('-', '_')}"] = c * 1000 / jobs
        out["settled_cpu_ms_per_job_total"] = sum(settled.values()) * 1000 / jobs
        out["settle_s"] = settle_s
        return out
    finally:
        _stop_spies(spies)
        for clock in clocks:
            clock.stop.set()
        for name in [n for n in procs if n.startswith("agent")] + ["hub", "manager", *names]:
            if name in procs:
                procs[name].stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mkhub bench kube --workers N", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, required=True, help="worker clusters (each a dev-cluster and an agent)")
    parser.add_argument("--jobs", type=int, default=1000, help="Jobs created in the manager (default 1000)")
    parser.add_argument("--threads", type=int, default=8, help="client threads creating them (default 8)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds for all to run (default 600)")
    parser.add_argument("--profile", type=Path, default=None, metavar="DIR",
                        help="py-spy every process during the run into DIR/<process>.txt")
    parser.add_argument("--dispatcher", default=None, metavar="NAME",
                        help="the hub's multiKueue.dispatcherName (default Kueue's AllAtOnce; mkhub.dev/capacity-aware)")
    parser.add_argument("--no-webhook", action="store_true",
                        help="no Job webhook: Jobs created unsuspended with spec.managedBy, suspended by the hub")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.jobs < 1:
        parser.error("--workers and --jobs must be at least 1")
    if args.dispatcher not in (None, *DISPATCHERS):
        # Any other name is an external dispatcher (Kueue's rule): nothing here would ever nominate a worker.
        parser.error(f"--dispatcher: {args.dispatcher!r} is none of {', '.join(DISPATCHERS)}")
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    compile_sources()  # start-up as a deployment's (bytecode compiled at install)
    with tempfile.TemporaryDirectory(prefix="mkhub-bench-kube-fleet-") as tmp, machine_speed() as machine:
        try:
            figures = run(args.jobs, args.workers, args.threads, Path(tmp), args.timeout, args.profile, args.dispatcher,
                          not args.no_webhook)
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    figures["machine_ms"] = machine.median_ms  # the fixed work's CPU ms beside the run (hub.bench.machine)
    figures = {k: round(v, 3) for k, v in figures.items()}
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    else:
        width = max(len(k) for k in figures)
        for key, value in figures.items():
            print(f"{key:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
