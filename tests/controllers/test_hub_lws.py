"""Kueue's LeaderWorkerSet integration in the hub (the pod integration implied by the
``leaderworkerset.x-k8s.io/leaderworkerset`` framework): Pods as the LWS controller creates them from
templates Kueue's webhook marked, grouped by the pod webhook, stored in a cluster's store; a Workload
per group with a leader and a worker pod set, owned by the set, composed once the group is whole,
admitted whole and ungated together; a group that does not fit waits with all its Pods gated."""

from __future__ import annotations

from typing import Any

from hub_objects import T0
from test_hub_pods import ClusterStore, admitted, feed, gated, pods, setup, workloads

from hub.api.config import parse_configuration
from hub.api.jobkinds.leaderworkerset import FRAMEWORK, default, group_defaults, group_workload_name
from hub.api.jobkinds.pod import default_at_creation
from hub.controllers.hub import HubReconciler
from hub.devcluster.leaderworkersets import new_pod

LWS_ON = parse_configuration({"integrations": {"frameworks": ["batch/job", FRAMEWORK]}})


def lws(name: str, replicas: int, size: int, leader: bool = True) -> dict[str, Any]:
    def template() -> dict[str, Any]:
        return {"spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]}}

    return default({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                    "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                                 "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
                    "spec": {"replicas": replicas, "leaderWorkerTemplate": {
                        "size": size, "workerTemplate": template(),
                        **({"leaderTemplate": template()} if leader else {})}}})


def create_pods(store: ClusterStore, obj: dict[str, Any], members: list[tuple[int, int]]) -> None:
    """The LWS controller's Pods (group, worker), as the pod webhook leaves them."""
    for group, worker in members:
        store.create(default_at_creation(group_defaults(new_pod(obj, group, worker))))


def start(store: ClusterStore) -> tuple[HubReconciler, int]:
    rec = HubReconciler(store, LWS_ON, T0, ready_delay=0.0, default_duration=5.0)
    return rec, rec.load(T0)


def test_each_group_is_one_workload_with_a_leader_and_a_worker_pod_set_admitted_whole() -> None:
    store = ClusterStore(":memory:")
    setup(store, cpu=3)  # one group of 3 one-CPU Pods fits, not two
    obj = lws("web", 2, 3)
    create_pods(store, obj, [(g, w) for g in range(2) for w in range(3)])
    rec, _ = start(store)
    rec.round(T0)
    names = [group_workload_name("web", str(g), "uid-web") for g in range(2)]
    wls = workloads(store)
    assert sorted(wls) == sorted(names)
    for wl in wls.values():
        assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("leader", 1), ("worker", 2)]
        assert wl["metadata"]["ownerReferences"] == [{"apiVersion": "leaderworkerset.x-k8s.io/v1",
                                                      "kind": "LeaderWorkerSet", "name": "web", "uid": "uid-web"}]
        assert wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == "uid-web"
    assert [admitted(wls[n]) for n in names] == [True, False]  # the first group whole, the second waits
    by_group: dict[str, list[bool]] = {}
    for pod in pods(store).values():
        by_group.setdefault(pod["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"], []).append(gated(pod))
    assert by_group == {"0": [False] * 3, "1": [True] * 3}  # ungated together, or all still gated
    store.close()


def test_a_group_is_composed_only_once_all_its_pods_exist() -> None:
    store = ClusterStore(":memory:")
    setup(store, cpu=6)
    obj = lws("web", 1, 3)
    create_pods(store, obj, [(0, 0), (0, 1)])  # the leader and one worker so far
    rec, since = start(store)
    rec.round(T0)
    assert workloads(store) == {} and all(gated(p) for p in pods(store).values())
    create_pods(store, obj, [(0, 2)])
    for step in (1, 2):
        since = feed(rec, store, since, T0 + step)
        rec.round(T0 + step)
    [wl] = workloads(store).values()
    assert admitted(wl) and not any(gated(p) for p in pods(store).values())
    store.close()


def test_without_a_leader_template_a_group_is_one_main_pod_set() -> None:
    store = ClusterStore(":memory:")
    setup(store, cpu=2)
    create_pods(store, lws("solo", 1, 2, leader=False), [(0, 0), (0, 1)])
    rec, _ = start(store)
    rec.round(T0)
    [(name, wl)] = workloads(store).items()
    assert name == group_workload_name("solo", "0", "uid-solo") and admitted(wl)
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("main", 2)]
    store.close()


def leader_ready(obj: dict[str, Any]) -> dict[str, Any]:
    obj["spec"]["startupPolicy"] = "LeaderReady"
    return obj


def test_a_leader_ready_sets_groups_are_queued_from_the_set_and_admitted_on_their_leader() -> None:
    """Kueue's LeaderWorkerSet reconciler: each group's Workload is made from the set, before its
    Pods; with startupPolicy LeaderReady the LWS controller creates the workers only once the
    leader runs, so the leader alone is ungated on admission and the workers join after."""
    store = ClusterStore(":memory:")
    setup(store, cpu=6)
    obj = leader_ready(lws("web", 2, 3))
    store.create(obj)
    create_pods(store, obj, [(0, 0)])  # group 0's leader; group 1's not made yet
    rec, since = start(store)
    rec.round(T0)
    names = [group_workload_name("web", str(g), "uid-web") for g in range(2)]
    wls = workloads(store)
    assert sorted(wls) == sorted(names) and all(admitted(w) for w in wls.values())
    for i, name in enumerate(names):
        assert [(ps["name"], ps["count"]) for ps in wls[name]["spec"]["podSets"]] == [("leader", 1), ("worker", 2)]
        assert wls[name]["metadata"]["ownerReferences"] == [{"apiVersion": "leaderworkerset.x-k8s.io/v1",
                                                            "kind": "LeaderWorkerSet", "name": "web", "uid": "uid-web"}]
        assert wls[name]["metadata"]["annotations"]["kueue.x-k8s.io/component-workload-index"] == str(i)
        assert wls[name]["spec"]["queueName"] == "user-queue"
    assert [gated(p) for p in pods(store).values()] == [False]  # the leader runs
    create_pods(store, obj, [(0, 1), (0, 2)])  # the leader ready: the LWS controller makes the workers
    for step in (1, 2):
        since = feed(rec, store, since, T0 + step)
        rec.round(T0 + step)
    assert sorted(workloads(store)) == sorted(names)
    assert not any(gated(p) for p in pods(store).values())
    store.close()


def test_a_sets_group_workloads_go_when_it_scales_down_or_is_deleted() -> None:
    store = ClusterStore(":memory:")
    setup(store, cpu=6)
    obj = leader_ready(lws("web", 2, 3))
    store.create(obj)
    rec, since = start(store)
    rec.round(T0)
    names = [group_workload_name("web", str(g), "uid-web") for g in range(2)]
    assert sorted(workloads(store)) == sorted(names)
    stored = store.get("LeaderWorkerSet", "default", "web")
    assert stored is not None
    stored["spec"]["replicas"] = 1
    store.update(stored)
    for step in (1, 2):
        since = feed(rec, store, since, T0 + step)
        rec.round(T0 + step)
    assert sorted(workloads(store)) == names[:1]
    store.delete("LeaderWorkerSet", "default", "web")
    for step in (3, 4):
        since = feed(rec, store, since, T0 + step)
        rec.round(T0 + step)
    assert workloads(store) == {}
    store.close()


def test_a_restarted_hub_keeps_the_sets_group_workloads() -> None:
    store = ClusterStore(":memory:")
    setup(store, cpu=6)
    obj = leader_ready(lws("web", 1, 3))
    store.create(obj)
    create_pods(store, obj, [(0, 0)])
    rec, _ = start(store)
    rec.round(T0)
    [(name, before)] = workloads(store).items()
    again, _ = start(store)
    again.round(T0 + 1)
    [(name2, after)] = workloads(store).items()
    assert name2 == name and after["metadata"]["uid"] == before["metadata"]["uid"] and admitted(after)
    store.close()


def test_a_group_admitted_before_its_pods_exist_is_run_by_its_pods_not_simulated() -> None:
    """On a cluster the group's Pods run it: admitted with no Pod yet, it does not end on its own."""
    store = ClusterStore(":memory:")
    setup(store, cpu=6)
    store.create(leader_ready(lws("web", 1, 3)))
    rec, _ = start(store)
    rec.round(T0)
    rec.round(T0 + 60)  # far beyond the hub's simulated run time (5 s here)
    [wl] = workloads(store).values()
    assert admitted(wl) and not any(c["type"] == "Finished" for c in wl["status"].get("conditions") or [])
    store.close()


def test_a_set_that_starts_its_workers_with_its_leader_is_composed_from_its_pods() -> None:
    """mkhub makes a group's Workload from the set only for LeaderReady sets (see hub.controllers.lws)."""
    store = ClusterStore(":memory:")
    setup(store, cpu=6)
    obj = lws("web", 1, 3)
    store.create(obj)
    rec, _ = start(store)
    rec.round(T0)
    assert workloads(store) == {}
    store.close()


def test_a_leader_ready_set_in_a_multikueue_queue_gets_no_workload_ahead_of_its_pods() -> None:
    """Not built: MultiKueue for LeaderWorkerSets (Kueue creates the set in the worker). A group
    Workload made ahead of its Pods would be dispatched without them, so none is made."""
    store = ClusterStore(":memory:")
    setup(store, cpu=6)
    store.create({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "AdmissionCheck", "metadata": {"name": "mk"},
                  "spec": {"controllerName": "kueue.x-k8s.io/multikueue"}})
    cq = store.get("ClusterQueue", "", "cq")
    assert cq is not None
    cq["spec"]["admissionChecks"] = ["mk"]
    store.update(cq)
    store.create(leader_ready(lws("web", 1, 3)))
    rec, _ = start(store)
    rec.round(T0)
    assert workloads(store) == {}
    store.close()
