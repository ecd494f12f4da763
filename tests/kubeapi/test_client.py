"""hub/kubeapi through the official kubernetes Python client (a black box over HTTP)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from .conftest import Env

G = "kueue.x-k8s.io"


def flavor(name: str, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": f"{G}/v1beta1", "kind": "ResourceFlavor", "metadata": meta}


def cluster_queue(name: str, cpu: Any = 8, cohort: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}],
    }
    if cohort:
        spec["cohort"] = cohort
    return {"apiVersion": f"{G}/v1beta1", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


# --------------------------------------------------------------------------- CRUD


def test_create_get_list_in_both_versions_one_stored_version(env: Env) -> None:
    custom = env.custom()
    created = custom.create_cluster_custom_object(G, "v1beta1", "clusterqueues", cluster_queue("cq", cohort="team"))
    assert created["apiVersion"] == f"{G}/v1beta1" and created["spec"]["cohort"] == "team"
    meta = created["metadata"]
    assert meta["generation"] == 1 and meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"]
    v2 = custom.get_cluster_custom_object(G, "v1beta2", "clusterqueues", "cq")
    assert v2["apiVersion"] == f"{G}/v1beta2" and v2["spec"]["cohortName"] == "team" and "cohort" not in v2["spec"]
    stored = env.store.get("ClusterQueue", "", "cq")
    assert stored is not None and stored["apiVersion"] == f"{G}/v1beta2" and stored["spec"]["cohortName"] == "team"
    listed = custom.list_cluster_custom_object(G, "v1beta1", "clusterqueues")
    assert listed["kind"] == "ClusterQueueList" and int(listed["metadata"]["resourceVersion"]) >= int(meta["resourceVersion"])
    assert [o["metadata"]["name"] for o in listed["items"]] == ["cq"] and listed["items"][0]["spec"]["cohort"] == "team"


def test_errors_are_status_bodies(env: Env) -> None:
    custom = env.custom()
    with pytest.raises(ApiException) as missing:
        custom.get_cluster_custom_object(G, "v1beta2", "clusterqueues", "nope")
    status = status_of(missing.value)
    assert missing.value.status == 404 and status["kind"] == "Status" and status["reason"] == "NotFound"
    assert status["message"] == 'clusterqueues.kueue.x-k8s.io "nope" not found'
    assert status["details"] == {"name": "nope", "group": G, "kind": "clusterqueues"}
    custom.create_cluster_custom_object(G, "v1beta1", "resourceflavors", flavor("f"))
    with pytest.raises(ApiException) as dup:
        custom.create_cluster_custom_object(G, "v1beta1", "resourceflavors", flavor("f"))
    assert dup.value.status == 409 and status_of(dup.value)["reason"] == "AlreadyExists"


def test_invalid_object_names_each_field_and_stores_nothing(env: Env) -> None:
    bad = cluster_queue("bad", cpu="-1")
    bad["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["name"] = "memory"
    with pytest.raises(ApiException) as refused:
        env.custom().create_cluster_custom_object(G, "v1beta1", "clusterqueues", bad)
    status = status_of(refused.value)
    assert refused.value.status == 422 and status["reason"] == "Invalid"
    assert status["message"].startswith('ClusterQueue.kueue.x-k8s.io "bad" is invalid: [')
    fields = [c["field"] for c in status["details"]["causes"]]
    assert fields == [
        "spec.resourceGroups[0].flavors[0].resources[0].name",
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
    ]
    assert status["details"]["causes"][0]["reason"] == "FieldValueInvalid"
    assert "must match the name in coveredResources" in status["details"]["causes"][0]["message"]
    assert env.store.get("ClusterQueue", "", "bad") is None


def test_namespaced_writes_need_their_namespace_and_the_local_queue(env: Env) -> None:
    wl = {"apiVersion": f"{G}/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
          "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}]}}
    with pytest.raises(ApiException) as no_ns:
        env.custom().create_namespaced_custom_object(G, "v1beta1", "ghost", "workloads", wl)
    assert no_ns.value.status == 422 and status_of(no_ns.value)["details"]["causes"][0]["field"] == "metadata.namespace"
    # A missing LocalQueue is no error (as in Kueue): the Workload waits until the queue exists.
    created = env.custom().create_namespaced_custom_object(G, "v1beta1", "default", "workloads", wl)
    assert created["metadata"]["name"] == "w"


def test_update_conflict_generation_and_status_subresource(env: Env) -> None:
    custom = env.custom()
    cq = custom.create_cluster_custom_object(G, "v1beta2", "clusterqueues", cluster_queue("cq"))
    stale = json.loads(json.dumps(cq))
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 9
    cq["status"] = {"pendingWorkloads": 99}
    updated = custom.replace_cluster_custom_object(G, "v1beta2", "clusterqueues", "cq", cq)
    assert updated["metadata"]["generation"] == 2 and "status" not in updated  # spec writes ignore status
    with pytest.raises(ApiException) as conflict:
        custom.replace_cluster_custom_object(G, "v1beta2", "clusterqueues", "cq", stale)
    assert conflict.value.status == 409 and status_of(conflict.value)["reason"] == "Conflict"
    assert "the object has been modified" in status_of(conflict.value)["message"]

    updated["status"] = {"pendingWorkloads": 3}
    updated["spec"]["queueingStrategy"] = "StrictFIFO"
    with_status = custom.replace_cluster_custom_object_status(G, "v1beta2", "clusterqueues", "cq", updated)
    assert with_status["status"] == {"pendingWorkloads": 3}
    assert "queueingStrategy" not in with_status["spec"]  # status writes ignore spec
    assert with_status["metadata"]["generation"] == 2


def test_generate_name(env: Env) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "team-"}}
    a = env.core().create_namespace(body)
    b = env.core().create_namespace(body)
    assert a.metadata.name.startswith("team-") and len(a.metadata.name) == len("team-") + 5
    assert a.metadata.name != b.metadata.name and a.status.phase == "Active"
    assert env.core().read_namespace("default").status.phase == "Active"  # made by the hub, not through the API


def test_finalizers_hold_deletion_until_cleared(env: Env) -> None:
    custom = env.custom()
    rf = flavor("f")
    rf["metadata"]["finalizers"] = ["example.com/hold"]
    custom.create_cluster_custom_object(G, "v1beta1", "resourceflavors", rf)
    terminating = custom.delete_cluster_custom_object(G, "v1beta1", "resourceflavors", "f")
    assert terminating["metadata"]["deletionTimestamp"] and terminating["metadata"]["finalizers"] == ["example.com/hold"]
    current = custom.get_cluster_custom_object(G, "v1beta1", "resourceflavors", "f")
    custom.patch_cluster_custom_object(G, "v1beta1", "resourceflavors", "f", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as gone:
        custom.get_cluster_custom_object(G, "v1beta1", "resourceflavors", "f")
    assert gone.value.status == 404 and current["metadata"]["deletionTimestamp"]


def test_delete_answers_a_success_status_and_honours_preconditions(env: Env) -> None:
    custom = env.custom()
    rf = custom.create_cluster_custom_object(G, "v1beta1", "resourceflavors", flavor("f"))
    with pytest.raises(ApiException) as stale:
        custom.delete_cluster_custom_object(G, "v1beta1", "resourceflavors", "f", body={"preconditions": {"resourceVersion": "1"}})
    assert stale.value.status == 409
    out = custom.delete_cluster_custom_object(G, "v1beta1", "resourceflavors", "f", body={"preconditions": {"uid": rf["metadata"]["uid"]}})
    assert out["kind"] == "Status" and out["status"] == "Success" and out["details"]["uid"] == rf["metadata"]["uid"]
    assert env.store.get("ResourceFlavor", "", "f") is None


def test_pagination_and_selectors(env: Env) -> None:
    custom = env.custom()
    for i in range(5):
        custom.create_cluster_custom_object(G, "v1beta1", "resourceflavors", flavor(f"f{i}", tier="gold" if i % 2 else "silver"))
    first = custom.list_cluster_custom_object(G, "v1beta1", "resourceflavors", limit=2)
    assert [o["metadata"]["name"] for o in first["items"]] == ["f0", "f1"] and first["metadata"]["remainingItemCount"] == 3
    second = custom.list_cluster_custom_object(G, "v1beta1", "resourceflavors", limit=2, _continue=first["metadata"]["continue"])
    third = custom.list_cluster_custom_object(G, "v1beta1", "resourceflavors", limit=2, _continue=second["metadata"]["continue"])
    assert [o["metadata"]["name"] for o in second["items"] + third["items"]] == ["f2", "f3", "f4"]
    assert not third["metadata"].get("continue")
    gold = custom.list_cluster_custom_object(G, "v1beta1", "resourceflavors", label_selector="tier=gold")
    assert [o["metadata"]["name"] for o in gold["items"]] == ["f1", "f3"]
    named = custom.list_cluster_custom_object(G, "v1beta1", "resourceflavors", field_selector="metadata.name=f4")
    assert [o["metadata"]["name"] for o in named["items"]] == ["f4"]
    with pytest.raises(ApiException) as bad:
        custom.list_cluster_custom_object(G, "v1beta1", "resourceflavors", field_selector="spec.x=1")
    assert bad.value.status == 400 and status_of(bad.value)["reason"] == "BadRequest"


def test_dry_run_stores_nothing(env: Env) -> None:
    out = env.custom().create_cluster_custom_object(G, "v1beta1", "resourceflavors", flavor("f"), dry_run="All")
    assert out["metadata"]["name"] == "f" and env.store.get("ResourceFlavor", "", "f") is None


def test_field_validation(env: Env) -> None:
    rf = flavor("f")
    rf["spec"] = {"nodeLabels": {"a": "b"}}
    rf["bogus"] = 1
    with pytest.raises(ApiException) as strict:
        env.custom().create_cluster_custom_object(G, "v1beta1", "resourceflavors", rf, field_validation="Strict")
    assert strict.value.status == 400 and 'unknown field "bogus"' in status_of(strict.value)["message"]
    status, headers, body = env.raw("POST", f"/apis/{G}/v1beta1/resourceflavors", rf, query=[("fieldValidation", "Warn")])
    assert status == 201 and "bogus" not in body and 'unknown field \\"bogus\\"' in headers["Warning"]
    assert "bogus" not in (env.store.get("ResourceFlavor", "", "f") or {})


# --------------------------------------------------------------------------- patches


def test_merge_and_json_patch(env: Env) -> None:
    custom = env.custom()
    custom.create_cluster_custom_object(G, "v1beta1", "clusterqueues", cluster_queue("cq"))
    status, _, merged = env.raw("PATCH", f"/apis/{G}/v1beta1/clusterqueues/cq", {"spec": {"queueingStrategy": "StrictFIFO"}},
                                content_type="application/merge-patch+json")
    assert status == 200 and merged["spec"]["queueingStrategy"] == "StrictFIFO" and merged["metadata"]["generation"] == 2
    ops = [{"op": "replace", "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota", "value": 4}]
    status, _, patched = env.raw("PATCH", f"/apis/{G}/v1beta1/clusterqueues/cq", ops, content_type="application/json-patch+json")
    assert status == 200 and patched["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 4
    failing = [{"op": "test", "path": "/metadata/resourceVersion", "value": "1"}, {"op": "remove", "path": "/spec/queueingStrategy"}]
    status, _, body = env.raw("PATCH", f"/apis/{G}/v1beta1/clusterqueues/cq", failing, content_type="application/json-patch+json")
    assert status == 422 and body["kind"] == "Status"
    status, _, body = env.raw("PATCH", f"/apis/{G}/v1beta1/clusterqueues/cq", {"spec": {}}, content_type="application/strategic-merge-patch+json")
    assert status == 415 and body["reason"] == "UnsupportedMediaType"  # as for any custom resource


def test_strategic_merge_patch_of_a_job_merges_containers_by_name(env: Env) -> None:
    job = {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "a", "image": "one", "env": [{"name": "X", "value": "1"}]}, {"name": "b", "image": "two"}]}}},
    }
    env.batch().create_namespaced_job("default", job)
    # Naming container b alone leaves a in place (merged by name): the template is unchanged, which
    # kube-apiserver requires of a Job's containers; a list replaced whole would be refused.
    patch = {"spec": {"parallelism": 2, "template": {"spec": {"containers": [{"name": "b", "image": "two"}]}}}}
    out = env.batch().patch_namespaced_job("j", "default", patch)  # the client sends strategic merge patch
    containers = out.spec.template.spec.containers
    assert [(c.name, c.image) for c in containers] == [("a", "one"), ("b", "two")]
    assert containers[0].env[0].value == "1" and out.spec.parallelism == 2
    changed = {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "three"}]}}}}
    with pytest.raises(ApiException) as refused:
        env.batch().patch_namespaced_job("j", "default", changed)
    assert refused.value.status == 422 and "spec.template" in str(refused.value.body)


def test_server_side_apply_owns_fields_and_reports_conflicts(env: Env) -> None:
    path = f"/apis/{G}/v1beta1/clusterqueues/cq"
    apply = "application/apply-patch+yaml"
    status, _, created = env.raw("PATCH", path, cluster_queue("cq"), content_type=apply, query=[("fieldManager", "alice")])
    assert status == 201
    entry = created["metadata"]["managedFields"][0]
    assert entry["manager"] == "alice" and entry["operation"] == "Apply" and "f:resourceGroups" in entry["fieldsV1"]["f:spec"]
    status, _, _ = env.raw("PATCH", path, {"spec": {"queueingStrategy": "StrictFIFO"}}, content_type="application/merge-patch+json",
                           query=[("fieldManager", "bob")])
    assert status == 200
    theirs = cluster_queue("cq")
    theirs["spec"]["queueingStrategy"] = "BestEffortFIFO"
    status, _, conflict = env.raw("PATCH", path, theirs, content_type=apply, query=[("fieldManager", "alice")])
    assert status == 409 and conflict["reason"] == "Conflict"
    assert conflict["message"].startswith('Apply failed with 1 conflict: conflict with "bob" using kueue.x-k8s.io/v1beta1')
    assert conflict["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": conflict["details"]["causes"][0]["message"], "field": ".spec.queueingStrategy"}
    ]
    status, _, forced = env.raw("PATCH", path, theirs, content_type=apply, query=[("fieldManager", "alice"), ("force", "true")])
    assert status == 200 and forced["spec"]["queueingStrategy"] == "BestEffortFIFO"
    assert [e["manager"] for e in forced["metadata"]["managedFields"]] == ["alice"]
    # Dropping a field from the applied configuration removes it when no one else owns it.
    status, _, dropped = env.raw("PATCH", path, cluster_queue("cq"), content_type=apply, query=[("fieldManager", "alice")])
    assert status == 200 and "queueingStrategy" not in dropped["spec"]


# --------------------------------------------------------------------------- built-ins


def test_pods_are_listed_created_and_deleted(env: Env) -> None:
    env.store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "status": {"phase": "Running"}})
    pods = env.core().list_namespaced_pod("default")
    assert [p.metadata.name for p in pods.items] == ["p"] and pods.items[0].status.phase == "Running"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert env.core().create_namespaced_pod("default", pod).status.phase == "Pending"
    env.core().delete_namespaced_pod("p", "default")
    assert env.store.get("Pod", "default", "p") is None


def test_events_and_leases(env: Env) -> None:
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": "default"},
             "involvedObject": {"kind": "Workload", "name": "w"}, "reason": "Admitted", "message": "hello", "type": "Normal"}
    env.core().create_namespaced_event("default", event)
    assert [e.reason for e in env.core().list_namespaced_event("default").items] == ["Admitted"]
    about = env.core().list_namespaced_event("default", field_selector="involvedObject.kind=Workload,involvedObject.name=w")
    other = env.core().list_namespaced_event("default", field_selector="involvedObject.name=other")
    assert [e.metadata.name for e in about.items] == ["e1"] and not other.items
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "leader", "namespace": "default"},
             "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
    from kubernetes.client import CoordinationV1Api

    leases = CoordinationV1Api(env.client)
    created = leases.create_namespaced_lease("default", lease)
    created.spec.holder_identity = "b"
    assert leases.replace_namespaced_lease("leader", "default", created).spec.holder_identity == "b"
    with pytest.raises(ApiException) as stale:
        leases.replace_namespaced_lease("leader", "default", created)  # the old resourceVersion
    assert stale.value.status == 409


def test_namespace_delete_takes_its_content_and_default_stays(env: Env) -> None:
    env.core().create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    env.custom().create_cluster_custom_object(G, "v1beta1", "clusterqueues", cluster_queue("cq"))
    lq = {"apiVersion": f"{G}/v1beta1", "kind": "LocalQueue", "metadata": {"name": "lq"}, "spec": {"clusterQueue": "cq"}}
    env.custom().create_namespaced_custom_object(G, "v1beta1", "team", "localqueues", lq)
    env.core().delete_namespace("team")
    terminating = env.core().read_namespace("team")
    assert terminating.status.phase == "Terminating" and terminating.metadata.deletion_timestamp
    assert env.store.get("LocalQueue", "team", "lq") is not None  # until the namespace controller runs
    lq["metadata"]["name"] = "late"
    with pytest.raises(ApiException) as closed:
        env.custom().create_namespaced_custom_object(G, "v1beta1", "team", "localqueues", lq)
    assert closed.value.status == 403 and "is being terminated" in status_of(closed.value)["message"]
    w = watch.Watch()
    for event in w.stream(env.core().list_namespace, field_selector="metadata.name=team", timeout_seconds=30):
        if event["type"] == "DELETED":
            w.stop()
    assert env.store.get("LocalQueue", "team", "lq") is None and env.store.get("Namespace", "", "team") is None
    with pytest.raises(ApiException) as refused:
        env.core().delete_namespace("default")
    assert refused.value.status == 403


def test_table_with_kueue_columns(env: Env) -> None:
    env.custom().create_cluster_custom_object(G, "v1beta1", "clusterqueues", cluster_queue("cq", cohort="team"))
    status, _, table = env.raw("GET", f"/apis/{G}/v1beta1/clusterqueues",
                               accept="application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
    assert status == 200 and table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Cohort", "Strategy", "Pending Workloads", "Admitted Workloads"]
    assert table["rows"][0]["cells"][:2] == ["cq", "team"]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
