"""Kueue's Deployment and StatefulSet webhooks (hub.service.webhook at /mutate-apps-v1-deployment and
/mutate-apps-v1-statefulset) on AdmissionReview v1 requests: a managed one's pod template marked so
its Pods are gated and queued, the validation rules refused; and the pod webhook's handling of the
pod-suspending-parent annotation."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from hub.api.config import parse_configuration
from hub.api.jobkinds.framework import workload_name
from hub.api.jobkinds.pod import MANAGED_LABEL, POD_FINALIZER, ROLE_HASH_ANNOTATION, SCHEDULING_GATE
from hub.api.jobkinds.serving import statefulset_workload_name
from hub.service.webhook import SERVING_PATHS, review
from hub.store.interface import Object
from tests.kubeapi.test_webhook_pods import patched

ROOT = Path(__file__).resolve().parents[2]
SERVING_ON = parse_configuration({"integrations": {"frameworks": ["deployment", "statefulset"]}})
TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "nginx"}},
    "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]},
}


def obj(kind: str, replicas: int = 3, queue: str | None = "user-queue", **labels: str) -> dict[str, Any]:
    meta_labels = {"app": "nginx", **labels} | ({"kueue.x-k8s.io/queue-name": queue} if queue is not None else {})
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": "web", "namespace": "team-a", "labels": meta_labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "nginx"}},
                     "template": copy.deepcopy(TEMPLATE)}}


def nothing(kind: str, namespace: str, name: str) -> Object | None:
    return None


def ask(o: dict[str, Any], operation: str = "CREATE", old: dict[str, Any] | None = None,
        config: Any = SERVING_ON, group: str = "apps") -> dict[str, Any]:
    request: dict[str, Any] = {"uid": "u1", "kind": {"group": group, "version": "v1", "kind": o["kind"]},
                               "operation": operation, "namespace": "team-a", "object": o}
    if old is not None:
        request["oldObject"] = old
    return review({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request},
                  nothing, config)["response"]  # type: ignore[no-any-return]


def test_paths_are_kueues_and_the_manifest_registers_them() -> None:
    assert SERVING_PATHS == {"Deployment": "/mutate-apps-v1-deployment", "StatefulSet": "/mutate-apps-v1-statefulset"}
    hooks = yaml.safe_load((ROOT / "manifests/base/webhook.yaml").read_text())["webhooks"]
    by_path = {h["clientConfig"]["service"]["path"]: h for h in hooks}
    for kind, path in SERVING_PATHS.items():
        rule = by_path[path]["rules"][0]
        assert (rule["apiGroups"], rule["resources"], rule["operations"]) == (["apps"], [kind.lower() + "s"],
                                                                               ["CREATE", "UPDATE"])


def test_a_deployments_template_carries_the_parent_annotation_and_its_queue_labels() -> None:
    dep = obj("Deployment", **{"kueue.x-k8s.io/priority-class": "high"})
    out = patched(dep, ask(dep))
    meta = out["spec"]["template"]["metadata"]
    assert meta["annotations"] == {"kueue.x-k8s.io/pod-suspending-parent": "deployment"}
    assert meta["labels"] == {"app": "nginx", MANAGED_LABEL: "true", "kueue.x-k8s.io/queue-name": "user-queue",
                              "kueue.x-k8s.io/priority-class": "high"}
    assert out["spec"]["replicas"] == 3 and "suspend" not in out["spec"]  # serving kinds are never suspended


def test_a_statefulsets_template_makes_its_pods_one_serving_group() -> None:
    sts = obj("StatefulSet")
    out = patched(sts, ask(sts))
    meta = out["spec"]["template"]["metadata"]
    group = statefulset_workload_name("web")
    assert group == workload_name("StatefulSet", "apps", "web", "") and group.startswith("statefulset-web-")
    assert meta["labels"]["kueue.x-k8s.io/pod-group-name"] == group
    assert meta["labels"][MANAGED_LABEL] == "true"
    assert meta["annotations"] == {
        "kueue.x-k8s.io/pod-suspending-parent": "statefulset", "kueue.x-k8s.io/pod-group-total-count": "3",
        "kueue.x-k8s.io/pod-group-fast-admission": "true", "kueue.x-k8s.io/pod-group-serving": "true",
        "kueue.x-k8s.io/pod-group-pod-index-label": "apps.kubernetes.io/pod-index", ROLE_HASH_ANNOTATION: "main"}


def test_unmanaged_ones_pass_untouched() -> None:
    assert "patch" not in ask(obj("Deployment"), config=parse_configuration({}))  # framework off
    assert "patch" not in ask(obj("StatefulSet", queue=None))  # no queue name
    assert "patch" not in ask(obj("Deployment"), group="extensions")  # not apps/v1's


def test_validation_queue_name_and_statefulset_replicas() -> None:
    bad = ask(obj("Deployment", queue="Not_A_Queue"))
    assert bad["allowed"] is False
    assert "metadata.labels[kueue.x-k8s.io/queue-name]" in bad["status"]["message"]
    assert 'Deployment "team-a/web"' in bad["status"]["message"]
    old = obj("StatefulSet", replicas=3)
    assert ask(obj("StatefulSet", replicas=5), "UPDATE", old)["allowed"] is False  # only to and from zero
    assert "spec.replicas" in ask(obj("StatefulSet", replicas=5), "UPDATE", old)["status"]["message"]
    down = ask(obj("StatefulSet", replicas=0), "UPDATE", old)
    assert down["allowed"] is True
    up = ask(obj("StatefulSet", replicas=2), "UPDATE", obj("StatefulSet", replicas=0))
    assert patched(obj("StatefulSet", replicas=2), up)["spec"]["template"]["metadata"]["annotations"][
        "kueue.x-k8s.io/pod-group-total-count"] == "2"
    assert ask(obj("Deployment", replicas=5), "UPDATE", obj("Deployment", replicas=3))["allowed"] is True
    image = obj("StatefulSet")
    image["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    assert ask(image, "UPDATE", obj("StatefulSet"))["allowed"] is True  # a rolling update of the image
    bigger = obj("StatefulSet")
    bigger["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    assert "spec.template.spec" in ask(bigger, "UPDATE", obj("StatefulSet"))["status"]["message"]
    terminating = obj("StatefulSet", replicas=2)
    terminating["status"] = {"replicas": 1}  # a Pod of the scale-down to zero is still there
    assert "scaling down is still in progress" in ask(terminating, "UPDATE", obj("StatefulSet", replicas=0))["status"]["message"]


def test_queue_name_is_immutable_once_a_replica_is_ready_and_cannot_be_removed() -> None:
    old = obj("Deployment")
    assert ask(obj("Deployment", queue="other"), "UPDATE", old)["allowed"] is True  # nothing ready yet
    old["status"] = {"readyReplicas": 1}
    assert ask(obj("Deployment", queue="other"), "UPDATE", old)["allowed"] is False
    assert ask(obj("Deployment", queue=None), "UPDATE", obj("Deployment"))["allowed"] is False
    removed = ask(obj("Deployment"), "UPDATE", obj("Deployment", **{"kueue.x-k8s.io/priority-class": "high"}))
    assert "WorkloadPriorityClass cannot be removed" in removed["status"]["message"]


def pod_of(template: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "team-a",
                                                            **copy.deepcopy(template["metadata"])},
            "spec": copy.deepcopy(template["spec"])}


def ask_pod(pod: dict[str, Any], config: Any = SERVING_ON) -> dict[str, Any]:
    request = {"uid": "u1", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
               "namespace": "team-a", "object": pod}
    return review({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request},
                  nothing, config)["response"]  # type: ignore[no-any-return]


def test_a_pod_of_a_marked_parent_is_gated_without_kueues_finalizer() -> None:
    for kind in ("Deployment", "StatefulSet"):
        o = obj(kind)
        template = patched(o, ask(o))["spec"]["template"]
        pod = pod_of(template)
        out = patched(pod, ask_pod(pod))  # only deployment/statefulset enabled: the pod integration is implied
        assert out["spec"]["schedulingGates"] == [{"name": SCHEDULING_GATE}]
        assert POD_FINALIZER not in (out["metadata"].get("finalizers") or [])
        assert ROLE_HASH_ANNOTATION in out["metadata"]["annotations"]
    statefulset_pod = pod_of(patched(obj("StatefulSet"), ask(obj("StatefulSet")))["spec"]["template"])
    assert patched(statefulset_pod, ask_pod(statefulset_pod))["metadata"]["annotations"][ROLE_HASH_ANNOTATION] == "main"
    # A plain queued Pod is not the implied integration's (Kueue skips one without the parent annotation).
    plain = pod_of(TEMPLATE)
    plain["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "user-queue"
    assert "patch" not in ask_pod(plain)
    # The parent's framework off (and no pod framework): left alone.
    marked = pod_of(patched(obj("Deployment"), ask(obj("Deployment")))["spec"]["template"])
    assert "patch" not in ask_pod(marked, parse_configuration({"integrations": {"frameworks": ["statefulset"]}}))


def test_a_replicasets_pod_with_only_a_generate_name_is_gated() -> None:
    """A ReplicaSet's Pod reaches the webhook unnamed (the API server names it after admission)."""
    pod = pod_of(patched(obj("Deployment"), ask(obj("Deployment")))["spec"]["template"])
    del pod["metadata"]["name"]
    pod["metadata"]["generateName"] = "web-5d9c7-"
    out = patched(pod, ask_pod(pod))
    assert out["spec"]["schedulingGates"] == [{"name": SCHEDULING_GATE}]
    assert "name" not in out["metadata"]


def test_malformed_objects_get_a_one_line_answer() -> None:
    garbage = obj("Deployment")
    garbage["metadata"] = ["not", "a", "map"]
    out = ask(garbage)
    assert out["allowed"] is False and "metadata: must be an object" in out["status"]["message"]
    odd = obj("StatefulSet")
    odd["spec"]["template"]["metadata"] = {"labels": ["x"], "annotations": "y"}
    labels = patched(odd, ask(odd))["spec"]["template"]["metadata"]["labels"]
    assert labels[MANAGED_LABEL] == "true"


def test_a_statefulsets_new_pod_counts_its_group_from_the_sets_current_replicas() -> None:
    """``kubectl scale`` (the scale subresource) passes no webhook: the template still says 3, the set
    wants 2 now; the Pod's group total count is the set's, as Kueue's StatefulSet pod reconciler sets it."""
    template = patched(obj("StatefulSet"), ask(obj("StatefulSet")))["spec"]["template"]
    assert template["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] == "3"
    pod = pod_of(template)
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u",
                                           "controller": True}]
    scaled = {**obj("StatefulSet", replicas=2), "metadata": {"name": "web", "namespace": "team-a"}}

    def get(kind: str, namespace: str, name: str) -> Object | None:
        return scaled if (kind, namespace, name) == ("StatefulSet", "team-a", "web") else None

    request = {"uid": "u1", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
               "namespace": "team-a", "object": pod}
    response = review({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request},
                      get, SERVING_ON)["response"]
    assert patched(pod, response)["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] == "2"
    unknown = patched(pod, ask_pod(pod))  # the set not found: the template's count stays
    assert unknown["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] == "3"


def test_the_hub_on_kubernetes_watches_statefulsets_with_their_framework() -> None:
    from hub.service.kubemode import watched_job_kinds

    assert watched_job_kinds(SERVING_ON) == ("Pod", "StatefulSet")
    assert "StatefulSet" not in watched_job_kinds(parse_configuration({"integrations": {"frameworks": ["deployment"]}}))
