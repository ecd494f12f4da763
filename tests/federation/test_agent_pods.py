"""MultiKueue for Kueue's pod integration between the hub and an agent in Kubernetes mode: the
dispatch carries the manager's Pods, the winning agent creates them in its worker (as Kueue's
MultiKueue pod adapter copies them, admitted by the worker's Kueue: gate gone, flavors' placement
in), follows them, reports the group's phase and every Pod's status, and never creates one twice."""

from __future__ import annotations

import copy
import json
from typing import Any

from hub.api.jobkinds.pod import GROUP_NAME_LABEL, GROUP_TOTAL_COUNT_ANNOTATION, SCHEDULING_GATE, read_pod
from hub.api.registry import parse_object
from hub.api.workload import Admission, PodSetAssignment, Workload
from hub.controllers.simrunner import SimRunner
from hub.federation.mkwire import make_dispatch
from worker_agent.kube.jobs import JobGone, JobWanted, KubeJobs
from worker_agent.kube.pods import pods_phase, worker_pods

ROLE = "abc123"  # the role hash Kueue's webhook wrote (the pod set's name in a group's Workload)
SPOT = {"spec": {"nodeLabels": {"pool": "spot"}, "tolerations": [{"key": "spot", "operator": "Exists"}]}}


def manager_pod(name: str, group: str = "") -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "user-queue", "kueue.x-k8s.io/managed": "true", "app": "x"}
    annotations = {"kueue.x-k8s.io/role-hash": ROLE}
    if group:
        labels[GROUP_NAME_LABEL] = group
        annotations[GROUP_TOTAL_COUNT_ANNOTATION] = "2"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "team-a", "uid": f"uid-{name}", "labels": labels,
                         "annotations": annotations, "finalizers": ["kueue.x-k8s.io/managed"],
                         "ownerReferences": [{"kind": "x"}], "resourceVersion": "9"},
            "spec": {"restartPolicy": "Never", "schedulingGates": [{"name": SCHEDULING_GATE}],
                     "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Pending"}}


def local_copy(name: str, pod_set: str, count: int) -> Workload:
    wl = parse_object({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"queueName": "q", "podSets": [{"name": pod_set, "count": count, "template": {"spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]},
    })
    assert isinstance(wl, Workload)
    wl.status.admission = Admission("cq", (PodSetAssignment(pod_set, (("cpu", "spot"),), (("cpu", 1000 * count),), count),))
    return wl


def pod_list(*pods: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(pods)}


def test_a_dispatch_carries_the_workloads_pods() -> None:
    wl = local_copy("group", ROLE, 2)
    msg = make_dispatch(wl, "team-a/group/0.1", None, [read_pod(manager_pod("a", "group")), read_pod(manager_pod("b", "group"))])
    assert msg.job_json == ""  # an older agent runs it on simulated pods, as before
    sent = [json.loads(p) for p in msg.pod_jsons]
    assert [p["metadata"]["name"] for p in sent] == ["a", "b"]
    assert sent[0]["kind"] == "Pod" and sent[0]["spec"]["schedulingGates"] == [{"name": SCHEDULING_GATE}]
    assert make_dispatch(wl, "team-a/group/0.1", None).pod_jsons == []


def test_the_worker_pods_are_the_managers_admitted_by_the_local_admission() -> None:
    hub_pods = [manager_pod("a", "group"), manager_pod("b", "group")]
    before = copy.deepcopy(hub_pods)
    out = worker_pods(pod_list(*hub_pods), local_copy("group", ROLE, 2), "mk", {ROLE: ({"pool": "spot"}, [{"key": "spot"}])})
    assert [p["metadata"]["name"] for p in out] == ["a", "b"]
    for p in out:
        meta, spec = p["metadata"], p["spec"]
        assert set(meta) == {"name", "namespace", "labels", "annotations"}  # no uid, finalizer, owner, version
        assert meta["labels"] == {"kueue.x-k8s.io/managed": "true", "app": "x", GROUP_NAME_LABEL: "group",
                                  "kueue.x-k8s.io/multikueue-origin": "mk", "kueue.x-k8s.io/prebuilt-workload-name": "group"}
        assert "schedulingGates" not in spec and "status" not in p
        assert spec["nodeSelector"] == {"pool": "spot"} and spec["tolerations"] == [{"key": "spot"}]
    assert hub_pods == before
    single = worker_pods(pod_list(manager_pod("p")), local_copy("pod-p-1", "main", 1), "mk", {"main": ({"pool": "spot"}, [])})
    assert single[0]["spec"]["nodeSelector"] == {"pool": "spot"} and "schedulingGates" not in single[0]["spec"]


class World:
    """A worker cluster's Pods as KubeJobs sees them: what it asked to create or delete."""

    def __init__(self) -> None:
        self.pods: dict[str, dict[str, Any]] = {}
        self.created: list[str] = []
        self.deleted: list[str] = []

    def desire(self, ref: str, state: object) -> None:
        if isinstance(state, JobWanted):
            self.created.append(ref)
            self.pods[ref] = copy.deepcopy(state.manifest)
        elif isinstance(state, JobGone):
            self.deleted.append(ref)
            self.pods.pop(ref, None)

    def runner(self, job: dict[str, Any]) -> KubeJobs:
        return KubeJobs(origin="mk", job_of=lambda key: job, flavor=lambda name: SPOT if name == "spot" else None,
                        current_job=self.pods.get, desire=self.desire, sim=SimRunner())

    def set_phase(self, runner: KubeJobs, ref: str, phase: str) -> None:
        self.pods[ref]["status"] = {"phase": phase}
        assert runner.observe(self.pods[ref])


def test_the_winner_runs_the_groups_pods_once_and_reports_the_group() -> None:
    world = World()
    job = pod_list(manager_pod("a", "group"), manager_pod("b", "group"))
    wl = local_copy("group", ROLE, 2)
    runner = world.runner(job)
    runner.start(wl, 0.0)
    refs = ["Pod:team-a/a", "Pod:team-a/b"]
    assert world.created == refs and runner.created == 2
    assert world.pods[refs[0]]["spec"]["nodeSelector"] == {"pool": "spot"}
    world.set_phase(runner, refs[0], "Running")
    assert runner.poll(0.0) == []  # one Pod of two seen: not ready yet
    world.set_phase(runner, refs[1], "Running")
    assert [(r.kind, r.key) for r in runner.poll(0.0)] == [("ready", "team-a/group")]
    world.set_phase(runner, refs[0], "Succeeded")
    assert runner.poll(0.0) == []  # Kueue's group ends when all its Pods succeeded
    assert json.loads(runner.status_json("team-a/group")) == {"pods": {"a": {"phase": "Succeeded"}, "b": {"phase": "Running"}}}
    # A restarted agent follows the Pods it finds, creates none twice.
    again = world.runner(job)
    again.start(wl, 1.0)
    assert world.created == refs and again.created == 0
    world.set_phase(again, refs[1], "Succeeded")
    reports = [(r.kind, r.key, r.message) for r in again.poll(1.0)]
    assert reports[-1] == ("succeeded", "team-a/group", "Pods succeeded: 2/2.")
    again.discard("team-a/group")  # the hub is done with it: both Pods go
    assert sorted(world.deleted) == refs and not again.by_job


def test_a_single_pods_failure_is_the_copys_and_a_withdrawn_copy_deletes_it() -> None:
    world = World()
    runner = world.runner(pod_list(manager_pod("p")))
    runner.start(local_copy("pod-p-1", "main", 1), 0.0)
    assert world.created == ["Pod:team-a/p"]
    world.pods["Pod:team-a/p"]["status"] = {"phase": "Failed", "message": "OOMKilled"}
    runner.observe(world.pods["Pod:team-a/p"])
    assert [(r.kind, r.message) for r in runner.poll(0.0)] == [("failed", "OOMKilled")]
    runner.stop("team-a/pod-p-1", 1.0)
    assert world.deleted == ["Pod:team-a/p"]


def test_pods_phase_needs_every_pod() -> None:
    group = {"a": manager_pod("a", "group"), "b": manager_pod("b", "group")}
    for p in group.values():
        p["status"] = {"phase": "Succeeded"}
    statuses = {n: p["status"] for n, p in group.items()}
    assert pods_phase(statuses, group, 2) == ("succeeded", "Pods succeeded: 2/2.")
    assert pods_phase({"a": statuses["a"]}, {"a": group["a"]}, 2) == ("", "")


def test_garbage_collection_deletes_origin_labelled_pods_no_copy_accounts_for() -> None:
    from types import SimpleNamespace

    from worker_agent.kube.mirror import Mirror

    world = World()
    runner = world.runner(pod_list(manager_pod("kept")))
    runner.start(local_copy("pod-kept-1", "main", 1), 0.0)
    labels = {"kueue.x-k8s.io/multikueue-origin": "mk"}
    stored = {"Pod": [{"kind": "Pod", "metadata": {"name": n, "namespace": "team-a", "labels": labels}}
                      for n in ("kept", "orphan")]}
    store = SimpleNamespace(list=lambda kind, ns, selector: (stored.get(kind, []), 1))
    agent = SimpleNamespace(origin="mk", copies={})
    mirror = Mirror(store, agent, runner, SimpleNamespace(desire=world.desire))  # type: ignore[arg-type]
    assert mirror.collect() == 1
    assert world.deleted == ["Pod:team-a/orphan"]  # the copy's own Pod stays


def test_garbage_collection_leaves_an_origin_labelled_object_its_owner_controls() -> None:
    """KubeRay labels a RayJob's RayCluster as the RayJob (origin label included): it is the RayJob's."""
    from types import SimpleNamespace

    from worker_agent.kube.mirror import Mirror

    world = World()
    runner = world.runner(pod_list(manager_pod("kept")))
    labels = {"kueue.x-k8s.io/multikueue-origin": "mk"}
    owner = {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rj", "uid": "u", "controller": True}
    stored = {"RayCluster": [{"kind": "RayCluster", "metadata": {"name": "rj-raycluster-abcde", "namespace": "team-a",
                                                                 "labels": labels, "ownerReferences": [owner]}}],
              "RayJob": [{"kind": "RayJob", "metadata": {"name": "orphan", "namespace": "team-a", "labels": labels}}]}
    store = SimpleNamespace(list=lambda kind, ns, selector: (stored.get(kind, []), 1))
    mirror = Mirror(store, SimpleNamespace(origin="mk", copies={}), runner, SimpleNamespace(desire=world.desire))  # type: ignore[arg-type]
    assert mirror.collect() == 1
    assert world.deleted == ["RayJob:team-a/orphan"]


def test_garbage_collection_leaves_a_pod_of_a_held_copys_group_its_copy_does_not_list_yet() -> None:
    """An agent killed after creating a group's joining Pod but before saving it in its copy: the
    restarted agent keeps that Pod (the hub sends the group again) instead of deleting it for good."""
    from types import SimpleNamespace

    from worker_agent.kube.mirror import Mirror

    world = World()
    runner = world.runner(pod_list(manager_pod("a", "group")))
    runner.start(local_copy("group", ROLE, 2), 0.0)

    def worker_pod(name: str, workload: str) -> dict[str, Any]:
        labels = {"kueue.x-k8s.io/multikueue-origin": "mk", "kueue.x-k8s.io/prebuilt-workload-name": workload}
        return {"kind": "Pod", "metadata": {"name": name, "namespace": "team-a", "labels": labels}}

    stored = {"Pod": [worker_pod("a", "group"), worker_pod("b", "group"), worker_pod("c", "gone")]}
    store = SimpleNamespace(list=lambda kind, ns, selector: (stored.get(kind, []), 1))
    agent = SimpleNamespace(origin="mk", copies={"team-a/group": object()})
    mirror = Mirror(store, agent, runner, SimpleNamespace(desire=world.desire))  # type: ignore[arg-type]
    assert mirror.collect() == 1
    assert world.deleted == ["Pod:team-a/c"]


def test_pods_that_join_a_running_copy_are_created_and_the_others_followed() -> None:
    """A StatefulSet's next ordinal, made in the manager after the dispatch (see hub.federation.podcopies)."""
    world = World()
    job = pod_list(manager_pod("a", "group"))
    wl = local_copy("group", ROLE, 2)
    runner = world.runner(job)
    runner.start(wl, 0.0)
    world.set_phase(runner, "Pod:team-a/a", "Running")
    runner.poll(0.0)
    job["items"].append(manager_pod("b", "group"))
    runner.grow(wl)
    assert world.created == ["Pod:team-a/a", "Pod:team-a/b"] and runner.created == 2
    assert runner.poll(0.0) == []  # b not running yet
    world.set_phase(runner, "Pod:team-a/b", "Running")
    assert [(r.kind, r.key) for r in runner.poll(0.0)] == [("ready", "team-a/group")]


def test_the_same_dispatch_with_more_pods_grows_the_agents_copy() -> None:
    from .test_agent import Worker
    from .test_agent import start as start_item

    w = Worker()
    wl = local_copy("group", ROLE, 2)
    did = "team-a/group/0.1"
    first = make_dispatch(wl, did, None, [read_pod(manager_pod("a", "group"))])
    w.give(pb_item(first))
    w.give(start_item(did))
    more = make_dispatch(wl, did, None, [read_pod(manager_pod("a", "group")), read_pod(manager_pod("b", "group"))])
    w.give(pb_item(more))
    c = w.agent.copies["team-a/group"]
    assert c.job is not None and [p["metadata"]["name"] for p in c.job["items"]] == ["a", "b"]
    assert w.agent.stats.duplicates == 0
    w.give(pb_item(more))  # nothing new: a replay
    assert w.agent.stats.duplicates == 1 and len(c.job["items"]) == 2


def pb_item(msg: Any) -> Any:
    from mkhub.v1 import federation_pb2 as pb

    return pb.HubItem(dispatch=msg)


class Grown:
    """What grown_copies reads of the pod integration."""

    def __init__(self, keys: set[str], pods: list[Any]) -> None:
        self.grown, self.pods = keys, pods

    def drain_grown(self) -> set[str]:
        out, self.grown = self.grown, set()
        return out

    def member_pods(self, key: str) -> list[Any]:
        return self.pods


def test_the_hub_sends_a_groups_later_pods_to_the_clusters_holding_its_copy() -> None:
    from hub.federation.mkrecords import Dispatch, Worker
    from hub.federation.podcopies import grown_copies

    wl = local_copy("group", ROLE, 2)
    d = Dispatch("team-a/group", "team-a/group/0.1", "uid-g", "mk", ("w1", "w2"), winner="w1")
    w1, w2 = Worker("w1", connected=True), Worker("w2", connected=True)
    w1.held[d.key] = d.did
    pods = Grown({d.key}, [read_pod(manager_pod("a", "group")), read_pod(manager_pod("b", "group"))])
    out = grown_copies(pods, {d.key: d}, {"w1": w1, "w2": w2}, {d.key: wl})  # type: ignore[arg-type]
    assert [(w.name, m.dispatch_id, [json.loads(p)["metadata"]["name"] for p in m.pod_jsons]) for w, m in out] == [
        ("w1", d.did, ["a", "b"])]
    assert out[0][1].workload_uid == "uid-g"
    assert grown_copies(pods, {d.key: d}, {"w1": w1, "w2": w2}, {d.key: wl}) == []  # type: ignore[arg-type]
    # The holder is away (its agent restarting): sent once it is back.
    w1.connected = False
    pods.grown = {d.key}
    assert grown_copies(pods, {d.key: d}, {"w1": w1}, {d.key: wl}) == []  # type: ignore[arg-type]
    w1.connected = True
    assert [w.name for w, _ in grown_copies(pods, {d.key: d}, {"w1": w1}, {d.key: wl})] == ["w1"]  # type: ignore[arg-type]
