"""The Kubernetes-mode agent's Mirror (worker_agent.kube.mirror): each sync writes what changed,
and looks only at the copies the agent touched since the last one (issue 26: a sync that walked
and serialized every held copy cost per Job what the backlog was long)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from worker_agent.kube import mirror as mirror_module
from worker_agent.kube.mirror import Mirror, Wanted

from .test_agent import Worker, dispatch, hub_workload, start, withdraw

pytestmark = pytest.mark.timeout(60)


class Desires:
    def __init__(self) -> None:
        self.asked: list[tuple[str, object]] = []

    def desire(self, key: str, state: object) -> None:
        self.asked.append((key, state))

    def take(self) -> list[tuple[str, object]]:
        out, self.asked = self.asked, []
        return out


def _mirror(w: Worker) -> tuple[Mirror, Desires]:
    writer = Desires()
    m = Mirror(SimpleNamespace(), w.agent, SimpleNamespace(), writer)  # type: ignore[arg-type]
    w.agent.on_change = m.mark
    return m, writer


def _record(state: object) -> dict[str, Any]:
    assert isinstance(state, Wanted)
    out: dict[str, Any] = json.loads(state.record)
    return out


def test_a_sync_writes_only_the_copies_that_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    w = Worker(cpu="100")
    m, writer = _mirror(w)
    names = [f"j{i}" for i in range(20)]
    w.give(*(dispatch(hub_workload(n), f"team/{n}/0.1") for n in names))
    m.sync()
    first = writer.take()
    assert sorted(k for k, _ in first) == sorted(f"Workload:team/{n}" for n in names)
    assert all(json.loads(s.status_json)["admission"]["clusterQueue"] == "cq" for _, s in first if isinstance(s, Wanted))

    serialized: list[str] = []
    real = mirror_module._copy_record
    monkeypatch.setattr(mirror_module, "_copy_record", lambda c: serialized.append(c.key) or real(c))
    w.give(start("team/j3/0.1"), withdraw("team/j7/0.1"))
    m.sync()
    asked = writer.take()
    assert [k for k, _ in asked] == ["Workload:team/j3", "Workload:team/j7"]
    assert _record(asked[0][1])["started"] is True and asked[1][1] is None  # started; withdrawn: deleted
    assert serialized == ["team/j3"]  # the 18 copies nothing happened to are not looked at

    m.mark()
    m.sync()  # nothing touched since
    assert writer.take() == [] and serialized == ["team/j3"]


def test_changes_between_syncs_are_written_at_the_next_one() -> None:
    """A copy's change that marks no sync (its held state did not move) waits for the next sync,
    which writes it with whatever else changed, as the full walk did."""
    w = Worker(cpu="100")
    m, writer = _mirror(w)
    w.give(dispatch(hub_workload("a"), "team/a/0.1"), dispatch(hub_workload("b"), "team/b/0.1"))
    m.sync()
    writer.take()
    w.give(start("team/a/0.1"))
    w.give(start("team/b/0.1"))
    m.sync()
    assert sorted(k for k, _ in writer.take()) == ["Workload:team/a", "Workload:team/b"]
    # A copy withdrawn and dispatched again under the same name between two syncs: the new one.
    w.give(withdraw("team/a/0.1"), dispatch(hub_workload("a"), "team/a/0.2"))
    m.sync()
    asked = writer.take()
    assert [k for k, _ in asked] == ["Workload:team/a"] and _record(asked[0][1])["did"] == "team/a/0.2"


def test_pods_ready_writes_nothing(tmp_path: Any) -> None:
    """Pods becoming ready write nothing: no waitForPodsReady, so Kueue writes no PodsReady, and
    the record (its annotation) holds no sent_ready. With waitForPodsReady the copy's status has
    PodsReady=True, and a restarted agent takes the report as sent from it."""
    from hub.store import SQLiteStore

    w = Worker(cpu="100")
    m, writer = _mirror(w)
    w.give(dispatch(hub_workload("a"), "team/a/0.1"))
    w.give(start("team/a/0.1"))
    m.sync()
    (_, running), = writer.take()
    w.advance(0.2)
    assert ("status", "team/a/0.1", "PHASE_PODS_READY") in w.reports()
    m.sync()
    assert writer.take() == []
    assert isinstance(running, Wanted) and all(c["type"] != "PodsReady" for c in running.status["conditions"])

    ready = {**running.status, "conditions": [*running.status["conditions"], {
        "type": "PodsReady", "status": "True", "reason": "Started", "message": "", "lastTransitionTime": "2026-11-27T00:00:00Z"}]}
    with SQLiteStore(tmp_path / "worker.db") as store:
        store.create({**mirror_module._with_annotation(running.manifest, running.record), "status": ready})
        fresh = Worker(cpu="100")
        restored = Mirror(store, fresh.agent, SimpleNamespace(by_job={}), Desires())  # type: ignore[arg-type]
        assert restored.restore(fresh.now) == 1
        assert fresh.agent.copies["team/a"].sent_ready


def test_a_copy_record_is_serialized_without_the_standard_json(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """A copy not started yet has no ``startedAt``: its record has no null, which would send
    fastjson to the standard ``json`` (several times slower) on every sync; a restored copy reads
    the missing key as not started."""
    from hub.api import fastjson
    from hub.store import SQLiteStore

    w = Worker(cpu="100")
    m, writer = _mirror(w)
    w.give(dispatch(hub_workload("a"), "team/a/0.1"))

    class Refusing:
        def encode(self, obj: Any) -> str:
            raise AssertionError(f"the standard json serialized {obj!r}")

    monkeypatch.setattr(fastjson, "_COMPACT_SORTED", Refusing())
    m.sync()
    (_, wanted), = writer.take()
    assert isinstance(wanted, Wanted)
    assert "startedAt" not in _record(wanted) and not _record(wanted)["started"]
    monkeypatch.undo()

    with SQLiteStore(tmp_path / "worker.db") as store:
        store.create({**mirror_module._with_annotation(wanted.manifest, wanted.record), "status": wanted.status})
        fresh = Worker(cpu="100")
        restored = Mirror(store, fresh.agent, SimpleNamespace(by_job={}), Desires())  # type: ignore[arg-type]
        assert restored.restore(fresh.now) == 1
        c = fresh.agent.copies["team/a"]
        assert c.started_at is None and not c.started and c.did == "team/a/0.1"
