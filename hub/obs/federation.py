"""MultiKueue's metrics, dispatch traces and decision logs (hub side), and the agent's.

:class:`DispatchObserver` is the ``observer`` of the hub's
:class:`hub.federation.multikueue.MultiKueueController`: one call per decision
(a copy dispatched, a winner elected, the winner's first status, an agent's
rejection, a worker lost, a dispatch dropped). It feeds Kueue's
``multikueue_workloads_dispatched_total`` / ``multikueue_workloads_admitted_total``
and the per-worker series MultiKueue users ask for (kueue#11132), logs each
decision, and keeps one span per dispatch whose context travels in the
Dispatch and Start messages (``trace_context``), so the agent's spans join
the hub's trace.

:class:`FederationCollector` computes the per-worker gauges at scrape time
(connection, heartbeat age, running workloads) from the controller's engine
and the transport.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from hub.engine.engine import Engine

from . import tracing
from .logs import DecisionLog
from .metrics import EngineReader

if TYPE_CHECKING:
    from opentelemetry.trace import Span  # imported only when tracing is on (hub.obs.tracing)

# Dispatch to first status from the winner: sub-second on a healthy link.
START_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class DispatchObserver:
    """The hub's MultiKueue decisions as metrics, spans and log lines."""

    def __init__(self, registry: CollectorRegistry | None, decisions: DecisionLog | None = None) -> None:
        self.decisions = decisions
        self.registry = registry
        # dispatch id -> cluster -> when its copy was sent (by dispatch: a win or a drop finds its
        # copies at once, not by a walk of every dispatch in flight)
        self._sent: dict[str, dict[str, float]] = {}
        self._spans: dict[str, Span] = {}  # dispatch id -> the hub's dispatch span
        self._started: set[str] = set()
        self.dispatched_total: Counter | None = None
        self.admitted_total: Counter | None = None
        self.rejected_total: Counter | None = None
        self.lost_total: Counter | None = None
        self.start_latency: Histogram | None = None
        if registry is None:
            return
        self.dispatched_total = Counter(
            "multikueue_workloads_dispatched_total",
            "The number of remote workloads created by the MultiKueue manager, per 'cluster_queue' and worker 'cluster'.",
            ["cluster_queue", "cluster"], registry=registry,
        )
        self.admitted_total = Counter(
            "multikueue_workloads_admitted_total",
            "The number of remote workloads admitted by a worker cluster, per 'cluster_queue' and 'cluster'.",
            ["cluster_queue", "cluster"], registry=registry,
        )
        self.rejected_total = Counter(
            "mkhub_worker_dispatch_rejections_total", "Dispatches a worker's agent refused, per 'cluster' and 'reason'.",
            ["cluster", "reason"], registry=registry,
        )
        self.lost_total = Counter(
            "mkhub_worker_lost_workloads_total",
            "Workloads running on a worker that the hub lost (worker silent past workerLostTimeout, copy gone), per 'cluster'.",
            ["cluster"], registry=registry,
        )
        self.start_latency = Histogram(
            "mkhub_worker_dispatch_to_start_seconds",
            "Time from sending a Dispatch to a worker to its first running status as the winner, per 'cluster'.",
            ["cluster"], buckets=START_BUCKETS, registry=registry,
        )

    # ------------------------------------------------------------------ decisions

    def dispatch_context(self, key: str, uid: str, did: str, cluster_queue: str) -> Mapping[str, str]:
        """A new dispatch: its span begins; the context to carry in the Dispatch message."""
        if not tracing.STATE.enabled:
            return {}
        span = tracing.start_span(
            "mkhub.dispatch",
            attributes={"mkhub.workload": key, "mkhub.uid": uid, "mkhub.dispatch_id": did, "kueue.cluster_queue": cluster_queue},
        )
        old = self._spans.pop(did, None)
        if old is not None:
            old.end()
        self._spans[did] = span
        return tracing.inject(span)

    def context(self, did: str) -> Mapping[str, str]:
        span = self._spans.get(did)
        return tracing.inject(span) if span is not None else {}

    def dispatched(self, key: str, uid: str, did: str, cluster_queue: str, cluster: str) -> None:
        self._sent.setdefault(did, {})[cluster] = time.monotonic()
        if self.dispatched_total is not None:
            self.dispatched_total.labels(cluster_queue, cluster).inc()
        span = self._spans.get(did)
        if span is not None:
            span.add_event("dispatched", {"mkhub.cluster": cluster})
        if self.decisions is not None:
            self.decisions.decision("dispatched", key, uid, f"dispatched to {cluster} (dispatch {did})",
                                    {"cluster": cluster, "cluster_queue": cluster_queue, "dispatch_id": did})

    def won(self, key: str, uid: str, did: str, cluster_queue: str, cluster: str) -> None:
        if self.admitted_total is not None:
            self.admitted_total.labels(cluster_queue, cluster).inc()
        span = self._spans.get(did)
        if span is not None:
            span.add_event("won", {"mkhub.cluster": cluster})
            span.set_attribute("mkhub.cluster", cluster)
        sent = self._sent.get(did)
        if sent is not None:
            for other in [c for c in sent if c != cluster]:
                del sent[other]
        if self.decisions is not None:
            self.decisions.decision("won", key, uid, f"won by {cluster}; Start sent (dispatch {did})",
                                    {"cluster": cluster, "cluster_queue": cluster_queue, "dispatch_id": did})

    def started(self, key: str, uid: str, did: str, cluster: str) -> None:
        """The winner's first running status (Running or PodsReady)."""
        if did in self._started:
            return
        self._started.add(did)
        by_cluster = self._sent.get(did)
        sent = by_cluster.pop(cluster, None) if by_cluster is not None else None
        if by_cluster is not None and not by_cluster:
            del self._sent[did]
        if sent is not None and self.start_latency is not None:
            self.start_latency.labels(cluster).observe(time.monotonic() - sent)
        span = self._spans.pop(did, None)
        if span is not None:
            span.add_event("started", {"mkhub.cluster": cluster})
            span.end()
        if self.decisions is not None:
            self.decisions.decision("started", key, uid, f"running on {cluster}", {"cluster": cluster, "dispatch_id": did})

    def rejected(self, key: str, uid: str, cluster: str, reason: str, message: str) -> None:
        if self.rejected_total is not None:
            self.rejected_total.labels(cluster, reason or "Unknown").inc()
        if self.decisions is not None:
            self.decisions.decision("rejected", key, uid, f"refused by {cluster} ({reason}): {message}",
                                    {"cluster": cluster, "reason": reason})

    def lost(self, key: str, uid: str, cluster: str) -> None:
        if self.lost_total is not None:
            self.lost_total.labels(cluster).inc()
        if self.decisions is not None:
            self.decisions.decision("lost", key, uid, f"lost with worker {cluster}; requeued", {"cluster": cluster})

    def dropped(self, did: str) -> None:
        """The hub stopped tracking this dispatch (finished, evicted, superseded)."""
        self._sent.pop(did, None)
        self._started.discard(did)
        span = self._spans.pop(did, None)
        if span is not None:
            span.add_event("dropped")
            span.end()


class FederationCollector(Collector):
    """Per-worker gauges computed at scrape time: connection, heartbeat age, workloads running."""

    def __init__(
        self,
        read: EngineReader[list[Metric]],
        connected: Callable[[], Iterable[str]],
        last_heard: Callable[[str], float | None],
    ) -> None:
        self.read = read
        self.connected = connected
        self.last_heard = last_heard

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        connected = set(self.connected())
        now = time.monotonic()
        ages = {name: self.last_heard(name) for name in connected}

        def gauges(engine: Engine) -> list[Metric]:
            return worker_gauges(engine, connected, {n: (None if t is None else now - t) for n, t in ages.items()})

        return self.read(gauges)


def worker_gauges(engine: Engine, connected: set[str], ages: Mapping[str, float | None]) -> list[Metric]:
    up = GaugeMetricFamily("mkhub_worker_connected", "1 when the worker's agent holds a stream to the hub.", labels=["cluster"])
    age = GaugeMetricFamily("mkhub_worker_last_heartbeat_age_seconds",
                            "Seconds since the hub last heard from the worker's agent (connected workers).", labels=["cluster"])
    running = GaugeMetricFamily("mkhub_worker_running_workloads",
                                "Workloads admitted on the worker (it won them) and not finished.", labels=["cluster"])
    status = GaugeMetricFamily("multikueue_cluster_status",
                               "The worker cluster's Active condition, per manager 'cluster_queue' using it.",
                               labels=["cluster_queue", "cluster", "active"])
    counts: dict[str, int] = {}
    for wl in engine.workloads.values():
        name = wl.status.cluster_name
        if name is not None and wl.is_admitted and not wl.is_finished:
            counts[name] = counts.get(name, 0) + 1
    for name in sorted(engine.mk_clusters):
        up.add_metric([name], 1.0 if name in connected else 0.0)
        heard = ages.get(name)
        if heard is not None:
            age.add_metric([name], heard)
        running.add_metric([name], counts.get(name, 0))
    for cq_name, state in sorted(engine.cqs.items()):
        for rule in state.spec.admission_checks:
            check = engine.admission_checks.get(rule.name)
            if check is None or not check.is_multikueue:
                continue
            config = engine.mk_configs.get(check.parameters_name) if check.parameters_kind == "MultiKueueConfig" else None
            clusters = config.clusters if config is not None else ()
            for cluster in clusters:
                mkc = engine.mk_clusters.get(cluster)
                if mkc is None:
                    continue
                cond = next((c for c in mkc.conditions if c.type == "Active"), None)
                active = "Unknown" if cond is None else ("True" if cond.is_true else "False")
                for value in ("True", "False", "Unknown"):
                    status.add_metric([cq_name, cluster, value], 1.0 if value == active else 0.0)
    return [up, age, running, status]


class AgentObserver:
    """An agent's view: the hub's orders as log lines, counters and spans joined to the hub's trace."""

    def __init__(self, registry: CollectorRegistry | None, decisions: DecisionLog | None = None) -> None:
        self.decisions = decisions
        self._received: dict[str, float] = {}  # dispatch id -> when it arrived
        self._spans: dict[str, Span] = {}  # dispatch id -> the running span (after Start)
        self.items: Counter | None = None
        self.rejections: Counter | None = None
        self.finished_total: Counter | None = None
        self.start_wait: Histogram | None = None
        if registry is None:
            return
        self.items = Counter("mkagent_hub_items_total", "Items received from the hub, per 'kind' (dispatch, start, withdraw).",
                             ["kind"], registry=registry)
        self.rejections = Counter("mkagent_dispatch_rejections_total", "Dispatches this agent refused, per 'reason'.",
                                  ["reason"], registry=registry)
        self.finished_total = Counter("mkagent_workloads_finished_total",
                                      "Workloads this agent ran to the end after winning them, per 'result'.",
                                      ["result"], registry=registry)
        self.start_wait = Histogram("mkagent_dispatch_to_start_seconds",
                                    "Time from receiving a Dispatch to running the workload (after winning it).",
                                    buckets=START_BUCKETS, registry=registry)

    def dispatch(self, key: str, uid: str, did: str, trace_context: Mapping[str, str]) -> None:
        self._received[did] = time.monotonic()
        if self.items is not None:
            self.items.labels("dispatch").inc()
        if tracing.STATE.enabled and trace_context:
            tracing.start_span("mkagent.dispatch", trace_context, {"mkhub.workload": key, "mkhub.dispatch_id": did}).end()
        if self.decisions is not None:
            self.decisions.decision("dispatch", key, uid, f"received dispatch {did}; admitting a local copy", {"dispatch_id": did})

    def skipped(self, kinds: Iterable[str]) -> None:
        """Items received and never acted on: a Dispatch withdrawn in the same drain, and its Withdraw
        (the hub counted the Dispatch as sent, so it counts as received here too)."""
        if self.items is not None:
            for kind in kinds:
                self.items.labels(kind).inc()

    def rejected(self, key: str, uid: str, did: str, reason: str, message: str) -> None:
        if self.rejections is not None:
            self.rejections.labels(reason).inc()
        if self.decisions is not None:
            self.decisions.decision("rejected", key, uid, f"refused dispatch {did} ({reason}): {message}", {"reason": reason})

    def won(self, key: str, uid: str, did: str, trace_context: Mapping[str, str]) -> None:
        if self.items is not None:
            self.items.labels("start").inc()
        if tracing.STATE.enabled and trace_context:
            self._spans[did] = tracing.start_span("mkagent.start", trace_context, {"mkhub.workload": key, "mkhub.dispatch_id": did})
        if self.decisions is not None:
            self.decisions.decision("won", key, uid, f"won dispatch {did}: starting it", {"dispatch_id": did})

    def started(self, key: str, uid: str, did: str) -> None:
        received = self._received.pop(did, None)
        if received is not None and self.start_wait is not None:
            self.start_wait.observe(time.monotonic() - received)
        span = self._spans.pop(did, None)
        if span is not None:
            span.end()
        if self.decisions is not None:
            self.decisions.decision("started", key, uid, f"running (dispatch {did})", {"dispatch_id": did})

    def finished(self, key: str, uid: str, did: str, result: str) -> None:
        if self.finished_total is not None:
            self.finished_total.labels(result).inc()
        if self.decisions is not None:
            self.decisions.decision("finished", key, uid, f"finished ({result}); reported to the hub", {"reason": result})

    def withdrawn(self, key: str, uid: str, did: str, reason: str) -> None:
        if self.items is not None:
            self.items.labels("withdraw").inc()
        self.dropped(did)
        if self.decisions is not None:
            self.decisions.decision("withdrawn", key, uid, f"copy withdrawn by the hub: {reason}", {"reason": reason})

    def dropped(self, did: str) -> None:
        self._received.pop(did, None)
        span = self._spans.pop(did, None)
        if span is not None:
            span.end()


def agent_gauges(connected: bool, copies: Mapping[str, int], names: Mapping[int, str]) -> list[Metric]:
    """An agent's link and copies, for its collector (copies: key -> local state number)."""
    up = GaugeMetricFamily("mkagent_hub_connected", "1 when this agent holds a stream to the hub.")
    up.add_metric([], 1.0 if connected else 0.0)
    held = GaugeMetricFamily("mkagent_workload_copies", "Workload copies this agent holds, per local 'state'.", labels=["state"])
    counts: dict[str, int] = {}
    for state in copies.values():
        label = names.get(state, str(state))
        counts[label] = counts.get(label, 0) + 1
    for label in sorted(counts):
        held.add_metric([label], counts[label])
    return [up, held]
