"""Kueue's pod integration in the embedded hub (hub.controllers.pods): Pods stored as Kueue's webhook
leaves them (mkhub apply), a Workload per Pod or per complete group, ungated on admission, run by the
simulated runner, finished from the Workload, Kueue's finalizer dropped; stopped by deletion."""

from __future__ import annotations

from typing import Any

from hub_objects import T0, flavor, namespace, seed

from hub.api.config import parse_configuration
from hub.api.jobkinds.pod import POD_FINALIZER, SCHEDULING_GATE
from hub.controllers.hub import HubReconciler
from hub.controllers.pods import write_pods
from hub.service.apply import Applier
from hub.store import SQLiteStore

CONFIG = parse_configuration({"integrations": {"frameworks": ["batch/job", "pod"]}})

# Kueue's pod-group sample (site/static/examples/pods-kueue/kueue-pod-group.yaml), unchanged.
POD_GROUP_SAMPLE = """
apiVersion: v1
kind: Pod
metadata:
  generateName: sample-leader-
  labels:
    kueue.x-k8s.io/queue-name: user-queue
    kueue.x-k8s.io/pod-group-name: "sample-group"
  annotations:
    kueue.x-k8s.io/pod-group-total-count: "2"
spec:
  restartPolicy: Never
  containers:
  - name: sleep
    image: busybox
    command: ["sh", "-c", 'echo "hello world from the leader pod" && sleep 3']
    resources:
      requests:
        cpu: 3
---
apiVersion: v1
kind: Pod
metadata:
  generateName: sample-worker-
  labels:
    kueue.x-k8s.io/queue-name: user-queue
    kueue.x-k8s.io/pod-group-name: "sample-group"
  annotations:
    kueue.x-k8s.io/pod-group-total-count: "2"
spec:
  restartPolicy: Never
  containers:
  - name: sleep
    image: busybox
    command: ["sh", "-c", 'echo "hello world from the worker pod" && sleep 2']
    resources:
      requests:
        cpu: 3
"""


def pod(name: str, cpu: int = 1, priority: str = "") -> str:
    labels = "kueue.x-k8s.io/queue-name: user-queue" + (f", kueue.x-k8s.io/priority-class: {priority}" if priority else "")
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, labels: {{{labels}}}}}\n"
            f"spec: {{containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: '{cpu}'}}}}}}]}}\n")


def setup(store: SQLiteStore, cpu: int) -> None:
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"},
          "spec": {"namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
                   "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                       {"name": "default", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}}
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
          "metadata": {"name": "user-queue", "namespace": "default"}, "spec": {"clusterQueue": "cq"}}
    wpcs = [{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "WorkloadPriorityClass", "metadata": {"name": n},
             "value": v} for n, v in (("low", 100), ("high", 1000))]
    seed(store, [namespace("default"), flavor(), cq, lq, *wpcs])


def create(store: SQLiteStore, text: str) -> None:
    out = Applier(store, pod_webhook=CONFIG).apply(text, create=True)
    assert not out.rejected, [r.error for r in out.results]


def start(store: SQLiteStore, now: float = T0) -> tuple[HubReconciler, int]:
    rec = HubReconciler(store, CONFIG, now, ready_delay=0.0, default_duration=5.0)
    return rec, rec.load(now)


def feed(rec: HubReconciler, store: SQLiteStore, since: int, now: float) -> int:
    with store.watch(since=since) as watch:
        while (ev := watch.next(timeout=0)) is not None:
            rec.observe(ev, now)
            since = ev.resource_version
    return since


def pods(store: SQLiteStore) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in store.list("Pod")[0]}


def gated(p: dict[str, Any]) -> bool:
    return any(g["name"] == SCHEDULING_GATE for g in p["spec"].get("schedulingGates") or [])


def phase(p: dict[str, Any]) -> str:
    return str((p.get("status") or {}).get("phase", ""))


def workloads(store: SQLiteStore) -> dict[str, dict[str, Any]]:
    return {w["metadata"]["name"]: w for w in store.list("Workload")[0]}


def admitted(w: dict[str, Any]) -> bool:
    return any(c["type"] == "Admitted" and c["status"] == "True" for c in (w.get("status") or {}).get("conditions") or [])


def test_a_plain_pod_is_admitted_ungated_run_and_finished_and_kueue_lets_it_go(store: SQLiteStore) -> None:
    setup(store, cpu=2)
    create(store, pod("p"))
    assert gated(pods(store)["p"])
    rec, _ = start(store)
    rec.round(T0)
    [(name, wl)] = workloads(store).items()
    assert name.startswith("pod-p-") and admitted(wl)
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "Pod"
    p = pods(store)["p"]
    assert not gated(p) and phase(p) == "Running" and POD_FINALIZER in p["metadata"]["finalizers"]
    rec.round(T0 + 6)
    p = pods(store)["p"]
    assert phase(p) == "Succeeded" and POD_FINALIZER not in (p["metadata"].get("finalizers") or [])


def test_kueues_pod_group_sample_is_one_workload_admitted_whole(store: SQLiteStore) -> None:
    setup(store, cpu=6)
    create(store, POD_GROUP_SAMPLE)
    rec, _ = start(store)
    rec.round(T0)
    wl = workloads(store)["sample-group"]
    assert admitted(wl) and [ps["count"] for ps in wl["spec"]["podSets"]] == [2]
    assert len(wl["metadata"]["ownerReferences"]) == 2
    group = pods(store)
    assert len(group) == 2 and not any(gated(p) for p in group.values())
    rec.round(T0 + 6)
    for p in pods(store).values():
        assert phase(p) == "Succeeded" and not p["metadata"].get("finalizers")


def test_a_group_that_fits_only_whole_stays_gated_and_an_incomplete_one_has_no_workload(store: SQLiteStore) -> None:
    setup(store, cpu=4)
    first, second = POD_GROUP_SAMPLE.split("---\n")
    create(store, first)
    rec, since = start(store)
    rec.round(T0)
    assert workloads(store) == {}  # one Pod of two: no Workload yet
    create(store, second)
    since = feed(rec, store, since, T0 + 1)
    rec.round(T0 + 1)
    wl = workloads(store)["sample-group"]
    assert not admitted(wl)  # 6 CPUs of 4: the group waits whole, no Pod runs
    assert all(gated(p) for p in pods(store).values())


def test_eviction_deletes_the_pods_and_the_preemptor_runs(store: SQLiteStore) -> None:
    setup(store, cpu=2)
    create(store, pod("low", cpu=2, priority="low"))
    rec, since = start(store)
    rec.round(T0)
    assert not gated(pods(store)["low"])
    create(store, pod("high", cpu=2, priority="high"))
    for step in range(1, 4):  # the preemptor's Workload, the victim's eviction, the pods' deletion...
        since = feed(rec, store, since, T0 + step)
        rec.round(T0 + step)
    left = pods(store)
    assert "low" not in left  # Kueue stops a Pod by deleting it
    assert not gated(left["high"]) and phase(left["high"]) == "Running"
    assert [name for name in workloads(store) if name.startswith("pod-low-")] == []  # gone with its Pod


def test_a_restarted_hub_adopts_the_workload_and_ungates_what_the_last_one_left_gated(store: SQLiteStore) -> None:
    setup(store, cpu=2)
    create(store, pod("p"))
    rec, _ = start(store)
    rec.round(T0)
    # The hub died after committing the admission, before the Pod's ungating landed.
    stored = pods(store)["p"]
    stored["spec"]["schedulingGates"] = [{"name": SCHEDULING_GATE}]
    store.update(stored)
    rec, _ = start(store, T0 + 1)
    rec.round(T0 + 1)
    assert len(workloads(store)) == 1
    assert not gated(pods(store)["p"])
    rec.round(T0 + 6)
    assert phase(pods(store)["p"]) == "Succeeded"


class ClusterStore(SQLiteStore):
    """The real SQLite store, declaring (as the Kubernetes store does) that the cluster runs Pods."""

    runs_jobs = True


def test_on_a_cluster_the_kubelet_runs_the_pod_and_its_phase_ends_the_workload() -> None:
    store = ClusterStore(":memory:")
    setup(store, cpu=2)
    flavor_obj = store.get("ResourceFlavor", "", "default")
    assert flavor_obj is not None
    flavor_obj["spec"] = {"nodeLabels": {"pool": "spot"}}
    store.update(flavor_obj)
    create(store, pod("p"))
    rec, since = start(store)
    rec.round(T0)
    p = pods(store)["p"]
    assert not gated(p) and p["spec"]["nodeSelector"] == {"pool": "spot"}  # the flavor's node labels
    assert "status" not in p  # the kubelet's to write, not the hub's
    for status in ({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
                   {"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "False"}]}):
        current = pods(store)["p"]
        current["status"] = status
        store.update_status(current)
        since = feed(rec, store, since, T0 + 1)
        rec.round(T0 + 1)
    wl = next(iter(workloads(store).values()))
    assert any(c["type"] == "Finished" and c["status"] == "True" for c in wl["status"]["conditions"])
    assert not pods(store)["p"]["metadata"].get("finalizers")
    store.close()


def test_the_workload_of_a_pod_deleted_while_the_hub_was_down_is_collected(store: SQLiteStore) -> None:
    setup(store, cpu=2)
    create(store, pod("p"))
    rec, _ = start(store)
    rec.round(T0)
    assert len(workloads(store)) == 1
    stored = pods(store)["p"]
    stored["metadata"]["finalizers"] = []
    store.update(stored)
    store.delete("Pod", "default", "p")  # while no hub runs
    rec, _ = start(store, T0 + 1)
    rec.round(T0 + 1)
    assert workloads(store) == {}


def test_deleting_a_pods_workload_stops_the_pod(store: SQLiteStore) -> None:
    setup(store, cpu=1)
    create(store, pod("p") + "---\n" + pod("waits"))
    rec, since = start(store)
    rec.round(T0)
    names = {w["metadata"]["name"] for w in store.list("Workload")[0]}
    for name in names:
        store.delete("Workload", "default", name)
    since = feed(rec, store, since, T0 + 1)
    rec.round(T0 + 1)
    assert pods(store) == {}  # the running Pod and the gated one: Kueue deletes both


def test_a_user_deleting_a_running_pod_lets_it_go_and_frees_its_quota(store: SQLiteStore) -> None:
    setup(store, cpu=1)
    create(store, pod("first") + "---\n" + pod("second"))
    rec, since = start(store)
    rec.round(T0)
    assert not gated(pods(store)["first"]) and gated(pods(store)["second"])
    store.delete("Pod", "default", "first")  # held by Kueue's finalizer: marked for deletion only
    assert "first" in pods(store)
    for step in (1, 2):
        since = feed(rec, store, since, T0 + step)
        rec.round(T0 + step)
    assert "first" not in pods(store)  # the hub dropped its finalizer
    assert not gated(pods(store)["second"])  # and the quota went to the next Pod


def test_on_a_cluster_a_groups_replacement_pod_runs_and_the_failed_one_is_let_go() -> None:
    store = ClusterStore(":memory:")
    setup(store, cpu=6)
    create(store, POD_GROUP_SAMPLE)
    rec, since = start(store)
    rec.round(T0)
    leader = next(p for name, p in pods(store).items() if name.startswith("sample-leader"))
    leader["status"] = {"phase": "Failed"}  # the kubelet: its container failed
    store.update_status(leader)
    since = feed(rec, store, since, T0 + 1)
    rec.round(T0 + 1)
    assert all(admitted(w) for w in workloads(store).values())  # a failed Pod ends nothing: it waits for a replacement
    assert POD_FINALIZER in pods(store)[leader["metadata"]["name"]]["metadata"]["finalizers"]  # no replacement yet
    create(store, POD_GROUP_SAMPLE.split("---\n")[0].replace("sample-leader-", "sample-leader-again-"))
    since = feed(rec, store, since, T0 + 2)
    rec.round(T0 + 2)
    now = pods(store)
    replacement = next(p for name, p in now.items() if name.startswith("sample-leader-again"))
    assert not gated(replacement)  # it joins the admitted group's Workload and runs
    assert not now[leader["metadata"]["name"]]["metadata"].get("finalizers")  # Kueue lets the failed one go
    assert len(workloads(store)) == 1
    store.close()


def test_a_groups_workload_says_it_waits_for_replacement_pods_until_one_comes() -> None:
    """Kueue's pod reconciler's custom Workload condition: True (PodsFailed) while a failed Pod of the
    group has no replacement, False (PodsReady) once one came; a single Pod's Workload never has it."""
    store = ClusterStore(":memory:")
    setup(store, cpu=8)
    create(store, POD_GROUP_SAMPLE + "---\n" + pod("single"))
    rec, since = start(store)
    rec.round(T0)

    def waiting(name: str) -> dict[str, Any] | None:
        conds = (workloads(store)[name].get("status") or {}).get("conditions") or []
        return next((c for c in conds if c["type"] == "WaitingForReplacementPods"), None)

    assert waiting("sample-group") is None  # complete from the start: never set
    leader = next(p for name, p in pods(store).items() if name.startswith("sample-leader"))
    leader["status"] = {"phase": "Failed"}
    store.update_status(leader)
    since = feed(rec, store, since, T0 + 1)
    rec.round(T0 + 1)
    cond = waiting("sample-group")
    assert cond is not None and (cond["status"], cond["reason"], cond["message"]) == (
        "True", "PodsFailed", "Some Failed pods need replacement")
    create(store, POD_GROUP_SAMPLE.split("---\n")[0].replace("sample-leader-", "sample-leader-again-"))
    since = feed(rec, store, since, T0 + 2)
    rec.round(T0 + 2)
    cond = waiting("sample-group")
    assert cond is not None and (cond["status"], cond["reason"], cond["message"]) == (
        "False", "PodsReady", "No pods need replacement")
    single = next(n for n in workloads(store) if n.startswith("pod-single-"))
    assert waiting(single) is None
    store.close()


def test_a_pod_workload_dispatched_to_a_worker_leaves_the_managers_pod_gated(store: SQLiteStore) -> None:
    setup(store, cpu=2)
    create(store, pod("p"))
    rec, _ = start(store)
    rec.controller.settle(T0)  # admitted: the round would ungate it ...
    (wl,) = rec.engine.workloads.values()
    assert wl.is_admitted
    wl.status.cluster_name = "worker-1"  # ... but MultiKueue placed it in a worker (its admission check)
    write_pods(store, rec.controller.pods, set(), simulated=True, now=T0)
    # A simulated worker reports no Pod status: the manager's Pod shows the Workload's run, as a Job's would.
    assert gated(pods(store)["p"]) and phase(pods(store)["p"]) == "Running"


def test_a_dispatched_pods_status_is_the_winning_workers_and_it_stays_gated(store: SQLiteStore) -> None:
    """Kueue's MultiKueue pod adapter: the manager's Pod gets the worker Pod's status (its own
    PodScheduled kept while the worker's is not scheduled) and is never ungated."""
    setup(store, cpu=2)
    create(store, pod("p"))
    rec, _ = start(store)
    rec.controller.settle(T0)
    (wl,) = rec.engine.workloads.values()
    wl.status.cluster_name = "worker-1"
    pending = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    rec.controller.pods.status_due.add(wl.meta.key)
    write_pods(store, rec.controller.pods, set(), simulated=False, now=T0,
               mirrored={wl.meta.key: {"pods": {"p": pending}}})
    shown = pods(store)["p"]
    assert gated(shown) and phase(shown) == "Pending"
    assert shown["status"]["conditions"] == [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]
    running = {"phase": "Running", "podIP": "10.0.0.7", "startTime": "2026-01-01T00:00:00Z",
               "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]}
    rec.controller.pods.status_due.add(wl.meta.key)
    write_pods(store, rec.controller.pods, set(), simulated=False, now=T0,
               mirrored={wl.meta.key: {"pods": {"p": running}}})
    shown = pods(store)["p"]
    assert gated(shown) and shown["status"] == running
    store.close()


def test_a_dispatched_pods_mirrored_status_keeps_its_qos_class(store: SQLiteStore) -> None:
    """``status.qosClass`` is immutable (the API server refuses the update otherwise): the
    manager's Pod keeps its own, whether the worker reported a status or not yet."""
    setup(store, cpu=2)
    create(store, pod("p"))
    rec, _ = start(store)
    rec.controller.settle(T0)
    (wl,) = rec.engine.workloads.values()
    wl.status.cluster_name = "worker-1"
    stored = pods(store)["p"]
    store.update_status({**stored, "status": {**(stored.get("status") or {}), "qosClass": "Burstable"}})
    write_pods(store, rec.controller.pods, set(), simulated=True, now=T0)  # no report yet
    assert phase(pods(store)["p"]) == "Running" and pods(store)["p"]["status"]["qosClass"] == "Burstable"
    running = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    rec.controller.pods.status_due.add(wl.meta.key)
    write_pods(store, rec.controller.pods, set(), simulated=False, now=T0,
               mirrored={wl.meta.key: {"pods": {"p": running}}})
    assert pods(store)["p"]["status"] == {**running, "qosClass": "Burstable"}
    store.close()


def test_a_finished_dispatched_pod_with_a_stale_report_shows_the_workloads_outcome(store: SQLiteStore) -> None:
    setup(store, cpu=2)
    create(store, pod("p"))
    rec, _ = start(store)
    rec.controller.settle(T0)
    (wl,) = rec.engine.workloads.values()
    wl.status.cluster_name = "worker-1"
    rec.engine.finish(wl.meta.key, True, "done", T0 + 1)
    assert wl.is_finished
    rec.controller.pods.status_due.add(wl.meta.key)
    running = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    write_pods(store, rec.controller.pods, set(), simulated=False, now=T0,
               mirrored={wl.meta.key: {"pods": {"p": running}}})
    assert phase(pods(store)["p"]) == "Succeeded"
    store.close()


def test_a_group_pod_the_worker_does_not_report_is_not_shown_running(store: SQLiteStore) -> None:
    """A Pod that joined a dispatched group after the dispatch (a StatefulSet's next ordinal) is
    not in the worker: while the worker reports the group's other Pods, it keeps its own status."""
    setup(store, cpu=4)
    grp = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: {n}\n  namespace: default\n"
           "  labels: {{kueue.x-k8s.io/queue-name: user-queue, kueue.x-k8s.io/pod-group-name: g}}\n"
           "  annotations: {{kueue.x-k8s.io/pod-group-total-count: '2', kueue.x-k8s.io/pod-group-fast-admission: 'true'}}\n"
           "spec:\n  containers:\n  - {{name: c, image: busybox, resources: {{requests: {{cpu: '1'}}}}}}\n")
    create(store, grp.format(n="p0"))
    rec, since = start(store)
    rec.controller.settle(T0)
    (wl,) = rec.engine.workloads.values()
    wl.status.cluster_name = "worker-1"
    create(store, grp.format(n="p1"))
    feed(rec, store, since, T0 + 1)
    assert set(rec.controller.pods.members[wl.meta.key]) == {k for k in rec.controller.pods.pods}
    assert rec.controller.pods.drain_grown() == {wl.meta.key}  # its copies get it (hub.federation.podcopies)
    running = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    rec.controller.pods.status_due.add(wl.meta.key)
    write_pods(store, rec.controller.pods, set(), simulated=False, now=T0 + 1,
               mirrored={wl.meta.key: {"pods": {"p0": running}}})
    shown = pods(store)
    assert phase(shown["p0"]) == "Running" and phase(shown["p1"]) != "Running" and gated(shown["p1"])
    store.close()
