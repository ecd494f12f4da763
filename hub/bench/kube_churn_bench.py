"""``mkhub bench kube --pod-churn N``: the hub on a Kubernetes API server while pods Kueue does not
manage come and go on the nodes.

The hub watches every Pod (topology-aware scheduling counts a bound pod Kueue did not place against
its node, as Kueue's pod usage controller does). On ``mkhub dev-cluster --nodes`` (``--churn-nodes``)
with a Topology, a TAS flavor and ``--churn-tas-backlog`` TAS Workloads too big for any rack (they
wait, inadmissible, as a backlog of gangs does), ``--pending`` one-CPU Workloads wait in a
non-TAS ClusterQueue with no quota. Then:

1. **without churn**: quota for them (after a warm-up quarter); the hub admits them (hub CPU per
   admission); as many again are created and wait;
2. **idle churn**: N pods kept bound (``spec.nodeName``) in namespace ``churn``, ``--churn-rate`` of them
   replaced per second (a create and a delete each), for ``--churn-seconds``: hub CPU per replaced pod;
3. **with churn**: the same churn on, quota for the second batch: hub CPU per admission again.

``--churn-no-tas`` runs it without the Topology, the TAS flavor and its backlog (Kueue watches the
Pods then too: its TAS controllers run whenever the TopologyAwareScheduling gate is on).
The hub's resident memory (``VmRSS``) is read before the pods, with them, and after the idle churn.
``--in-process``: the hub reconciler alone, no API server (:mod:`.pod_churn_inproc`).
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .kube_bench import (
    NS,
    EventClock,
    Hub,
    _pending,
    _release,
    _send,
    _start_dev_cluster,
    _transport,
    create_many,
    print_figures,
    reserved,
    setup,
)
from .machine import machine_speed
from .procstat import compile_sources, cpu_seconds, wait_idle

CHURN_NS = "churn"
RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"


def rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def tas_setup(transport: Any, backlog: int, rack_cpu: int) -> None:
    """A Topology, a TAS flavor on the dev-cluster's nodes, its queue, and ``backlog`` Workloads each
    wanting a rack and one CPU more: inadmissible while the nodes stand."""
    from hub.store.kube import requests as rq

    objs: list[dict[str, Any]] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": "bench-topology"},
         "spec": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": HOST}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "bench-tas"},
         "spec": {"nodeLabels": {"cloud.provider.com/node-group": "tas-group"}, "topologyName": "bench-topology"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "tas-cq"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
             {"name": "bench-tas", "resources": [{"name": "cpu", "nominalQuota": str(100 * rack_cpu)}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "tas-lq", "namespace": NS},
         "spec": {"clusterQueue": "tas-cq"}},
    ]
    for obj in objs:
        _send(transport, rq.create(rq.resource_for(str(obj["kind"])), obj), ok=(200, 201, 409))
    res = rq.resource_for("Workload")
    for i in range(backlog):
        _send(transport, rq.create(res, {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": f"gang-{i:04d}", "namespace": NS, "annotations": {"mkhub.dev/sim-duration": "10h"}},
            "spec": {"queueName": "tas-lq", "podSets": [{
                "name": "main", "count": rack_cpu + 1, "topologyRequest": {"required": RACK},
                "template": {"spec": {"containers": [
                    {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]},
        }))


class Churn:
    """A thread keeping ``live`` pods bound to the nodes, replacing ``rate`` of them a second."""

    def __init__(self, transport: Any, nodes: list[str], live: int, rate: float) -> None:
        self.transport, self.nodes, self.live, self.rate = transport, nodes, live, rate
        self.created = 0
        self.replaced = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _pod(self, i: int) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"churn-{i:07d}", "namespace": CHURN_NS, "annotations": {"mkhub.dev/sim-duration": "10h"}},
                "spec": {"nodeName": self.nodes[i % len(self.nodes)], "restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "10m", "memory": "1Mi"}}}]}}

    def fill(self) -> None:
        from hub.store.kube import requests as rq

        res = rq.resource_for("Pod")
        while self.created < self.live:
            _send(self.transport, rq.create(res, self._pod(self.created)))
            self.created += 1

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def _run(self) -> None:
        from hub.store.kube import requests as rq

        res = rq.resource_for("Pod")
        start = time.perf_counter()
        done = 0
        while not self._stop.is_set():
            due = start + done / self.rate
            wait = due - time.perf_counter()
            if wait > 0 and self._stop.wait(wait):
                return
            _send(self.transport, rq.delete(res, CHURN_NS, f"churn-{self.created - self.live:07d}"), ok=(200, 202, 404))
            _send(self.transport, rq.create(res, self._pod(self.created)))
            self.created += 1
            self.replaced += 1
            done += 1


def _admit(transport: Any, hub: Hub, prefix: str, n: int, quota: int) -> dict[str, float]:
    clock = EventClock(transport, reserved, prefix)
    try:
        cpu = cpu_seconds(hub.proc.pid)
        released = time.perf_counter()
        _release(transport, quota)
        if not clock.wait(n, 900):
            raise RuntimeError(f"only {len(clock.seen)} of {n} workloads got QuotaReserved")
        elapsed = max(clock.seen.values()) - released
        return {"cpu_ms_per_admission": (cpu_seconds(hub.proc.pid) - cpu) * 1000 / n, "admissions_per_s": n / max(1e-9, elapsed)}
    finally:
        clock.close()


def bench_churn(kubeconfig: Path, n: int, live: int, rate: float, seconds: float, backlog: int, rack_cpu: int,
                threads: int, work: Path, hub_args: list[str], tas: bool) -> dict[str, float]:
    from hub.store.kube import requests as rq

    transport = _transport(kubeconfig)
    figures: dict[str, float] = {}
    hub: Hub | None = None
    churn: Churn | None = None
    try:
        setup(transport, 0)
        _send(transport, rq.create(rq.resource_for("Namespace"), {"apiVersion": "v1", "kind": "Namespace",
                                                                  "metadata": {"name": CHURN_NS}}), ok=(200, 201, 409))
        if tas:
            tas_setup(transport, backlog, rack_cpu)
        nodes = sorted(o["metadata"]["name"] for o in _send(transport, rq.list_(rq.resource_for("Node"), ""))["items"])
        if not nodes:
            raise RuntimeError("the API server has no Nodes: run mkhub dev-cluster with --nodes")
        warm = max(1, n // 4)  # admitted first, so neither measured phase pays the hub's first admissions
        create_many(transport, [f"w-{i:05d}" for i in range(warm)], threads)
        create_many(transport, [f"p-{i:05d}" for i in range(n)], threads)
        waiting = EventClock(transport, _pending, "p-")
        hub = Hub(kubeconfig, work / "hub-churn.log", hub_args)
        hub.wait_serving()
        if not waiting.wait(n, 900):
            raise RuntimeError(f"only {len(waiting.seen)} of {n} workloads were marked pending")
        waiting.close()
        wait_idle(hub.proc.pid)
        _admit(transport, hub, "w-", warm, warm)
        wait_idle(hub.proc.pid)
        quiet = _admit(transport, hub, "p-", n, warm + n)
        figures.update({f"quiet_{k}": v for k, v in quiet.items()})
        # The second half only now: each phase admits its half with nothing else pending.
        waiting = EventClock(transport, _pending, "q-")
        create_many(transport, [f"q-{i:05d}" for i in range(n)], threads)
        if not waiting.wait(n, 900):
            raise RuntimeError(f"only {len(waiting.seen)} of {n} workloads were marked pending")
        waiting.close()
        wait_idle(hub.proc.pid)
        figures["hub_rss_mib_before_pods"] = rss_mib(hub.proc.pid)
        churn = Churn(transport, nodes, live, rate)
        churn.fill()
        wait_idle(hub.proc.pid)
        figures["hub_rss_mib_with_live_pods"] = rss_mib(hub.proc.pid)
        cpu, replaced, start = cpu_seconds(hub.proc.pid), churn.replaced, time.perf_counter()
        churn.start()
        time.sleep(seconds)
        figures["idle_churn_pods_per_s"] = (churn.replaced - replaced) / (time.perf_counter() - start)
        figures["idle_hub_cpu_ms_per_replaced_pod"] = (cpu_seconds(hub.proc.pid) - cpu) * 1000 / max(1, churn.replaced - replaced)
        figures["idle_hub_cpu_share_of_a_core"] = (cpu_seconds(hub.proc.pid) - cpu) / (time.perf_counter() - start)
        figures["hub_rss_mib_after_idle_churn"] = rss_mib(hub.proc.pid)
        replaced, start = churn.replaced, time.perf_counter()
        busy = _admit(transport, hub, "q-", n, warm + 2 * n)
        figures["churn_pods_per_s_while_admitting"] = (churn.replaced - replaced) / (time.perf_counter() - start)
        figures.update({f"churn_{k}": v for k, v in busy.items()})
        churn.stop()
        figures["churn_over_quiet_cpu"] = busy["cpu_ms_per_admission"] / quiet["cpu_ms_per_admission"]
        figures["live_churn_pods"] = live
        figures["nodes"] = len(nodes)
        figures["tas_backlog"] = backlog if tas else 0
    finally:
        if churn is not None:
            churn.stop()
        if hub is not None:
            hub.stop()
        transport.close()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mkhub bench kube --pod-churn N", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pod-churn", type=int, required=True, metavar="N", help="pods Kueue does not manage kept bound")
    parser.add_argument("--churn-rate", type=float, default=50.0, help="pods replaced per second (default 50)")
    parser.add_argument("--churn-seconds", type=float, default=20.0, help="the idle churn phase (default 20)")
    parser.add_argument("--churn-nodes", default="racks=4,hosts=8,cpu=64", help="mkhub dev-cluster --nodes spec")
    parser.add_argument("--churn-tas-backlog", type=int, default=50, help="inadmissible TAS Workloads (default 50)")
    parser.add_argument("--churn-no-tas", action="store_true", help="no Topology, no TAS flavor, no backlog")
    parser.add_argument("--pending", type=int, default=2000, help="Workloads admitted per phase (default 2000)")
    parser.add_argument("--threads", type=int, default=8, help="client threads for bulk writes")
    parser.add_argument("--hub-arg", action="append", default=[], help="extra argument for mkhub serve (repeatable)")
    parser.add_argument("--in-process", action="store_true",
                        help="the hub reconciler alone on an in-memory store, no API server (hub.bench.pod_churn_inproc)")
    parser.add_argument("--steps", type=int, default=1000, help="--in-process: pods replaced (default 1000)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    spec = dict(part.split("=", 1) for part in args.churn_nodes.split(","))
    rack_cpu = int(spec.get("hosts", "1")) * int(spec.get("cpu", "8"))
    if args.in_process:
        from .pod_churn_inproc import run

        with machine_speed() as machine:
            figures = run(args.pod_churn, args.steps, int(spec.get("racks", "1")), int(spec.get("hosts", "1")),
                          int(spec.get("cpu", "8")), args.churn_tas_backlog, not args.churn_no_tas)
        figures["machine_ms"] = machine.median_ms
        return print_figures(figures, args.json)
    compile_sources()
    with tempfile.TemporaryDirectory(prefix="mkhub-bench-churn-") as tmp, machine_speed() as machine:
        work = Path(tmp)
        server = _start_dev_cluster(work / "api", "--nodes", args.churn_nodes)
        try:
            figures = bench_churn(work / "api" / "kubeconfig", args.pending, args.pod_churn, args.churn_rate,
                                  args.churn_seconds, args.churn_tas_backlog, rack_cpu, args.threads, work,
                                  args.hub_arg, not args.churn_no_tas)
        finally:
            server.terminate()
            server.wait(30)
    figures["machine_ms"] = machine.median_ms
    return print_figures(figures, args.json)
