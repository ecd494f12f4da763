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
