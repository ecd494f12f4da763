"""The Engine facade used directly (no controllers): apply, schedule, drain, evict, workload_stopped,
finish, tick and next_wakeup, with the clock passed in."""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import T0, cq, flavor, local_queue, wl

from hub.api.config import parse_configuration
from hub.api.registry import parse_object
from hub.engine.engine import Engine

pytestmark = pytest.mark.timeout(60)


def engine_with(*manifests: dict[str, Any], config: dict[str, Any] | None = None) -> Engine:
    engine = Engine(parse_configuration(config or {}), T0)
    for manifest in manifests:
        engine.apply(parse_object(manifest), T0)
    return engine


def used(engine: Engine, cq_name: str = "q") -> dict[tuple[str, str], int]:
    return {fr: v for fr, v in engine.usage_of(cq_name).items() if v}


def basic(config: dict[str, Any] | None = None) -> Engine:
    return engine_with(flavor("f"), cq("q", {"f": {"cpu": 4}}), local_queue("q", "q"), config=config)


def test_schedule_reserves_and_drain_reports_it_once() -> None:
    engine = basic()
    engine.apply(parse_object(wl("w", "q", cpu=2)), T0)
    result = engine.schedule(T0)
    assert (result.heads, result.admitted) == (1, 1)
    changed, events = engine.drain()
    assert [w.meta.key for w in changed] == ["team/w"]
    assert [(e.type, e.key) for e in events] == [("QuotaReserved", "team/w"), ("Admitted", "team/w")]
    assert engine.drain() == ([], [])
    assert used(engine) == {("f", "cpu"): 2000}


def test_an_empty_cycle_does_nothing() -> None:
    engine = basic()
    result = engine.schedule(T0)
    assert (result.heads, result.admitted, result.changed) == (0, 0, False)


def test_evicted_workload_keeps_quota_until_stopped() -> None:
    engine = basic()
    engine.apply(parse_object(wl("w", "q", cpu=2)), T0)
    engine.schedule(T0)
    engine.drain()
    engine.evict("team/w", "NodeFailures", "node gone", now=T0 + 5)
    assert used(engine) == {("f", "cpu"): 2000}
    assert [e.type for e in engine.drain()[1]] == ["Evicted"]
    engine.workload_stopped("team/w", T0 + 6)
    assert used(engine) == {}
    assert not engine.workloads["team/w"].is_quota_reserved
    assert engine.schedule(T0 + 7).admitted == 1


def test_finish_releases_quota_and_reports_finished() -> None:
    engine = basic()
    engine.apply(parse_object(wl("w", "q", cpu=2)), T0)
    engine.schedule(T0)
    engine.drain()
    engine.finish("team/w", succeeded=False, message="boom", now=T0 + 3)
    finished = engine.workloads["team/w"].status.condition("Finished")
    assert finished is not None and finished.reason == "Failed" and finished.message == "boom"
    assert used(engine) == {}
    assert [(e.type, e.reason) for e in engine.drain()[1]] == [("Finished", "Failed")]


def test_tick_fires_the_pods_ready_timeout_and_next_wakeup_says_when() -> None:
    engine = basic({"waitForPodsReady": {"timeout": "1m"}})
    engine.apply(parse_object(wl("w", "q", cpu=2)), T0)
    engine.schedule(T0)
    engine.drain()
    assert engine.next_wakeup() == T0 + 60
    assert not engine.tick(T0 + 59)
    assert engine.tick(T0 + 60)
    evicted = engine.workloads["team/w"].status.condition("Evicted")
    assert evicted is not None and evicted.reason == "PodsReadyTimeout"


def test_the_engine_is_deterministic() -> None:
    def run() -> list[tuple[str, str, str]]:
        engine = basic()
        for i in range(6):
            engine.apply(parse_object(wl(f"w{i}", "q", cpu=1 + i % 3, priority=i % 2)), T0 + i)
        out = []
        for step in range(4):
            engine.schedule(T0 + 10 + step)
            if step == 1:
                engine.finish("team/w1", now=T0 + 11)
            out.extend((e.type, e.key, e.reason) for e in engine.drain()[1])
        return out

    assert run() == run()


def test_weighted_share_of_unknown_node_is_none() -> None:
    assert basic().weighted_share("nope") is None
    assert basic().weighted_share("q") == 0
