"""Request building: exact verbs, URLs, queries and bodies, no server."""

from __future__ import annotations

import pytest

from hub.store.kube import requests as rq

WL = rq.resource_for("Workload")
CQ = rq.resource_for("ClusterQueue")
JOB = rq.resource_for("Job")
NS = rq.resource_for("Namespace")


def test_resources_come_from_the_registry() -> None:
    assert rq.Resource("Workload", "kueue.x-k8s.io", "v1beta2", "workloads", True) == WL
    assert rq.resource_for("Workload", "kueue.x-k8s.io/v1beta1").version == "v1beta1"
    assert rq.resource_for("Workload", "batch/v1").version == "v1beta2"  # not one of its versions
    assert rq.Resource("Job", "batch", "v1", "jobs", True) == JOB
    assert NS.collection(None) == "/api/v1/namespaces"
    assert rq.LEASE.item("kube-system", "x") == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x"
    assert rq.resource_for("Pod") == rq.Resource("Pod", "", "v1", "pods", True)  # the pod integration's
    assert rq.resource_for("JobSet").collection("ns") == "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets"
    assert rq.resource_for("RayJob").collection("ns") == "/apis/ray.io/v1/namespaces/ns/rayjobs"
    with pytest.raises(KeyError):
        rq.resource_for("Widget")  # no kind mkhub reads


def test_get_paths() -> None:
    assert rq.get(WL, "team-a", "wl-1").url == "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/wl-1"
    assert rq.get(CQ, "", "cq").url == "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq"
    assert rq.get(NS, "", "default").url == "/api/v1/namespaces/default"
    assert rq.get(JOB, "ns", "j").method == "GET"


def test_names_that_would_escape_the_path_are_refused() -> None:
    for bad in ("a/b", "..", ""):
        with pytest.raises(ValueError):
            rq.get(CQ, "", bad)
    with pytest.raises(ValueError):
        rq.get(WL, "", "wl")  # a namespaced kind without a namespace


def test_list_and_pagination() -> None:
    assert rq.list_(WL).url == "/apis/kueue.x-k8s.io/v1beta2/workloads"
    assert rq.list_(WL, "ns").url == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads"
    req = rq.list_(WL, limit=500, continue_="tok en", label_selector="a=b,c")
    assert req.url == "/apis/kueue.x-k8s.io/v1beta2/workloads?labelSelector=a%3Db%2Cc&limit=500&continue=tok+en"


def test_watch_query() -> None:
    req = rq.watch(WL, "1234", timeout_seconds=300)
    assert req.method == "GET"
    assert req.url == (
        "/apis/kueue.x-k8s.io/v1beta2/workloads?watch=1&resourceVersion=1234&allowWatchBookmarks=true&timeoutSeconds=300"
    )
    assert rq.watch(CQ, "7", bookmarks=False).url == "/apis/kueue.x-k8s.io/v1beta2/clusterqueues?watch=1&resourceVersion=7"


def test_create_body_and_field_manager() -> None:
    obj = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"generateName": "w-", "namespace": "ns"}, "spec": {}}
    req = rq.create(WL, obj)
    assert (req.method, req.url, req.content_type) == (
        "POST",
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads?fieldManager=mkhub",
        "application/json",
    )
    assert req.body == b'{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Workload","metadata":{"generateName":"w-","namespace":"ns"},"spec":{}}'
    job = rq.create(JOB, {"kind": "Job", "metadata": {"name": "j", "namespace": "ns"}}, field_manager="other")
    assert job.url == "/apis/batch/v1/namespaces/ns/jobs?fieldManager=other"
    assert job.json() == {"kind": "Job", "metadata": {"name": "j", "namespace": "ns"}, "apiVersion": "batch/v1"}


def test_replace_and_status_subresource() -> None:
    obj = {"kind": "ClusterQueue", "metadata": {"name": "cq", "resourceVersion": "42"}, "spec": {"x": 1}, "status": {"y": 2}}
    spec = rq.replace(CQ, obj)
    status = rq.replace(CQ, obj, status=True)
    assert (spec.method, spec.url) == ("PUT", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq?fieldManager=mkhub")
    assert (status.method, status.url) == ("PUT", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq/status?fieldManager=mkhub")
    assert status.json()["metadata"]["resourceVersion"] == "42"
    assert status.json()["apiVersion"] == "kueue.x-k8s.io/v1beta2"


def test_merge_patch() -> None:
    req = rq.merge_patch(JOB, "ns", "j", {"spec": {"suspend": False}})
    assert (req.method, req.url, req.content_type, req.body) == (
        "PATCH",
        "/apis/batch/v1/namespaces/ns/jobs/j?fieldManager=mkhub",
        "application/merge-patch+json",
        b'{"spec":{"suspend":false}}',
    )


def test_delete_with_and_without_precondition() -> None:
    plain = rq.delete(WL, "ns", "w")
    assert (plain.method, plain.url) == ("DELETE", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w")
    assert plain.json() == {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
    assert rq.delete(CQ, "", "cq", resource_version="9").json()["preconditions"] == {"resourceVersion": "9"}


def test_merge_diff_is_the_rfc7386_patch_from_old_to_new() -> None:
    from hub.kubeapi.patch import merge_patch as apply_merge
    from hub.store.kube.requests import merge_diff

    old = {"metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x"]}, "spec": {"n": 1, "list": [1, 2]}}
    new = {"metadata": {"labels": {"a": "1", "c": "3"}, "finalizers": ["x", "y"]}, "spec": {"n": 1, "list": [2]}}
    patch = merge_diff(old, new)
    assert patch == {"metadata": {"labels": {"b": None, "c": "3"}, "finalizers": ["x", "y"]}, "spec": {"list": [2]}}
    assert apply_merge(old, patch) == new
    assert merge_diff(new, new) == {}
