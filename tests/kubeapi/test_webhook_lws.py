"""Kueue's LeaderWorkerSet webhook (hub.service.webhook at
/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset) on AdmissionReview v1 requests: a managed set's
leader and worker templates marked; and the pod webhook naming each of its Pods' group from the
group index (a Workload per group)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from hub.api.config import parse_configuration
from hub.api.jobkinds.framework import workload_name
from hub.api.jobkinds.leaderworkerset import FRAMEWORK, WEBHOOK_PATH, group_workload_name
from hub.api.jobkinds.pod import MANAGED_LABEL, ROLE_HASH_ANNOTATION, SCHEDULING_GATE
from hub.devcluster.leaderworkersets import new_pod
from hub.service.webhook import OTHER_PATHS, review
from hub.store.interface import Object
from tests.kubeapi.test_webhook_pods import patched

ROOT = Path(__file__).resolve().parents[2]
LWS_ON = parse_configuration({"integrations": {"frameworks": [FRAMEWORK]}})
GROUP = "leaderworkerset.x-k8s.io"


def template(cpu: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]}}


def lws(size: int = 3, leader: bool = True, queue: str | None = "user-queue", **labels: str) -> dict[str, Any]:
    meta_labels = {"app": "nginx", **labels} | ({"kueue.x-k8s.io/queue-name": queue} if queue is not None else {})
    lwt: dict[str, Any] = {"size": size, "workerTemplate": template("200m")}
    if leader:
        lwt["leaderTemplate"] = template("100m")
    return {"apiVersion": f"{GROUP}/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "web", "namespace": "team-a", "labels": meta_labels},
            "spec": {"replicas": 2, "leaderWorkerTemplate": lwt}}


def nothing(kind: str, namespace: str, name: str) -> Object | None:
    return None


def ask(o: dict[str, Any], operation: str = "CREATE", old: dict[str, Any] | None = None,
        config: Any = LWS_ON) -> dict[str, Any]:
    request: dict[str, Any] = {"uid": "u1", "kind": {"group": GROUP, "version": "v1", "kind": "LeaderWorkerSet"},
                               "operation": operation, "namespace": "team-a", "object": o}
    if old is not None:
        request["oldObject"] = old
    return review({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request},
                  nothing, config)["response"]  # type: ignore[no-any-return]


def ask_pod(pod: dict[str, Any], config: Any = LWS_ON) -> dict[str, Any]:
    request = {"uid": "u1", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
               "namespace": "team-a", "object": pod}
    return review({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request},
                  nothing, config)["response"]  # type: ignore[no-any-return]


def test_the_path_is_kueues_and_the_manifest_registers_it() -> None:
    assert WEBHOOK_PATH == "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset" and WEBHOOK_PATH in OTHER_PATHS
    hooks = yaml.safe_load((ROOT / "manifests/base/webhook.yaml").read_text())["webhooks"]
    rule = {h["clientConfig"]["service"]["path"]: h for h in hooks}[WEBHOOK_PATH]["rules"][0]
    assert (rule["apiGroups"], rule["apiVersions"], rule["resources"]) == ([GROUP], ["v1"], ["leaderworkersets"])
    rbac = list(yaml.safe_load_all((ROOT / "manifests/base/hub-rbac.yaml").read_text()))
    rules = [r for doc in rbac if doc and doc.get("kind") == "ClusterRole" for r in doc.get("rules") or []]
    assert any(GROUP in r["apiGroups"] and "leaderworkersets" in r["resources"] for r in rules)


def test_a_managed_sets_templates_are_marked_leader_and_worker() -> None:
    o = lws(**{"kueue.x-k8s.io/priority-class": "high"})
    lwt = patched(o, ask(o))["spec"]["leaderWorkerTemplate"]
    for key, role in (("leaderTemplate", "leader"), ("workerTemplate", "worker")):
        meta = lwt[key]["metadata"]
        assert meta["labels"] == {MANAGED_LABEL: "true", "kueue.x-k8s.io/queue-name": "user-queue",
                                  "kueue.x-k8s.io/priority-class": "high"}
        # Kueue's webhook (TAS on) offsets the workers' indexes past the leader's 0 for the topology ungater.
        offset = {"kueue.x-k8s.io/pod-index-offset": "1"} if role == "worker" else {}
        assert meta["annotations"] == {"kueue.x-k8s.io/pod-suspending-parent": FRAMEWORK,
                                       "kueue.x-k8s.io/pod-group-serving": "true",
                                       "kueue.x-k8s.io/pod-group-total-count": "3", ROLE_HASH_ANNOTATION: role,
                                       **offset}
    alone = lws(size=2, leader=False)
    lwt = patched(alone, ask(alone))["spec"]["leaderWorkerTemplate"]
    assert "leaderTemplate" not in lwt  # one pod set, Kueue's "main", of size Pods
    assert lwt["workerTemplate"]["metadata"]["annotations"][ROLE_HASH_ANNOTATION] == "main"
    assert lwt["workerTemplate"]["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] == "2"


def test_unmanaged_sets_pass_untouched() -> None:
    assert "patch" not in ask(lws(), config=parse_configuration({}))  # framework off
    assert "patch" not in ask(lws(queue=None))  # no queue name


def test_validation_queue_name_and_group_size() -> None:
    bad = ask(lws(queue="Not_A_Queue"))
    assert bad["allowed"] is False and "metadata.labels[kueue.x-k8s.io/queue-name]" in bad["status"]["message"]
    assert 'LeaderWorkerSet "team-a/web"' in bad["status"]["message"]
    resized = ask(lws(size=4), "UPDATE", lws(size=3))
    assert resized["allowed"] is False and "spec.leaderWorkerTemplate.size" in resized["status"]["message"]
    assert ask(lws(), "UPDATE", lws())["allowed"] is True
    old = lws()
    old["status"] = {"readyReplicas": 1}
    assert "queue-name" in ask(lws(queue="other"), "UPDATE", old)["status"]["message"]  # a group is ready
    assert ask(lws(queue="other"), "UPDATE", lws())["allowed"] is True  # nothing ready yet
    negative = lws()
    negative["spec"]["replicas"] = -1
    assert "spec.replicas: Invalid value: -1: invalid LeaderWorkerSet replicas: must be >= 0, got -1" in \
        ask(negative)["status"]["message"]
    negative["spec"]["replicas"] = 1_000_001
    assert "must be <= 1000000" in ask(negative)["status"]["message"]


def test_a_managed_sets_pod_shape_is_immutable_not_its_image() -> None:
    image = lws()
    image["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = "nginx:2"
    assert ask(image, "UPDATE", lws())["allowed"] is True  # a rolling update of the image
    bigger = lws()
    bigger["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    assert "spec.leaderWorkerTemplate.leaderTemplate.spec" in ask(bigger, "UPDATE", lws())["status"]["message"]
    assert "spec.leaderWorkerTemplate.leaderTemplate" in ask(lws(leader=False), "UPDATE", lws())["status"]["message"]
    assert ask(bigger, "UPDATE", lws(), config=parse_configuration({}))["allowed"] is True  # not Kueue's


def test_each_pod_joins_its_groups_workload_by_group_index() -> None:
    o = lws()
    marked = patched(o, ask(o))
    marked["metadata"]["uid"] = "uid-1"
    pods = {(g, w): new_pod(marked, g, w) for g in range(2) for w in range(3)}
    out = {k: patched(p, ask_pod(p)) for k, p in pods.items()}
    name0 = group_workload_name("web", "0", "uid-1")
    assert name0 == workload_name("LeaderWorkerSet", GROUP, "web-0", "uid-1")
    assert name0.startswith("leaderworkerset-web-0-")
    for (g, w), pod in out.items():
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] == group_workload_name("web", str(g), "uid-1")
        assert pod["metadata"]["annotations"][ROLE_HASH_ANNOTATION] == ("leader" if w == 0 else "worker")
        assert pod["spec"]["schedulingGates"] == [{"name": SCHEDULING_GATE}]
    assert group_workload_name("web", "1", "uid-1") != name0


def test_a_pod_of_another_parent_or_without_a_group_index_is_not_grouped() -> None:
    o = lws()
    pod = new_pod(patched(o, ask(o)), 0, 1)
    del pod["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"]
    refused = ask_pod(pod)  # a total count and no group: Kueue's pod group validation refuses it
    assert refused["allowed"] is False and "pod-group-name" in refused["status"]["message"]
    plain = copy.deepcopy(new_pod(patched(o, ask(o)), 0, 1))
    plain["metadata"]["annotations"]["kueue.x-k8s.io/pod-suspending-parent"] = "deployment"
    plain["metadata"]["annotations"].pop("kueue.x-k8s.io/pod-group-total-count")
    assert "patch" not in ask_pod(plain)  # deployment not enabled; no group from the LWS labels


def test_malformed_sets_get_a_one_line_refusal_not_a_rewrite() -> None:
    cases: list[tuple[str, Any]] = [("spec", ["x"]), ("spec.leaderWorkerTemplate", "x"),
                                    ("spec.leaderWorkerTemplate.size", "three"), ("spec.replicas", "2"),
                                    ("spec.leaderWorkerTemplate.leaderTemplate.metadata", ["a"])]
    for path, value in cases:
        o = lws()
        *parents, last = path.split(".")
        at: Any = o
        for key in parents:
            at = at[key]
        at[last] = value
        out = ask(o)
        assert out["allowed"] is False and "patch" not in out, path
        message = out["status"]["message"]
        assert f"{path}: Invalid value" in message and "\n" not in message, message


def test_a_pod_a_real_lws_makes_through_its_statefulsets_is_grouped_with_the_sets_uid() -> None:
    """The real LWS operator's Pods are its StatefulSets': the set's uid is the one the hub knows
    (the name of the group Workload the hub makes from the set, hub.controllers.lws)."""
    o = lws()
    marked = patched(o, ask(o))
    marked["metadata"]["uid"] = "uid-1"
    pod = new_pod(marked, 1, 0)
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                                           "uid": "sts-uid", "controller": True}]

    def the_set(kind: str, namespace: str, name: str) -> Object | None:
        return marked if (kind, namespace, name) == ("LeaderWorkerSet", "team-a", "web") else None

    request = {"uid": "u1", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
               "namespace": "team-a", "object": pod}
    out = patched(pod, review({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request},
                              the_set, LWS_ON)["response"])
    assert out["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] == group_workload_name("web", "1", "uid-1")
    unknown = patched(pod, ask_pod(pod))  # the set not (yet) known: Kueue's legacy, uid-less name
    assert unknown["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] == group_workload_name("web", "1", "")
