"""The dev-cluster's simulated Trainer against a real SQLite store, driven by a fake clock with
the JobSet and Job controllers, kubelet and garbage collector it relies on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from test_devcluster import Clock, advance, cluster

from hub.store import SQLiteStore

SHAPED = Path(__file__).resolve().parents[2] / "e2e" / "kueue-shaped"
NS = "default"


def docs(suspend: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    runtime, job = yaml.safe_load_all((SHAPED / "trainjob-cluster-runtime.yaml").read_text())
    job["spec"]["suspend"] = suspend
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["metadata"] = {"annotations": {"mkhub.dev/sim-duration": "20s"}}
    return runtime, job


def status(store: SQLiteStore) -> dict[str, Any]:
    obj = store.get("TrainJob", NS, "pytorch-distributed")
    assert obj is not None
    return dict(obj.get("status") or {})


def conds(st: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in st.get("conditions") or []}


def test_the_trainjob_runs_as_its_jobset_and_completes_with_it(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    runtime, job = docs()
    store.create(runtime)
    tj = store.create(job)
    dc.step()
    js = store.get("JobSet", NS, "pytorch-distributed")
    assert js is not None and js["metadata"]["ownerReferences"][0]["uid"] == tj["metadata"]["uid"]
    (rj,) = js["spec"]["replicatedJobs"]
    assert (rj["template"]["spec"]["parallelism"], rj["template"]["spec"]["completions"]) == (2, 2)
    container = rj["template"]["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"]["cpu"] == "4"
    assert "Suspended" not in conds(status(store))  # never suspended: no condition
    advance(dc, clock, 21)
    st = status(store)
    assert conds(st)["Complete"] == ("True", "AllJobsCompleted")
    assert st["jobsStatus"][0]["name"] == "node" and st["jobsStatus"][0]["succeeded"] == 1
    store.delete("TrainJob", NS, "pytorch-distributed")
    dc.step()
    assert store.get("JobSet", NS, "pytorch-distributed") is None  # the garbage collector took it


def test_a_suspended_trainjob_resumes_with_kueues_runtime_patch_in_its_pods(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    runtime, job = docs(suspend=True)
    store.create(runtime)
    store.create(job)
    dc.step()
    js = store.get("JobSet", NS, "pytorch-distributed")
    assert js is not None and js["spec"]["suspend"] is True
    assert conds(status(store))["Suspended"] == ("True", "Suspended")
    assert not store.list("Pod", NS)[0]
    tj = store.get("TrainJob", NS, "pytorch-distributed")
    assert tj is not None
    tj["spec"]["suspend"] = False
    tj["spec"]["runtimePatches"] = [{"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": {"template": {"spec": {
        "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
            "spec": {"nodeSelector": {"kubernetes.io/hostname": "node-a"}}}}}}]}}}}]
    store.update(tj)
    dc.step()
    pods = store.list("Pod", NS)[0]
    assert len(pods) == 2 and all(p["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "node-a"} for p in pods)
    assert conds(status(store))["Suspended"] == ("False", "Resumed")


def test_nothing_is_made_without_the_runtime_until_it_exists_nor_for_multikueue(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    _, job = docs()
    store.create(job)
    dc.step()
    assert store.get("JobSet", NS, "pytorch-distributed") is None
    runtime, other = docs()
    store.create(runtime)
    dc.step()  # the runtime appeared: the TrainJob naming it gets its JobSet
    assert store.get("JobSet", NS, "pytorch-distributed") is not None
    other["metadata"]["name"] = "mk"
    other["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    store.create(other)
    dc.step()
    assert store.get("JobSet", NS, "mk") is None
