"""A copy's record (``mkhub.dev/agent-copy``) no longer holds whether Reserved and Reserved(admitted)
were reported (issue 26: a copy created before its local admission, as in a burst of Dispatches the
engine admits over several turns, cost a second write of its annotation beside its status write). A
restarted agent reads them from the copy's own status, written after those reports were queued, and
still reads a record written before as it says."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from hub.api.registry import parse_object
from hub.store import SQLiteStore
from worker_agent.kube import mirror as mirror_module
from worker_agent.kube.mirror import Mirror, Wanted

from .mk_harness import cluster_queue
from .test_agent import Worker, dispatch, hub_workload
from .test_mkw_mirror import Desires

pytestmark = pytest.mark.timeout(60)


def _pending_then_admitted() -> tuple[Worker, Mirror, Wanted, Wanted]:
    w = Worker(cpu="0")  # no quota: the copy waits in its queue
    writer = Desires()
    m = Mirror(SimpleNamespace(), w.agent, SimpleNamespace(by_job={}), writer)  # type: ignore[arg-type]
    w.agent.on_change = m.mark
    w.give(dispatch(hub_workload("a"), "team/a/0.1"))
    m.sync()
    (_, pending), = writer.take()
    w.controller.apply(parse_object(cluster_queue("100")), w.now)
    w.controller.settle(w.now)
    assert w.engine.workloads["team/a"].is_admitted and w.agent.copies["team/a"].sent_admitted
    m.mark()
    m.sync()
    (_, admitted), = writer.take()
    assert isinstance(pending, Wanted) and isinstance(admitted, Wanted)
    return w, m, pending, admitted


def test_a_copy_admitted_after_it_was_created_changes_only_its_status() -> None:
    _, _, pending, admitted = _pending_then_admitted()
    assert admitted.record == pending.record  # no second write of the annotation
    assert admitted.status_json != pending.status_json


def _restored(tmp_path: Path, wanted: Wanted, record: dict[str, Any] | None = None) -> Any:
    tmp_path.mkdir()
    with SQLiteStore(tmp_path / "worker.db") as store:
        raw = wanted.record if record is None else json.dumps(record)
        store.create({**mirror_module._with_annotation(wanted.manifest, raw), "status": wanted.status})
        fresh = Worker(cpu="100")
        assert Mirror(store, fresh.agent, SimpleNamespace(by_job={}), Desires()).restore(fresh.now) == 1  # type: ignore[arg-type]
        fresh.controller.settle(fresh.now)
        return fresh


def test_a_restarted_agent_reads_what_it_reported_from_the_copys_status(tmp_path: Path) -> None:
    _, _, pending, admitted = _pending_then_admitted()
    w = _restored(tmp_path / "admitted", admitted)
    c = w.agent.copies["team/a"]
    assert c.sent_admitted and c.sent_reserved
    assert w.reports() == []  # reported before the restart: not again

    # Restored pending (its status says so), then admitted here: reported now, once.
    w = _restored(tmp_path / "pending", pending)
    assert w.agent.copies["team/a"].sent_admitted
    assert w.reports() == [("reserved", "team/a/0.1", True)]

    # A record written before this change says what was reported: read as it says.
    old = {**json.loads(admitted.record), "sent_reserved": False, "sent_admitted": False}
    w = _restored(tmp_path / "old", admitted, old)
    assert w.reports() == [("reserved", "team/a/0.1", True)]


def test_a_copys_record_is_serialized_again_only_when_what_it_holds_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    serialized: list[str] = []
    real = mirror_module._copy_record
    monkeypatch.setattr(mirror_module, "_copy_record", lambda c: serialized.append(c.key) or real(c))
    w, m, _, admitted = _pending_then_admitted()
    assert serialized == ["team/a", "team/a"]  # created; admitted (its flags changed)
    c = w.agent.copies["team/a"]

    def touch() -> str:
        assert w.agent.touched is not None
        w.agent.touched.add("team/a")
        m.mark()
        m.sync()
        record = m._records["team/a"][2]
        assert record == real(c)  # what it would serialize now
        return record

    assert touch() == admitted.record and len(serialized) == 2  # touched, nothing in it changed: not again
    c.interrupted = True
    touch()
    assert len(serialized) == 3
    c.job = {"apiVersion": "v1", "kind": "List", "items": []}  # replaced (a group's Pods grew)
    touch()
    assert len(serialized) == 4
