"""The dev-cluster's simulated LeaderWorkerSet controller, and the kubelet's scheduling gates,
against a real SQLite store driven by a fake clock."""

from __future__ import annotations

import hashlib
from typing import Any

from test_devcluster import Clock, advance, cluster

from hub.devcluster.kubelet import GATED_MESSAGE
from hub.devcluster.nodes import Node
from hub.devcluster.runtime import DevCluster
from hub.store import SQLiteStore
from hub.store.interface import InvalidObject

NS = "team-a"
NAME = "leaderworkerset.sigs.k8s.io/name"


def lws(name: str, *, replicas: int = 2, size: int = 3, worker_spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": replicas, "leaderWorkerTemplate": {
                "size": size,
                "leaderTemplate": {"spec": {"containers": [{"name": "leader", "image": "nginx"}]}},
                "workerTemplate": {"metadata": {"labels": {"app": "w"}},
                                   "spec": {"containers": [{"name": "worker", "image": "nginx"}], **(worker_spec or {})}}}}}


def pods(store: SQLiteStore) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in store.list("Pod", NS)[0]}


def status(store: SQLiteStore, name: str = "lws") -> dict[str, Any]:
    obj = store.get("LeaderWorkerSet", NS, name)
    assert obj is not None
    return dict(obj.get("status") or {})


def conds(st: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in st.get("conditions") or []}


def test_groups_of_a_leader_and_workers_run_until_deleted(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    obj = store.create(lws("lws"))
    dc.step()
    got = pods(store)
    assert sorted(got) == ["lws-0", "lws-0-1", "lws-0-2", "lws-1", "lws-1-1", "lws-1-2"]
    leader, worker = got["lws-1"], got["lws-1-2"]
    key = hashlib.sha1(b"team-a/lws-1").hexdigest()
    assert leader["metadata"]["labels"] == {NAME: "lws", "leaderworkerset.sigs.k8s.io/group-index": "1",
                                            "leaderworkerset.sigs.k8s.io/worker-index": "0",
                                            "leaderworkerset.sigs.k8s.io/group-key": key}
    assert worker["metadata"]["labels"] == {"app": "w", NAME: "lws", "leaderworkerset.sigs.k8s.io/group-index": "1",
                                            "leaderworkerset.sigs.k8s.io/worker-index": "2",
                                            "leaderworkerset.sigs.k8s.io/group-key": key}
    assert worker["metadata"]["annotations"] == {"leaderworkerset.sigs.k8s.io/size": "3",
                                                 "leaderworkerset.sigs.k8s.io/leader-name": "lws-1"}
    assert leader["spec"]["containers"][0]["name"] == "leader" and worker["spec"]["containers"][0]["name"] == "worker"
    assert worker["metadata"]["ownerReferences"][0]["uid"] == obj["metadata"]["uid"]
    st = status(store)
    assert (st["replicas"], st["readyReplicas"]) == (2, 2)
    assert conds(st) == {"Progressing": "False", "Available": "True"}  # Progressing while the pods were Pending
    assert st["hpaPodSelector"] == "leaderworkerset.sigs.k8s.io/name=lws,leaderworkerset.sigs.k8s.io/worker-index=0"

    uids = {n: p["metadata"]["uid"] for n, p in pods(store).items()}
    events = sorted((e["reason"], e["message"]) for e in store.list("Event", NS)[0]
                    if e["involvedObject"]["kind"] == "LeaderWorkerSet")
    assert events == [("AllGroupsReady", "All replicas are ready, with 2 groups ready of total 2 groups"),
                      ("GroupsProgressing", "Replicas are progressing, with 0 groups ready of total 2 groups")]
    advance(dc, clock, 3600)  # serving pods (restartPolicy Always) do not end, so are not replaced
    assert {p["status"]["phase"] for p in pods(store).values()} == {"Running"}
    assert {n: p["metadata"]["uid"] for n, p in pods(store).items()} == uids

    store.delete("LeaderWorkerSet", NS, "lws")
    dc.step()
    assert pods(store) == {}


def test_scaling_adds_and_removes_whole_groups(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(lws("lws", replicas=3, size=2))
    dc.step()
    obj = store.get("LeaderWorkerSet", NS, "lws")
    assert obj is not None
    store.update({**obj, "spec": {**obj["spec"], "replicas": 1}})
    dc.step()
    assert sorted(pods(store)) == ["lws-0", "lws-0-1"]
    assert status(store)["replicas"] == 1
    obj = store.get("LeaderWorkerSet", NS, "lws")
    assert obj is not None
    store.update({**obj, "spec": {**obj["spec"], "replicas": 2}})
    dc.step()
    assert sorted(pods(store)) == ["lws-0", "lws-0-1", "lws-1", "lws-1-1"]
    assert status(store)["readyReplicas"] == 2


def test_a_group_is_recreated_whole_when_one_of_its_pods_goes(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(lws("lws", replicas=2, size=2))
    dc.step()
    before = {n: p["metadata"]["uid"] for n, p in pods(store).items()}
    store.delete("Pod", NS, "lws-1-1")
    dc.step()
    after = {n: p["metadata"]["uid"] for n, p in pods(store).items()}
    assert sorted(after) == sorted(before)
    assert after["lws-1"] != before["lws-1"] and after["lws-1-1"] != before["lws-1-1"]
    assert after["lws-0"] == before["lws-0"]  # the other group is untouched


def test_gated_pods_stay_pending_until_ungated(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(lws("lws", replicas=1, size=2, worker_spec={"schedulingGates": [{"name": "kueue.x-k8s.io/topology"}]}))
    dc.step()
    worker = pods(store)["lws-0-1"]
    assert "nodeName" not in worker["spec"] and worker["status"]["phase"] == "Pending"
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in worker["status"]["conditions"]] == [
        ("PodScheduled", "False", "SchedulingGated", GATED_MESSAGE)]
    st = status(store)
    assert "readyReplicas" not in st and conds(st) == {"Progressing": "True"}

    store.update({**worker, "spec": {k: v for k, v in worker["spec"].items() if k != "schedulingGates"}})
    dc.step()
    assert pods(store)["lws-0-1"]["status"]["phase"] == "Running"
    assert conds(status(store)) == {"Progressing": "False", "Available": "True"}


def test_leader_ready_startup_creates_the_workers_once_the_leader_is_ready(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    waiting = lws("waiting", replicas=1, size=3)
    waiting["spec"]["startupPolicy"] = "LeaderReady"
    waiting["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["nodeSelector"] = {"pool": "none"}
    store.create(waiting)
    ready = lws("ready", replicas=1, size=3)
    ready["spec"]["startupPolicy"] = "LeaderReady"
    store.create(ready)
    dc.step()
    assert sorted(pods(store)) == ["ready-0", "ready-0-1", "ready-0-2", "waiting-0"]


def test_pods_are_created_through_the_given_client(store: SQLiteStore, clock: Clock) -> None:
    """mkhub dev-cluster passes its API, so Kueue's pod webhook sees an LWS's pods (and marks them);
    a refused pod is tried again after 5 s."""
    seen: list[str] = []
    refuse = [True]

    def create(obj: dict[str, Any]) -> dict[str, Any]:
        seen.append(obj["metadata"]["name"])
        if refuse[0]:
            raise InvalidObject('admission webhook "pods" denied the request')
        marked = {**obj["metadata"], "labels": {**obj["metadata"]["labels"], "seen-by": "webhook"}}
        return store.create({**obj, "metadata": marked})

    dc = DevCluster(store, (Node("node-a"),), clock=clock, create=create)
    dc.start()
    store.create(lws("lws", replicas=1, size=2))
    dc.step()
    assert seen and pods(store) == {}
    refuse[0] = False
    advance(dc, clock, 4)
    assert pods(store) == {}
    advance(dc, clock, 1)
    assert sorted(pods(store)) == ["lws-0", "lws-0-1"]
    assert all(p["metadata"]["labels"]["seen-by"] == "webhook" for p in pods(store).values())
