"""Capacity-aware dispatch end to end in the simulator: capacity reports reach the hub, the
fleet view, the refusal message, and worker copies found by the manager Job's name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hub.sim.runner import ScenarioRun
from hub.sim.scenario import load_scenario
from mkhub.v1 import federation_pb2 as pb
from worker_agent.capacity import CapacityReporter, queue_capacities

SCENARIOS = Path(__file__).resolve().parents[1] / "conformance" / "scenarios" / "capacity"


def run(name: str, steps: int | None = None) -> ScenarioRun:
    scenario = load_scenario(SCENARIOS / name)
    if steps is not None:
        scenario.steps[:] = scenario.steps[:steps]
    r = ScenarioRun(scenario)
    r.run()
    return r


def test_agents_report_capacity_and_the_fleet_view_shows_it() -> None:
    r = run("c-01-single-copy-to-worker-that-fits.yaml", steps=2)
    mk = r.federation.controller
    assert sorted(mk.capacity.reports) == ["worker-1", "worker-2", "worker-3"]
    q = mk.capacity.reports["worker-2"].queues["cq"]
    assert q.local_queues == frozenset({"team/lq"})
    assert q.quota[("default", "cpu")].nominal == 4000
    assert q.quota[("default", "cpu")].usage == 2000  # the job's copy runs there
    assert q.quota[("default", "cpu")].by_priority == ((0, 2000),)  # held at priority 0
    assert q.within_cluster_queue == "Never"  # Kueue's default: what a copy could preempt there
    mk.tick(r.now + 5)  # statuses refresh periodically
    fleet: dict[str, Any] = r.manager.engine.mk_clusters["worker-2"].fleet or {}
    assert fleet["connected"] is True
    assert fleet["workloads"] == {"pending": 0, "admitted": 1, "running": 1}
    assert fleet["quota"] == [{"clusterQueue": "cq", "flavor": "default", "resource": "cpu", "nominal": "4", "usage": "2"}]
    assert (r.manager.engine.mk_clusters["worker-1"].fleet or {})["workloads"]["running"] == 0


def test_refused_workload_is_deactivated_with_the_workers_and_shortfall() -> None:
    r = run("c-04-refused-then-deactivated.yaml")
    wl = r.manager.engine.workloads[r.manager.resolve("team/huge")]
    assert not wl.active
    check = wl.status.check("mk-check")
    assert check is not None
    # Kueue resets the check to Pending on eviction and keeps the message after "Previously:".
    # Both shortfalls are against quota totals: given up at once, not after giveUpTimeout.
    assert check.message.endswith(
        "No worker cluster can ever hold the workload: worker-1: cpu short by 2; worker-2: cpu short by 4"
    ), check.message
    assert r.federation.controller.stats.rejected == 1


def test_orphan_copy_is_found_by_the_deleted_manager_jobs_name() -> None:
    r = run("c-06-worker-lost-holding-only-copy.yaml", steps=9)
    assert r.manager.controller.jobs.workload_key("team/job-1") is None  # the manager's Job is gone
    worker = r.workers["worker-1"]
    key = worker.resolve("team/job-1")
    assert key in worker.engine.workloads and key.startswith("team/job-job-1-")
    agent = r.federation.agents["worker-1"]
    copy = agent.copy_named("team/job-1")
    assert copy is not None and copy.key == key


def test_reporter_sends_on_change_at_most_once_per_interval() -> None:
    r = run("c-01-single-copy-to-worker-that-fits.yaml", steps=1)
    engine = r.workers["worker-1"].engine
    reporter = CapacityReporter(engine, interval=0.25)
    first = reporter.report(100.0)
    assert first is not None and first.capacity_version == 1 and first.generation == 1
    assert [q.cluster_queue for q in first.queues] == ["cq"]
    reporter.dirty = True
    assert reporter.report(100.1) is None  # within the interval
    assert reporter.due() == 100.25
    assert reporter.report(100.3) is None  # nothing changed: nothing sent
    assert reporter.due() is None
    queues = queue_capacities(engine)
    res = {(x.flavor, x.resource): x for x in queues[0].resources}
    assert res[("default", "cpu")].nominal == 1000 and res[("default", "cpu")].potential == 1000


def test_old_agents_without_capacity_are_dispatched_to() -> None:
    """An agent that reports no capacity (capacity_interval None) still gets work."""
    scenario = load_scenario(SCENARIOS / "c-01-single-copy-to-worker-that-fits.yaml")
    scenario.steps[:] = scenario.steps[:1]
    r = ScenarioRun(scenario)
    for agent in r.federation.agents.values():
        agent.capacity = None
    r.run()
    mk = r.federation.controller
    assert mk.capacity.reports == {}
    key = r.manager.resolve("team/job-1")
    wl = r.manager.engine.workloads[key]
    # Unknown capacity everywhere: config order, one at a time. worker-1 is too small, so its copy
    # waits there until the nomination timeout (30 s) moves it to worker-2.
    assert wl.status.nominated_cluster_names == ["worker-1"] and wl.status.cluster_name is None
    assert key in r.workers["worker-1"].engine.workloads and key not in r.workers["worker-2"].engine.workloads
    r.now += 31
    r.federation.settle(r.now)
    assert wl.status.cluster_name == "worker-2"
    assert key not in r.workers["worker-1"].engine.workloads
    assert pb.Capacity().capacity_version == 0
