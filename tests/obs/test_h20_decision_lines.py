"""A decision line that only the process's own handler (``configure_logging``) would take is written
straight to it, without a LogRecord (issue 26: 25 -> ~7 µs a line; the hub and every agent write
several per workload). The line is the one the record would have made, in both formats; anyone
else listening (a test's capture, a filter, a handler of its own) gets the record as before."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator

import pytest

from hub.obs import logs

TEXT_LINE = (r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO mkagent.decisions: "
             r"workload team/a \(uid uid-a\) admitted by ClusterQueue cq\n")


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level, logging._srcfile, logging.logThreads,  # type: ignore[attr-defined]
             logging.logProcesses, logging.logMultiprocessing, logs._HANDLER)
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in saved[0]:
        root.addHandler(handler)
    root.setLevel(saved[1])
    logging._srcfile, logging.logThreads, logging.logProcesses, logging.logMultiprocessing = saved[2:6]  # type: ignore[attr-defined]
    logs._HANDLER = saved[6]


def _configure(monkeypatch: pytest.MonkeyPatch, fmt: str, level: str = "info") -> io.StringIO:
    out = io.StringIO()
    monkeypatch.setattr(logs.sys, "stderr", out)
    logs.configure_logging(level, fmt)
    return out


def _decide() -> None:
    logs.DecisionLog("mkagent.decisions").decision("admitted", "team/a", "uid-a", "admitted by ClusterQueue cq",
                                                   {"cluster_queue": "cq"})


def _no_records(monkeypatch: pytest.MonkeyPatch) -> None:
    def made(*args: object, **kwargs: object) -> object:
        raise AssertionError("made a LogRecord")

    monkeypatch.setattr(logging.Logger, "makeRecord", made)


def _decided_without_a_record(monkeypatch: pytest.MonkeyPatch, fmt: str) -> io.StringIO:
    """Logging configured as a process does, one decision written (failing if a LogRecord is made)."""
    out = _configure(monkeypatch, fmt)
    with monkeypatch.context() as m:
        _no_records(m)
        _decide()
    return out


@pytest.mark.usefixtures("restore_logging")
def test_a_text_line_is_written_without_a_record_and_reads_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _decided_without_a_record(monkeypatch, "text")
    fast = out.getvalue()
    assert re.fullmatch(TEXT_LINE, fast), fast

    # The same line through a record (another handler listening on the way makes one).
    captured: list[logging.LogRecord] = []
    listener = logging.Handler()
    listener.emit = captured.append  # type: ignore[method-assign]
    logging.getLogger("mkagent").addHandler(listener)
    try:
        _decide()
    finally:
        logging.getLogger("mkagent").removeHandler(listener)
    slow = out.getvalue()[len(fast):]
    assert re.fullmatch(TEXT_LINE, slow), slow
    (record,) = captured
    assert (record.getMessage(), record.decision, record.namespace, record.workload, record.uid, record.cluster_queue) == (  # type: ignore[attr-defined]
        "workload team/a (uid uid-a) admitted by ClusterQueue cq", "admitted", "team", "a", "uid-a", "cq")


@pytest.mark.usefixtures("restore_logging")
def test_a_json_line_holds_the_fields_the_record_would(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _decided_without_a_record(monkeypatch, "json")
    fast = json.loads(out.getvalue())
    filtered = logging.Filter()  # a filter on the way: the ordinary path
    logging.getLogger().addFilter(filtered)
    try:
        _decide()
    finally:
        logging.getLogger().removeFilter(filtered)
    slow = json.loads(out.getvalue().splitlines()[1])
    assert fast.pop("time")[-1] == "Z" and slow.pop("time")[-1] == "Z"
    assert fast == slow == {"level": "info", "logger": "mkagent.decisions", "msg": "workload team/a (uid uid-a) admitted by ClusterQueue cq",
                            "decision": "admitted", "namespace": "team", "workload": "a", "uid": "uid-a", "cluster_queue": "cq"}
    assert list(fast) == list(slow)


@pytest.mark.usefixtures("restore_logging")
def test_below_the_level_nothing_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _configure(monkeypatch, "text", level="warning")
    _decide()
    assert out.getvalue() == ""


@pytest.mark.usefixtures("restore_logging")
def test_caplog_still_sees_decisions(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    _configure(monkeypatch, "text")  # (it drops the root's handlers: caplog's is put back, as at a test's start)
    logging.getLogger().addHandler(caplog.handler)
    caplog.set_level(logging.INFO)
    _decide()
    assert [r.getMessage() for r in caplog.records] == ["workload team/a (uid uid-a) admitted by ClusterQueue cq"]
