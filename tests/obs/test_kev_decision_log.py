"""A decision log line costs one LogRecord, the one Logger.info would have made, without the walk
up the stack that finds its caller; with INFO off it costs nothing."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from hub.obs import logs
from hub.obs.logs import DecisionLog


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def kept() -> Iterator[tuple[logging.Logger, _Keep]]:
    logger = logging.getLogger("test.kev.decisions")
    handler = _Keep()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield logger, handler
    logger.removeHandler(handler)


def test_the_record_is_logger_infos_own_less_the_stack_walk(
    kept: tuple[logging.Logger, _Keep], monkeypatch: pytest.MonkeyPatch
) -> None:
    logger, handler = kept
    monkeypatch.setattr(logging.Logger, "findCaller", lambda *a, **k: pytest.fail("walked the stack"))
    DecisionLog(logger.name).decision("admitted", "team/a", "u-1", "admitted by ClusterQueue cq", {"cluster_queue": "cq"})
    [record] = handler.records
    assert record.getMessage() == "workload team/a (uid u-1) admitted by ClusterQueue cq"
    assert (record.levelno, record.name, record.funcName) == (logging.INFO, logger.name, "decision")
    assert record.pathname == logs.__file__ and record.lineno > 0  # where Logger.info's walk would have stopped
    assert {k: getattr(record, k) for k in ("decision", "namespace", "workload", "uid", "cluster_queue")} == {
        "decision": "admitted", "namespace": "team", "workload": "a", "uid": "u-1", "cluster_queue": "cq"}


def test_nothing_is_made_when_info_is_off(kept: tuple[logging.Logger, _Keep], monkeypatch: pytest.MonkeyPatch) -> None:
    logger, handler = kept
    logger.setLevel(logging.WARNING)
    monkeypatch.setattr(logging.Logger, "makeRecord", lambda *a, **k: pytest.fail("made a record"))
    DecisionLog(logger.name).decision("queued", "team/a", "", "queued in LocalQueue team/lq")
    assert handler.records == []


def test_a_field_that_would_overwrite_the_records_own_is_refused_as_logger_info_refuses_it(
    kept: tuple[logging.Logger, _Keep]
) -> None:
    with pytest.raises(KeyError, match="Attempt to overwrite 'message'"):
        DecisionLog(kept[0].name).decision("queued", "team/a", "", "text", {"message": "x"})


def _record(created: float) -> logging.LogRecord:
    record = logging.LogRecord("mkhub.decisions", logging.INFO, __file__, 1, "workload %s", ("team/a",), None)
    record.created, record.msecs = created, int((created - int(created)) * 1000) + 0.0
    return record


def test_the_text_lines_time_is_made_once_per_second_and_reads_as_logging_writes_it(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = logging.Formatter(logs.TEXT_FORMAT)
    ours = logs.TextFormatter()
    times = [1_700_000_000.001, 1_700_000_000.5, 1_700_000_000.999, 1_700_000_001.0, 1_700_000_001.25]
    expected = [plain.format(_record(t)) for t in times]
    made: list[str] = []
    real = logs.time.strftime
    monkeypatch.setattr(logs.time, "strftime", lambda fmt, *a: made.append(fmt) or real(fmt, *a))
    assert [ours.format(_record(t)) for t in times] == expected
    assert len(made) == 2  # one per second


def test_the_json_lines_time_is_made_once_per_second(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real = logs.time.strftime
    monkeypatch.setattr(logs.time, "strftime", lambda fmt, *a: made.append(fmt) or real(fmt, *a))
    stamps = [logs._rfc3339(t) for t in (1_700_000_100.25, 1_700_000_100.75, 1_700_000_101.5)]
    assert stamps == ["2023-11-14T22:15:00.250Z", "2023-11-14T22:15:00.750Z", "2023-11-14T22:15:01.500Z"]
    assert len(made) == 2
