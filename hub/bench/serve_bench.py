"""``mkhub bench serve``: the service's own ceiling, through ``mkhub serve`` as a separate process.

1,000 ClusterQueues (100 cohorts of 10) are created without quota (nominal 0),
then 100,000 Workloads are applied through the control API (the CLI's ``Apply``)
in batches: that measures taking workloads in (parse, validate, one store
transaction per batch, the hub's watch). With every workload pending, the hub's
memory per pending workload is read. Then the queues get their quota in one Apply
and the benchmark waits until every workload holds quota: admissions per second
from the release until the last admission is committed, every store write
included (the hub's control API answers between committed rounds). The "settled" CPU
goes on until the hub is idle: it includes what the admissions cause after the last
one is committed (the simulated runs starting).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from typing import Any

from .hubproc import running_hub, start_profiler, stop_profiler, wait_until
from .machine import machine_speed
from .procstat import wait_idle

NAMESPACE = "serve-bench"
FLAVOR = "default-flavor"
# How often the benchmark asks the hub for its totals (``Top``): each answer counts every workload
# in the hub (tens of milliseconds at 100,000), work the benchmark, not the service, causes.
POLL = 1.0


def _cluster_queue(q: int, cohorts: int, per_queue: int, hold: bool) -> dict[str, Any]:
    # Held by a nominal quota of 0 rather than stopPolicy: Hold, so that the release measures
    # admission, not the restart of stopped queues.
    quota = 0 if hold else per_queue
    spec: dict[str, Any] = {
        "cohort": f"cohort-{q % cohorts}",
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": str(quota)}]}],
            }
        ],
    }
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": f"cq-{q}"}, "spec": spec}


def _workload(i: int, queues: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": f"wl-{i}", "namespace": NAMESPACE, "annotations": {"mkhub.dev/sim-duration": "1h"}},
        "spec": {
            "queueName": f"lq-{i % queues}",
            "priority": i % 3,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}},
                }
            ],
        },
    }


PHASES = ("all", "apply", "admit")


def run(
    workloads: int, queues: int, cohorts: int, batch: int, timeout: float = 1800.0, profile: Path | None = None,
    profile_phase: str = "all", extra_args: Sequence[str] = (), watching: Callable[[], AbstractContextManager[Any]] | None = None,
) -> dict[str, float]:
    """``profile_phase``: sample the hub for the whole run (all), or only from the first ``Apply``
    until every workload is pending (apply), or from the release until all hold quota (admit)."""
    per_queue = -(-workloads // queues)
    whole = profile if profile_phase == "all" else None
    spy = None
    with machine_speed() as machine, running_hub(extra_args, profile=whole) as hub, ExitStack() as dashboard:
        setup: list[dict[str, Any]] = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}},
        ]
        setup += [_cluster_queue(q, cohorts, per_queue, hold=True) for q in range(queues)]
        setup += [
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "LocalQueue",
                "metadata": {"name": f"lq-{q}", "namespace": NAMESPACE},
                "spec": {"clusterQueue": f"cq-{q}"},
            }
            for q in range(queues)
        ]
        hub.apply_json(setup)
        wait_until(lambda: len(hub.top().cluster_queues) >= queues, 120.0, 0.2)
        if watching is not None:  # --dashboard: a browser follows the live workloads page from here on
            dashboard.enter_context(watching())
        texts = [
            json.dumps(
                {"apiVersion": "v1", "kind": "List", "items": [_workload(i, queues) for i in range(s, min(workloads, s + batch))]},
                separators=(",", ":"),
            )
            for s in range(0, workloads, batch)
        ]
        if profile is not None and profile_phase == "apply":
            spy = start_profiler(hub.pid, profile)
        before = hub.stats()
        t0 = time.perf_counter()
        for text in texts:
            hub.apply_json(text)
        applied = time.perf_counter() - t0
        wait_until(lambda: hub.top().workloads_pending >= workloads, timeout, POLL)
        taken_in = time.perf_counter() - t0
        pending = hub.stats()
        if spy is not None:
            stop_profiler(spy)
            spy = None
        if profile is not None and profile_phase == "admit":
            spy = start_profiler(hub.pid, profile)
        release = [_cluster_queue(q, cohorts, per_queue, hold=False) for q in range(queues)]
        t1 = time.perf_counter()
        hub.apply_json(release)
        wait_until(lambda: hub.top().workloads_admitted >= workloads, timeout, POLL)
        admitting = time.perf_counter() - t1
        after = hub.stats()
        wait_idle(hub.pid, timeout=timeout)  # what the admissions caused after the last is written
        settled = hub.stats()
        if spy is not None:
            stop_profiler(spy)
    return {
        "workloads": float(workloads),
        "cluster_queues": float(queues),
        "batch": float(batch),
        "apply_s": applied,
        "apply_per_s": workloads / applied,
        "ingest_s": taken_in,
        "ingest_per_s": workloads / taken_in,
        "admit_s": admitting,
        "admissions_per_s": workloads / admitting,
        "end_to_end_per_s": workloads / (taken_in + admitting),
        "bytes_per_pending": (pending.rss_mib - before.rss_mib) * 2**20 / workloads,
        "apply_cpu_ms_per_workload": (pending.cpu_s - before.cpu_s) * 1000 / workloads,
        "admit_cpu_ms_per_workload": (after.cpu_s - pending.cpu_s) * 1000 / workloads,
        "admit_settled_cpu_ms_per_workload": (settled.cpu_s - pending.cpu_s) * 1000 / workloads,
        "hub_cpu_s": after.cpu_s,
        "hub_rss_mib": after.peak_rss_mib,
        "machine_ms": machine.median_ms,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mkhub bench serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=int, default=100_000)
    parser.add_argument("--cluster-queues", type=int, default=1000)
    parser.add_argument("--cohorts", type=int, default=100)
    parser.add_argument("--batch", type=int, default=1000, help="Workloads per Apply call (default 1000)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    parser.add_argument("--profile", type=Path, default=None, metavar="FILE", help="sample the hub with py-spy into FILE")
    parser.add_argument("--profile-phase", choices=PHASES, default="all",
                        help="with --profile: the whole run, taking the workloads in (apply), or admitting them (admit)")
    parser.add_argument("--dashboard", action="store_true",
                        help="alternate runs without and with a browser on the dashboard's live workloads page (hub/bench/ui_bench.py)")
    parser.add_argument("--bad-requests", action="store_true",
                        help="alternate runs without and with a flood of requests the dashboard refuses (4xx), its port open in both")
    parser.add_argument("--hub-arg", action="append", default=[], help="extra argument for mkhub serve (repeatable)")
    parser.add_argument("--rounds", type=int, default=2, help="with --dashboard or --bad-requests: pairs of runs (default 2)")
    args = parser.parse_args(argv)
    if min(args.workloads, args.cluster_queues, args.cohorts, args.batch) < 1:
        print("error: --workloads, --cluster-queues, --cohorts and --batch must be at least 1", file=sys.stderr)
        return 2
    if args.dashboard or args.bad_requests:
        from .dashboard_live import compare_serve

        return compare_serve(run, args.workloads, args.cluster_queues, args.cohorts, args.batch, args.rounds, args.json,
                             bad=args.bad_requests)
    figures = run(args.workloads, args.cluster_queues, args.cohorts, args.batch, profile=args.profile,
                  profile_phase=args.profile_phase, extra_args=args.hub_arg)
    if args.json:
        print(json.dumps(figures, sort_keys=True))
        return 0
    print(f"mkhub serve: {args.workloads:,} Workloads, {args.cluster_queues:,} ClusterQueues in {args.cohorts} cohorts, "
          f"Apply batches of {args.batch}")
    print(f"apply:      {figures['apply_s']:.1f}s, {figures['apply_per_s']:,.0f} workloads/s "
          f"(all pending in the engine after {figures['ingest_s']:.1f}s: {figures['ingest_per_s']:,.0f}/s)")
    print(f"admission:  {figures['admit_s']:.1f}s from the release until all hold quota: "
          f"{figures['admissions_per_s']:,.0f} admissions/s")
    print(f"end to end: {figures['end_to_end_per_s']:,.0f} workloads/s from the first Apply to the last admission")
    print(f"hub CPU per workload: {figures['apply_cpu_ms_per_workload']:.2f} ms taking it in, "
          f"{figures['admit_cpu_ms_per_workload']:.2f} ms admitting it")
    print(f"hub memory per pending workload: {figures['bytes_per_pending']:,.0f} bytes; "
          f"hub CPU {figures['hub_cpu_s']:.1f}s, peak RSS {figures['hub_rss_mib']:.0f} MiB")
    print(f"machine:    the fixed work of hub/bench/machine.py took {figures['machine_ms']:.1f} ms of CPU (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
