"""``mkhub bench kube --jobsets N``: the hub's JobSet integration on a Kubernetes API server.

``mkhub dev-cluster --without-operators`` (started on a free loopback port, or any
cluster given with ``--kubeconfig``) with the JobSet CRD applied but no JobSet operator,
so only the hub works: N JobSets of a mix of shapes wait, created suspended (as Kueue's
webhook leaves them), in one ClusterQueue big enough for all; ``mkhub serve --kubeconfig``
starts with the ``jobset.x-k8s.io/jobset`` framework enabled, lists them, creates a
Workload for each (one pod set per replicatedJob), admits them and resumes each JobSet with
its flavor's nodeSelector in every template. Figures:

* ``jobset_admissions_per_s``: first to last ``QuotaReserved`` on a watch of the Workloads;
* ``jobset_resumed_per_s``: from the hub's start to the last JobSet seen unsuspended;
* ``hub_cpu_ms_per_pod_set``: the hub process's CPU (start-up included) per admitted pod set.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from .kube_bench import (
    NS,
    EventClock,
    Hub,
    _send,
    _start_dev_cluster,
    _transport,
    print_figures,
    reserved,
    setup,
)
from .machine import machine_speed
from .procstat import cpu_seconds

# (replicatedJob name, replicas, parallelism): a driver and workers; workers only; three roles.
SHAPES: tuple[tuple[tuple[str, int, int], ...], ...] = (
    (("driver", 1, 1), ("workers", 2, 2)),
    (("workers", 4, 1),),
    (("ps", 1, 1), ("chief", 1, 1), ("workers", 2, 4)),
)
CONFIG = {"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration",
          "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]}}


def jobset(name: str, shape: tuple[tuple[str, int, int], ...]) -> dict[str, Any]:
    def replicated(rj: str, replicas: int, parallelism: int) -> dict[str, Any]:
        return {"name": rj, "replicas": replicas, "template": {"spec": {
            "parallelism": parallelism, "completions": parallelism, "template": {
                "metadata": {"annotations": {"mkhub.dev/sim-duration": "10h"}},
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}}

    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "bench-lq"}},
            "spec": {"suspend": True, "replicatedJobs": [replicated(*rj) for rj in shape]}}


def pods_of(shape: tuple[tuple[str, int, int], ...]) -> int:
    return sum(replicas * parallelism for _, replicas, parallelism in shape)


class ResumeClock:
    """When each JobSet was first seen unsuspended (a watch of JobSets)."""

    def __init__(self, transport: Any) -> None:
        from hub.store.kube import requests as rq

        res = rq.resource_for("JobSet")
        listed = _send(transport, rq.list_(res, NS, limit=1))
        self.seen: dict[str, float] = {}
        self._stream = transport.stream(rq.watch(res, listed["metadata"]["resourceVersion"], namespace=NS,
                                                 timeout_seconds=3600), read_timeout=3600)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for line in self._stream.lines():
                obj = json.loads(line).get("object") or {}
                name = (obj.get("metadata") or {}).get("name")
                if name and name not in self.seen and (obj.get("spec") or {}).get("suspend") is False:
                    self.seen[name] = time.perf_counter()
        except Exception:  # the stream closed at the end of the run
            return

    def close(self) -> None:
        self._stream.close()


def bench_jobsets(kubeconfig: Path, n: int, threads: int, work: Path, hub_args: list[str],
                  server_pid: int | None = None) -> dict[str, float]:
    from hub.devcluster.operators import jobset_crd
    from hub.store.kube import requests as rq

    transport = _transport(kubeconfig)
    figures: dict[str, float] = {}
    hub: Hub | None = None
    try:
        crds = rq.Resource("CustomResourceDefinition", "apiextensions.k8s.io", "v1", "customresourcedefinitions", False)
        _send(transport, rq.create(crds, jobset_crd()), ok=(200, 201, 409))
        time.sleep(1.0)  # the CRD's kind served (the dev-cluster serves it at once; a real cluster within a second)
        shapes = [SHAPES[i % len(SHAPES)] for i in range(n)]
        pods = sum(pods_of(s) for s in shapes)
        pod_sets = sum(len(s) for s in shapes)
        setup(transport, pods + 10)
        res = rq.resource_for("JobSet")
        with ThreadPoolExecutor(max(1, threads)) as pool:
            list(pool.map(lambda i: _send(transport, rq.create(res, jobset(f"js-{i:05d}", shapes[i]))), range(n)))
        clock = EventClock(transport, reserved, "jobset-js-")
        resumed = ResumeClock(transport)
        config = work / "jobset-config.yaml"
        config.write_text(yaml.safe_dump(CONFIG))
        start = time.perf_counter()
        server_cpu = cpu_seconds(server_pid) if server_pid else float("nan")
        hub = Hub(kubeconfig, work / "hub-jobsets.log", ["--config", str(config), *hub_args])
        hub.wait_serving()
        if not clock.wait(n, 900):
            raise RuntimeError(f"only {len(clock.seen)} of {n} JobSets' Workloads got QuotaReserved")
        deadline = time.perf_counter() + 300
        while len(resumed.seen) < n and time.perf_counter() < deadline:
            time.sleep(0.05)
        times = sorted(clock.seen.values())
        figures["jobsets"] = n
        figures["jobset_pod_sets"] = pod_sets
        figures["jobset_admissions_per_s"] = n / max(1e-9, times[-1] - times[0])
        figures["jobset_admissions_per_s_from_start"] = n / (times[-1] - start)
        if len(resumed.seen) == n:
            figures["jobset_resumed_per_s_from_start"] = n / (max(resumed.seen.values()) - start)
        figures["hub_cpu_ms_per_pod_set"] = cpu_seconds(hub.proc.pid) * 1000 / pod_sets
        if server_pid:
            figures["server_cpu_ms_per_pod_set"] = (cpu_seconds(server_pid) - server_cpu) * 1000 / pod_sets
        clock.close()
        resumed.close()
    finally:
        if hub is not None:
            hub.stop()
        transport.close()
    return figures


def run(kubeconfig: Path | None, n: int, threads: int, hub_args: list[str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="mkhub-bench-jobsets-") as tmp:
        work = Path(tmp)
        proc = _start_dev_cluster(work / "jobsets", "--without-operators") if kubeconfig is None else None
        try:
            return bench_jobsets(kubeconfig or work / "jobsets" / "kubeconfig", n, threads, work, hub_args,
                                 proc.pid if proc is not None else None)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mkhub bench kube --jobsets N", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobsets", type=int, required=True, help="JobSets for the hub to admit (a mix of 3 shapes)")
    parser.add_argument("--kubeconfig", type=Path, default=None,
                        help="an API server with no JobSet operator (default: start mkhub dev-cluster --without-operators)")
    parser.add_argument("--threads", type=int, default=8, help="client threads for the creates")
    parser.add_argument("--hub-arg", action="append", default=[], help="extra argument for mkhub serve (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if args.jobsets <= 0:
        parser.error("--jobsets must be positive")
    with machine_speed() as machine:
        figures = run(args.kubeconfig, args.jobsets, args.threads, args.hub_arg)
    return print_figures({**figures, "machine_ms": machine.median_ms}, args.json)
