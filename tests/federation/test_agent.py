"""The agent on its own: hub items in, local admission, reports out (no transport)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hub.api.config import Configuration
from hub.api.others import Job
from hub.api.registry import parse_object
from hub.api.workload import Workload
from hub.controllers.cluster import ClusterController
from hub.engine.engine import Engine
from hub.federation.mkwire import make_dispatch
from mkhub.v1 import federation_pb2 as pb
from worker_agent.agent import Agent
from worker_agent.objects import ObjectsError, load_objects
from worker_agent.runner import sim_pods
from worker_agent.state import AgentState

from .mk_harness import START, cluster_queue, flavor, local_queue, namespace
from .mk_harness import job as mk_job

pytestmark = pytest.mark.timeout(60)


def hub_workload(name: str, cpu: str = "1", duration: str | None = "10s", uid: str = "") -> Workload:
    meta: dict[str, object] = {"name": name, "namespace": "team", "uid": uid or f"uid-{name}"}
    if duration is not None:
        meta["annotations"] = {"mkhub.dev/sim-duration": duration}
    wl = parse_object({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": meta,
        "spec": {
            "queueName": "lq",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}}}],
        },
    })
    assert isinstance(wl, Workload)
    return wl


class Worker:
    def __init__(self, cpu: str = "4") -> None:
        self.now = START
        self.engine = Engine(Configuration(), self.now)
        self.pods = sim_pods(lambda wl: self.agent.duration_of(wl))
        self.controller = ClusterController(self.engine, self.pods)
        for obj in (namespace(), flavor(), cluster_queue(cpu), local_queue()):
            self.controller.apply(parse_object(obj), self.now)
        self.agent = Agent("worker-1", self.controller)
        self.sent: list[pb.AgentItem] = []
        self.agent.send = self.sent.extend

    def give(self, *items: pb.HubItem) -> None:
        self.agent.on_hub_items(list(items))
        self.controller.settle(self.now)

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.controller.settle(self.now)

    def reports(self) -> list[tuple[str, str, bool | str]]:
        out: list[tuple[str, str, bool | str]] = []
        for item in self.sent:
            if item.WhichOneof("kind") == "reserved":
                out.append(("reserved", item.reserved.dispatch_id, item.reserved.admitted))
            else:
                out.append(("status", item.status.dispatch_id, pb.Phase.Name(item.status.phase)))
        self.sent.clear()
        return out


def dispatch(wl: Workload, did: str) -> pb.HubItem:
    return pb.HubItem(dispatch=make_dispatch(wl, did, None))


def start(did: str) -> pb.HubItem:
    return pb.HubItem(start=pb.Start(dispatch_id=did))


def withdraw(did: str) -> pb.HubItem:
    return pb.HubItem(withdraw=pb.Withdraw(dispatch_id=did))


DID = "team/a/0.1"


def test_dispatch_is_admitted_locally_but_runs_only_on_start() -> None:
    w = Worker()
    w.give(dispatch(hub_workload("a"), DID))
    copy = w.engine.workloads["team/a"]
    assert copy.is_admitted
    assert copy.meta.labels["kueue.x-k8s.io/multikueue-origin"] == "multikueue"
    assert w.reports() == [("reserved", DID, True)]
    assert w.agent.gate.running == set()
    w.give(start(DID))
    assert w.agent.gate.running == {"team/a"}
    assert w.reports() == [("status", DID, "PHASE_RUNNING")]
    w.advance(0.2)
    assert w.reports() == [("status", DID, "PHASE_PODS_READY")]
    w.advance(10)
    assert w.reports() == [("status", DID, "PHASE_SUCCEEDED")]
    w.give(withdraw(DID))
    assert "team/a" not in w.engine.workloads and w.agent.copies == {}


def test_reservation_without_admission_is_reported_then_admission() -> None:
    w = Worker(cpu="1")
    w.give(dispatch(hub_workload("big", cpu="2"), "team/big/0.1"))
    assert w.reports() == []  # no quota: queued
    w.controller.apply(parse_object(cluster_queue("4")), w.now)
    w.controller.settle(w.now)
    assert w.reports() == [("reserved", "team/big/0.1", True)]


def test_every_item_is_idempotent() -> None:
    w = Worker()
    item = dispatch(hub_workload("a"), DID)
    w.give(item)
    w.give(item)
    w.give(start(DID))
    w.give(start(DID))
    assert w.reports() == [("reserved", DID, True), ("status", DID, "PHASE_RUNNING")]
    assert w.agent.stats.dispatches == 1 and w.agent.stats.starts == 1 and w.agent.stats.duplicates == 2
    w.give(withdraw(DID))
    w.give(withdraw(DID))
    assert w.agent.stats.withdrawals == 1
    assert w.reports() == []


def test_a_newer_dispatch_replaces_the_old_copy() -> None:
    w = Worker()
    w.give(dispatch(hub_workload("a"), DID))
    w.give(start(DID))
    w.reports()
    w.give(dispatch(hub_workload("a"), "team/a/1.2"))
    assert w.agent.copies["team/a"].did == "team/a/1.2"
    assert w.agent.gate.running == set()  # the old run stopped; the new copy waits for its Start
    assert w.reports() == [("reserved", "team/a/1.2", True)]
    w.give(withdraw(DID))  # a late withdrawal of the old dispatch leaves the new copy alone
    assert "team/a" in w.agent.copies


def test_start_for_an_unknown_or_unadmitted_copy_is_answered_evicted() -> None:
    w = Worker(cpu="1")
    w.give(start("team/ghost/0.1"))
    assert w.reports() == [("status", "team/ghost/0.1", "PHASE_EVICTED")]
    w.give(dispatch(hub_workload("big", cpu="2"), "team/big/0.1"), start("team/big/0.1"))
    assert w.reports() == [("status", "team/big/0.1", "PHASE_EVICTED")]
    assert w.agent.gate.running == set()


def test_local_eviction_is_reported_and_the_copy_never_runs_again() -> None:
    w = Worker()
    w.give(dispatch(hub_workload("a"), DID))
    w.give(start(DID))
    w.reports()
    w.engine.evict("team/a", "Preempted", "by a local workload", now=w.now)
    w.controller.settle(w.now)
    assert w.reports() == [("status", DID, "PHASE_EVICTED")]
    assert w.agent.gate.running == set()
    copy = w.engine.workloads["team/a"]
    assert copy.is_admitted  # requeued and admitted again locally...
    w.give(start(DID))
    assert w.agent.gate.running == set()  # ...but this dispatch is over: the hub re-dispatches
    assert w.reports() == [("status", DID, "PHASE_EVICTED")]
    assert w.agent.held() == {"team/a": pb.LOCAL_STATE_EVICTED}


def test_invalid_manifest_is_rejected() -> None:
    w = Worker()
    bad = pb.Dispatch(dispatch_id="team/x/0.1", namespace="team", name="x", workload_json="{not json")
    w.give(pb.HubItem(dispatch=bad))
    assert w.reports() == [("status", "team/x/0.1", "PHASE_REJECTED")]
    assert w.agent.copies == {}


def test_hello_lists_what_is_held() -> None:
    w = Worker(cpu="1")
    w.give(dispatch(hub_workload("a"), "team/a/0.1"))
    w.give(start("team/a/0.1"))
    w.give(dispatch(hub_workload("b"), "team/b/0.1"))
    hello = w.agent.build_hello()
    assert hello.cluster_name == "worker-1"
    assert {(h.dispatch_id, h.state) for h in hello.held} == {
        ("team/a/0.1", pb.LOCAL_STATE_RUNNING),
        ("team/b/0.1", pb.LOCAL_STATE_QUEUED),
    }


def test_duration_comes_from_the_job_when_the_workload_has_none() -> None:
    w = Worker()
    wl = hub_workload("a", duration=None)
    d = make_dispatch(wl, DID, None)
    d.job_json = json.dumps({"metadata": {"annotations": {"mkhub.dev/sim-duration": "3s"}}})
    w.give(pb.HubItem(dispatch=d))
    w.give(start(DID))
    w.reports()
    w.advance(2.9)
    assert ("status", DID, "PHASE_SUCCEEDED") not in w.reports()
    w.advance(0.2)
    assert ("status", DID, "PHASE_SUCCEEDED") in w.reports()


def test_state_survives_an_agent_restart_and_runs_resume(tmp_path: Path) -> None:
    w = Worker()
    w.give(dispatch(hub_workload("a", duration="10s"), DID))
    w.give(start(DID))
    w.give(dispatch(hub_workload("b", cpu="8"), "team/b/0.1"))  # queued
    w.advance(4)
    state = AgentState(tmp_path, "worker-1")
    state.save(w.agent, w.now)
    # a new process, later
    fresh = Worker()
    fresh.now = w.now + 2
    restored = AgentState(tmp_path, "worker-1").restore(fresh.agent, fresh.pods, fresh.now)
    assert restored == 2
    fresh.controller.settle(fresh.now)
    assert fresh.agent.held() == {"team/a": pb.LOCAL_STATE_PODS_READY, "team/b": pb.LOCAL_STATE_QUEUED}
    assert fresh.engine.usage_of("cq") == {("default", "cpu"): 1000}
    fresh.reports()
    fresh.advance(3.9)  # 9.9s since its Start
    assert fresh.reports() == []
    fresh.advance(0.2)
    assert fresh.reports() == [("status", DID, "PHASE_SUCCEEDED")]


def test_objects_are_loaded_and_validated(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.mkdir()
    import yaml

    (good / "a.yaml").write_text(yaml.safe_dump_all([local_queue(), cluster_queue("2")]))
    (good / "b.yaml").write_text(yaml.safe_dump_all([namespace(), flavor()]))
    kinds = [o.kind for o in load_objects(good)]
    assert kinds == ["Namespace", "ResourceFlavor", "ClusterQueue", "LocalQueue"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
                                   "metadata": {"name": "cq"}, "spec": {"queueingStrategy": "Sideways"}}))
    with pytest.raises(ObjectsError, match="queueingStrategy"):
        load_objects(bad)
    wl = tmp_path / "wl.yaml"
    wl.write_text(yaml.safe_dump({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "team"},
                                  "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}))
    with pytest.raises(ObjectsError, match="workloads come from the hub"):
        load_objects(wl)


def test_a_restored_copy_that_had_not_started_runs_on_start(tmp_path: Path) -> None:
    w = Worker()
    w.give(dispatch(hub_workload("a", duration="5s"), DID))
    AgentState(tmp_path, "worker-1").save(w.agent, w.now)
    fresh = Worker()
    assert AgentState(tmp_path, "worker-1").restore(fresh.agent, fresh.pods, fresh.now) == 1
    fresh.controller.settle(fresh.now)
    assert fresh.agent.held() == {"team/a": pb.LOCAL_STATE_ADMITTED}
    fresh.give(start(DID))  # the hub re-sends Start to a winner that holds an unstarted copy
    assert fresh.agent.gate.running == {"team/a"}
    fresh.advance(5.1)
    assert ("status", DID, "PHASE_SUCCEEDED") in fresh.reports()


def test_an_unstarted_copy_evicted_locally_is_a_candidate_again_once_readmitted() -> None:
    w = Worker()
    w.give(dispatch(hub_workload("a"), DID))
    assert w.reports() == [("reserved", DID, True)]
    w.engine.evict("team/a", "Preempted", "by a local workload", now=w.now)
    w.controller.settle(w.now)  # released, requeued and admitted again locally
    assert w.reports() == [("status", DID, "PHASE_EVICTED"), ("reserved", DID, True)]
    w.give(start(DID))
    assert w.agent.gate.running == {"team/a"}


def test_a_dispatch_withdrawn_in_the_same_drain_still_counts_as_received() -> None:
    """mkagent_hub_items_total counts what the hub sent (the hub counts the Dispatch as sent)."""
    from prometheus_client import CollectorRegistry

    from hub.obs.federation import AgentObserver

    registry = CollectorRegistry()
    w = Worker()
    w.agent.observer = AgentObserver(registry)
    w.give(dispatch(hub_workload("a"), DID), withdraw(DID), dispatch(hub_workload("b"), "team/b/0.1"))
    assert w.agent.stats.coalesced == 1

    def received(kind: str) -> float | None:
        return registry.get_sample_value("mkagent_hub_items_total", {"kind": kind})

    assert (received("dispatch"), received("withdraw")) == (2, 1)


def test_dispatch_withdrawn_in_the_same_drain_is_never_created() -> None:
    """An agent that is behind gets a Dispatch and its Withdraw together: nothing to create."""
    w = Worker()
    w.give(dispatch(hub_workload("a"), DID), withdraw(DID), dispatch(hub_workload("b"), "team/b/0.1"))
    assert "team/a" not in w.engine.workloads
    assert w.agent.stats.coalesced == 1
    assert [r for r in w.reports() if r[1] == DID] == []  # nothing to report for it
    assert "team/b" in w.engine.workloads  # the rest of the drain is handled as usual


def test_a_kubernetes_mode_agent_sends_its_job_status_with_every_change() -> None:
    w = Worker()
    job_status = {"team/a": ""}
    w.agent.job_status_of = lambda key: ("team/train", job_status.get(key, ""))
    w.give(dispatch(hub_workload("a"), DID))
    w.reports()
    w.give(start(DID))
    assert w.sent[-1].status.job_status_json == ""  # nothing known about the Job yet
    w.reports()
    # Only the Job's counts moved: a Status with the same phase carries them.
    job_status["team/a"] = '{"active":1}'
    w.agent.mark("team/a")
    w.agent.flush(w.now)
    assert [(pb.Phase.Name(i.status.phase), i.status.job, i.status.job_status_json) for i in w.sent] == [
        ("PHASE_RUNNING", "team/train", '{"active":1}')]
    w.reports()
    w.agent.mark("team/a")
    w.agent.flush(w.now)
    assert w.sent == []  # unchanged: nothing sent
    # A phase change and a new Job status go out in one Status.
    job_status["team/a"] = '{"succeeded":1}'
    w.advance(10.5)
    finals = [i.status for i in w.sent if i.status.phase == pb.PHASE_SUCCEEDED]
    assert finals and finals[-1].job_status_json == '{"succeeded":1}'
    hello = w.agent.build_hello()
    assert hello.reports_job_status and not hello.serves_logs


def test_a_copy_has_its_own_uid_and_the_job_uid_across_a_restart(tmp_path: Path) -> None:
    """As a worker's API server would, the agent gives each copy a uid, and labels it with the
    uid of the Job it runs for (the dispatched Job). Preemption messages on the worker and the
    agent's decision log name them, also after the agent restarts from its saved state."""

    def job_dispatch(name: str, did: str, priority: int = 0) -> pb.HubItem:
        wl = hub_workload(name, duration="1h")
        wl.priority = priority
        job = parse_object(mk_job(name))
        assert isinstance(job, Job)
        return pb.HubItem(dispatch=make_dispatch(wl, did, job))

    w = Worker(cpu="1")
    w.give(job_dispatch("a", DID))
    copy = w.engine.workloads["team/a"]
    assert copy.meta.uid and copy.meta.uid != "uid-a"  # its own, not the hub's Workload's
    assert copy.meta.labels["kueue.x-k8s.io/job-uid"] == "uid-a"  # the Job's (mk_harness.job)
    AgentState(tmp_path, "worker-1").save(w.agent, w.now)
    fresh = Worker(cpu="1")
    assert AgentState(tmp_path, "worker-1").restore(fresh.agent, fresh.pods, fresh.now) == 1
    assert fresh.engine.workloads["team/a"].meta.uid == copy.meta.uid
    # A higher-priority copy preempts it: the message names the preemptor's uid and Job uid.
    fresh.controller.apply(parse_object(cluster_queue("1", preemption={"withinClusterQueue": "LowerPriority"})), fresh.now)
    fresh.give(job_dispatch("b", "team/b/0.1", priority=100))
    fresh.advance(1)
    evicted = fresh.engine.workloads["team/a"].status.condition("Evicted")
    assert evicted is not None and "UNKNOWN" not in evicted.message, evicted.message
    assert f"(UID: {fresh.engine.workloads['team/b'].meta.uid}, JobUID: uid-b)" in evicted.message


def test_any_running_follows_starts_finishes_and_restores(tmp_path: Path) -> None:
    """The fencing check's question, asked every loop turn, keeps its answer between changes."""
    w = Worker()
    w.give(dispatch(hub_workload("b", cpu="8"), "team/b/0.1"))  # queued
    w.give(dispatch(hub_workload("a", duration="1s"), DID))
    assert not w.agent.any_running() and not w.agent.any_running()
    w.give(start(DID))
    assert w.agent.any_running() and w.agent.any_running()
    AgentState(tmp_path, "worker-1").save(w.agent, w.now)
    w.advance(2)
    assert w.reports()[-1] == ("status", DID, "PHASE_SUCCEEDED")
    assert not w.agent.any_running()
    fresh = Worker()
    assert not fresh.agent.any_running()
    assert AgentState(tmp_path, "worker-1").restore(fresh.agent, fresh.pods, fresh.now) == 2
    assert fresh.agent.any_running()  # a restored copy that had started runs on
