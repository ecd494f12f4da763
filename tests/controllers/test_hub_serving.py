"""Kueue's Deployment and StatefulSet integrations in the hub (the pod integration implied by the
``deployment`` and ``statefulset`` frameworks): Pods as the kinds' controllers create them from a
template Kueue's webhooks marked, stored in a cluster's store; a Workload per Deployment Pod, one for
a StatefulSet's Pods, admitted and ungated; deleting Pods (scaling down) releases their quota; a
queued Pod without a parent's annotation is not queued when the pod framework is only implied."""

from __future__ import annotations

import copy
from typing import Any

import yaml
from hub_objects import T0
from test_hub_pods import ClusterStore, admitted, feed, gated, pods, setup, workloads

from hub.api.config import parse_configuration
from hub.api.jobkinds.pod import default_at_creation
from hub.api.jobkinds.serving import default, statefulset_workload_name
from hub.controllers.hub import HubReconciler
from hub.service.apply import Applier

SERVING = parse_configuration({"integrations": {"frameworks": ["batch/job", "deployment", "statefulset"]}})


def parent(kind: str, name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
            "spec": {"replicas": replicas, "template": {"metadata": {"labels": {"app": name}}, "spec": {
                "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]}}}}


def create_pods(store: ClusterStore, kind: str, name: str, replicas: int, names: list[str]) -> None:
    """The Pods the kind's controller creates from its marked template, as the pod webhook leaves them."""
    framework = kind.lower()
    template = default(framework, parent(kind, name, replicas))["spec"]["template"]
    for pod_name in names:
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {**copy.deepcopy(template["metadata"]), "name": pod_name, "namespace": "default",
                            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet" if kind == "Deployment"
                                                 else kind, "name": name, "uid": "u", "controller": True}]},
               "spec": copy.deepcopy(template["spec"])}
        store.create(default_at_creation(pod))


def start(store: ClusterStore) -> tuple[HubReconciler, int]:
    rec = HubReconciler(store, SERVING, T0, ready_delay=0.0, default_duration=5.0)
    return rec, rec.load(T0)


def test_each_deployment_pod_is_a_workload_and_scaling_down_releases_its_quota() -> None:
    store = ClusterStore(":memory:")
    setup(store, cpu=2)
    create_pods(store, "Deployment", "web", 3, ["web-a", "web-b", "web-c"])
    store.create({"apiVersion": "v1", "kind": "Pod",  # queued and marked, but no parent's: not the implied integration's
                  "metadata": {"name": "plain", "namespace": "default",
                               "labels": {"kueue.x-k8s.io/queue-name": "user-queue", "kueue.x-k8s.io/managed": "true"}},
                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    rec, since = start(store)
    rec.round(T0)
    wls = workloads(store)
    assert len(wls) == 3 and all(name.startswith("pod-web-") for name in wls)
    running = sorted(n for n, p in pods(store).items() if not gated(p) and n != "plain")
    assert len(running) == 2 and sum(admitted(w) for w in wls.values()) == 2  # 2 CPUs: the third waits
    store.delete("Pod", "default", running[0])  # the ReplicaSet scales down: no Kueue finalizer holds it
    for step in (1, 2):
        since = feed(rec, store, since, T0 + step)
        rec.round(T0 + step)
    assert len(workloads(store)) == 2 and all(admitted(w) for w in workloads(store).values())
    assert not any(gated(p) for p in pods(store).values())  # the freed quota went to the waiting Pod
    store.close()


def test_a_statefulsets_pods_are_one_workload_admitted_whole_and_ungated_together() -> None:
    store = ClusterStore(":memory:")
    setup(store, cpu=3)
    create_pods(store, "StatefulSet", "db", 3, ["db-0", "db-1", "db-2"])
    rec, since = start(store)
    rec.round(T0)
    name = statefulset_workload_name("db")
    [(wl_name, wl)] = workloads(store).items()
    assert wl_name == name and admitted(wl)
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("main", 3)]
    # The StatefulSet's, as in Kueue: the garbage collector keeps it while the set lives, whichever Pod goes.
    assert wl["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "u"}]
    assert wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == "u"
    assert not any(gated(p) for p in pods(store).values())
    for pod_name in ("db-0", "db-1", "db-2"):  # scaled to zero: the Pods go, then the Workload
        store.delete("Pod", "default", pod_name)
    for step in (1, 2):
        since = feed(rec, store, since, T0 + step)
        rec.round(T0 + step)
    assert workloads(store) == {}
    store.close()



def test_mkhub_apply_gates_a_pod_of_a_marked_parent_as_the_pod_webhook_does() -> None:
    store = ClusterStore(":memory:")
    setup(store, cpu=2)
    template = default("deployment", parent("Deployment", "web", 1))["spec"]["template"]
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {**template["metadata"], "name": "web-a", "namespace": "default"},
                           "spec": template["spec"]})
    out = Applier(store, pod_webhook=SERVING).apply(text, create=True)
    assert not out.rejected, [r.error for r in out.results]
    assert gated(pods(store)["web-a"])  # the pod framework only implied: the parent's annotation decides
    store.close()
