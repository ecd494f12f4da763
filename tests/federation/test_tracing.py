"""One trace across the hub and its agents: the hub's dispatch span is the parent of the agents' spans.

A real FederationServer (mTLS on 127.0.0.1) and two agents on real HubLinks, in
one process so one in-memory exporter sees every span. The trace context
travels in the Dispatch and Start messages.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hub.obs import tracing
from hub.obs.federation import DispatchObserver
from hub.obs.observer import ClusterObserver

from .helpers import poll_until
from .test_mk_grpc import Federation, certs, with_federation  # noqa: F401 - certs is a fixture

__all__ = ["certs"]


def test_one_trace_links_the_hub_dispatch_and_the_agent_spans(tmp_path: Path, certs: Path) -> None:  # noqa: F811
    exporter = InMemorySpanExporter()
    tracing.enable(exporter)

    async def body(fed: Federation) -> None:
        fed.hub.mk.observer = DispatchObserver(None)
        fed.hub.controller.observer = ClusterObserver()
        key = fed.submit("a", cpu="2", duration="200ms")
        await poll_until(lambda: fed.state(key) == "finished", what="finish")

    try:
        asyncio.run(with_federation(tmp_path, certs, {"worker-1": "1", "worker-2": "4"}, body))
    finally:
        tracing.disable()
    spans = exporter.get_finished_spans()
    dispatch = [s for s in spans if s.name == "mkhub.dispatch"]
    assert len(dispatch) == 1
    hub_span = dispatch[0]
    assert hub_span.attributes is not None and hub_span.attributes["mkhub.cluster"] == "worker-2"
    assert [e.name for e in hub_span.events] == ["dispatched", "dispatched", "won", "started"]
    trace_id, span_id = hub_span.context.trace_id, hub_span.context.span_id
    # Both agents got the Dispatch (worker-1 cannot admit it); only the winner got Start.
    received = [s for s in spans if s.name == "mkagent.dispatch"]
    started = [s for s in spans if s.name == "mkagent.start"]
    assert len(received) == 2 and len(started) == 1
    for span in [*received, *started]:
        assert span.context.trace_id == trace_id
        assert span.parent is not None and span.parent.span_id == span_id
        assert span.resource.attributes["service.name"] == "mkhub"
    # The agent's span ends at the first running status, before the hub hears of it.
    assert started[0].end_time is not None and hub_span.end_time is not None
    assert started[0].end_time <= hub_span.end_time
    # Scheduling cycles are spans of their own, with what they decided.
    cycles = [s for s in spans if s.name == "mkhub.schedule_cycle"]
    assert any(s.attributes is not None and s.attributes["mkhub.admitted"] == 1 for s in cycles)
    assert any(s.name == "mkagent.schedule_cycle" for s in spans)
