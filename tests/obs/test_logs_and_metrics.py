"""Decision log lines (text and JSON) and the scrape-time gauges of an engine, without processes."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from hub.api.config import Configuration
from hub.api.registry import parse_object
from hub.controllers.cluster import ClusterController
from hub.controllers.simrunner import SimRunner
from hub.engine.engine import Engine
from hub.obs.logs import DecisionLog, JsonFormatter
from hub.obs.metrics import WAIT_BUCKETS, DecisionMetrics, EngineCollector
from hub.obs.observer import ClusterObserver
from tests.controllers.hub_objects import T0, cluster_queue, flavor, local_queue, namespace, workload


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("test.decisions")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield out
    logger.removeHandler(handler)


def cluster(cpu: int = 1) -> tuple[ClusterController, CollectorRegistry, DecisionLog]:
    engine = Engine(Configuration(), T0)
    controller = ClusterController(engine, SimRunner(lambda wl: None, default_duration=5.0, ready_delay=0.0))
    registry = CollectorRegistry()
    decisions = DecisionLog("test.decisions")
    controller.observer = ClusterObserver(metrics=DecisionMetrics(registry), decisions=decisions)
    registry.register(EngineCollector(lambda fn: fn(engine), "1.2.3"))
    for manifest in (namespace(), flavor(), cluster_queue(cpu=cpu), local_queue()):
        controller.apply(parse_object(manifest), T0)
    return controller, registry, decisions


def samples(registry: CollectorRegistry) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = generate_latest(registry).decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_one_json_line_per_decision_with_namespace_name_and_uid(json_lines: io.StringIO) -> None:
    controller, _, _ = cluster(cpu=1)
    for name in ("a", "b"):
        manifest = workload(name)
        manifest["metadata"]["uid"] = f"uid-{name}"
        controller.apply(parse_object(manifest), T0)
    controller.settle(T0)
    controller.settle(T0 + 6)  # a finishes, b is admitted
    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    decisions = [(d["decision"], d["workload"]) for d in lines]
    assert decisions[:5] == [("queued", "a"), ("reserved", "a"), ("admitted", "a"), ("queued", "b"), ("pending", "b")]
    assert ("finished", "a") in decisions and ("admitted", "b") in decisions
    assert decisions.index(("finished", "a")) < decisions.index(("admitted", "b"))
    for d in lines:
        assert d["namespace"] == "team" and d["uid"] == f"uid-{d['workload']}" and d["level"] == "info"
        assert d["msg"].startswith(f"workload team/{d['workload']} (uid uid-{d['workload']}) ")
    pending = next(d for d in lines if d["decision"] == "pending")
    assert pending["reason"] == "WaitingForQuota"  # Kueue's QuotaReserved=False reason
    assert "insufficient unused quota for cpu in flavor default" in pending["msg"]


def test_gauges_are_read_from_the_engine_at_scrape_time() -> None:
    controller, registry, _ = cluster(cpu=2)
    for name in ("a", "b", "c"):
        controller.apply(parse_object(workload(name)), T0)
    controller.settle(T0)
    s = samples(registry)
    assert s[("kueue_pending_workloads", frozenset({("cluster_queue", "cq"), ("status", "inadmissible")}))] == 1
    assert s[("kueue_reserving_active_workloads", frozenset({("cluster_queue", "cq")}))] == 2
    res = frozenset({("cohort", ""), ("cluster_queue", "cq"), ("flavor", "default"), ("resource", "cpu")})
    assert s[("kueue_cluster_queue_resource_reservation", res)] == 2
    assert s[("kueue_cluster_queue_nominal_quota", res)] == 2
    assert s[("kueue_quota_reserved_workloads_total", frozenset({("cluster_queue", "cq")}))] == 2
    # Nothing is cached: the next scrape sees the engine as it is now.
    controller.settle(T0 + 10)  # a and b finish, c is admitted
    controller.settle(T0 + 20)  # c finishes
    s = samples(registry)
    assert s[("kueue_pending_workloads", frozenset({("cluster_queue", "cq"), ("status", "inadmissible")}))] == 0
    assert s[("kueue_finished_workloads_total", frozenset({("cluster_queue", "cq")}))] == 3
    assert s[("kueue_reserving_active_workloads", frozenset({("cluster_queue", "cq")}))] == 0
    assert s[("kueue_build_info", frozenset({("git_version", "1.2.3"), ("git_commit", ""), ("build_date", ""),
                                               ("go_version", next(v for (n, ls), _ in s.items() if n == "kueue_build_info"
                                                                   for k, v in ls if k == "go_version")),
                                               ("compiler", "cpython"),
                                               ("platform", next(v for (n, ls), _ in s.items() if n == "kueue_build_info"
                                                                 for k, v in ls if k == "platform"))}))] == 1
    # Kueue's wait-time buckets: 1, then 2.5 * 2^i up to 10240 s.
    buckets = sorted(float(dict(ls)["le"]) for (n, ls), _ in s.items()
                     if n == "kueue_admission_wait_time_seconds_bucket" and dict(ls)["le"] != "+Inf")
    assert buckets == list(WAIT_BUCKETS) and buckets[-1] == 10240.0


def test_the_grafana_dashboard_uses_only_metrics_mkhub_exports() -> None:
    import re
    from pathlib import Path

    from hub.obs.federation import AgentObserver, DispatchObserver, worker_gauges

    controller, registry, _ = cluster(cpu=1)
    DispatchObserver(registry)
    AgentObserver(registry)
    exported = {m.name for m in registry.collect()}
    exported |= {m.name for m in worker_gauges(controller.engine, set(), {})}
    names: set[str] = set()
    for m in registry.collect():
        if m.type in ("counter",):
            names.add(m.name + "_total")
        elif m.type == "histogram":
            names.add(m.name + "_bucket")
        names.add(m.name)
    names |= exported
    dashboard = json.loads((Path(__file__).parents[2] / "manifests" / "grafana" / "mkhub-dashboard.json").read_text())
    used = set()
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            used |= set(re.findall(r"\b((?:kueue|multikueue|mkhub)_[a-z_]+)", target["expr"]))
    assert used and used <= names, sorted(used - names)
