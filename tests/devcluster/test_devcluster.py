"""The dev-cluster's Job controller, scheduler/kubelet and garbage collector against a
real SQLite store, driven by a fake clock."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hub.devcluster.gc import FOREGROUND_FINALIZER, ORPHAN_FINALIZER
from hub.devcluster.jobs import TRACKING_FINALIZER
from hub.devcluster.kubelet import pod_logs
from hub.devcluster.nodes import Node, NodesError, parse_nodes
from hub.devcluster.runtime import DevCluster
from hub.store import SQLiteStore

T0 = 1_750_000_000.0


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


def open_store(path: Path, clock: Clock) -> SQLiteStore:
    return SQLiteStore(path / "state.db", now=lambda: datetime.fromtimestamp(clock.t, tz=UTC))


def cluster(store: SQLiteStore, clock: Clock, nodes: tuple[Node, ...] | None = None) -> DevCluster:
    dc = DevCluster(store, nodes or (Node("node-a"),), clock=clock, default_duration=10.0)
    dc.start()
    return dc


def job(name: str, *, parallelism: int | None = None, completions: int | None = None, suspend: bool = False,
        annotations: dict[str, str] | None = None, pod_spec: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"template": {"spec": {"containers": [{"name": "main", "image": "busybox"}],
                                                   "restartPolicy": "Never", **(pod_spec or {})}}}
    if parallelism is not None:
        body["parallelism"] = parallelism
    if completions is not None:
        body["completions"] = completions
    if suspend:
        body["suspend"] = True
    body.update(spec)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "team-a", "annotations": annotations or {}}, "spec": body}


def pods(store: SQLiteStore) -> list[dict[str, Any]]:
    return store.list("Pod", "team-a")[0]


def phases(store: SQLiteStore) -> list[str]:
    return sorted(p["status"]["phase"] for p in pods(store))


def status(store: SQLiteStore, name: str) -> dict[str, Any]:
    obj = store.get("Job", "team-a", name)
    assert obj is not None
    return dict(obj.get("status") or {})


def conditions(store: SQLiteStore, name: str) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status(store, name).get("conditions", [])}


def advance(dc: DevCluster, clock: Clock, seconds: float) -> None:
    clock.t += seconds
    dc.step()


def test_job_runs_parallelism_then_completions_and_completes(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(job("j", parallelism=2, completions=3))
    dc.step()
    st = status(store, "j")
    assert (st["active"], st["ready"], st.get("succeeded", 0)) == (2, 2, 0)
    assert st["startTime"] == "2025-06-15T15:06:40Z"
    assert phases(store) == ["Running", "Running"]
    pod = pods(store)[0]
    assert pod["spec"]["nodeName"] == "node-a"
    assert pod["metadata"]["ownerReferences"][0] | {"uid": ""} == {
        "apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "", "controller": True, "blockOwnerDeletion": True}
    assert pod["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "j"
    assert pod["metadata"]["name"].startswith("j-") and len(pod["metadata"]["name"]) == len("j-") + 5
    assert {c["type"] for c in pod["status"]["conditions"] if c["status"] == "True"} >= {"Ready", "PodScheduled"}

    advance(dc, clock, 9)
    assert status(store, "j").get("succeeded", 0) == 0
    advance(dc, clock, 1)
    st = status(store, "j")
    assert (st["active"], st["succeeded"]) == (1, 2)
    assert phases(store) == ["Running", "Succeeded", "Succeeded"]
    advance(dc, clock, 10)
    st = status(store, "j")
    assert "active" not in st and st["succeeded"] == 3 and st["ready"] == 0 and "failed" not in st
    assert conditions(store, "j") == {"SuccessCriteriaMet": ("True", "CompletionsReached"),
                                      "Complete": ("True", "CompletionsReached")}
    assert st["completionTime"] == "2025-06-15T15:07:00Z"
    assert phases(store) == ["Succeeded"] * 3
    assert all(TRACKING_FINALIZER not in (p["metadata"].get("finalizers") or []) for p in pods(store))
    logs = pod_logs(dc.kubelet, "team-a", pods(store)[0]["metadata"]["name"])
    assert logs is not None and "started on node node-a" in logs and "exited with code 0" in logs
    advance(dc, clock, 100)  # nothing more happens
    assert len(pods(store)) == 3


def test_work_queue_job_completes_when_one_succeeded_and_none_active(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(job("wq", parallelism=3))
    dc.step()
    assert status(store, "wq")["active"] == 3
    advance(dc, clock, 10)
    st = status(store, "wq")
    assert st["succeeded"] == 3 and conditions(store, "wq")["Complete"] == ("True", "CompletionsReached")


def test_sim_duration_from_the_job_or_the_pod_template(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(job("fast", annotations={"mkhub.dev/sim-duration": "2s"}))
    slow = job("slow")
    slow["spec"]["template"]["metadata"] = {"annotations": {"mkhub.dev/sim-duration": "1m"}}
    store.create(slow)
    dc.step()
    advance(dc, clock, 2)
    assert "Complete" in conditions(store, "fast") and "Complete" not in conditions(store, "slow")
    advance(dc, clock, 58)
    assert "Complete" in conditions(store, "slow")


def test_suspend_resume_and_suspend_again(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(job("s", parallelism=2, completions=2, suspend=True))
    dc.step()
    assert pods(store) == []
    assert conditions(store, "s") == {"Suspended": ("True", "JobSuspended")}
    assert "startTime" not in status(store, "s")

    clock.t += 5
    obj = store.get("Job", "team-a", "s")
    assert obj is not None
    obj["spec"]["suspend"] = False
    store.update(obj)
    dc.step()
    st = status(store, "s")
    assert conditions(store, "s") == {"Suspended": ("False", "JobResumed")}
    assert st["active"] == 2 and st["startTime"] == "2025-06-15T15:06:45Z"

    clock.t += 3
    obj = store.get("Job", "team-a", "s")
    assert obj is not None
    obj["spec"]["suspend"] = True
    store.update(obj)
    dc.step()
    st = status(store, "s")
    assert pods(store) == [] and "active" not in st and "failed" not in st  # deleted pods are not failures
    assert conditions(store, "s")["Suspended"] == ("True", "JobSuspended")


def test_node_selector_and_taints(store: SQLiteStore, clock: Clock) -> None:
    nodes = parse_nodes({"nodes": [
        {"name": "cpu-1", "labels": {"pool": "cpu"}},
        {"name": "gpu-1", "labels": {"pool": "gpu"}, "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]},
    ]})
    dc = cluster(store, clock, nodes)
    store.create(job("on-gpu", pod_spec={"nodeSelector": {"pool": "gpu"},
                                          "tolerations": [{"key": "gpu", "operator": "Exists"}]}))
    store.create(job("untolerated", pod_spec={"nodeSelector": {"pool": "gpu"}}))
    store.create(job("nowhere", pod_spec={"nodeSelector": {"pool": "tpu"}}))
    store.create(job("anywhere"))
    dc.step()
    by_job = {p["metadata"]["labels"]["job-name"]: p for p in pods(store)}
    assert by_job["on-gpu"]["spec"]["nodeName"] == "gpu-1"
    assert by_job["anywhere"]["spec"]["nodeName"] == "cpu-1"  # the gpu node's taint repels it
    for name in ("untolerated", "nowhere"):
        pod = by_job[name]
        assert "nodeName" not in pod["spec"] and pod["status"]["phase"] == "Pending"
        (cond,) = pod["status"]["conditions"]
        assert (cond["type"], cond["status"], cond["reason"]) == ("PodScheduled", "False", "Unschedulable")
    assert by_job["untolerated"]["status"]["conditions"][0]["message"] == (
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint {gpu: yes}. preemption: 0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling.")
    advance(dc, clock, 60)
    assert status(store, "nowhere")["active"] == 1 and "ready" in status(store, "nowhere")
    assert status(store, "nowhere")["ready"] == 0
    assert "Complete" in conditions(store, "on-gpu")


def events_of(store: SQLiteStore, pod: dict[str, Any]) -> list[tuple[str, str, str, int]]:
    uid = pod["metadata"]["uid"]
    return [(e["type"], e["reason"], e["message"], e["count"]) for e in store.list("Event", "team-a")[0]
            if e["involvedObject"] == {"kind": "Pod", "namespace": "team-a", "name": pod["metadata"]["name"],
                                       "uid": uid, "apiVersion": "v1"}
            and e["source"] == {"component": "default-scheduler"}]


def test_the_scheduler_records_scheduled_and_failed_scheduling_once_per_message(
        store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock, parse_nodes({"nodes": [{"name": "cpu-1", "labels": {"pool": "cpu"}},
                                                      {"name": "cpu-2", "labels": {"pool": "cpu"}}]}))
    store.create(job("fits", pod_spec={"nodeSelector": {"pool": "cpu"}}))
    store.create(job("nowhere", pod_spec={"nodeSelector": {"pool": "tpu"}}))
    dc.step()
    by_job = {p["metadata"]["labels"]["job-name"]: p for p in pods(store)}
    node = by_job["fits"]["spec"]["nodeName"]
    pod_name = by_job["fits"]["metadata"]["name"]
    assert events_of(store, by_job["fits"]) == [("Normal", "Scheduled", f"Successfully assigned team-a/{pod_name} to {node}", 1)]
    failed = [("Warning", "FailedScheduling",
               "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
               "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.", 1)]
    assert events_of(store, by_job["nowhere"]) == failed
    dc.kubelet.reconcile_all()  # looked at again, still unschedulable: no second event
    assert events_of(store, by_job["nowhere"]) == failed
    clock.t += 3601  # Events live an hour (kube-apiserver's --event-ttl)
    dc.step()
    assert store.list("Event", "team-a")[0] == []


def test_nodes_are_stored_from_the_list_and_follow_it_across_restarts(tmp_path: Path, clock: Clock) -> None:
    store = open_store(tmp_path, clock)
    nodes = parse_nodes({"nodes": [{"name": "cpu-1", "labels": {"pool": "cpu"}},
                                   {"name": "gpu-1", "taints": [{"key": "gpu", "effect": "NoSchedule"}]}]})
    cluster(store, clock, nodes).close()
    stored = {n["metadata"]["name"]: n for n in store.list("Node", "")[0]}
    assert sorted(stored) == ["cpu-1", "gpu-1"]
    assert stored["cpu-1"]["metadata"]["labels"]["pool"] == "cpu"
    assert stored["cpu-1"]["metadata"]["labels"]["kubernetes.io/hostname"] == "cpu-1"
    assert stored["gpu-1"]["spec"]["taints"] == [{"key": "gpu", "effect": "NoSchedule"}]
    ready = stored["cpu-1"]["status"]["conditions"][0]
    assert (ready["type"], ready["status"], ready["reason"]) == ("Ready", "True", "KubeletReady")
    assert stored["cpu-1"]["status"]["addresses"][0] == {"type": "InternalIP", "address": "10.0.1.1"}
    lease = store.get("Lease", "kube-node-lease", "cpu-1")  # the kubelet's heartbeat, owned by its Node
    assert lease is not None and lease["spec"]["holderIdentity"] == "cpu-1"
    assert lease["metadata"]["ownerReferences"][0]["uid"] == stored["cpu-1"]["metadata"]["uid"]
    store.close()
    store = open_store(tmp_path, clock)  # restarted with another list: gpu-1 gone, cpu-1 relabelled
    cluster(store, clock, parse_nodes({"nodes": [{"name": "cpu-1", "labels": {"pool": "big"}}]})).close()
    (only,) = store.list("Node", "")[0]
    assert (only["metadata"]["name"], only["metadata"]["labels"]["pool"]) == ("cpu-1", "big")
    assert store.get("Lease", "kube-node-lease", "gpu-1") is None
    store.close()


def test_failures_count_toward_the_backoff_limit(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(job("bad", annotations={"mkhub.dev/sim-exit-code": "3"}, backoffLimit=1))
    dc.step()
    advance(dc, clock, 10)
    assert status(store, "bad")["failed"] == 1 and status(store, "bad")["active"] == 1  # replaced
    advance(dc, clock, 10)
    st = status(store, "bad")
    assert st["failed"] == 2 and "active" not in st
    assert conditions(store, "bad") == {"FailureTarget": ("True", "BackoffLimitExceeded"),
                                        "Failed": ("True", "BackoffLimitExceeded")}
    assert "completionTime" not in st
    failed = [p for p in pods(store) if p["status"]["phase"] == "Failed"]
    assert failed[0]["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3


def test_active_deadline(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(job("slow", annotations={"mkhub.dev/sim-duration": "1h"}, activeDeadlineSeconds=30))
    dc.step()
    advance(dc, clock, 30)
    assert conditions(store, "slow")["Failed"] == ("True", "DeadlineExceeded")
    assert pods(store) == []


def test_a_deleted_running_pod_counts_as_failed_and_is_replaced(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(job("j"))
    dc.step()
    (pod,) = pods(store)
    store.delete("Pod", "team-a", pod["metadata"]["name"])  # kubectl delete pod: terminating (finalizer)
    dc.step()
    st = status(store, "j")
    assert st["failed"] == 1 and st["active"] == 1
    (replacement,) = pods(store)
    assert replacement["metadata"]["name"] != pod["metadata"]["name"]


def test_jobs_managed_by_another_controller_are_left_alone(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(job("remote", managedBy="kueue.x-k8s.io/multikueue"))
    dc.step()
    assert pods(store) == [] and status(store, "remote") == {}


def test_garbage_collection_by_propagation_policy(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    for name in ("bg", "orphan", "fg"):
        store.create(job(name))
    dc.step()
    assert len(pods(store)) == 3
    names = {p["metadata"]["labels"]["job-name"]: p["metadata"]["name"] for p in pods(store)}

    store.delete("Job", "team-a", "bg")  # Background: the job goes, then its pods and their logs
    dc.step()
    left = {p["metadata"]["labels"]["job-name"] for p in pods(store)}
    assert left == {"orphan", "fg"}
    assert store.get("PodLog", "team-a", names["bg"]) is None

    for name, finalizer in (("orphan", ORPHAN_FINALIZER), ("fg", FOREGROUND_FINALIZER)):
        obj = store.get("Job", "team-a", name)
        assert obj is not None
        obj["metadata"]["finalizers"] = [finalizer]
        store.update(obj)
        store.delete("Job", "team-a", name)  # what the API layer does for Orphan / Foreground
    dc.step()
    assert store.get("Job", "team-a", "orphan") is None and store.get("Job", "team-a", "fg") is None
    (orphaned,) = pods(store)
    assert orphaned["metadata"]["name"] == names["orphan"] and "ownerReferences" not in orphaned["metadata"]


def test_state_survives_a_restart_and_runs_resume(tmp_path: Path, clock: Clock) -> None:
    store = open_store(tmp_path, clock)
    dc = cluster(store, clock)
    store.create(job("j", parallelism=1, completions=2))
    dc.step()
    advance(dc, clock, 4)
    first = pods(store)[0]["metadata"]["name"]
    dc.close()
    store.close()

    clock.t += 3  # down for 3 s; the pod has 3 s left
    store = open_store(tmp_path, clock)
    dc = cluster(store, clock)
    assert [p["metadata"]["name"] for p in pods(store)] == [first] and phases(store) == ["Running"]
    advance(dc, clock, 2.5)
    assert phases(store) == ["Running"]
    advance(dc, clock, 0.5)
    assert status(store, "j")["succeeded"] == 1 and len(pods(store)) == 2
    advance(dc, clock, 10)
    assert status(store, "j")["succeeded"] == 2 and "Complete" in conditions(store, "j")
    dc.close()
    store.close()


def test_jobs_deleted_while_down_are_collected_at_start(tmp_path: Path, clock: Clock) -> None:
    store = open_store(tmp_path, clock)
    dc = cluster(store, clock)
    store.create(job("j"))
    dc.step()
    dc.close()
    store.delete("Job", "team-a", "j")
    assert len(pods(store)) == 1
    dc = cluster(store, clock)
    assert pods(store) == []
    dc.close()
    store.close()


def test_bad_node_lists_are_refused_with_the_field() -> None:
    with pytest.raises(NodesError, match=r"nodes\[1\]\.name: Required value"):
        parse_nodes({"nodes": [{"name": "a"}, {"labels": {}}]})
    with pytest.raises(NodesError, match="Duplicate"):
        parse_nodes([{"name": "a"}, {"name": "a"}])
    with pytest.raises(NodesError, match="non-empty list"):
        parse_nodes({"nodes": []})


def test_deleting_a_namespace_with_a_running_job_waits_for_its_pods(store: SQLiteStore, clock: Clock) -> None:
    """The namespace controller deletes the Job and its pods; the pods' Job-tracking finalizer holds
    them (and so the Namespace, Terminating) until the dev-cluster's Job controller lets them go."""
    from hub.kubeapi import namespaces

    dc = cluster(store, clock)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"},
                  "spec": {"finalizers": ["kubernetes"]}})
    store.create(job("j", parallelism=2))
    dc.step()
    assert phases(store) == ["Running", "Running"]
    ns = store.get("Namespace", "", "team-a")
    assert ns is not None
    _, gone = namespaces.terminate(store, ns)
    assert not gone
    assert not namespaces.finalize(store, "team-a", "2025-06-15T15:06:40Z")  # the pods wait for their finalizer
    assert store.get("Job", "team-a", "j") is None
    assert all(p["metadata"].get("deletionTimestamp") for p in pods(store)) and len(pods(store)) == 2
    assert store.get("Namespace", "", "team-a") is not None
    dc.step()  # the Job is gone: its pods' tracking finalizer is released
    assert pods(store) == []
    assert namespaces.finalize(store, "team-a", "2025-06-15T15:06:41Z")
    assert store.get("Namespace", "", "team-a") is None
