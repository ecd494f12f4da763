"""mkhub apply and Pods: served as v1 Pods, checked as Kueue's pod webhook checks them, and (the
hub's Configuration enabling the "pod" framework) a managed Pod stored as the webhook leaves it."""

from __future__ import annotations

from hub.api.config import parse_configuration
from hub.api.jobkinds.pod import MANAGED_LABEL, POD_FINALIZER, ROLE_HASH_ANNOTATION, SCHEDULING_GATE
from hub.service.apply import Applier
from hub.store import SQLiteStore

NS = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\n"
POD = """
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: team
  labels: {kueue.x-k8s.io/queue-name: lq}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
"""
PODS_ON = parse_configuration({"integrations": {"frameworks": ["batch/job", "pod"]}})


def test_a_queued_pod_is_stored_gated_with_kueue_marks(store: SQLiteStore) -> None:
    out = Applier(store, pod_webhook=PODS_ON).apply(NS + POD)
    assert not out.rejected, out.results
    pod = store.get("Pod", "team", "p")
    assert pod is not None
    assert pod["spec"]["schedulingGates"] == [{"name": SCHEDULING_GATE}]
    assert pod["metadata"]["labels"][MANAGED_LABEL] == "true"
    assert pod["metadata"]["finalizers"] == [POD_FINALIZER]
    assert ROLE_HASH_ANNOTATION in pod["metadata"]["annotations"]


def test_pods_are_left_alone_without_the_pod_framework_or_a_queue(store: SQLiteStore) -> None:
    Applier(store, pod_webhook=parse_configuration({})).apply(NS + POD)
    Applier(store, pod_webhook=PODS_ON).apply(POD.replace("name: p\n", "name: q\n").replace(
        "labels: {kueue.x-k8s.io/queue-name: lq}", "labels: {app: x}"))
    for name in ("p", "q"):
        pod = store.get("Pod", "team", name)
        assert pod is not None and "schedulingGates" not in pod["spec"] and "finalizers" not in pod["metadata"]


def test_the_pods_of_a_managed_job_are_not_queued_alone(store: SQLiteStore) -> None:
    owned = POD.replace("  labels:", "  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: j, uid: u1, "
                                     "controller: true}]\n  labels:")
    Applier(store, pod_webhook=PODS_ON).apply(NS + owned)
    pod = store.get("Pod", "team", "p")
    assert pod is not None and "schedulingGates" not in pod["spec"]


def test_kueue_pod_webhook_refuses_a_group_without_its_count(store: SQLiteStore) -> None:
    bad = POD.replace("labels: {", "labels: {kueue.x-k8s.io/pod-group-name: g, ")
    out = Applier(store, pod_webhook=PODS_ON).apply(NS + bad)
    assert out.rejected
    error = [r.error for r in out.results if r.kind == "Pod"][0]
    assert "\n" not in error and 'Pod "team/p"' in error
    assert "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Required value" in error
    assert store.get("Pod", "team", "p") is None


def test_a_hub_on_kubernetes_watches_pods_and_needs_them_served() -> None:
    from hub.service.kubemode import KubeOptions, store_options, watched_job_kinds

    jobsets_and_pods = parse_configuration({"integrations": {"frameworks": ["jobset.x-k8s.io/jobset", "pod"]}})
    assert watched_job_kinds(jobsets_and_pods) == ("JobSet", "Pod")
    assert watched_job_kinds(parse_configuration({})) == ("Job",)
    with_pods = store_options(KubeOptions(kubeconfig=None, job_kinds=watched_job_kinds(jobsets_and_pods)))
    assert "Pod" in with_pods.kinds and "Pod" not in with_pods.optional_kinds and "JobSet" in with_pods.optional_kinds
    # Without the pod framework too: TAS ungates Pods and counts the usage of those it did not place.
    without = store_options(KubeOptions(kubeconfig=None, job_kinds=("JobSet",)))
    assert without.kinds.count("Pod") == 1 and "Pod" not in without.optional_kinds
    assert with_pods.kinds.count("Pod") == 1
    # LeaderWorkerSets too with their framework (their groups' Workloads), optional as their CRD may be absent.
    lws = watched_job_kinds(parse_configuration({"integrations": {"frameworks": ["leaderworkerset.x-k8s.io/leaderworkerset"]}}))
    assert lws == ("Pod", "LeaderWorkerSet")
    assert "LeaderWorkerSet" in store_options(KubeOptions(kubeconfig=None, job_kinds=lws)).optional_kinds


def test_reapplying_a_gated_pod_keeps_kueues_marks_and_its_gate(store: SQLiteStore) -> None:
    applier = Applier(store, pod_webhook=PODS_ON)
    applier.apply(NS + POD)
    out = applier.apply(POD)  # the user's manifest again: no gate, no managed label
    assert [r.action for r in out.results] == ["unchanged"], out.results
    pod = store.get("Pod", "team", "p")
    assert pod is not None and pod["spec"]["schedulingGates"] == [{"name": SCHEDULING_GATE}]
    assert pod["metadata"]["labels"][MANAGED_LABEL] == "true" and pod["metadata"]["finalizers"] == [POD_FINALIZER]
