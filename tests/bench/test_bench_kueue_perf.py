"""mkhub bench kueue-perf: the configurations' arithmetic, the virtual replay and a tiny real run.

Behaviour only: nothing here asserts on how long anything took."""

from __future__ import annotations

import json
import math

import pytest

from hub.bench.kueue_config import (
    CONFIGS,
    PerfConfig,
    Record,
    WorkloadClass,
    arrivals,
    capacity_bound,
    summarize,
    usage_by_queue,
)
from hub.bench.kueue_perf import JSON_KEYS, run_real
from hub.bench.kueue_virtual import replay
from hub.cli import main as cli_main

TINY = PerfConfig(
    "tiny",
    cohorts=2,
    queues_per_cohort=2,
    classes=(
        WorkloadClass("small", 6, 0.05, 0.1, 50, 1),
        WorkloadClass("medium", 3, 0.1, 0.2, 100, 5),
        WorkloadClass("large", 2, 0.2, 0.3, 200, 20),
    ),
)


def test_capacity_bound_is_work_over_quota_when_the_cohort_is_the_limit() -> None:
    # One cohort of 2 queues (40 cpu): 4 workloads of 10 cpu for 2 s per queue = 160 cpu-s; 160 / 40 = 4 s.
    config = PerfConfig("work", 1, 2, (WorkloadClass("w", 4, 0.5, 2.0, 1, 10),))
    assert capacity_bound(config) == pytest.approx(4.0)


def test_capacity_bound_is_the_arrival_span_when_arrivals_are_the_limit() -> None:
    # 10 arrivals a second apart (span 9 s), 1 cpu for 0.1 s each: 1 cpu-s over 20 cpu is nothing.
    config = PerfConfig("span", 3, 1, (WorkloadClass("w", 10, 1.0, 0.1, 1, 1),))
    assert capacity_bound(config) == pytest.approx(9.0)


def test_capacity_bound_takes_the_worst_cohort() -> None:
    config = PerfConfig("w", 2, 1, (WorkloadClass("w", 4, 0.5, 2.0, 1, 10),))
    items = [a for a in arrivals(config) if a.cohort == 0 or a.index < 2]  # cohort 1 has half the work
    # cohort 0: 80 cpu-s / 20 = 4 s; cohort 1: 40 / 20 = 2 s (span 0.5 s)
    assert capacity_bound(config, items) == pytest.approx(4.0)


def test_kueues_configurations() -> None:
    base, large = CONFIGS["baseline"], CONFIGS["large-scale"]
    assert (base.cluster_queues, base.workloads) == (30, 15_000)
    assert (large.cluster_queues, large.workloads) == (1000, 50_000)
    assert capacity_bound(base) == pytest.approx(66.0)  # 1,320 cpu-s per queue x 6 / 120 cpu


def test_summary_of_hand_made_records() -> None:
    config = PerfConfig("h", 1, 1, (WorkloadClass("small", 2, 1.0, 1.0, 1, 10),))
    a0, a1 = arrivals(config)
    records = [Record(a0, 0.0, admitted=0.5, finished=1.5), Record(a1, 1.0, admitted=1.5, finished=2.5)]
    figures = summarize(config, records, 0.0)
    assert figures["wall_s"] == pytest.approx(2.5)
    assert figures["tta_small_s"] == pytest.approx(0.5)
    # 10 cpu for 2 s of 2.5 s against a quota of 20 cpu
    assert figures["mean_cq_usage"] == pytest.approx(0.4)
    assert usage_by_queue(config, records, 0.0, 2.5) == {"cq-0-0": pytest.approx(0.4)}
    assert math.isnan(figures["tta_large_s"])


def test_virtual_replay_runs_everything_within_the_rules() -> None:
    records, start, figures = replay(TINY)
    assert len(records) == TINY.workloads
    assert all(r.admitted is not None and r.finished is not None for r in records)
    assert all(r.finished >= r.admitted + r.arrival.cls.runtime - 1e-6 for r in records)  # type: ignore[operator]
    assert figures["wall_s"] >= figures["bound_s"] - 1e-6
    assert 0 < figures["min_cq_usage"] <= figures["mean_cq_usage"] <= 1.0 + 1e-9


def test_a_tiny_configuration_through_a_real_hub() -> None:
    records, start, figures = run_real(TINY, timeout=120.0, poll=0.2)
    assert figures["finished"] == TINY.workloads
    for r in records:
        assert r.admitted is not None and r.finished is not None
        assert r.created <= r.admitted <= r.finished
        assert r.finished - r.admitted >= r.arrival.cls.runtime - 0.01  # the simulated runner honoured the runtime
    assert figures["wall_s"] >= figures["bound_s"]
    assert all(figures[f"tta_{c}_s"] >= 0 for c in ("small", "medium", "large"))
    assert 0 < figures["min_cq_usage"] <= figures["mean_cq_usage"]
    assert figures["hub_cpu_s"] > 0 and figures["hub_rss_mib"] > 0


def test_a_tiny_configuration_through_a_hub_on_the_kubernetes_store() -> None:
    """--store kube: the same replay, the hub on the Kubernetes store against a dev-cluster."""
    records, _, figures = run_real(TINY, timeout=300.0, poll=0.2, kube=True)
    assert figures["finished"] == TINY.workloads
    assert all(r.admitted is not None and r.finished is not None for r in records)
    assert figures["server_cpu_s"] > 0  # an API server carried the hub's writes


def test_the_kube_store_needs_the_real_clock(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["bench", "kueue-perf", "--config", "baseline", "--store", "kube", "--clock", "virtual"]) == 2
    assert "--clock real" in capsys.readouterr().err


def test_virtual_json_line(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CONFIGS, "baseline", TINY)
    assert cli_main(["bench", "kueue-perf", "--clock", "virtual", "--json"]) == 0
    line = json.loads(capsys.readouterr().out.strip())
    assert set(JSON_KEYS) <= set(line)
    assert line["clock"] == "virtual"
    # every comparison is labelled with the store it ran on
    assert line["store"] == "none (engine alone)" and line["kueue_recorded_store"].startswith("envtest")


def test_the_table_names_each_columns_store(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CONFIGS, "baseline", TINY)
    assert cli_main(["bench", "kueue-perf", "--clock", "virtual"]) == 0
    out = capsys.readouterr().out
    assert "Kueue's recorded figures on envtest: kube-apiserver + etcd" in out
    assert "virtual (no store)" in out and "Kueue (envtest)" in out


def test_kueues_tas_configuration_generates_its_topology_and_constrained_workloads() -> None:
    from hub.bench.kueue_config import setup_objects, workload_manifest

    tas = CONFIGS["tas"]
    assert (tas.cluster_queues, tas.workloads, len(tas.classes)) == (30, 15_000, 9)
    objs = setup_objects(tas)
    nodes = [o for o in objs if o["kind"] == "Node"]
    assert len(nodes) == 640 and len({n["metadata"]["labels"]["kubernetes.io/hostname"] for n in nodes}) == 640
    assert {n["metadata"]["labels"]["cloud.provider.com/topology-rack"] for n in nodes} == {f"rack-{i}" for i in range(10)}
    by_class = {a.cls.name: workload_manifest(a)["spec"]["podSets"][0] for a in arrivals(tas)[:400]}
    assert by_class["large-balanced-rack"]["topologyRequest"] == {
        "podSetSliceRequiredTopology": "cloud.provider.com/topology-rack", "podSetSliceSize": 4}
    assert by_class["small-required-rack"]["count"] == 2
    assert by_class["small-required-rack"]["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m"}


def test_a_small_tas_configuration_replays_to_the_end_with_every_constraint_class_admitted() -> None:
    from dataclasses import replace

    tas = CONFIGS["tas"]
    mini = replace(tas, name="tas-mini", cohorts=1, queues_per_cohort=2,
                   classes=tuple(replace(c, count=3) for c in tas.classes),
                   topology=(("block", "cloud.provider.com/topology-block", 1),
                             ("rack", "cloud.provider.com/topology-rack", 2), ("node", "kubernetes.io/hostname", 4)))
    records, _, figures = replay(mini)
    assert figures["finished"] == figures["workloads"] == 54
    assert not math.isnan(figures["tta_large-balanced-rack_s"])
