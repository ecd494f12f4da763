"""What a cluster's controllers report, turned into metrics, traces, Events and log lines.

:class:`ClusterObserver` is the ``observer`` of a
:class:`hub.controllers.cluster.ClusterController` (hub and agent alike). The
controller calls it once per scheduling cycle (:meth:`cycle`, which runs the
cycle), once per batch of engine events (:meth:`on_events`) and once per batch
of workloads whose status changed (:meth:`on_status`). The engine stays pure:
the observer only reads it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Protocol

from hub.api.workload import CONCURRENT_PARENT_LABEL, QUOTA_RESERVED, Workload
from hub.engine.engine import Engine
from hub.engine.entry import CycleResult
from hub.engine.events import EngineEvent
from hub.store.interface import ConcurrentWrites, Store

from . import tracing
from .event_sender import EventSender
from .events import NORMAL, WARNING, EventRecorder, JobEvent, ObjectRef, Resolve
from .logs import DecisionLog
from .metrics import DecisionMetrics, queued_at

WORKLOAD_API = "kueue.x-k8s.io/v1beta2"


class Recorder(Protocol):
    def record(
        self, obj: ObjectRef, type_: str, reason: str, message: str, now: float | None = None, component: str = ""
    ) -> bool: ...


def workload_ref(wl: Workload) -> ObjectRef:
    return ObjectRef("Workload", wl.meta.namespace, wl.meta.name, wl.meta.uid, WORKLOAD_API, wl.meta.resource_version)


def _cluster_queue(engine: Engine, wl: Workload) -> str:
    if wl.status.admission is not None:
        return wl.status.admission.cluster_queue
    lq = engine.local_queues.get(f"{wl.meta.namespace}/{wl.queue_name}")
    return lq.cluster_queue if lq is not None else ""


def _preemptor_queue(message: str) -> str:
    """The preempting ClusterQueue, from Kueue's Preempted message ('preemptor path: /cohort/cq')."""
    _, found, rest = message.partition("preemptor path: ")
    if not found:
        return ""
    path = rest.split(";", 1)[0].strip()
    return path.rsplit("/", 1)[-1] if path != "UNKNOWN" else ""


class ClusterObserver:
    """Metrics, Events, decision logs and cycle spans of one cluster's controller."""

    def __init__(
        self,
        *,
        metrics: DecisionMetrics | None = None,
        decisions: DecisionLog | None = None,
        recorder: EventRecorder | None = None,
        span_prefix: str = "mkhub",
    ) -> None:
        self.metrics = metrics
        self.decisions = decisions
        self.recorder = recorder
        self.cycle_span = f"{span_prefix}.schedule_cycle"
        # workload key -> (reason, message) last reported while pending
        self._pending: dict[str, tuple[str, str]] = {}
        self._known: set[str] = set()  # workloads whose arrival was logged (until they finish)
        self._log: DecisionLog | None = None  # the decision log when INFO is on (read once per batch)
        self._sender: EventSender | None = None  # Events to an API server (flush_events)
        # Where Events go when not the round's store: on Kubernetes, the store through a client with a
        # rate limit of its own (hub.store.kube.records), as Kueue's event recorder has.
        self.events_store: Store | None = None

    # ------------------------------------------------------------------ cycles

    def cycle(self, engine: Engine, now: float) -> CycleResult:
        """Run one scheduling cycle, timed and (when tracing is on) inside a span."""
        t0 = time.perf_counter()
        if tracing.STATE.enabled:
            with tracing.tracer().start_as_current_span(self.cycle_span) as span:
                result = engine.schedule(now)
                span.set_attribute("mkhub.heads", result.heads)
                span.set_attribute("mkhub.admitted", result.admitted)
                span.set_attribute("mkhub.preempting", result.preempting)
                span.set_attribute("mkhub.parked", result.parked)
        else:
            result = engine.schedule(now)
        metrics = self.metrics
        if metrics is not None:
            elapsed = time.perf_counter() - t0
            metrics.cycle_duration.observe(elapsed)
            if result.heads:
                outcome = "success" if result.admitted else "inadmissible"
                metrics.admission_attempts.labels(outcome).inc()
                metrics.admission_attempt_duration.labels(outcome).observe(elapsed)
        return result

    # ------------------------------------------------------------------ decisions

    def on_events(self, engine: Engine, events: Iterable[EngineEvent], now: float) -> None:
        self._log = self.decisions if self.decisions is not None and self.decisions.enabled() else None
        for ev in events:
            wl = engine.workloads.get(ev.key)
            if ev.type in ("Finished", "Deleted"):
                self._pending.pop(ev.key, None)
                self._known.discard(ev.key)
            if wl is None:
                continue
            handler = _HANDLERS.get(ev.type)
            if handler is not None:
                handler(self, engine, wl, ev)

    def _quota_reserved(self, engine: Engine, wl: Workload, ev: EngineEvent) -> None:
        self._pending.pop(ev.key, None)
        cq = _cluster_queue(engine, wl)
        wait = max(0.0, ev.time - queued_at(wl))  # the engine reserves and emits at the same instant
        m = self.metrics
        if m is not None:
            series, lq = m.cq(cq), m.lq(wl.meta.namespace, wl.queue_name)
            series.quota_reserved.inc()
            series.quota_reserved_wait.observe(wait)
            lq.quota_reserved.inc()
            lq.quota_reserved_wait.observe(wait)
        self._record(wl, NORMAL, "QuotaReserved",
                     f"Quota reserved in ClusterQueue {cq}, wait time since queued was {wait:.0f}s", ev.time)
        if self._log is not None:
            flavors = sorted({f"{res}={flv}" for psa in (wl.status.admission.pod_set_assignments if wl.status.admission else ())
                              for res, flv in psa.flavors})
            self._log.decision("reserved", ev.key, wl.meta.uid,
                                    f"reserved quota in ClusterQueue {cq} ({', '.join(flavors) or 'no flavors'})",
                                    {"cluster_queue": cq})

    def _admitted(self, engine: Engine, wl: Workload, ev: EngineEvent) -> None:
        cq = _cluster_queue(engine, wl)
        if wl.meta.labels.get(CONCURRENT_PARENT_LABEL) == "true":
            # Its variant's admission was counted and recorded; Kueue's controller only copies it over.
            if self._log is not None:
                self._log.decision("admitted", ev.key, wl.meta.uid, ev.message, {"cluster_queue": cq})
            return
        at = ev.time
        reserved = wl.status.condition(QUOTA_RESERVED)
        since_reservation = max(0.0, at - reserved.last_transition_time) if reserved is not None else 0.0
        wait = max(0.0, at - queued_at(wl))
        m = self.metrics
        if m is not None:
            series, lq = m.cq(cq), m.lq(wl.meta.namespace, wl.queue_name)
            series.admitted.inc()
            series.admission_wait.observe(wait)
            series.admission_checks_wait.observe(since_reservation)
            lq.admitted.inc()
            lq.admission_wait.observe(wait)
        self._record(wl, NORMAL, "Admitted",
                     f"Admitted by ClusterQueue {cq}, wait time since reservation was {since_reservation:.0f}s", ev.time)
        if self._log is not None:
            self._log.decision("admitted", ev.key, wl.meta.uid, f"admitted by ClusterQueue {cq}", {"cluster_queue": cq})

    def _evicted(self, engine: Engine, wl: Workload, ev: EngineEvent) -> None:
        cq = _cluster_queue(engine, wl)
        if self.metrics is not None:
            self.metrics.evicted.labels(cq, ev.reason).inc()
            self.metrics.lq_evicted.labels(wl.queue_name, wl.meta.namespace, ev.reason).inc()
        self._record(wl, NORMAL, "Evicted", f"{ev.reason}: {ev.message}", ev.time)
        if self._log is not None:
            self._log.decision("evicted", ev.key, wl.meta.uid, f"evicted because {ev.reason}: {ev.message}",
                                    {"cluster_queue": cq, "reason": ev.reason})

    def _preempted(self, engine: Engine, wl: Workload, ev: EngineEvent) -> None:
        preemptor = _preemptor_queue(ev.message)
        if self.metrics is not None:
            self.metrics.preempted.labels(preemptor, ev.reason).inc()
        self._record(wl, NORMAL, "Preempted", ev.message, ev.time)
        if self._log is not None:
            self._log.decision("preempted", ev.key, wl.meta.uid, f"preempted by ClusterQueue {preemptor} ({ev.reason}): "
                                    f"{ev.message}", {"preempting_cluster_queue": preemptor, "reason": ev.reason})

    def _finished(self, engine: Engine, wl: Workload, ev: EngineEvent) -> None:
        cq = _cluster_queue(engine, wl)
        if self.metrics is not None:
            self.metrics.cq(cq).finished.inc()
            self.metrics.lq(wl.meta.namespace, wl.queue_name).finished.inc()
        failed = ev.reason == "Failed"
        self._record(wl, WARNING if failed else NORMAL, "Finished" if not failed else "Failed",
                     f"Workload finished: {ev.reason}", ev.time)
        if self._log is not None:
            self._log.decision("finished", ev.key, wl.meta.uid, f"finished ({ev.reason})",
                                    {"cluster_queue": cq, "reason": ev.reason})

    def _deactivated(self, engine: Engine, wl: Workload, ev: EngineEvent) -> None:
        self._record(wl, NORMAL, "Deactivated", ev.message, ev.time)
        if self._log is not None:
            self._log.decision("deactivated", ev.key, wl.meta.uid, f"deactivated because {ev.reason}: {ev.message}",
                                    {"reason": ev.reason})

    def on_status(self, engine: Engine, workloads: Iterable[Workload], now: float) -> None:
        """Pending workloads whose reason changed: a Pending Event and a log line (first: queued)."""
        self._log = self.decisions if self.decisions is not None and self.decisions.enabled() else None
        for wl in workloads:
            if wl.is_finished:
                continue
            key = wl.meta.key
            if key not in self._known:
                self._known.add(key)
                if self._log is not None:
                    cq = _cluster_queue(engine, wl)
                    self._log.decision("queued", key, wl.meta.uid,
                                            f"queued in LocalQueue {wl.meta.namespace}/{wl.queue_name} (ClusterQueue {cq or '-'})",
                                            {"local_queue": wl.queue_name, "cluster_queue": cq})
            if wl.is_quota_reserved:
                continue
            cond = wl.status.condition(QUOTA_RESERVED)
            reason, message = (cond.reason, cond.message) if cond is not None else ("", "")
            if self._pending.get(key) == (reason, message):
                continue
            self._pending[key] = (reason, message)
            if message:
                self._record(wl, NORMAL, "Pending", message, now)
                if self._log is not None:
                    self._log.decision("pending", key, wl.meta.uid, f"pending ({reason}): {message}", {"reason": reason})

    # ------------------------------------------------------------------ the hub's store writes

    @contextmanager
    def store_batch(self, store: Store) -> Iterator[None]:
        """``store.batch()`` (one round's transaction), timed, and in a span when tracing."""
        t0 = time.perf_counter()
        if tracing.STATE.enabled:
            with tracing.tracer().start_as_current_span("mkhub.store_batch"), store.batch():
                yield
        else:
            with store.batch():
                yield
        if self.metrics is not None:
            self.metrics.store_write_duration.labels("batch").observe(time.perf_counter() - t0)

    def on_job_events(self, events: Iterable[JobEvent], now: float) -> None:
        """Record on each Job what Kueue's job reconciler records there (kubectl describe job)."""
        if self.recorder is None:
            return
        for ev in events:
            meta = ev.job.meta
            ref = ObjectRef(ev.kind, meta.namespace, meta.name, meta.uid, ev.api_version, meta.resource_version)
            type_ = WARNING if ev.type == WARNING else NORMAL
            recorded = self.recorder.record(ref, type_, ev.reason, ev.message, now, component=ev.component)
            if recorded and self.metrics is not None:
                self.metrics.events_recorded.labels(ev.reason).inc()

    def flush_events(self, store: Store, resolve: Resolve | None = None) -> list[int]:
        """Write the round's Events; the resourceVersions written in the round. On an API server
        they go out in the background (:mod:`hub.obs.event_sender`): none is the round's."""
        if self.recorder is None:
            return []
        self.recorder.collect(store)  # Events past their TTL (at most once a minute)
        target = self.events_store if self.events_store is not None else store
        if not isinstance(target, ConcurrentWrites):
            return self.recorder.flush(target, resolve)
        sender = self._sender
        if sender is None or sender.store is not target:
            if sender is not None:
                sender.close(timeout=0.0)
            sender = self._sender = EventSender(self.recorder, target)
        sender.submit(self.recorder.take(resolve))
        return []

    def close(self, timeout: float = 2.0) -> None:
        """Write the Events still queued for the background (at most ``timeout`` seconds)."""
        if self._sender is not None:
            self._sender.close(timeout)
            self._sender = None

    def _record(self, wl: Workload, type_: str, reason: str, message: str, now: float) -> None:
        recorded = self.recorder is not None and self.recorder.record(workload_ref(wl), type_, reason, message, now)
        if recorded and self.metrics is not None:
            self.metrics.events_recorded.labels(reason).inc()


_HANDLERS = {
    "Recorded": lambda self, engine, wl, ev: self._record(wl, NORMAL, ev.reason, ev.message, ev.time),
    "QuotaReserved": ClusterObserver._quota_reserved,
    "Admitted": ClusterObserver._admitted,
    "Evicted": ClusterObserver._evicted,
    "Preempted": ClusterObserver._preempted,
    "Finished": ClusterObserver._finished,
    "Deactivated": ClusterObserver._deactivated,
}
