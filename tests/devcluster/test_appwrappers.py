"""The dev-cluster's simulated AppWrapper controller against a real SQLite store driven by a fake clock:
components created once unsuspended (owned, labelled, Kueue's podSetInfos merged), status from
their Pods, deleted when suspended again or when the AppWrapper goes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from test_devcluster import Clock, advance, cluster

from hub.devcluster.nodes import Node
from hub.devcluster.runtime import DevCluster
from hub.store import SQLiteStore
from hub.store.interface import Object, StoreError

NS = "default"
LABEL = "workload.codeflare.dev/appwrapper"
EXAMPLES = Path(__file__).resolve().parents[2] / "e2e" / "kueue-examples" / "appwrapper"


def sample(name: str = "deployment-sample", *, suspend: bool = True) -> dict[str, Any]:
    m = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    m["metadata"]["namespace"] = NS
    m["spec"]["suspend"] = suspend
    return m  # type: ignore[no-any-return]


def aw_status(store: SQLiteStore, name: str = "sample-appwrapper-deployment") -> tuple[str, dict[str, str]]:
    obj = store.get("AppWrapper", NS, name)
    assert obj is not None
    st = obj.get("status") or {}
    return st.get("phase", ""), {c["type"]: c["status"] for c in st.get("conditions") or []}


def set_suspend(store: SQLiteStore, value: bool, name: str = "sample-appwrapper-deployment") -> None:
    obj = store.get("AppWrapper", NS, name)
    assert obj is not None
    obj["spec"]["suspend"] = value
    store.update(obj)


def running_pods(store: SQLiteStore, name: str) -> list[Object]:
    return [p for p in store.list("Pod", NS, f"{LABEL}={name}")[0] if (p.get("status") or {}).get("phase") == "Running"]


def test_a_deployment_component_runs_once_unsuspended_and_goes_when_suspended(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock, (Node("node-a", {"pool": "cpu"}),))
    m = sample()
    m["spec"]["components"][0]["podSetInfos"] = [{"nodeSelector": {"pool": "cpu"}, "labels": {"kueue": "yes"}}]
    aw = store.create(m)
    dc.step()
    assert store.get("Deployment", NS, "nginx-deployment") is None
    assert aw_status(store) == ("Suspended", {"QuotaReserved": "False", "ResourcesDeployed": "False", "PodsReady": "False"})
    set_suspend(store, False)
    dc.step()
    dep = store.get("Deployment", NS, "nginx-deployment")
    assert dep is not None
    assert dep["metadata"]["ownerReferences"] == [{"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
                                                   "name": aw["metadata"]["name"], "uid": aw["metadata"]["uid"],
                                                   "controller": True, "blockOwnerDeletion": True}]
    assert dep["metadata"]["labels"] == {"app": "nginx", LABEL: "sample-appwrapper-deployment"}
    template = dep["spec"]["template"]
    assert template["metadata"]["labels"] == {"app": "nginx", LABEL: "sample-appwrapper-deployment", "kueue": "yes"}
    assert template["spec"]["nodeSelector"] == {"pool": "cpu"}
    advance(dc, clock, 1)
    assert len(running_pods(store, "sample-appwrapper-deployment")) == 3
    assert aw_status(store) == ("Running", {"QuotaReserved": "True", "ResourcesDeployed": "True", "PodsReady": "True"})

    set_suspend(store, True)  # Kueue evicted it: the components go, then it is Suspended
    dc.step()
    advance(dc, clock, 1)
    assert store.get("Deployment", NS, "nginx-deployment") is None
    assert aw_status(store) == ("Suspended", {"QuotaReserved": "False", "ResourcesDeployed": "False", "PodsReady": "False"})

    set_suspend(store, False)
    dc.step()
    assert store.get("Deployment", NS, "nginx-deployment") is not None
    store.delete("AppWrapper", NS, "sample-appwrapper-deployment")
    dc.step()
    assert store.get("Deployment", NS, "nginx-deployment") is None


def test_a_job_component_succeeds_and_so_does_the_appwrapper(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "work"},
           "spec": {"parallelism": 2, "completions": 2, "template": {"spec": {
               "containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}}}
    store.create({"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
                  "metadata": {"name": "jobs", "namespace": NS},
                  "spec": {"components": [{"template": job}]}})  # pod sets inferred: 2 pods
    dc.step()
    assert aw_status(store, "jobs")[0] == "Running" and aw_status(store, "jobs")[1]["PodsReady"] == "True"
    advance(dc, clock, 11)  # the simulated pods' default duration
    assert aw_status(store, "jobs")[0] == "Succeeded"


def test_a_component_the_cluster_cannot_create_fails_the_appwrapper(tmp_path: Path, store: SQLiteStore,
                                                                    clock: Clock) -> None:
    def create(obj: Object) -> Object:
        if obj["kind"] == "PyTorchJob":
            raise StoreError('no resource type for kind "PyTorchJob" in version "kubeflow.org/v1"')
        return store.create(obj)

    dc = DevCluster(store, (Node("node-a"),), clock=clock, create=create)
    dc.start()
    store.create(sample("pytorch-sample", suspend=False))
    dc.step()
    obj = store.get("AppWrapper", NS, "sample-appwrapper-pytorch-job")
    assert obj is not None and obj["status"]["phase"] == "Failed"
    deployed = next(c for c in obj["status"]["conditions"] if c["type"] == "ResourcesDeployed")
    assert (deployed["status"], deployed["reason"]) == ("False", "CreateFailed")
    assert "PyTorchJob" in deployed["message"]


def test_without_operators_nothing_runs_appwrappers(store: SQLiteStore, clock: Clock) -> None:
    dc = DevCluster(store, (Node("node-a"),), clock=clock, operators=False)
    dc.start()
    store.create(sample(suspend=False))
    dc.step()
    obj = store.get("AppWrapper", NS, "sample-appwrapper-deployment")
    assert obj is not None and not obj.get("status") and store.get("Deployment", NS, "nginx-deployment") is None


def test_an_lws_component_runs_its_groups(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock, (Node("node-a", {"pool": "cpu"}),))
    m = copy.deepcopy(sample("leaderworkerset-sample", suspend=False))
    store.create(m)
    dc.step()
    advance(dc, clock, 1)
    lws = store.get("LeaderWorkerSet", NS, "nginx-leaderworkerset")
    assert lws is not None and lws["metadata"]["ownerReferences"][0]["kind"] == "AppWrapper"
    assert len(running_pods(store, "sample-appwrapper-lws")) == 6  # 2 groups of 3
    assert aw_status(store, "sample-appwrapper-lws")[0] == "Running"


def test_its_crd_serves_appwrappers_with_the_projects_columns() -> None:
    from hub.devcluster.appwrapper_crd import appwrapper_crd
    from hub.devcluster.operators import operator_crds
    from hub.kubeapi.crds import crd_errors, resource_of

    crd = appwrapper_crd()
    assert crd_errors(crd) == [] and crd in operator_crds()
    res = resource_of(crd)
    assert res is not None
    assert (res.kind, res.group, res.versions, res.plural, res.short_names, res.has_status) == (
        "AppWrapper", "workload.codeflare.dev", ("v1beta2",), "appwrappers", ("aw",), True)
    assert [c.name for c in res.table_columns("v1beta2")][1:5] == ["Status", "Quota Reserved", "Resources Deployed",
                                                                   "Unhealthy"]


def test_one_managed_by_multikueue_is_left_to_its_worker_copy(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    m = sample(suspend=False)
    m["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    store.create(m)
    dc.step()
    obj = store.get("AppWrapper", NS, "sample-appwrapper-deployment")
    assert obj is not None and not obj.get("status") and store.get("Deployment", NS, "nginx-deployment") is None


def test_the_pytorch_sample_creates_its_pytorchjob_where_the_kind_is_served(store: SQLiteStore, clock: Clock) -> None:
    # The wrapped PyTorchJob is created for its own operator to run: the dev-cluster's simulated
    # training operator (hub.devcluster.kubeflow) makes its pods, so the AppWrapper reaches PodsReady.
    dc = cluster(store, clock)
    store.create(sample("pytorch-sample", suspend=False))
    dc.step()
    job = store.get("PyTorchJob", NS, "pytorch-simple")
    assert job is not None and job["metadata"]["ownerReferences"][0]["kind"] == "AppWrapper"
    for role in ("Master", "Worker"):  # the inferred pod sets' templates carry the AppWrapper's label
        template = job["spec"]["pytorchReplicaSpecs"][role]["template"]
        assert template["metadata"]["labels"] == {LABEL: "sample-appwrapper-pytorch-job"}
    assert aw_status(store, "sample-appwrapper-pytorch-job") == (
        "Running", {"QuotaReserved": "True", "ResourcesDeployed": "True", "PodsReady": "True"})
    assert {p["metadata"]["name"] for p in store.list("Pod", NS)[0]} == {
        "pytorch-simple-master-0", "pytorch-simple-worker-0"}
