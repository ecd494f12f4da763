"""Tracing is chosen by the standard OTEL_* variables: off by default, a clear error for what cannot be honoured."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from hub.obs import tracing


@pytest.fixture(autouse=True)
def _off() -> Iterator[None]:
    tracing.disable()
    yield
    tracing.disable()


def test_off_unless_asked() -> None:
    assert tracing.configure_from_env("mkhub", {}) is False
    assert tracing.configure_from_env("mkhub", {"OTEL_TRACES_EXPORTER": "none"}) is False
    assert tracing.configure_from_env("mkhub", {"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}) is False
    assert not tracing.STATE.enabled


def test_console_exporter_names_the_service() -> None:
    assert tracing.configure_from_env("mkagent", {"OTEL_TRACES_EXPORTER": "console"}) is True
    assert tracing.STATE.enabled and tracing.STATE.provider is not None
    assert tracing.STATE.provider.resource.attributes["service.name"] == "mkagent"


def test_unknown_or_missing_exporters_are_one_line_errors() -> None:
    with pytest.raises(tracing.TracingConfigError, match="OTEL_TRACES_EXPORTER=zipkin: unsupported exporter"):
        tracing.configure_from_env("mkhub", {"OTEL_TRACES_EXPORTER": "zipkin"})
    try:
        otlp = importlib.util.find_spec("opentelemetry.exporter.otlp.proto.grpc")
    except ModuleNotFoundError:
        otlp = None
    if otlp is None:
        with pytest.raises(tracing.TracingConfigError, match=r"pip install 'mkhub\[otlp\]'"):
            tracing.configure_from_env("mkhub", {"OTEL_TRACES_EXPORTER": "otlp"})
    assert not tracing.STATE.enabled
