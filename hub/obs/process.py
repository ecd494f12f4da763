"""One process's observability, wired once: registry, observers, recorder, ``/metrics``, tracing.

``mkhub serve`` and ``mkagent`` each build one :class:`ProcessObs`; its parts are
handed to the controllers (``ClusterController.observer``,
``MultiKueueController.observer``) and its collectors read the engine on the
engine's own thread through ``read`` (see :mod:`hub.obs.metrics`).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric

from . import tracing
from .events import EventRecorder
from .federation import AgentObserver, DispatchObserver, FederationCollector
from .logs import DecisionLog
from .metrics import DecisionMetrics, EngineCollector, EngineReader
from .observer import ClusterObserver
from .server import MetricsServer

log = logging.getLogger(__name__)

# Kueue's scheduler records its events as this component.
EVENT_SOURCE = "kueue-admission"


class ProcessObs:
    """Metrics, Events, decision logs and tracing of one hub or agent process."""

    def __init__(self, role: str, version: str, *, record_events: bool = False) -> None:
        self.role = role
        self.version = version
        self.registry = CollectorRegistry()
        self.metrics = DecisionMetrics(self.registry)
        self.decisions = DecisionLog(f"{role}.decisions")
        self.recorder = EventRecorder(EVENT_SOURCE, host=socket.gethostname()) if record_events else None
        self.observer = ClusterObserver(
            metrics=self.metrics, decisions=self.decisions, recorder=self.recorder, span_prefix=role
        )
        self.dispatch: DispatchObserver | None = None
        self.agent: AgentObserver | None = None
        self.server: MetricsServer | None = None

    def for_hub(self) -> DispatchObserver:
        """The MultiKueue controller's observer (hub only)."""
        if self.dispatch is None:
            self.dispatch = DispatchObserver(self.registry, self.decisions)
        return self.dispatch

    def for_agent(self) -> AgentObserver:
        if self.agent is None:
            self.agent = AgentObserver(self.registry, self.decisions)
        return self.agent

    def collect_engine(self, read: EngineReader[list[Metric]]) -> None:
        self.registry.register(EngineCollector(read, self.version))

    def collect_workers(
        self, read: EngineReader[list[Metric]], connected: Callable[[], Iterable[str]], last_heard: Callable[[str], float | None]
    ) -> None:
        self.registry.register(FederationCollector(read, connected, last_heard))

    def serve_metrics(self, address: str | None) -> int | None:
        """Start ``/metrics`` on ``address`` (None: off). The port it listens on."""
        if not address:
            return None
        self.server = MetricsServer(self.registry, address)
        port = self.server.start()
        log.info("metrics on http://%s:%d/metrics", self.server.host, port)
        return port

    def stop(self) -> None:
        self.observer.close()  # Events still on their way to an API server
        if self.server is not None:
            self.server.stop()
            self.server = None
        tracing.shutdown()
