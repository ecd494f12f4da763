"""``mkhub bench tas``: topology-aware scheduling in the engine at cluster scale.

A Topology of blocks, racks and hosts (default 8 x 16 x 32 = 4,096 Nodes of 8 GPUs), one TAS
flavor and a ClusterQueue whose quota is the whole cluster, so placement, not quota, decides.
A backlog of workloads of mixed constraints (rack required, rack preferred, block required,
unconstrained, rack slices within a block; 1 to 32 pods of 1, 2, 4 or 8 GPUs) is admitted
cycle by cycle; when a cycle admits nothing, the oldest running workloads finish, freeing
their nodes. Reported: placements per second, the p50 / p99 time of a cycle that placed a
workload (wall and CPU), and CPU per admission, beside the same backlog on a flavor without a topology
(quota only) for the cost TAS adds.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import deque
from typing import Any

from hub.api.config import Configuration
from hub.api.registry import parse_object
from hub.api.workload import Workload
from hub.engine.engine import Engine

BLOCK, RACK, HOST = "cloud.example.com/block", "cloud.example.com/rack", "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"


def _objects(blocks: int, racks: int, hosts: int, tas: bool) -> list[dict[str, Any]]:
    nodes = blocks * racks * hosts
    flavor_spec: dict[str, Any] = {"nodeLabels": {"pool": "gpu"}}
    if tas:
        flavor_spec["topologyName"] = "default"
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": "default"},
         "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "gpu"}, "spec": flavor_spec},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO",
                  "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                      {"name": "gpu", "resources": [{"name": GPU, "nominalQuota": str(8 * nodes)}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "bench"},
         "spec": {"clusterQueue": "cq"}},
    ]
    for b in range(blocks):
        for r in range(racks):
            for h in range(hosts):
                name = f"b{b}-r{r}-h{h}"
                out.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
                    BLOCK: f"b{b}", RACK: f"b{b}-r{r}", HOST: name, "pool": "gpu"}},
                    "status": {"allocatable": {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"},
                               "conditions": [{"type": "Ready", "status": "True"}]}})
    return out


def _workloads(n: int, seed: int, tas: bool) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        gpus = rng.choice((1, 2, 4, 8))
        pods = rng.choice((1, 2, 4, 8, 16, 32))
        kind = rng.random()
        request: dict[str, Any]
        if kind < 0.3:
            request = {"required": RACK}
        elif kind < 0.55:
            request = {"preferred": RACK}
        elif kind < 0.65:
            request = {"required": BLOCK}
        elif kind < 0.85:
            request = {"unconstrained": True}
        else:
            size = min(pods, 4)
            request = {"required": BLOCK, "podSetSliceRequiredTopology": RACK, "podSetSliceSize": size}
        ps: dict[str, Any] = {"name": "main", "count": pods, "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "c", "image": "pause", "resources": {"requests": {GPU: str(gpus)}}}]}}}
        if tas:  # the same draws either way, so both runs get the same pods
            ps["topologyRequest"] = request
        out.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                    "metadata": {"name": f"w{i:05d}", "namespace": "bench", "uid": f"u{i}"},
                    "spec": {"queueName": "lq", "podSets": [ps]}})
    return out


def run(blocks: int, racks: int, hosts: int, count: int, tas: bool, seed: int = 1) -> dict[str, float]:
    engine = Engine(Configuration(), now=0.0)
    for manifest in _objects(blocks, racks, hosts, tas):
        engine.apply(parse_object(manifest))
    parsed = [parse_object(m) for m in _workloads(count, seed, tas)]
    for wl in parsed:
        engine.apply(wl)
    running: deque[str] = deque()
    placed_cycles: list[float] = []
    placed_cpu: list[float] = []  # CPU time of the same cycles: what a loaded machine does not inflate
    admitted = cycles = 0
    now = 0.0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    while admitted < count:
        now += 1.0
        t0, c0 = time.perf_counter(), time.process_time()
        result = engine.schedule(now)
        elapsed, cpu_used = time.perf_counter() - t0, time.process_time() - c0
        cycles += 1
        changed, _ = engine.drain()
        fresh = [w for w in changed if isinstance(w, Workload) and w.is_quota_reserved and w.meta.key not in running]
        for w in fresh:
            running.append(w.meta.key)
        if result.admitted:
            admitted += result.admitted
            placed_cycles.append(elapsed / result.admitted)
            placed_cpu.append(cpu_used / result.admitted)
            continue
        if not running:
            break  # nothing runs and nothing fits: what is left can never be placed (larger than any domain)
        for _ in range(max(1, len(running) // 8)):  # free the oldest eighth of what runs
            engine.finish(running.popleft(), now=now)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    placed_cycles.sort()
    placed_cpu.sort()
    return {
        "nodes": float(blocks * racks * hosts),
        "workloads": float(count),
        "admitted": float(admitted),
        "cycles": float(cycles),
        "placements_per_s": admitted / wall if wall else 0.0,
        "placement_p50_ms": statistics.median(placed_cycles) * 1000 if placed_cycles else 0.0,
        "placement_p99_ms": placed_cycles[min(len(placed_cycles) - 1, int(len(placed_cycles) * 0.99))] * 1000
        if placed_cycles else 0.0,
        "placement_cpu_p50_ms": statistics.median(placed_cpu) * 1000 if placed_cpu else 0.0,
        "placement_cpu_p99_ms": placed_cpu[min(len(placed_cpu) - 1, int(len(placed_cpu) * 0.99))] * 1000
        if placed_cpu else 0.0,
        "cpu_ms_per_admission": cpu * 1000 / admitted if admitted else 0.0,
        "seconds": wall,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mkhub bench tas", description=__doc__)
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--racks", type=int, default=16, help="racks per block")
    parser.add_argument("--hosts", type=int, default=32, help="hosts per rack")
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if min(args.blocks, args.racks, args.hosts, args.workloads) < 1:
        print("error: --blocks, --racks, --hosts and --workloads must be at least 1", file=sys.stderr)
        return 2
    with_tas = run(args.blocks, args.racks, args.hosts, args.workloads, True, args.seed)
    without = run(args.blocks, args.racks, args.hosts, args.workloads, False, args.seed)
    figures = {**{f"tas_{k}": v for k, v in with_tas.items()}, **{f"quota_only_{k}": v for k, v in without.items()}}
    if args.json:
        print(json.dumps(figures, sort_keys=True))
        return 0
    print(f"cluster: {args.blocks} blocks x {args.racks} racks x {args.hosts} hosts = {int(with_tas['nodes'])} nodes; "
          f"{args.workloads} workloads of mixed constraints")
    for label, f in (("with TAS", with_tas), ("quota only", without)):
        print(f"{label:>11}: {f['admitted']:.0f} admitted in {f['seconds']:.1f} s, {f['placements_per_s']:.0f} placements/s, "
              f"cycle per placement p50 {f['placement_p50_ms']:.2f} ms / p99 {f['placement_p99_ms']:.2f} ms "
              f"(CPU {f['placement_cpu_p50_ms']:.2f} / {f['placement_cpu_p99_ms']:.2f} ms), "
              f"CPU {f['cpu_ms_per_admission']:.2f} ms per admission")
    return 0


if __name__ == "__main__":
    sys.exit(main())
