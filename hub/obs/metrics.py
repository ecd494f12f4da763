"""Kueue's Prometheus metrics, by Kueue's names, labels and buckets (pkg/metrics/metrics.go).

Two halves, as Kueue has them:

* **counters and histograms** fed by decisions (:class:`DecisionMetrics`): one
  call per engine event or scheduling cycle, from the controllers' observer
  (:mod:`hub.obs.observer`);
* **gauges computed at scrape time** from the engine's state
  (:class:`EngineCollector`): pending, reserving and admitted counts, queue
  status, quotas, reservations, usage, weighted shares. Nothing is kept in
  parallel with the engine: a scrape asks the engine's thread for a snapshot
  (``read``) and renders it.

Quantities are reported as Kueue reports them: ``cpu`` in cores, every other
resource in its base unit. Each process owns one :class:`CollectorRegistry`
(tests run several hubs and agents in one interpreter).
"""

from __future__ import annotations

import platform
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from hub.api.quantity import MILLI_RESOURCES
from hub.api.workload import REQUEUED, Workload
from hub.engine.engine import Engine
from hub.engine.quota import FR

from .series import CounterChild, CounterFamily, HistogramChild, HistogramFamily, SeriesCollector

T = TypeVar("T")

# Kueue's generateExponentialBuckets(14): 1, then 2.5 * 2^i.
WAIT_BUCKETS = (1.0, *(2.5 * 2**i for i in range(13)))
# client_golang's DefaultBuckets (Kueue's admission_attempt_duration_seconds uses them).
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# mkhub's own latencies (store writes, engine cycles): finer at the low end.
FAST_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

LQ = ("name", "namespace")

EngineReader = Callable[[Callable[[Engine], T]], T]


def quantity(resource: str, value: int) -> float:
    """An engine integer as Kueue's metrics report it (cpu in cores)."""
    return value / 1000.0 if resource in MILLI_RESOURCES else float(value)


def queued_at(wl: Workload) -> float:
    """Kueue's QueuedWaitTime origin: creation, or the last requeue."""
    start = wl.meta.creation_timestamp or 0.0
    cond = wl.status.condition(REQUEUED)
    if cond is not None and cond.is_true and cond.last_transition_time > start:
        start = cond.last_transition_time
    return start


class DecisionMetrics:
    """Kueue's counters and histograms, plus mkhub's store and cycle latencies."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.admission_attempts = CounterFamily(
            "kueue_admission_attempts_total",
            "The total number of attempts to admit workloads ('success': at least one admitted).",
            ["result"],
        )
        self.admission_attempt_duration = HistogramFamily(
            "kueue_admission_attempt_duration_seconds", "The latency of an admission attempt.",
            ["result"], buckets=DEFAULT_BUCKETS,
        )
        self.quota_reserved = CounterFamily(
            "kueue_quota_reserved_workloads_total", "The total number of quota reserved workloads per 'cluster_queue'",
            ["cluster_queue"],
        )
        self.quota_reserved_wait = HistogramFamily(
            "kueue_quota_reserved_wait_time_seconds",
            "The time between a workload was created or requeued until it got quota reservation, per 'cluster_queue'",
            ["cluster_queue"], buckets=WAIT_BUCKETS,
        )
        self.admitted = CounterFamily(
            "kueue_admitted_workloads_total", "The total number of admitted workloads per 'cluster_queue'",
            ["cluster_queue"],
        )
        self.admission_wait = HistogramFamily(
            "kueue_admission_wait_time_seconds",
            "The time between a workload was created or requeued until admission, per 'cluster_queue'",
            ["cluster_queue"], buckets=WAIT_BUCKETS,
        )
        self.admission_checks_wait = HistogramFamily(
            "kueue_admission_checks_wait_time_seconds",
            "The time from when a workload got the quota reservation until admission, per 'cluster_queue'",
            ["cluster_queue"], buckets=WAIT_BUCKETS,
        )
        self.finished = CounterFamily(
            "kueue_finished_workloads_total", "The total number of finished workloads per 'cluster_queue'",
            ["cluster_queue"],
        )
        self.evicted = CounterFamily(
            "kueue_evicted_workloads_total", "The number of evicted workloads per 'cluster_queue' and 'reason'",
            ["cluster_queue", "reason"],
        )
        self.preempted = CounterFamily(
            "kueue_preempted_workloads_total",
            "The number of preempted workloads per 'preempting_cluster_queue' and 'reason'",
            ["preempting_cluster_queue", "reason"],
        )
        self.lq_quota_reserved = CounterFamily(
            "kueue_local_queue_quota_reserved_workloads_total",
            "The total number of quota reserved workloads per 'local_queue'", LQ,
        )
        self.lq_quota_reserved_wait = HistogramFamily(
            "kueue_local_queue_quota_reserved_wait_time_seconds",
            "The time between a workload was created or requeued until it got quota reservation, per 'local_queue'",
            LQ, buckets=WAIT_BUCKETS,
        )
        self.lq_admitted = CounterFamily(
            "kueue_local_queue_admitted_workloads_total", "The total number of admitted workloads per 'local_queue'",
            LQ,
        )
        self.lq_admission_wait = HistogramFamily(
            "kueue_local_queue_admission_wait_time_seconds",
            "The time between a workload was created or requeued until admission, per 'local_queue'",
            LQ, buckets=WAIT_BUCKETS,
        )
        self.lq_finished = CounterFamily(
            "kueue_local_queue_finished_workloads_total", "The total number of finished workloads per 'local_queue'",
            LQ,
        )
        self.lq_evicted = CounterFamily(
            "kueue_local_queue_evicted_workloads_total", "The number of evicted workloads per 'local_queue'",
            (*LQ, "reason"),
        )
        self.cycle_duration = HistogramFamily(
            "mkhub_engine_cycle_duration_seconds", "Wall time of one scheduling cycle of the engine (every cycle).",
            buckets=FAST_BUCKETS,
        )
        self.store_write_duration = HistogramFamily(
            "mkhub_store_write_duration_seconds",
            "Wall time of one store write batch (the hub's round transaction), per 'operation'.",
            ["operation"], buckets=FAST_BUCKETS,
        )
        self.events_recorded = CounterFamily(
            "mkhub_events_recorded_total", "Kubernetes Events recorded, per 'reason'.", ["reason"],
        )
        registry.register(SeriesCollector(v for v in vars(self).values() if isinstance(v, CounterFamily | HistogramFamily)))
        self._cqs: dict[str, CQSeries] = {}
        self._lqs: dict[tuple[str, str], LQSeries] = {}


    def cq(self, name: str) -> CQSeries:
        """The labelled series of one ClusterQueue (cached: ``labels()`` is costly per decision)."""
        series = self._cqs.get(name)
        if series is None:
            series = self._cqs[name] = CQSeries(
                self.quota_reserved.labels(name), self.quota_reserved_wait.labels(name), self.admitted.labels(name),
                self.admission_wait.labels(name), self.admission_checks_wait.labels(name), self.finished.labels(name),
            )
        return series

    def lq(self, namespace: str, name: str) -> LQSeries:
        key = (namespace, name)
        series = self._lqs.get(key)
        if series is None:
            series = self._lqs[key] = LQSeries(
                self.lq_quota_reserved.labels(name, namespace), self.lq_quota_reserved_wait.labels(name, namespace),
                self.lq_admitted.labels(name, namespace), self.lq_admission_wait.labels(name, namespace),
                self.lq_finished.labels(name, namespace),
            )
        return series


@dataclass(frozen=True, slots=True)
class CQSeries:
    quota_reserved: CounterChild
    quota_reserved_wait: HistogramChild
    admitted: CounterChild
    admission_wait: HistogramChild
    admission_checks_wait: HistogramChild
    finished: CounterChild


@dataclass(frozen=True, slots=True)
class LQSeries:
    quota_reserved: CounterChild
    quota_reserved_wait: HistogramChild
    admitted: CounterChild
    admission_wait: HistogramChild
    finished: CounterChild


class EngineCollector(Collector):
    """Kueue's gauges, computed at scrape time from the engine (through ``read``)."""

    def __init__(self, read: EngineReader[list[Metric]], version: str) -> None:
        self.read = read
        self.version = version

    def describe(self) -> Iterable[Metric]:
        return []  # unchecked collector: families appear as the engine's state has them

    def collect(self) -> Iterable[Metric]:
        build = GaugeMetricFamily(
            "kueue_build_info", "mkhub build information (Kueue's labels; go_version holds the Python version).",
            labels=["git_version", "git_commit", "build_date", "go_version", "compiler", "platform"],
        )
        build.add_metric(
            [self.version, "", "", f"python{platform.python_version()}", platform.python_implementation().lower(),
             f"{platform.system().lower()}/{platform.machine().lower()}"],
            1.0,
        )
        yield build
        yield from self.read(engine_gauges)


def _gauge(name: str, doc: str, labels: Iterable[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=list(labels))


def engine_gauges(engine: Engine) -> list[Metric]:
    """Every scrape-time gauge of one engine (runs on the engine's thread; reads only)."""
    cq_labels = ("cohort", "cluster_queue", "flavor", "resource")
    pending = _gauge("kueue_pending_workloads", "The number of pending workloads, per 'cluster_queue' and 'status'.",
                     ("cluster_queue", "status"))
    reserving = _gauge("kueue_reserving_active_workloads",
                       "The number of Workloads that are reserving quota, per 'cluster_queue'", ("cluster_queue",))
    admitted = _gauge("kueue_admitted_active_workloads",
                      "The number of admitted Workloads that are active (unsuspended and not finished), per 'cluster_queue'",
                      ("cluster_queue",))
    status = _gauge("kueue_cluster_queue_status", "Reports 'cluster_queue' with its 'status' (pending, active, terminating).",
                    ("cluster_queue", "status"))
    reservation = _gauge("kueue_cluster_queue_resource_reservation",
                         "Reports the cluster_queue's total resource reservation within all the flavors", cq_labels)
    usage = _gauge("kueue_cluster_queue_resource_usage",
                   "Reports the cluster_queue's total resource usage within all the flavors", cq_labels)
    nominal = _gauge("kueue_cluster_queue_nominal_quota",
                     "Reports the cluster_queue's resource nominal quota within all the flavors", cq_labels)
    borrowing = _gauge("kueue_cluster_queue_borrowing_limit",
                       "Reports the cluster_queue's resource borrowing limit within all the flavors", cq_labels)
    lending = _gauge("kueue_cluster_queue_lending_limit",
                     "Reports the cluster_queue's resource lending limit within all the flavors", cq_labels)
    share = _gauge("kueue_cluster_queue_weighted_share",
                   "The ClusterQueue's weighted share of its cohort's lendable resources (0: within nominal quota).",
                   ("cluster_queue",))
    cohort_share = _gauge("kueue_cohort_weighted_share", "The Cohort's weighted share of its parent's lendable resources.",
                          ("cohort",))
    for name in sorted(engine.cqs):
        state = engine.cqs[name]
        active, inadmissible = engine.pending_counts(name)
        pending.add_metric([name, "active"], active)
        pending.add_metric([name, "inadmissible"], inadmissible)
        reserving.add_metric([name], len(state.reserving))
        admitted.add_metric([name], state.admitted_count)
        current = "active" if state.active else "pending"
        for s in ("pending", "active", "terminating"):
            status.add_metric([name, s], 1.0 if s == current else 0.0)
        cohort = state.spec.cohort_name or ""
        admitted_usage = state.admitted_usage
        for group in state.spec.resource_groups:
            for flavor in group.flavors:
                for rq in flavor.resources:
                    fr = (flavor.name, rq.name)
                    labels = [cohort, name, flavor.name, rq.name]
                    reservation.add_metric(labels, quantity(rq.name, state.node.usage.get(fr, 0)))
                    usage.add_metric(labels, quantity(rq.name, admitted_usage.get(fr, 0)))
                    nominal.add_metric(labels, quantity(rq.name, rq.nominal_quota))
                    if rq.borrowing_limit is not None:
                        borrowing.add_metric(labels, quantity(rq.name, rq.borrowing_limit))
                    if rq.lending_limit is not None:
                        lending.add_metric(labels, quantity(rq.name, rq.lending_limit))
        ws = engine.weighted_share(name)
        if ws is not None:
            share.add_metric([name], float(ws))
    for cohort_name in sorted(engine.tree.cohorts):
        ws = engine.weighted_share(cohort_name)
        if ws is not None:
            cohort_share.add_metric([cohort_name], float(ws))
    out: list[Metric] = [pending, reserving, admitted, status, reservation, usage, nominal, borrowing, lending, share,
                         cohort_share]
    out.extend(_local_queue_gauges(engine))
    return out


def _local_queue_gauges(engine: Engine) -> Iterator[Metric]:
    lq_res = (*LQ, "flavor", "resource")
    pending = _gauge("kueue_local_queue_pending_workloads", "The number of pending workloads, per 'local_queue' and 'status'.",
                     (*LQ, "status"))
    reserving = _gauge("kueue_local_queue_reserving_active_workloads",
                       "The number of Workloads that are reserving quota, per 'localQueue'", LQ)
    admitted = _gauge("kueue_local_queue_admitted_active_workloads",
                      "The number of admitted Workloads that are active, per 'localQueue'", LQ)
    status = _gauge("kueue_local_queue_status", "Reports 'localQueue' with its 'active' status (True, False, Unknown).",
                    (*LQ, "active"))
    reservation = _gauge("kueue_local_queue_resource_reservation",
                         "Reports the localQueue's total resource reservation within all the flavors", lq_res)
    usage = _gauge("kueue_local_queue_resource_usage", "Reports the localQueue's total resource usage within all the flavors",
                   lq_res)
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    res: dict[str, dict[FR, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for info in engine.infos.values():
        wl = info.wl
        key = f"{wl.meta.namespace}/{wl.queue_name}"
        row = rows[key]
        if wl.is_quota_reserved:
            row[2] += 1
            if wl.is_admitted:
                row[3] += 1
            for fr, value in info.usage.items():
                cell = res[key][fr]
                cell[0] += value
                if wl.is_admitted:
                    cell[1] += value
        else:
            queue = engine.queues.get(info.cluster_queue or "")
            if queue is None or not queue.contains(info.key):
                continue  # not queued (deactivated, or its queues are missing): not pending in Kueue's count
            row[1 if info.key in queue.inadmissible else 0] += 1
    for key in sorted(engine.local_queues):
        lq = engine.local_queues[key]
        labels = [lq.meta.name, lq.meta.namespace]
        row = rows.get(key, [0, 0, 0, 0])
        pending.add_metric([*labels, "active"], row[0])
        pending.add_metric([*labels, "inadmissible"], row[1])
        reserving.add_metric(labels, row[2])
        admitted.add_metric(labels, row[3])
        state = engine.cqs.get(lq.cluster_queue)
        active = "True" if lq.stop_policy == "None" and state is not None and state.active else "False"
        for s in ("True", "False", "Unknown"):
            status.add_metric([*labels, s], 1.0 if s == active else 0.0)
        for (flavor, resource), (reserved, used) in sorted(res.get(key, {}).items()):
            reservation.add_metric([*labels, flavor, resource], quantity(resource, reserved))
            usage.add_metric([*labels, flavor, resource], quantity(resource, used))
    yield from (pending, reserving, admitted, status, reservation, usage)
