"""The hub's MultiKueue controller and the agents, over the loopback transport (real encoding)."""

from __future__ import annotations

import json

import pytest

from hub.api.registry import parse_object
from hub.api.workload import ADMITTED, FINISHED, PODS_READY
from hub.federation.mkwire import dispatch_id
from hub.federation.multikueue import MultiKueueController
from hub.federation.session import AgentEndpoint, HubEndpoint
from hub.sim.cluster import SimCluster
from mkhub.v1 import federation_pb2 as pb
from worker_agent.agent import Agent

from .mk_harness import MK, Fed, cluster_queue, job, local_queue, worker_objects

pytestmark = pytest.mark.timeout(60)


def capture_hub_items(fed: Fed, worker: str) -> list[pb.HubItem]:
    """Record every item the named agent is handed (a second handler in front of the agent)."""
    seen: list[pb.HubItem] = []
    agent = fed.agent(worker)
    original = agent.on_hub_items

    def spy(items: list[pb.HubItem]) -> None:
        seen.extend(items)
        original(items)

    agent.on_hub_items = spy  # type: ignore[method-assign]
    return seen


def kinds(items: list[pb.HubItem]) -> list[str]:
    return [str(i.WhichOneof("kind")) for i in items]


# ------------------------------------------------------------------ dispatch


def test_reserved_workload_is_dispatched_to_every_connected_worker() -> None:
    fed = Fed({"worker-1": "1", "worker-2": "1"})
    seen = capture_hub_items(fed, "worker-1")
    key = fed.submit("a", "2")
    fed.settle()
    wl = fed.hub(key)
    assert wl.is_quota_reserved and not wl.is_admitted
    assert fed.check(key) == "Pending"
    assert wl.status.nominated_cluster_names == ["worker-1", "worker-2"]
    for worker in ("worker-1", "worker-2"):
        copy = fed.copy(worker, key)
        assert copy is not None and not copy.is_quota_reserved  # waits for quota there
        assert copy.meta.labels["kueue.x-k8s.io/multikueue-origin"] == "multikueue"
        # The manager Workload's job-uid label is not copied; the agent labels the copy with the
        # uid of the Job it runs for (in simulation the dispatched Job itself).
        assert copy.meta.labels["kueue.x-k8s.io/job-uid"] == "uid-a"
    dispatch = next(i.dispatch for i in seen if i.WhichOneof("kind") == "dispatch")
    assert dispatch.dispatch_id == dispatch_id(wl)
    assert json.loads(dispatch.workload_json)["metadata"]["name"] == wl.meta.name
    job = json.loads(dispatch.job_json)
    assert job["kind"] == "Job" and job["metadata"]["name"] == "a"
    assert fed.running("worker-1") == set() and fed.running("worker-2") == set()


def test_other_admission_checks_must_be_ready_before_dispatch() -> None:
    fed = Fed({"worker-1": "4"}, extra_checks=["prov"])
    key = fed.submit("a")
    fed.settle()
    assert fed.copy("worker-1", key) is None
    assert fed.hub(key).status.nominated_cluster_names == []
    fed.manager.engine.set_check_states(key, {"prov": ("Ready", "", None)}, fed.now)
    fed.settle()
    assert fed.hub(key).is_admitted
    assert fed.hub(key).status.cluster_name == "worker-1"


def test_job_managed_by_another_controller_is_rejected() -> None:
    fed = Fed({"worker-1": "4"})
    key = fed.submit("a", managed_by="example.com/other")
    fed.settle()
    wl = fed.hub(key)
    assert not wl.active  # Rejected deactivates the workload
    state = wl.status.check("mk-check")
    assert state is not None and "Expecting spec.managedBy" in state.message
    assert fed.copy("worker-1", key) is None


# ------------------------------------------------------------------ winner


def test_first_admitting_worker_wins_and_the_others_are_withdrawn() -> None:
    fed = Fed({"worker-1": "1", "worker-2": "1"})
    key = fed.submit("a", "2")
    fed.settle()
    fed.set_worker_quota("worker-2", "4")
    fed.settle()
    wl = fed.hub(key)
    assert wl.is_admitted and wl.status.cluster_name == "worker-2"
    assert wl.status.nominated_cluster_names == []
    state = wl.status.check("mk-check")
    assert state is not None and state.state == "Ready" and state.message == 'The workload got reservation on "worker-2"'  # Kueue's message
    assert fed.copy("worker-1", key) is None
    assert fed.running("worker-2") == {key}
    # worker-1 gains quota later: nothing is dispatched there again
    fed.set_worker_quota("worker-1", "4")
    fed.settle()
    assert fed.copy("worker-1", key) is None
    assert fed.mk.winner(key) == "worker-2"


def test_two_agents_racing_elect_exactly_one_winner_the_earliest() -> None:
    fed = Fed({"worker-1": "4", "worker-2": "4"})
    w1 = capture_hub_items(fed, "worker-1")
    w2 = capture_hub_items(fed, "worker-2")
    key = fed.submit("a")
    # Drive by hand: the manager dispatches, worker-2 admits before worker-1 (by its clock),
    # and both reports reach the hub in the same round.
    fed.manager.controller.settle(fed.now)
    fed.fed.network.pump()
    fed.workers["worker-2"].controller.settle(fed.now)
    fed.workers["worker-1"].controller.settle(fed.now + 1)
    fed.fed.network.pump()
    fed.settle()
    assert fed.hub(key).status.cluster_name == "worker-2"  # earlier, though worker-1 sorts first
    assert kinds(w2).count("start") == 1 and "withdraw" not in kinds(w2)
    assert "start" not in kinds(w1) and kinds(w1).count("withdraw") == 1
    assert fed.running("worker-1") == set() and fed.running("worker-2") == {key}
    assert fed.copy("worker-1", key) is None


def test_a_late_admission_on_a_loser_is_withdrawn() -> None:
    fed = Fed({"worker-1": "1", "worker-2": "4"})
    key = fed.submit("a", "2")
    fed.settle()
    assert fed.hub(key).status.cluster_name == "worker-2"
    # worker-1's copy was withdrawn before it could be admitted. A report that crossed the
    # Withdraw on the wire changes nothing: no Start, and no second Withdraw.
    agent_1 = fed.agent("worker-1")
    assert agent_1.copies == {}
    stale = fed.mk.stats.stale
    fed.mk.on_agent_items(
        "worker-1",
        [pb.AgentItem(reserved=pb.Reserved(dispatch_id=dispatch_id(fed.hub(key)), admitted=True, time=0))],
    )
    seen = capture_hub_items(fed, "worker-1")
    fed.settle()
    assert kinds(seen) == []
    assert fed.mk.stats.stale == stale + 1
    assert fed.hub(key).status.cluster_name == "worker-2"


# ------------------------------------------------------------------ status flow


def test_status_flows_back_from_the_winner() -> None:
    fed = Fed({"worker-1": "4"})
    key = fed.submit("a")
    fed.settle()
    assert fed.hub(key).is_admitted
    fed.workers["worker-1"].engine.pods_ready(key, True, fed.now)
    fed.settle()
    assert fed.manager.engine.is_pods_ready(key)  # reported; no waitForPodsReady, so no PodsReady condition
    assert fed.hub(key).status.condition(PODS_READY) is None
    fed.workers["worker-1"].engine.finish(key, True, "all done", fed.now)
    fed.settle()
    wl = fed.hub(key)
    cond = wl.status.condition(FINISHED)
    assert cond is not None and cond.reason == "Succeeded" and cond.message == "all done"
    assert fed.manager.engine.usage_of("cq").get(("default", "cpu"), 0) == 0
    assert fed.copy("worker-1", key) is None  # the finished copy is removed


def test_remote_failure_finishes_the_hub_workload_as_failed() -> None:
    fed = Fed({"worker-1": "4"})
    key = fed.submit("a")
    fed.settle()
    fed.workers["worker-1"].engine.finish(key, False, "exit code 3", fed.now)
    fed.settle()
    cond = fed.hub(key).status.condition(FINISHED)
    assert cond is not None and cond.reason == "Failed" and cond.message == "exit code 3"


# ------------------------------------------------------------------ eviction, withdrawal


def test_eviction_on_the_worker_redispatches() -> None:
    fed = Fed({"worker-1": "4", "worker-2": "1"})
    key = fed.submit("a", "2")
    fed.settle()
    first = dispatch_id(fed.hub(key))
    assert fed.hub(key).status.cluster_name == "worker-1"
    fed.set_worker_quota("worker-2", "4")
    fed.workers["worker-1"].engine.evict(key, "Preempted", "preempted on the worker", now=fed.now)
    fed.settle()
    wl = fed.hub(key)
    assert ("Evicted", key) in fed.events()
    assert [(e.reason, e.count) for e in wl.status.evictions] == [("AdmissionCheck", 1)]
    assert wl.is_admitted and dispatch_id(wl) != first
    assert wl.status.cluster_name in ("worker-1", "worker-2")
    # exactly one copy runs, the old dispatch's copy is gone everywhere
    assert sum(len(fed.running(w)) for w in fed.workers) == 1
    for w in fed.workers:
        copy = fed.copy(w, key)
        assert copy is None or copy.meta.annotations["mkhub.dev/dispatch-id"] == dispatch_id(wl)


def test_hub_preemption_withdraws_the_remote_copy() -> None:
    fed = Fed({"worker-1": "4", "worker-2": "4"}, hub_cpu="1")
    key = fed.submit("a")
    fed.settle()
    winner = fed.hub(key).status.cluster_name
    assert winner is not None and fed.running(winner) == {key}
    fed.manager.engine.evict(key, "Preempted", "preempted on the manager", now=fed.now)
    fed.settle()
    # requeued and dispatched again (a new reservation): the old run was stopped first
    assert all(
        fed.copy(w, key) is None or fed.copy(w, key).meta.annotations["mkhub.dev/dispatch-id"] == dispatch_id(fed.hub(key))  # type: ignore[union-attr]
        for w in fed.workers
    )
    assert sum(len(fed.running(w)) for w in fed.workers) == 1


def test_deleting_the_job_withdraws_every_copy() -> None:
    fed = Fed({"worker-1": "1", "worker-2": "1"})
    key = fed.submit("a", "2")
    fed.settle()
    assert fed.copy("worker-1", key) is not None and fed.copy("worker-2", key) is not None
    fed.manager.controller.delete("Job", "team", "a", fed.now)
    fed.settle()
    assert fed.copy("worker-1", key) is None and fed.copy("worker-2", key) is None


# ------------------------------------------------------------------ lost workers


def test_worker_lost_within_timeout_changes_nothing_past_it_redispatches() -> None:
    fed = Fed({"worker-1": "4", "worker-2": "1"})
    key = fed.submit("a", "2")
    fed.settle()
    assert fed.hub(key).status.cluster_name == "worker-1"
    fed.set_worker_quota("worker-2", "4")
    fed.fed.disconnect("worker-1", fed.now)
    fed.advance(299)
    fed.settle()
    assert fed.hub(key).status.cluster_name == "worker-1" and fed.check(key) == "Ready"
    assert fed.manager.engine.mk_clusters["worker-1"].conditions[0].status == "False"
    assert fed.mk.next_wakeup() == pytest.approx(fed.now + 1)
    fed.advance(2)
    fed.settle()
    wl = fed.hub(key)
    assert wl.is_admitted and wl.status.cluster_name == "worker-2"
    state = wl.status.check("mk-check")
    assert state is not None and state.state == "Ready"
    # the lost worker still runs its copy until it reconnects; then the hub withdraws it
    assert fed.running("worker-1") == {key}
    fed.fed.reconnect("worker-1", fed.now)
    fed.settle()
    assert fed.copy("worker-1", key) is None and fed.running("worker-1") == set()
    assert fed.hub(key).status.cluster_name == "worker-2"


def test_reconnect_within_timeout_keeps_the_workload_running() -> None:
    fed = Fed({"worker-1": "4"})
    key = fed.submit("a")
    fed.settle()
    fed.fed.disconnect("worker-1", fed.now)
    fed.advance(120)
    fed.fed.reconnect("worker-1", fed.now)
    fed.advance(600)
    fed.settle()
    assert fed.hub(key).status.cluster_name == "worker-1" and fed.check(key) == "Ready"
    assert fed.running("worker-1") == {key}
    assert fed.agent("worker-1").stats.starts == 1


def test_silent_agent_counts_as_lost() -> None:
    fed = Fed({"worker-1": "4", "worker-2": "1"})
    key = fed.submit("a", "2")
    fed.settle()
    silent = {"worker-1": 0.0}
    fed.mk.silence = lambda name: silent.get(name)
    silent["worker-1"] = 301.0
    fed.set_worker_quota("worker-2", "4")
    fed.advance(1)
    fed.settle()
    assert fed.hub(key).status.cluster_name == "worker-2"


def test_no_connected_cluster_makes_the_check_and_queue_inactive() -> None:
    fed = Fed({"worker-1": "4"}, connect=False)
    fed.react()
    ac = fed.manager.engine.admission_checks["mk-check"]
    assert (ac.conditions[0].status, ac.conditions[0].reason) == ("False", "NoUsableClusters")
    key = fed.submit("a")
    fed.manager.controller.settle(fed.now)
    assert not fed.hub(key).is_quota_reserved
    assert fed.manager.engine.is_inadmissible(key)
    fed.settle()  # connects the agents
    assert ac.conditions[0].status == "True"
    assert fed.hub(key).is_admitted


def test_a_new_check_is_inactive_from_the_first_cycle_that_sees_it() -> None:
    """No grace while the Active condition is unwritten: a check created a moment after the
    controller's last status pass gets its verdict before the same round's cycle schedules."""
    fed = Fed({"worker-1": "4"}, connect=False)
    fed.react()  # the status pass for the objects there are now
    check = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "AdmissionCheck", "metadata": {"name": "mk-late"},
             "spec": {"controllerName": MK, "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig",
                                                            "name": "mk-config"}}}
    for obj in (check, cluster_queue("4", ["mk-late"], name="late-cq"), {**local_queue("late-cq"),
                "metadata": {"name": "late", "namespace": "team"}}):
        fed.manager.controller.apply(parse_object(obj), fed.now)
    manifest = job("x")
    manifest["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "late"
    fed.manager.controller.apply(parse_object(manifest), fed.now)  # same instant: no periodic pass due
    fed.manager.controller.settle(fed.now)
    key = fed.manager.controller.jobs.workload_key("team/x")
    assert key is not None and not fed.hub(key).is_quota_reserved
    late = fed.manager.engine.admission_checks["mk-late"]
    assert (late.conditions[0].status, late.conditions[0].reason) == ("False", "NoUsableClusters")


# ------------------------------------------------------------------ reconnect, restart, replay


def test_reconnect_replays_without_duplicates() -> None:
    fed = Fed({"worker-1": "4", "worker-2": "4"})
    keys = [fed.submit(f"j{i}") for i in range(4)]
    seen = capture_hub_items(fed, "worker-1")
    fed.manager.controller.settle(fed.now)
    net = fed.fed.network
    endpoint = net.agent("worker-1")
    # 1. The dispatches to worker-1 are on the wire when its link breaks: lost.
    net.step(max_envelopes=0)
    assert net.in_flight("worker-1") > 0
    net.disconnect("worker-1")
    fed.react()
    assert endpoint.stats.items_in == 0
    # 2. Replayed on the next stream of the same session; this time they arrive, and the link
    #    breaks again before the agent's acknowledgement (or anything else) goes back.
    net.connect("worker-1")
    while endpoint.stats.items_in == 0:
        assert net.step(max_envelopes=1)
    net.disconnect("worker-1")
    fed.react()
    # 3. The next Hello acknowledges them: nothing is delivered twice.
    net.connect("worker-1")
    fed.settle()
    dispatched = [i.dispatch.dispatch_id for i in seen if i.WhichOneof("kind") == "dispatch"]
    assert sorted(dispatched) == sorted({*dispatched}) and len(dispatched) == 4
    agent = fed.agent("worker-1")
    assert agent.stats.duplicates == 0
    assert agent.stats.dispatches == 4  # one copy per workload, however often it was sent
    assert fed.agent("worker-2").stats.dispatches == 4
    for key in keys:
        assert fed.hub(key).is_admitted
    assert sum(len(fed.running(w)) for w in fed.workers) == 4
    assert agent.stats.starts + fed.agent("worker-2").stats.starts == 4


def test_agent_restart_loses_the_copy_and_the_hub_redispatches_at_once() -> None:
    fed = Fed({"worker-1": "4", "worker-2": "1"})
    key = fed.submit("a", "2")
    fed.settle()
    assert fed.hub(key).status.cluster_name == "worker-1"
    # worker-1's agent process restarts with nothing (its cluster's queues are reloaded)
    fresh = SimCluster("worker-1", fed.config, fed.now)
    from hub.api.registry import parse_object

    for obj in worker_objects("4"):
        fresh.controller.apply(parse_object(obj), fed.now)
    fed.workers["worker-1"] = fresh
    fed.fed.workers["worker-1"] = fresh
    agent = Agent("worker-1", fresh.controller)
    endpoint = AgentEndpoint(agent, monotonic=lambda: fed.now)
    agent.send = endpoint.send
    fed.fed.agents["worker-1"] = agent
    fed.fed.network.replace_agent("worker-1", endpoint)
    fed.set_worker_quota("worker-2", "4")
    fed.fed.network.connect("worker-1")
    fed.settle()
    wl = fed.hub(key)
    assert [(e.reason, e.count) for e in wl.status.evictions] == [("AdmissionCheck", 1)]
    assert wl.is_admitted
    assert sum(len(fed.running(w)) for w in fed.workers) == 1


def test_hub_restart_reconciles_from_status_and_hello_without_duplicates() -> None:
    fed = Fed({"worker-1": "4", "worker-2": "1"}, hub_cpu="16")
    running = fed.submit("a", "2")
    pending = fed.submit("b", "8")  # no worker can admit it
    fed.settle()
    assert fed.hub(running).status.cluster_name == "worker-1"
    assert fed.hub(pending).status.nominated_cluster_names == ["worker-1", "worker-2"]
    # A new hub process: the same engine state (as restored from the store), a new controller
    # and endpoint; agents reconnect to a hub instance they do not know.
    old = fed.mk
    controller = MultiKueueController(fed.manager.engine, fed.config, jobs=fed.manager.controller.jobs)
    fed.manager.controller.plugins[fed.manager.controller.plugins.index(old)] = controller
    hub = HubEndpoint(controller, authorize=controller.authorize, instance_id="hub-2", monotonic=lambda: fed.now)
    fed.fed.controller = controller
    fed.fed.hub = hub
    fed.fed.network.replace_hub(hub)
    fed.fed.network.connect_all()
    fed.fed.network.pump()  # the Hellos are waiting before the new controller's first tick
    fed.settle()
    assert fed.hub(running).status.cluster_name == "worker-1" and fed.check(running) == "Ready"
    assert fed.running("worker-1") == {running}
    assert fed.agent("worker-1").stats.starts == 1 and fed.agent("worker-1").stats.dispatches == 2
    assert fed.copy("worker-2", pending) is not None and fed.agent("worker-2").stats.dispatches == 2
    assert controller.winner(running) == "worker-1"
    # and it keeps working: the running one finishes
    fed.workers["worker-1"].engine.finish(running, True, "", fed.now)
    fed.settle()
    assert fed.hub(running).is_finished


def test_hello_from_a_running_copy_without_recorded_winner_adopts_it() -> None:
    """The hub decided and told the agent, then crashed before committing the decision."""
    fed = Fed({"worker-1": "4", "worker-2": "4"})
    key = fed.submit("a")
    fed.settle()
    winner = fed.hub(key).status.cluster_name
    assert winner is not None
    # roll the hub's status back to "dispatched, no winner" as if the commit was lost
    engine = fed.manager.engine
    engine.set_dispatch_status(key, ["worker-1", "worker-2"], None)
    state = fed.hub(key).status.check("mk-check")
    assert state is not None
    state.state = "Pending"
    fed.hub(key).status.conditions = [c for c in fed.hub(key).status.conditions if c.type != ADMITTED]
    controller = MultiKueueController(engine, fed.config, jobs=fed.manager.controller.jobs)
    plugins = fed.manager.controller.plugins
    plugins[plugins.index(fed.mk)] = controller
    hub = HubEndpoint(controller, authorize=controller.authorize, instance_id="hub-2", monotonic=lambda: fed.now)
    fed.fed.controller = controller
    fed.fed.network.replace_hub(hub)
    fed.fed.network.connect_all()
    fed.settle()
    assert fed.hub(key).status.cluster_name == winner and fed.hub(key).is_admitted
    assert sum(len(fed.running(w)) for w in fed.workers) == 1


def test_garbage_collection_withdraws_copies_of_forgotten_workloads() -> None:
    fed = Fed({"worker-1": "1"}, multikueue={"gcInterval": "1m"})
    key = fed.submit("a", "2")
    fed.settle()
    assert fed.copy("worker-1", key) is not None
    # The hub rebuilt its engine from a store where the workload is gone (deleted while the
    # hub was down): no event will mention it, only the collector finds the copy.
    from hub.engine.engine import Engine

    engine = Engine(fed.config, fed.now)
    fed.mk.rebind(engine)
    fed.advance(30)
    fed.mk.tick(fed.now)
    fed.fed.network.pump()
    fed.workers["worker-1"].controller.settle(fed.now)
    assert fed.copy("worker-1", key) is not None  # not yet: the interval has not passed
    fed.advance(61)
    fed.mk.tick(fed.now)
    fed.fed.network.pump()
    fed.workers["worker-1"].controller.settle(fed.now)
    assert fed.copy("worker-1", key) is None


def test_reports_about_unknown_dispatches_are_answered_with_withdraw() -> None:
    fed = Fed({"worker-1": "4"})
    seen = capture_hub_items(fed, "worker-1")
    fed.mk.on_agent_items(
        "worker-1", [pb.AgentItem(status=pb.Status(dispatch_id="team/ghost/0.0", phase=pb.PHASE_RUNNING))]
    )
    fed.settle()
    assert [(i.WhichOneof("kind"), i.withdraw.dispatch_id) for i in seen] == [("withdraw", "team/ghost/0.0")]
    assert fed.mk.stats.stale == 1


# ------------------------------------------------------------------ incremental dispatcher


def test_incremental_dispatcher_widens_after_a_round_without_admission() -> None:
    fed = Fed(
        {"worker-a": "1", "worker-b": "1", "worker-c": "1"},
        multikueue={"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
                    "incrementalDispatcherConfig": {"stepSize": 1}},
    )
    key = fed.submit("a", "2")
    fed.settle()
    assert fed.hub(key).status.nominated_cluster_names == ["worker-a"]
    assert fed.copy("worker-a", key) is not None and fed.copy("worker-b", key) is None
    fed.advance(299)
    fed.settle()
    assert fed.hub(key).status.nominated_cluster_names == ["worker-a"]
    fed.advance(2)
    fed.settle()
    assert fed.hub(key).status.nominated_cluster_names == ["worker-a", "worker-b"]
    assert fed.copy("worker-b", key) is not None and fed.copy("worker-c", key) is None
    fed.set_worker_quota("worker-b", "4")
    fed.settle()
    assert fed.hub(key).status.cluster_name == "worker-b"
    fed.advance(600)
    fed.settle()
    assert fed.copy("worker-c", key) is None  # admitted: no more rounds
