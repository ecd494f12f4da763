"""The engine's kept counts (hub.engine.workload_counts, ClusterQueueState.admitted_usage): after
every step they equal a count made from the workloads, which is what the queue statuses and
``mkhub top`` showed before the counts were kept."""

from __future__ import annotations

from collections import Counter

import pytest
from engine_helpers import Sim, admission_check, cq, flavor, local_queue, wl

from hub.engine.quota import FR

pytestmark = pytest.mark.timeout(60)


def counted_from_workloads(sim: Sim) -> tuple[dict[str, tuple[int, int, int]], tuple[int, int, int, int]]:
    engine = sim.engine
    by_queue: dict[str, list[int]] = {}
    for info in engine.infos.values():
        w = info.wl
        if w.is_finished:
            continue
        row = by_queue.setdefault(f"{w.meta.namespace}/{w.queue_name}", [0, 0, 0])
        if w.is_quota_reserved:
            row[1] += 1
            row[2] += int(w.is_admitted)
        elif w.active:
            row[0] += 1
    totals = [0, 0, 0, 0]
    for w in engine.workloads.values():
        totals[3 if w.is_finished else 2 if w.is_admitted else 1 if w.is_quota_reserved else 0] += 1
    kept = {k: (v[0], v[1], v[2]) for k, v in by_queue.items() if v != [0, 0, 0]}
    return kept, (totals[0], totals[1], totals[2], totals[3])


def admitted_usage_from_workloads(sim: Sim, name: str) -> dict[FR, int]:
    total: Counter[FR] = Counter()
    for info in sim.engine.cqs[name].reserving.values():
        if info.wl.is_admitted:
            total.update(info.usage)
    return {fr: v for fr, v in total.items() if v}


def assert_counts_kept(sim: Sim) -> None:
    by_queue, totals = counted_from_workloads(sim)
    assert sim.engine.counts.local_queues() == by_queue
    assert sim.engine.counts.totals() == totals
    for name, state in sim.engine.cqs.items():
        assert state.admitted_usage == admitted_usage_from_workloads(sim, name), name
        assert state.admitted_count == sum(1 for i in state.reserving.values() if i.wl.is_admitted)


def test_counts_follow_admission_checks_eviction_finish_deactivation_and_deletion() -> None:
    sim = Sim().add(flavor("f"), admission_check("prov"))
    sim.queue(cq("plain", {"f": {"cpu": 4}}), cq("checked", {"f": {"cpu": 4}}, checks=["prov"]))
    sim.add(local_queue("other", "plain"))
    sim.add(wl("a", "plain", cpu=2), wl("b", "plain", cpu=2), wl("c", "plain", cpu=2), wl("d", "other", cpu=1),
            wl("e", "checked", cpu=3))
    assert_counts_kept(sim)
    sim.settle()
    assert sim.engine.counts.local_queue("team/plain") == (1, 2, 2)
    assert sim.engine.counts.local_queue("team/checked") == (0, 1, 0)  # reserved, its check pending
    assert_counts_kept(sim)
    sim.checks("e", prov="Ready")
    assert sim.engine.counts.local_queue("team/checked") == (0, 1, 1)
    assert sim.engine.cqs["checked"].admitted_usage == {("f", "cpu"): 3000}
    assert_counts_kept(sim)
    sim.evict("a")
    assert_counts_kept(sim)
    sim.settle().finish("b")
    assert_counts_kept(sim)
    deactivated = wl("c", "plain", cpu=2)
    deactivated["spec"]["active"] = False
    sim.update(deactivated)
    assert_counts_kept(sim)
    sim.ctl.delete("Workload", "team", "d", sim.now)
    sim.ctl.react(sim.now)
    sim.settle()
    assert_counts_kept(sim)
    assert sim.engine.counts.local_queue("team/other") == (0, 0, 0)
    assert sim.engine.counts.totals()[3] == 1  # b finished
