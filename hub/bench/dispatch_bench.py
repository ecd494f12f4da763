"""``mkhub bench dispatch``: MultiKueue dispatch throughput and latency, hub in-process without a store.

A hub (engine, ClusterController, MultiKueueController, FederationServer; this
process, one asyncio loop, and no store: nothing the hub decides is written to
SQLite or an API server) and ``--agents`` agents (each its own process, its
own engine, a real HubLink), on loopback over gRPC with mutual TLS (or
``--insecure``). ``--workloads`` Workloads go to ``--queues`` ClusterQueues
(Kueue admits one head per ClusterQueue per scheduling cycle). Every
reservation is dispatched AllAtOnce to every agent; each agent admits its copy
locally and reports; the first admitted copy wins; the winner gets Start, the
others Withdraw.

Measured per workload: from the hub's quota reservation (wall time when the
reservation event reaches the controllers) to the winner's agent receiving
Start (wall time in that agent's process; same machine clock).
``workloads_per_s`` = workloads / (last Start received - first reservation).

Load shapes:
  --rate R         workloads arrive at R per second (open loop), hub quota unlimited,
                   runs last an hour: latency under a sustained offered load (default)
  --rate 0         all at once: the pipeline's peak throughput; latency then includes
                   waiting behind the whole backlog
  --in-flight K    all at once, but the hub's quota admits K at a time and runs finish
                   as soon as they start (closed loop, includes the finish path)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import logging
import math
import multiprocessing
import os
import pstats
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hub.api.config import parse_configuration
from hub.api.registry import parse_object
from hub.controllers.cluster import ClusterController
from hub.engine.engine import Engine, EngineEvent
from hub.federation import tls
from hub.federation.embedded import EmbeddedHub
from hub.federation.pacing import cycles_for
from hub.tuning import GcPacer, tune_gc

from .machine import machine_speed

# In the printed title and the --json line: these figures leave out every store write the
# hub makes in `mkhub serve`, so they compare only with other storeless runs.
TITLE = "MultiKueue dispatch, hub in-process without a store"
MK = "kueue.x-k8s.io/multikueue"
ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
DISPATCHERS = {
    "all-at-once": ALL_AT_ONCE,
    "incremental": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
    "capacity-aware": "mkhub.dev/capacity-aware",
}
UNLIMITED = "1000000"
MAX_CLUSTERS_PER_CONFIG = 20  # Kueue validates MultiKueueConfig.spec.clusters to 1..20 items


@dataclass(frozen=True)
class Plan:
    workloads: int
    agents: int
    queues: int
    in_flight: int  # 0: unlimited hub quota
    rate: float  # workloads per second; 0: all at once
    budget: float = 0.005  # seconds of scheduling cycles per event-loop turn (hub and agents)
    agent_procs: int = 0  # processes the agents are spread over; 0: one each
    dispatcher: str = ALL_AT_ONCE
    nomination_timeout: float = 30.0  # capacity-aware: seconds before the next worker is nominated

    @property
    def run_for(self) -> float:
        """How long a run lasts on the worker: done at once in the closed loop, else for good."""
        return 0.0 if self.in_flight else 3600.0


def _queue_objects(queues: int, cpu: str, checks: list[str]) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "default"}},
    ]
    for q in range(queues):
        spec: dict[str, Any] = {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "default", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}],
        }
        if checks:
            spec["admissionChecks"] = checks
        objs.append({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": f"cq-{q}"},
                     "spec": spec})
        objs.append({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
                     "metadata": {"name": f"lq-{q}", "namespace": "bench"}, "spec": {"clusterQueue": f"cq-{q}"}})
    return objs


def _hub_objects(plan: Plan, clusters: list[str]) -> list[dict[str, Any]]:
    """The hub's queues; ClusterQueue ``cq-i`` has its own MultiKueueConfig listing the workers
    in a rotated order (each team prefers another cluster first), which the capacity-aware
    dispatcher follows and AllAtOnce ignores; at most 20 workers each (Kueue's limit)."""
    per_queue = -(-plan.in_flight // plan.queues) if plan.in_flight else 0
    objs = _queue_objects(plan.queues, str(per_queue) if per_queue else UNLIMITED, [])
    for obj in objs:
        if obj["kind"] == "ClusterQueue":
            obj["spec"]["admissionChecks"] = [f"mk-{obj['metadata']['name'].removeprefix('cq-')}"]
    for name in clusters:
        objs.append({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "MultiKueueCluster", "metadata": {"name": name},
                     "spec": {"kubeConfig": {"locationType": "Secret", "location": name}}})
    for q in range(plan.queues):
        shift = q * len(clusters) // plan.queues
        rotated = clusters[shift:] + clusters[:shift]
        objs.append({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "MultiKueueConfig", "metadata": {"name": f"mk-{q}"},
                     "spec": {"clusters": rotated[:MAX_CLUSTERS_PER_CONFIG]}})
        objs.append({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "AdmissionCheck", "metadata": {"name": f"mk-{q}"},
                     "spec": {"controllerName": MK, "parameters": {"apiGroup": "kueue.x-k8s.io",
                                                                     "kind": "MultiKueueConfig", "name": f"mk-{q}"}}})
    return objs


def _workload(i: int, queues: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": f"wl-{i:06d}", "namespace": "bench", "uid": f"uid-{i:06d}",
                     "annotations": {"mkhub.dev/sim-duration": "0s"}},
        "spec": {
            "queueName": f"lq-{i % queues}",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}]}}}],
        },
    }


# ------------------------------------------------------------------ agent processes


def _agent_process(
    names: list[str], target: str, certs: str | None, plan: Plan, conn: Any, stop: Any, profile: str | None = None
) -> None:
    """Agents in one process (one event loop): report when each Start arrived, through ``conn``."""
    logging.basicConfig(level=logging.WARNING)
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    asyncio.run(_agents_main(names, target, certs, plan, conn, stop))
    if profiler and profile:
        profiler.disable()
        profiler.dump_stats(profile)


class _BenchAgent:
    """One agent (its own engine and link) that notes when items arrive and leave."""

    def __init__(self, name: str, target: str, certs: str | None, plan: Plan, wake: asyncio.Event) -> None:
        from worker_agent.agent import Agent
        from worker_agent.capacity import DEFAULT_INTERVAL as CAPACITY_INTERVAL
        from worker_agent.link import HubLink
        from worker_agent.runner import sim_pods

        now = time.time()
        self.plan = plan
        self.pods = sim_pods(lambda wl: plan.run_for, ready_delay=0.0)
        self.controller = ClusterController(Engine(parse_configuration({}), now), self.pods)
        capacity = str(plan.in_flight * 2) if plan.in_flight else UNLIMITED
        for manifest in _queue_objects(plan.queues, capacity, []):
            self.controller.apply(parse_object(manifest), now)
        self.agent = Agent(name, self.controller, auto_flush=False, capacity_interval=CAPACITY_INTERVAL)
        self.starts: dict[str, float] = {}
        self.dispatched: dict[str, float] = {}  # when each Dispatch arrived
        self.reported: dict[str, float] = {}  # when the copy's admission was reported
        self._deliver = self.agent.on_hub_items
        self.agent.on_hub_items = self._on_hub_items  # type: ignore[method-assign]
        self.agent.notify = wake.set
        credentials = tls.agent_channel_credentials(certs, name) if certs else None
        self.link = HubLink(target, self.agent, credentials=credentials, insecure=certs is None, server_name="localhost")
        self.agent.send = self._send

    def _on_hub_items(self, items: Sequence[Any]) -> None:
        received = time.time()
        for item in items:
            kind = item.WhichOneof("kind")
            if kind == "start":
                self.starts.setdefault(item.start.dispatch_id, received)
            elif kind == "dispatch":
                self.dispatched.setdefault(item.dispatch.dispatch_id, received)
        self._deliver(items)

    def _send(self, items: list[Any]) -> None:
        sent = time.time()
        for item in items:
            if item.WhichOneof("kind") == "reserved" and item.reserved.admitted:
                self.reported.setdefault(item.reserved.dispatch_id, sent)
        self.link.send(items)

    def step(self) -> bool:
        more = cycles_for(self.controller, time.time, self.plan.budget)
        self.agent.flush(time.time())
        return more

    def result(self) -> dict[str, Any]:
        return {"starts": self.starts, "dispatched": self.dispatched, "reported": self.reported,
                "stats": vars(self.agent.stats)}


async def _agents_main(names: list[str], target: str, certs: str | None, plan: Plan, conn: Any, stop: Any) -> None:
    cpu_start = resource.getrusage(resource.RUSAGE_SELF)
    wake = asyncio.Event()
    agents = [_BenchAgent(name, target, certs, plan, wake) for name in names]
    tune_gc()  # as mkagent does, and its collector pacing after every round
    pacer = GcPacer()
    for a in agents:
        await a.link.start()
    stopped = asyncio.get_running_loop().run_in_executor(None, stop.wait)
    while not stopped.done():
        wake.clear()
        more = False
        for a in agents:
            more = a.step() or more
        pacer.after_round()
        if more:
            await asyncio.sleep(0)  # these reports go out while the next cycles run
            continue
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), 0.05)
    for a in agents:
        await a.link.stop()
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = cpu.ru_utime + cpu.ru_stime - cpu_start.ru_utime - cpu_start.ru_stime
    conn.send({"agents": [a.result() for a in agents], "cpu_s": cpu_s})
    conn.close()


# ------------------------------------------------------------------ the hub


async def _feed(hub: EmbeddedHub, workloads: list[Any], rate: float) -> None:
    """Submit the workloads: all at once, or ``rate`` per second in small steps."""
    if rate <= 0:
        for wl in workloads:
            hub.controller.apply(wl, hub.clock())
        hub.poke()
        return
    begin = time.perf_counter()
    sent = 0
    while sent < len(workloads):
        due = min(len(workloads), int((time.perf_counter() - begin) * rate) + 1)
        now = hub.clock()
        for wl in workloads[sent:due]:
            hub.controller.apply(wl, now)
        sent = due
        hub.poke()
        await asyncio.sleep(0.002)


class _ReservationClock:
    """A plugin that notes the wall time at which each reservation reaches the controllers."""

    def __init__(self) -> None:
        self.reserved: dict[str, float] = {}
        self.elected: dict[str, float] = {}
        self.finished = 0
        self.admitted = 0

    def on_events(self, events: list[EngineEvent], now: float) -> None:
        stamp = time.time()
        for ev in events:
            if ev.type == "QuotaReserved":
                self.reserved.setdefault(ev.key, stamp)
            elif ev.type == "Finished":
                self.finished += 1
            elif ev.type == "Admitted":
                self.admitted += 1
                self.elected.setdefault(ev.key, stamp)

    def tick(self, now: float) -> bool:
        return False


async def _run(plan: Plan, insecure: bool, profile: str | None, agent_profile: str | None = None) -> dict[str, Any]:
    clusters = [f"worker-{i + 1}" for i in range(plan.agents)]
    with tempfile.TemporaryDirectory(prefix="mkhub-bench-") as tmp:
        certs: str | None = None
        credentials = None
        if not insecure:
            certs = str(Path(tmp) / "certs")
            tls.make_certs(certs, clusters)
            credentials = tls.hub_server_credentials(certs)
        config = parse_configuration(
            {"multiKueue": {"gcInterval": "1m", "workerLostTimeout": "5m", "dispatcherName": plan.dispatcher,
                            "capacityAwareDispatcherConfig": {"nominationTimeout": f"{plan.nomination_timeout:g}s"}}}
        )
        hub = EmbeddedHub(config, credentials=credentials, insecure=insecure, budget=plan.budget)
        clock = _ReservationClock()
        hub.controller.plugins.append(clock)
        for manifest in _hub_objects(plan, clusters):
            hub.apply(parse_object(manifest))
        port = await hub.start()
        tune_gc()  # as mkhub serve does once restored, and its collector pacing after every round
        pacer = GcPacer()
        hub.after_round = lambda _now: pacer.after_round()
        ctx = multiprocessing.get_context("spawn")
        stop = ctx.Event()
        procs = []
        pipes = []
        groups = [clusters[i :: plan.agent_procs] for i in range(min(plan.agent_procs, len(clusters)))]
        for i, names in enumerate(groups):
            parent, child = ctx.Pipe(duplex=False)
            p = ctx.Process(
                target=_agent_process,
                args=(names, f"127.0.0.1:{port}", certs, plan, child, stop, agent_profile if i == 0 else None),
                daemon=True,
            )
            p.start()
            procs.append(p)
            pipes.append(parent)
        deadline = time.monotonic() + 60
        while set(hub.mk.connected_clusters()) != set(clusters):
            if time.monotonic() > deadline:
                raise RuntimeError("agents did not connect")
            await asyncio.sleep(0.05)
        workloads = [parse_object(_workload(i, plan.queues)) for i in range(plan.workloads)]
        profiler = cProfile.Profile() if profile else None
        if profiler:
            profiler.enable()
        started = time.time()
        cpu_start = resource.getrusage(resource.RUSAGE_SELF)
        feeder = asyncio.create_task(_feed(hub, workloads, plan.rate))
        target = plan.workloads
        # Done when every workload won somewhere (and, in the closed loop, finished).
        while True:
            done = clock.finished if plan.in_flight else hub.mk.stats.admitted
            if done >= target:
                break
            if time.time() - started > 600:
                raise RuntimeError(f"only {done} of {target} workloads got through in 600s")
            await asyncio.sleep(0.01)
        await feeder
        hub_done = time.time()
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        hub_cpu = cpu.ru_utime + cpu.ru_stime - cpu_start.ru_utime - cpu_start.ru_stime
        if profiler and profile:
            profiler.disable()
            profiler.dump_stats(profile)
        await asyncio.sleep(0.3)  # the last Starts are in flight
        stop.set()
        replies = []
        for parent in pipes:
            ready = await asyncio.get_running_loop().run_in_executor(None, parent.poll, 60)
            if not ready:
                raise RuntimeError("an agent process did not report back")
            replies.append(parent.recv())
        results = [a for reply in replies for a in reply["agents"]]
        for p in procs:
            p.join(timeout=10)
        await hub.stop()
    starts: dict[str, float] = {}
    for r in results:
        for did, at in r["starts"].items():
            starts[did.rsplit("/", 1)[0]] = at
    latencies = []
    for key, reserved in clock.reserved.items():
        at = starts.get(key)
        if at is not None:
            latencies.append((at - reserved) * 1000)
    latencies.sort()
    stages = _stages(clock, results, starts)
    first = min(clock.reserved.values())
    last = max(starts.values())
    return {
        "title": TITLE,
        "store": "none",
        "workloads": plan.workloads,
        "agents": plan.agents,
        "queues": plan.queues,
        "in_flight": plan.in_flight,
        "rate": plan.rate,
        "mtls": not insecure,
        "dispatcher": next((k for k, v in DISPATCHERS.items() if v == plan.dispatcher), plan.dispatcher),
        "hub_cpu_ms_per_workload": round(hub_cpu * 1000 / plan.workloads, 3),
        "agent_cpu_ms_per_workload": round(sum(r["cpu_s"] for r in replies) * 1000 / plan.workloads, 3),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "started": len(starts),
        "workloads_per_s": round(len(starts) / (last - first), 1),
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(latencies[max(0, math.ceil(len(latencies) * 0.99) - 1)], 2),
        "max_ms": round(latencies[-1], 2),
        "hub_seconds": round(hub_done - started, 3),
        "hub_rounds": hub.rounds,
        "hub_cpu_s": round(hub_cpu, 3),
        "agent_procs": len(replies),
        "agent_cpu_s": [round(r["cpu_s"], 3) for r in replies],
        "stages_p50_ms": stages,
        "copies_dispatched": hub.mk.stats.dispatched,
        "agent_dispatches": [r["stats"]["dispatches"] + r["stats"].get("coalesced", 0) for r in results],
        "agent_coalesced": [r["stats"].get("coalesced", 0) for r in results],
        "agent_starts": [r["stats"]["starts"] for r in results],
        "hub_envelopes": [hub.server.endpoint.stats.envelopes_in, hub.server.endpoint.stats.envelopes_out],
    }


def _stages(clock: _ReservationClock, results: list[dict[str, Any]], starts: dict[str, float]) -> dict[str, float]:
    """Median time of each leg: reservation -> first copy arrives at an agent -> first admission
    reported -> winner elected in the hub -> Start arrives at the winner."""
    first_dispatch: dict[str, float] = {}
    first_report: dict[str, float] = {}
    for r in results:
        for did, at in r["dispatched"].items():
            key = did.rsplit("/", 1)[0]
            first_dispatch[key] = min(at, first_dispatch.get(key, at))
        for did, at in r["reported"].items():
            key = did.rsplit("/", 1)[0]
            first_report[key] = min(at, first_report.get(key, at))
    legs: dict[str, list[float]] = {"to_agent": [], "agent_admits": [], "to_election": [], "start_to_agent": []}
    for key, reserved in clock.reserved.items():
        points = (reserved, first_dispatch.get(key), first_report.get(key), clock.elected.get(key), starts.get(key))
        if any(p is None for p in points):
            continue
        for leg, (a, b) in zip(legs, zip(points, points[1:])):
            legs[leg].append((b - a) * 1000)  # type: ignore[operator]
    return {leg: round(statistics.median(v), 2) for leg, v in legs.items() if v}


def _shape(plan: Plan) -> str:
    if plan.in_flight:
        return f"closed loop with {plan.in_flight} in flight"
    return f"offered {plan.rate:g}/s" if plan.rate else "all at once"


def _table(results: list[dict[str, Any]]) -> str:
    rows = [["DISPATCHER", "OFFERED/S", "DELIVERED/S", "P50 MS", "P99 MS", "HUB CPU MS/WL", "AGENTS CPU MS/WL", "COPIES"]]
    for r in results:
        rows.append([r["dispatcher"], f"{r['rate']:g}" if r["rate"] else "all", str(r["workloads_per_s"]),
                     str(r["p50_ms"]), str(r["p99_ms"]), str(r["hub_cpu_ms_per_workload"]),
                     str(r["agent_cpu_ms_per_workload"]), str(r["copies_dispatched"])])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mkhub bench dispatch", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--queues", type=int, default=8, help="hub and worker ClusterQueues (one admission each per cycle)")
    parser.add_argument("--rate", default="2000",
                        help="offered load, workloads/s (a comma list runs each in turn); 0: all at once")
    parser.add_argument("--dispatcher", default="all-at-once",
                        help="all-at-once (Kueue's default), incremental or capacity-aware; a comma list runs each "
                             "in turn; a dispatcher other than the default also runs the default, side by side")
    parser.add_argument("--in-flight", type=int, default=0,
                        help="closed loop: hub quota in workloads, runs finish at once (implies --rate 0)")
    parser.add_argument("--budget-ms", type=float, default=5.0,
                        help="scheduling work per event-loop turn before batches go out (hub and agents)")
    parser.add_argument("--agent-procs", type=int, default=0,
                        help="spread the agents over this many processes (default: one process per agent)")
    parser.add_argument("--nomination-timeout", type=float, default=30.0,
                        help="capacity-aware: seconds a nominee has to admit its copy (default 30)")
    parser.add_argument("--no-compare", action="store_true", help="do not also run the default dispatcher")
    parser.add_argument("--insecure", action="store_true", help="plaintext loopback instead of mutual TLS")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the hub process into FILE")
    parser.add_argument("--profile-agent", metavar="FILE", help="cProfile the first agent's process into FILE")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    try:
        rates = [float(r) for r in str(args.rate).split(",") if r.strip()]
    except ValueError:
        parser.error(f"--rate: not a number or comma list of numbers: {args.rate!r}")
    names = [d.strip() for d in args.dispatcher.split(",") if d.strip()]
    unknown = [d for d in names if d not in DISPATCHERS]
    if unknown or not names or not rates:
        parser.error(f"--dispatcher: unknown {', '.join(unknown)}; one of {', '.join(DISPATCHERS)}")
    if names != ["all-at-once"] and "all-at-once" not in names and not args.no_compare:
        names.append("all-at-once")  # the default, side by side
    if args.workloads < 1 or args.agents < 1 or args.queues < 1 or args.in_flight < 0:
        parser.error("--workloads, --agents and --queues must be positive, --in-flight not negative")
    logging.basicConfig(level=logging.WARNING)
    if not args.json:
        print(f"{TITLE} (engine and MultiKueue controller in this process; agents over gRPC)", flush=True)
    results = []
    for rate in rates:
        for name in names:
            plan = Plan(
                args.workloads, args.agents, args.queues, args.in_flight, 0.0 if args.in_flight else rate,
                args.budget_ms / 1000.0, args.agent_procs or args.agents, DISPATCHERS[name], args.nomination_timeout,
            )
            with machine_speed(every=0.5) as machine:  # the runs are seconds long
                result = asyncio.run(_run(plan, args.insecure, args.profile, args.profile_agent))
            result["machine_ms"] = round(machine.median_ms, 2)
            results.append(result)
            if args.json:
                print(json.dumps(result, separators=(",", ":")), flush=True)
            else:
                print(
                    f"{result['dispatcher']}: {result['workloads']} workloads, {result['agents']} agents, "
                    f"{result['queues']} queues, {_shape(plan)}, {'mTLS' if result['mtls'] else 'insecure'}: "
                    f"{result['workloads_per_s']} workloads/s; reservation -> Start p50 {result['p50_ms']} ms, "
                    f"p99 {result['p99_ms']} ms (max {result['max_ms']} ms); CPU per workload: hub "
                    f"{result['hub_cpu_ms_per_workload']} ms, agents {result['agent_cpu_ms_per_workload']} ms; "
                    f"copies {result['copies_dispatched']}; load {result['load_avg_1m']}; machine {result['machine_ms']} ms",
                    flush=True,
                )
    if len(results) > 1 and not args.json:
        print(_table(results))
    if args.profile:
        pstats.Stats(args.profile).sort_stats("cumulative").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
