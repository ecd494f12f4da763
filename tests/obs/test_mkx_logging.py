"""A process's log records cost what their formats show (issue 26: a decision line per workload
and step in the hub and every agent): no caller lookup, and the local time converted once a
second; the lines read as before."""

from __future__ import annotations

import io
import logging
import re
import time
from collections.abc import Iterator

import pytest

from hub.obs import logs


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level, logging._srcfile, logging.logThreads,  # type: ignore[attr-defined]
             logging.logProcesses, logging.logMultiprocessing)
    out = io.StringIO()
    monkeypatch.setattr(logs.sys, "stderr", out)
    logs.configure_logging("info", "text")
    yield out
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in saved[0]:
        root.addHandler(handler)
    root.setLevel(saved[1])
    logging._srcfile, logging.logThreads, logging.logProcesses, logging.logMultiprocessing = saved[2:]  # type: ignore[attr-defined]


def test_a_decision_line_reads_as_before_without_a_caller_lookup(configured: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_caller(*args: object, **kwargs: object) -> object:
        raise AssertionError("looked up the caller")

    monkeypatch.setattr(logging.Logger, "findCaller", no_caller)
    logs.DecisionLog("mkagent.decisions").decision("admitted", "team/a", "uid-a", "admitted by ClusterQueue cq")
    line = configured.getvalue()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO mkagent.decisions: "
                        r"workload team/a \(uid uid-a\) admitted by ClusterQueue cq\n", line), line


def test_the_local_time_is_converted_once_a_second(configured: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> None:
    handler = logging.getLogger().handlers[0]
    assert handler.formatter is not None
    calls: list[float] = []
    real = time.localtime
    monkeypatch.setattr(time, "localtime", lambda t=None: calls.append(t) or real(t))
    lines = []
    for created in (1_700_000_000.25, 1_700_000_000.5, 1_700_000_000.75, 1_700_000_001.0):
        record = logging.makeLogRecord({"name": "x", "levelno": logging.INFO, "levelname": "INFO", "msg": "m",
                                        "created": created, "msecs": (created % 1) * 1000})
        lines.append(handler.formatter.format(record))
    assert len(calls) == 2
    assert lines[0] == time.strftime("%Y-%m-%d %H:%M:%S", real(1_700_000_000)) + ",250 INFO x: m"
    assert lines[3] == time.strftime("%Y-%m-%d %H:%M:%S", real(1_700_000_001)) + ",000 INFO x: m"
