"""``mkhub bench kueue-perf``: Kueue's scheduler performance harness replayed through mkhub.

``--clock real`` (the default) starts ``mkhub serve`` as a separate process
(embedded store, standalone, insecure loopback; the simulated runner runs each
workload for its ``mkhub.dev/sim-duration``), creates the configuration's
ClusterQueues, then sends every workload through the control API (the CLI's
``Apply``) at its creation time, a batch per instant, without waiting for the
hub's answers. When every workload has finished it lists them through the same
API and reports, from their ``Admitted`` and ``Finished`` conditions: wall time,
mean and p95 time to admission per class (from the moment the client sent the
workload), minimum and mean ClusterQueue usage, the capacity bound,
admissions/s, the hub's CPU seconds and peak RSS. The virtual-clock replay of
the same configuration (:mod:`hub.bench.kueue_virtual`) is printed beside it.
``--store kube`` runs the hub on the Kubernetes store against a ``mkhub dev-cluster``
started for the run instead of its embedded store. Every figure is labelled with
the store it ran on (Kueue's recorded ones: envtest's API server).

See :mod:`hub.bench.kueue_config` for the configurations and the definitions.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from itertools import groupby
from pathlib import Path
from typing import Any

from hub.api.meta import parse_time
from mkhub.v1 import control_pb2 as pb
from mkhub.v1 import control_pb2_grpc as pb_grpc

from .hubproc import BenchHub, check_reply, proc_stats, running_hub, wait_until
from .kueue_config import (
    CLASSES,
    CONFIGS,
    KUEUE_RECORDED,
    NAMESPACE_PREFIX,
    PerfConfig,
    Record,
    arrivals,
    setup_objects,
    summarize,
    workload_manifest,
)
from .kueue_virtual import replay
from .machine import machine_speed

# What each column ran on: a like-for-like reading compares figures from the same kind of store.
STORE = "embedded SQLite"  # mkhub serve's store in --clock real
KUBE_STORE = "Kubernetes API (mkhub dev-cluster)"  # --store kube: the hub's Kubernetes store against a dev-cluster
KUEUE_STORE = "envtest: kube-apiserver + etcd"  # where Kueue's recorded figures come from

JSON_KEYS = (
    "wall_s",
    "bound_s",
    "tta_small_s",
    "tta_medium_s",
    "tta_large_s",
    "min_cq_usage",
    "mean_cq_usage",
    "hub_cpu_s",
    "hub_rss_mib",
)


def _batches(config: PerfConfig) -> list[tuple[float, list[Any], str]]:
    """(offset, arrivals, Apply text) per creation instant, serialised before the clock starts."""
    out = []
    for at, group in groupby(arrivals(config), key=lambda a: a.at):
        items = list(group)
        text = json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": [workload_manifest(a) for a in items]}, separators=(",", ":")
        )
        out.append((at, items, text))
    return out


def _condition_time(status: dict[str, Any], type_: str) -> float | None:
    for cond in status.get("conditions") or ():
        if cond.get("type") == type_ and cond.get("status") == "True":
            return parse_time(cond["lastTransitionTime"])
    return None


def _all_active(hub: BenchHub, count: int) -> bool:
    snap = hub.top()
    return sum(1 for row in snap.cluster_queues if row.active) >= count


def run_real(
    config: PerfConfig, *, timeout: float = 3600.0, poll: float = 1.0, profile: Path | None = None, kube: bool = False
) -> tuple[list[Record], float, dict[str, float]]:
    """The configuration through a real ``mkhub serve``; returns the records, the start and the figures.
    ``kube``: the hub on the Kubernetes store against a ``mkhub dev-cluster`` (an API server) instead of
    its embedded store; the figures then add the API server's CPU seconds."""
    batches = _batches(config)
    records: dict[str, Record] = {}
    lags: list[float] = []
    with machine_speed() as machine, running_hub(profile=profile, kube=kube) as hub:
        hub.apply_json(setup_objects(config))
        wait_until(lambda: _all_active(hub, config.cluster_queues), 120.0, 0.2)
        stub = pb_grpc.ControlStub(hub.channel)  # type: ignore[no-untyped-call]
        futures = []
        start = time.time() + 0.2
        for at, items, text in batches:
            delay = start + at - time.time()
            if delay > 0:
                time.sleep(delay)
            sent = time.time()
            futures.append(stub.Apply.future(pb.ApplyRequest(manifests=text, source="kueue-perf"), timeout=timeout))
            lags.append(sent - (start + at))
            for a in items:
                records[a.key] = Record(a, sent)
        sent_all = time.time()
        for fut in futures:
            check_reply(fut.result())
        replies_done = time.time()
        total = len(records)
        wait_until(lambda: hub.top().workloads_finished >= total, timeout, poll)
        stats = hub.stats()
        server_cpu_s = proc_stats(hub.server.pid).cpu_s if hub.server is not None else 0.0
        for c in range(config.cohorts):
            _, _, objects = hub.client.list("Workload", namespace=f"{NAMESPACE_PREFIX}{c}")
            for obj in objects:
                meta = obj["metadata"]
                rec = records.get(f"{meta['namespace']}/{meta['name']}")
                if rec is None:
                    continue
                status = obj.get("status") or {}
                rec.admitted = _condition_time(status, "Admitted")
                rec.finished = _condition_time(status, "Finished")
                rec.evictions = int(any(c.get("type") == "Evicted" for c in status.get("conditions") or ()))
    out = list(records.values())
    figures = summarize(config, out, start)
    lags.sort()
    figures.update(
        hub_cpu_s=stats.cpu_s,
        hub_rss_mib=stats.peak_rss_mib,
        send_lag_p95_s=lags[min(len(lags) - 1, math.ceil(0.95 * len(lags)) - 1)] if lags else 0.0,
        sent_s=sent_all - start,
        replies_s=replies_done - start,
        machine_ms=machine.median_ms,
        server_cpu_s=server_cpu_s,
    )
    return out, start, figures


def _fmt(value: float, unit: str = "s") -> str:
    if math.isnan(value):
        return "-"
    if unit == "%":
        return f"{value * 100:.1f}%"
    return f"{value:.2f}{unit}" if value < 10 else f"{value:.1f}{unit}"


def _print_table(config: PerfConfig, real: dict[str, float] | None, virtual: dict[str, float], store: str = STORE) -> None:
    kueue = KUEUE_RECORDED.get(config.name, {})
    print(
        f"kueue-perf {config.name}: {config.cohorts} cohorts x {config.queues_per_cohort} ClusterQueues, "
        f"{config.workloads:,} workloads; capacity bound {virtual['bound_s']:.1f}s"
    )
    print(f"stores: mkhub serve on the {store} store; the virtual clock on none (the engine alone); "
          f"Kueue's recorded figures on {KUEUE_STORE}")
    heads = ([f"mkhub serve ({'kube' if store == KUBE_STORE else 'SQLite'})"] if real else []) + [
        "virtual (no store)", "Kueue (envtest)"]
    print(f"{'':28}" + "".join(f"{h:>22}" for h in heads))
    rows: list[tuple[str, str, str]] = [("wall", "wall_s", "s")]
    for cls in CLASSES:
        rows.append((f"time to admission {cls}", f"tta_{cls}_s", "s"))
        rows.append((f"  p95 {cls}", f"tta_{cls}_p95_s", "s"))
    rows += [(f"  {c.name}", f"tta_{c.name}_s", "s") for c in config.classes if c.group]  # TAS: per constraint
    rows += [("min ClusterQueue usage", "min_cq_usage", "%"), ("mean ClusterQueue usage", "mean_cq_usage", "%")]
    rows += [("admissions/s", "admissions_per_s", ""), ("workloads ever evicted", "evictions", "")]
    for label, key, unit in rows:
        cols = ([real.get(key, math.nan)] if real else []) + [virtual.get(key, math.nan), kueue.get(key, math.nan)]
        print(f"{label:28}" + "".join(f"{_fmt(v, unit):>22}" for v in cols))
    if real:
        print(f"hub CPU {real['hub_cpu_s']:.1f}s, peak RSS {real['hub_rss_mib']:.0f} MiB; "
              f"all sent by {real['sent_s']:.1f}s (send lag p95 {real['send_lag_p95_s'] * 1000:.0f} ms), "
              f"all Apply answered by {real['replies_s']:.1f}s")
        if store == KUBE_STORE:
            print(f"API server (mkhub dev-cluster) CPU {real['server_cpu_s']:.1f}s")
        print(f"wall / virtual wall: {real['wall_s'] / virtual['wall_s']:.3f}")
        print(f"machine: the fixed work of hub/bench/machine.py took {real['machine_ms']:.1f} ms of CPU (median)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mkhub bench kueue-perf", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), default="baseline", help="Kueue's configuration (default baseline)")
    parser.add_argument("--clock", choices=("real", "virtual"), default="real", help="through mkhub serve, or the engine alone")
    parser.add_argument("--store", choices=("embedded", "kube"), default="embedded",
                        help="the hub's store: embedded SQLite (default), or kube: the Kubernetes store against a "
                             "mkhub dev-cluster started for the run (with --clock real)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    parser.add_argument("--plot", type=Path, default=None, metavar="DIR", help="write kueue-perf-CONFIG.png into DIR")
    parser.add_argument("--profile", type=Path, default=None, metavar="FILE", help="sample the hub with py-spy into FILE")
    parser.add_argument("--no-virtual", action="store_true", help="skip the virtual-clock replay beside a real run")
    args = parser.parse_args(argv)
    if args.store == "kube" and args.clock == "virtual":
        print("error: --store kube: the virtual clock runs the engine alone, with no store; use --clock real", file=sys.stderr)
        return 2
    store = KUBE_STORE if args.store == "kube" else STORE
    config = CONFIGS[args.config]
    real: dict[str, float] | None = None
    r_records: list[Record] = []
    r_start = 0.0
    if args.clock == "real":
        r_records, r_start, real = run_real(config, profile=args.profile, kube=args.store == "kube")
    v_records: list[Record] = []
    v_start = 0.0
    virtual = {k: math.nan for k in (*JSON_KEYS, "admissions_per_s", "evictions", *(f"tta_{c}_p95_s" for c in CLASSES))}
    if args.clock == "virtual" or not args.no_virtual:
        v_records, v_start, virtual = replay(config)
    if args.plot is not None:
        from .plots import plot_kueue_perf

        plot_kueue_perf(config, args.plot, (r_records, r_start) if real else None, (v_records, v_start))
    if args.json:
        base = real if real is not None else {**virtual, "hub_cpu_s": 0.0, "hub_rss_mib": 0.0}
        line: dict[str, Any] = {k: base[k] for k in JSON_KEYS}
        line.update(config=config.name, clock=args.clock, admissions_per_s=base["admissions_per_s"],
                    store=store if real is not None else "none (engine alone)", kueue_recorded_store=KUEUE_STORE)
        for cls in CLASSES:
            line[f"tta_{cls}_p95_s"] = base[f"tta_{cls}_p95_s"]
        if real is not None:
            line.update({f"virtual_{k}": virtual[k] for k in ("wall_s", "tta_small_s", "tta_medium_s", "tta_large_s", "min_cq_usage", "mean_cq_usage")})
            line.update(send_lag_p95_s=real["send_lag_p95_s"], machine_ms=real["machine_ms"])
            if args.store == "kube":
                line.update(server_cpu_s=real["server_cpu_s"])
        print(json.dumps(line, sort_keys=True))
        return 0
    _print_table(config, real, virtual, store)
    return 0


if __name__ == "__main__":
    sys.exit(main())
