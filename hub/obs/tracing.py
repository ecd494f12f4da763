"""Traces with OpenTelemetry: off unless the standard ``OTEL_*`` variables turn them on.

``OTEL_TRACES_EXPORTER`` picks the exporter as OpenTelemetry's SDK documents it:
``none`` (the default here: nothing is recorded), ``otlp`` (needs the ``otlp``
extra; ``OTEL_EXPORTER_OTLP_ENDPOINT`` and friends are read by the exporter),
``console``. ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` name the
process (default ``mkhub`` or ``mkagent``). ``OTEL_SDK_DISABLED=true`` wins over
everything.

When tracing is off :data:`STATE.enabled` is False and every call site checks it
before touching OpenTelemetry, so the scheduling loop pays one attribute read.
Tests turn it on with :func:`enable` and an in-memory exporter.

Context crosses processes as W3C ``traceparent``/``tracestate`` entries in a
string map carried in the protocol messages (Dispatch and Start), since one
gRPC stream carries every workload of an agent.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

# OpenTelemetry is imported when tracing is turned on, not at start-up: a hub with tracing off
# (the default) never touches it, and importing its SDK was a tenth of the hub's imports.
if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

log = logging.getLogger(__name__)


@cache
def _propagator() -> TraceContextTextMapPropagator:
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator()


@dataclass(slots=True)
class TracingState:
    enabled: bool = False
    provider: TracerProvider | None = None
    tracer: Tracer | None = None


STATE = TracingState()


class TracingConfigError(ValueError):
    """An ``OTEL_*`` setting mkhub cannot honour (one line, for the command line)."""


def _exporter(name: str) -> SpanExporter:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if name == "otlp":
        protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
            "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"
        )
        try:
            if protocol.startswith("http"):
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found]
                    OTLPSpanExporter as HttpExporter,
                )

                return HttpExporter()  # type: ignore[no-any-return]
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found]
                OTLPSpanExporter as GrpcExporter,
            )

            return GrpcExporter()  # type: ignore[no-any-return]
        except ImportError as exc:
            raise TracingConfigError(
                "OTEL_TRACES_EXPORTER=otlp: the OTLP exporter is not installed (pip install 'mkhub[otlp]')"
            ) from exc
    raise TracingConfigError(f"OTEL_TRACES_EXPORTER={name}: unsupported exporter (use otlp, console or none)")


def configure_from_env(service_name: str, env: Mapping[str, str] | None = None) -> bool:
    """Turn tracing on when the environment asks for it. Returns whether it is on."""
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    names = [n.strip() for n in env.get("OTEL_TRACES_EXPORTER", "none").split(",") if n.strip()]
    names = [n for n in names if n != "none"]
    if not names:
        return False
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    exporters = [_exporter(n) for n in names]
    attrs = {} if env.get("OTEL_SERVICE_NAME") else {"service.name": service_name}
    provider = TracerProvider(resource=Resource.create(attrs))
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    _install(provider)
    log.info("tracing on: exporting spans to %s", ", ".join(names))
    return True


def enable(exporter: SpanExporter, service_name: str = "mkhub") -> TracerProvider:
    """Tracing on with this exporter, spans exported as they end (tests, benchmarks)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _install(provider)
    return provider


def _install(provider: TracerProvider) -> None:
    STATE.provider = provider
    STATE.tracer = provider.get_tracer("mkhub")
    STATE.enabled = True


def disable() -> None:
    """Tracing off again; spans still open are dropped."""
    provider = STATE.provider
    STATE.enabled = False
    STATE.tracer = None
    STATE.provider = None
    if provider is not None:
        provider.shutdown()


def shutdown() -> None:
    """Flush and stop the exporters (process exit)."""
    if STATE.provider is not None:
        STATE.provider.force_flush()
    disable()


def tracer() -> Tracer:
    assert STATE.tracer is not None, "tracing is off"
    return STATE.tracer


def start_span(name: str, parent: Mapping[str, str] | None = None, attributes: Mapping[str, str | int] | None = None) -> Span:
    """A span (tracing must be on), child of the context carried in ``parent`` if any."""
    ctx = _propagator().extract(carrier=dict(parent)) if parent else None
    return tracer().start_span(name, context=ctx, attributes=dict(attributes or {}))


def inject(span: Span) -> dict[str, str]:
    """The W3C trace context of ``span`` as a string map for a protocol message."""
    from opentelemetry import context as otel_context
    from opentelemetry import trace

    carrier: MutableMapping[str, str] = {}
    _propagator().inject(carrier, context=trace.set_span_in_context(span, otel_context.Context()))
    return dict(carrier)
