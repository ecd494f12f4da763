"""``mkhub bench engine``: admission throughput of the queueing engine.

Builds a synthetic cluster (ClusterQueues in cohorts, several flavors, a large
backlog of pending workloads), then runs scheduling cycles until every
workload has been admitted, with admitted workloads finishing at a steady
rate so capacity keeps turning over. Reports admissions per second, the
cycle-time distribution, memory per pending workload, and how the cost per
admission grows with the backlog.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import sys
import time
import tracemalloc
from collections import deque
from dataclasses import dataclass

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from hub.api.config import Configuration
from hub.api.meta import ObjectMeta
from hub.api.pods import ContainerResources, PodSpecInfo
from hub.api.queues import (
    ClusterQueue,
    FlavorQuotas,
    LocalQueue,
    Preemption,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
)
from hub.api.selectors import LabelSelector
from hub.api.workload import PodSet, Workload
from hub.engine.engine import Engine
from hub.obs import tracing
from hub.obs.logs import DecisionLog
from hub.obs.metrics import DecisionMetrics
from hub.obs.observer import ClusterObserver
from hub.tuning import GcPacer, tune_gc

GIB = 2**30


@dataclass(frozen=True)
class Shape:
    cluster_queues: int = 1000
    cohorts: int = 100
    flavors: int = 4
    pending: int = 100_000
    slots_per_flavor: int = 4  # workloads each CQ can run per flavor at nominal quota
    preemption: bool = False


def _pod_sets(count: int) -> list[tuple[PodSet, ...]]:
    """A few workload shapes, shared between workloads as real manifests of one Job template would be."""
    shapes = []
    for cpu_milli, mem_gib in ((1000, 1), (2000, 2), (500, 1), (1000, 4)):
        container = ContainerResources("main", (("cpu", cpu_milli), ("memory", mem_gib * GIB)), ())
        spec = PodSpecInfo(containers=(container,), per_pod_requests=(("cpu", cpu_milli), ("memory", mem_gib * GIB)))
        template = {"spec": {"containers": [{"name": "main"}]}}
        shapes.append((PodSet("main", count, template, spec),))
    return shapes


def build_engine(shape: Shape, config: Configuration | None = None) -> Engine:
    engine = Engine(config or Configuration(), now=0.0)
    for f in range(shape.flavors):
        engine.apply(ResourceFlavor(ObjectMeta(f"flavor-{f}")))
    from hub.api.others import Namespace

    engine.apply(Namespace(ObjectMeta("bench")))
    preemption = Preemption("LowerPriority", "LowerPriority") if shape.preemption else Preemption()
    for q in range(shape.cluster_queues):
        flavors = tuple(
            FlavorQuotas(
                f"flavor-{f}",
                (
                    ResourceQuota("cpu", 2000 * shape.slots_per_flavor),
                    ResourceQuota("memory", 4 * GIB * shape.slots_per_flavor),
                ),
            )
            for f in range(shape.flavors)
        )
        cq = ClusterQueue(
            ObjectMeta(f"cq-{q}"),
            resource_groups=(ResourceGroup(("cpu", "memory"), flavors),),
            cohort_name=f"cohort-{q % shape.cohorts}",
            namespace_selector=LabelSelector(),
            preemption=preemption,
        )
        engine.apply(cq)
        engine.apply(LocalQueue(ObjectMeta(f"lq-{q}", "bench"), cluster_queue=f"cq-{q}"))
    return engine


def add_workloads(engine: Engine, shape: Shape, count: int, start: int = 0, priority_base: int = 0) -> list[str]:
    shapes = _pod_sets(1)
    keys = []
    for i in range(start, start + count):
        wl = Workload(
            ObjectMeta(f"wl-{i}", "bench", uid=f"u{i}", creation_timestamp=float(i)),
            shapes[i % len(shapes)],
            queue_name=f"lq-{i % shape.cluster_queues}",
            priority=priority_base + (i % 3),
        )
        engine.apply(wl)
        keys.append(wl.meta.key)
    return keys


def measure_memory(shape: Shape) -> float:
    """Bytes the engine holds per pending workload (workload objects included)."""
    engine = build_engine(shape)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    add_workloads(engine, shape, shape.pending)
    engine.drain()
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    return grown / shape.pending


def observer_for(mode: str) -> ClusterObserver | None:
    """``--observe``: none (the bare engine), metrics (the hub's observer: Kueue's metrics and
    decision logs, tracing off), trace (the same with every span exported to memory)."""
    if mode == "none":
        return None
    if mode == "trace":
        tracing.enable(InMemorySpanExporter())
    return ClusterObserver(metrics=DecisionMetrics(CollectorRegistry()), decisions=DecisionLog("mkhub.bench.decisions"))


def run_admissions(shape: Shape, finish_lag_cycles: int = 2, observer: ClusterObserver | None = None) -> dict[str, float]:
    """Admit the whole backlog; admitted workloads finish ``finish_lag_cycles`` cycles later."""
    defaults = gc.get_threshold()
    engine = build_engine(shape)
    add_workloads(engine, shape, shape.pending)
    engine.drain()
    tune_gc()
    pacer = GcPacer()
    cycle_times: list[float] = []
    running: deque[list[str]] = deque()
    admitted_total = 0
    now = float(shape.pending)
    busy = 0.0
    while admitted_total < shape.pending:
        now += 1.0
        t0 = time.perf_counter()
        result = engine.schedule(now) if observer is None else observer.cycle(engine, now)
        t1 = time.perf_counter()
        changed, events = engine.drain()
        if observer is not None:
            observer.on_status(engine, changed, now)
            observer.on_events(engine, events, now)
        admitted = [e.key for e in events if e.type == "Admitted"]
        running.append(admitted)
        if len(running) > finish_lag_cycles:
            for key in running.popleft():
                engine.finish(key, True, now=now)
        changed, events = engine.drain()
        if observer is not None:
            observer.on_events(engine, events, now)
        pacer.after_round()  # as the hub's loop does after each round
        t2 = time.perf_counter()
        cycle_times.append(t1 - t0)
        busy += t2 - t0
        admitted_total += len(admitted)
        if result.heads == 0 and not running:
            break
        if result.heads == 0:
            # Nothing pending can fit right now: let everything running finish.
            t0 = time.perf_counter()
            for batch in running:
                for key in batch:
                    engine.finish(key, True, now=now)
            running.clear()
            engine.drain()
            busy += time.perf_counter() - t0
    t0 = time.perf_counter()
    for batch in running:
        for key in batch:
            engine.finish(key, True, now=now)
    engine.drain()
    busy += time.perf_counter() - t0
    gc.unfreeze()
    gc.set_threshold(*defaults)
    cycle_times.sort()
    return {
        "admissions": admitted_total,
        "seconds": busy,
        "admissions_per_s": admitted_total / busy if busy else 0.0,
        "cycles": len(cycle_times),
        "cycle_p50_ms": statistics.median(cycle_times) * 1000,
        "cycle_p99_ms": cycle_times[min(len(cycle_times) - 1, int(len(cycle_times) * 0.99))] * 1000,
        "us_per_admission": busy / admitted_total * 1e6 if admitted_total else 0.0,
    }


def run_preemption(shape: Shape, preemptors: int = 2000) -> dict[str, float]:
    """Fill every queue, then stream higher-priority workloads that must preempt to fit."""
    shape = Shape(**{**shape.__dict__, "preemption": True})
    engine = build_engine(shape)
    # Fill to capacity: each CQ holds slots_per_flavor * flavors small workloads.
    fill = shape.cluster_queues * shape.slots_per_flavor * shape.flavors
    add_workloads(engine, shape, fill)
    now = float(fill)
    while True:
        now += 1
        result = engine.schedule(now)
        engine.drain()
        if result.admitted == 0:
            break
    admitted_before = sum(len(s.reserving) for s in engine.cqs.values())
    add_workloads(engine, shape, preemptors, start=fill, priority_base=100)
    engine.drain()
    decisions: list[float] = []
    preempted = 0
    scheduler = engine.scheduler
    original = scheduler.get_assignments

    def timed(info, cq, nomination=None):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        out = original(info, cq, nomination)
        decisions.append(time.perf_counter() - t0)
        return out

    scheduler.get_assignments = timed  # type: ignore[method-assign]
    t_start = time.perf_counter()
    for _ in range(50):
        now += 1
        result = engine.schedule(now)
        _, events = engine.drain()
        for ev in events:
            if ev.type == "Evicted":
                engine.workload_stopped(ev.key, now)
                preempted += 1
        engine.drain()
        if result.heads == 0:
            break
    elapsed = time.perf_counter() - t_start
    decisions.sort()
    return {
        "admitted_before": admitted_before,
        "preemptors": preemptors,
        "victims": preempted,
        "preemption_decisions_per_s": len(decisions) / sum(decisions) if decisions else 0.0,
        "victim_choice_p50_ms": statistics.median(decisions) * 1000 if decisions else 0.0,
        "victim_choice_p99_ms": decisions[min(len(decisions) - 1, int(len(decisions) * 0.99))] * 1000 if decisions else 0.0,
        "seconds": elapsed,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mkhub bench engine", description=__doc__)
    parser.add_argument("--cluster-queues", type=int, default=1000)
    parser.add_argument("--cohorts", type=int, default=100)
    parser.add_argument("--flavors", type=int, default=4)
    parser.add_argument("--pending", type=int, default=100_000)
    parser.add_argument("--preemption", action="store_true", help="measure preemption decisions instead")
    parser.add_argument("--preemptors", type=int, default=2000)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    parser.add_argument("--observe", choices=("none", "metrics", "trace"), default="none",
                        help="run cycles through the hub's observer: none (default), metrics (metrics and decision logs, "
                        "tracing off), trace (also a span per cycle, exported to memory)")
    args = parser.parse_args(argv)
    logging.getLogger("mkhub.bench.decisions").setLevel(logging.WARNING)  # measured, not printed
    shape = Shape(args.cluster_queues, args.cohorts, args.flavors, args.pending)
    if args.preemption:
        figures = run_preemption(shape, args.preemptors)
        if args.json:
            print(json.dumps(figures, sort_keys=True))
        else:
            print(f"queues full with {figures['admitted_before']:.0f} admitted workloads; "
                  f"{figures['preemptors']:.0f} higher-priority arrivals")
            print(f"victims evicted:            {figures['victims']:.0f}")
            print(f"preemption decisions/s:     {figures['preemption_decisions_per_s']:.0f}")
            print(f"victim choice p50 / p99:    {figures['victim_choice_p50_ms']:.2f} / {figures['victim_choice_p99_ms']:.2f} ms")
        return 0
    main_run = run_admissions(shape, observer=observer_for(args.observe))
    growth: dict[int, dict[str, float]] = {}
    for n in (1_000, 10_000):
        if n < shape.pending:
            # Small backlogs finish in a fraction of a second: repeat and keep the median run.
            repeats = max(1, min(9, (50_000 // n) | 1))
            runs = [
                run_admissions(Shape(shape.cluster_queues, shape.cohorts, shape.flavors, n), observer=observer_for(args.observe))
                for _ in range(repeats)
            ]
            runs.sort(key=lambda r: r["us_per_admission"])
            growth[n] = runs[len(runs) // 2]
    bytes_per = measure_memory(shape)
    base = growth.get(1_000, main_run)
    figures = {
        **main_run,
        "bytes_per_pending": bytes_per,
        "cost_growth_100k_vs_1k": main_run["us_per_admission"] / base["us_per_admission"],
        **{f"us_per_admission_{n}": g["us_per_admission"] for n, g in growth.items()},
        **{f"admissions_per_s_{n}": g["admissions_per_s"] for n, g in growth.items()},
    }
    if args.json:
        print(json.dumps(figures, sort_keys=True))
        return 0
    print(f"cluster: {shape.cluster_queues} ClusterQueues in {shape.cohorts} cohorts, {shape.flavors} flavors")
    print(f"{'pending':>10} {'admissions/s':>14} {'us/admission':>14}")
    for n, g in sorted(growth.items()):
        print(f"{n:>10} {g['admissions_per_s']:>14.0f} {g['us_per_admission']:>14.1f}")
    print(f"{shape.pending:>10} {main_run['admissions_per_s']:>14.0f} {main_run['us_per_admission']:>14.1f}")
    print(f"cycles: {main_run['cycles']:.0f}, cycle time p50 {main_run['cycle_p50_ms']:.1f} ms, p99 {main_run['cycle_p99_ms']:.1f} ms")
    print(f"memory per pending workload: {bytes_per:.0f} bytes")
    print(f"cost per admission at {shape.pending} vs 1,000 pending: {figures['cost_growth_100k_vs_1k']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
