"""The dev-cluster's simulated JobSet controller against a real SQLite store, driven by a fake
clock together with the Job controller, kubelet and garbage collector it relies on."""

from __future__ import annotations

import hashlib
from typing import Any

from test_devcluster import Clock, advance, cluster

from hub.devcluster.jobsets import JOBSET_UID, RESTART_ATTEMPT
from hub.devcluster.runtime import DevCluster
from hub.store import SQLiteStore

NS = "team-a"


def jobset(name: str, *, suspend: bool = False, workers: int = 2, annotations: dict[str, str] | None = None,
           **spec: Any) -> dict[str, Any]:
    def rjob(rname: str, replicas: int | None, duration: str) -> dict[str, Any]:
        out: dict[str, Any] = {"name": rname, "template": {"spec": {
            "parallelism": 1, "completions": 1, "backoffLimit": 0,
            "template": {"metadata": {"annotations": {"mkhub.dev/sim-duration": duration, **(annotations or {})}},
                         "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}}}
        if replicas is not None:
            out["replicas"] = replicas
        return out

    body: dict[str, Any] = {"replicatedJobs": [rjob("workers", workers, "10s"), rjob("driver", None, "20s")], **spec}
    if suspend:
        body["suspend"] = True
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": NS}, "spec": body}


def children(store: SQLiteStore) -> dict[str, dict[str, Any]]:
    return {j["metadata"]["name"]: j for j in store.list("Job", NS)[0]}


def js_status(store: SQLiteStore, name: str = "js") -> dict[str, Any]:
    obj = store.get("JobSet", NS, name)
    assert obj is not None
    return dict(obj.get("status") or {})


def conds(st: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in st.get("conditions") or []}


def counts(st: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    return {r["name"]: (r["ready"], r["succeeded"], r["failed"], r["active"], r["suspended"])
            for r in st["replicatedJobsStatus"]}


def test_children_are_labelled_owned_run_and_complete_the_jobset(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    js = store.create(jobset("js"))
    dc.step()
    jobs = children(store)
    assert sorted(jobs) == ["js-driver-0", "js-workers-0", "js-workers-1"]
    w1 = jobs["js-workers-1"]
    labels = w1["metadata"]["labels"]
    assert labels == {
        "jobset.sigs.k8s.io/jobset-name": "js", JOBSET_UID: js["metadata"]["uid"],
        "jobset.sigs.k8s.io/replicatedjob-name": "workers", RESTART_ATTEMPT: "0",
        "jobset.sigs.k8s.io/replicatedjob-replicas": "2", "jobset.sigs.k8s.io/global-replicas": "3",
        "jobset.sigs.k8s.io/job-index": "1", "jobset.sigs.k8s.io/job-global-index": "1",
        "jobset.sigs.k8s.io/job-key": hashlib.sha1(b"team-a/js-workers-1").hexdigest(),
        "jobset.sigs.k8s.io/group-name": "default", "jobset.sigs.k8s.io/group-replicas": "3",
        "jobset.sigs.k8s.io/job-group-index": "1"}
    assert children(store)["js-driver-0"]["metadata"]["labels"]["jobset.sigs.k8s.io/job-global-index"] == "2"
    assert w1["metadata"]["annotations"] == labels
    assert w1["metadata"]["ownerReferences"] == [{
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js", "uid": js["metadata"]["uid"],
        "controller": True, "blockOwnerDeletion": True}]
    assert w1["spec"]["suspend"] is False
    pods = store.list("Pod", NS)[0]
    assert len(pods) == 3 and all(p["status"]["phase"] == "Running" for p in pods)
    assert all(p["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == "js" for p in pods)
    assert counts(js_status(store)) == {"workers": (2, 0, 0, 2, 0), "driver": (1, 0, 0, 1, 0)}

    advance(dc, clock, 10)  # the workers are done, the driver is not
    st = js_status(store)
    assert counts(st) == {"workers": (0, 2, 0, 0, 0), "driver": (1, 0, 0, 1, 0)}
    assert "Completed" not in conds(st) and "terminalState" not in st
    advance(dc, clock, 10)
    st = js_status(store)
    assert conds(st) == {"Completed": ("True", "AllJobsCompleted")}
    assert st["terminalState"] == "Completed" and st["restarts"] == 0
    assert counts(st) == {"workers": (0, 2, 0, 0, 0), "driver": (0, 1, 0, 0, 0)}
    advance(dc, clock, 100)
    assert len(children(store)) == 3  # completed children stay; none is made again

    store.delete("JobSet", NS, "js")
    dc.step()
    assert children(store) == {} and store.list("Pod", NS)[0] == []  # the garbage collector follows the owner


def test_a_suspended_jobset_resumes_with_what_kueue_put_on_its_templates(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(jobset("js", suspend=True, workers=1))
    dc.step()
    assert all(j["spec"]["suspend"] is True for j in children(store).values())
    assert store.list("Pod", NS)[0] == []
    st = js_status(store)
    assert conds(st) == {"Suspended": ("True", "SuspendedJobs")}
    assert counts(st) == {"workers": (0, 0, 0, 0, 1), "driver": (0, 0, 0, 0, 1)}

    # As Kueue does on admission: the flavor's node selector and tolerations, then unsuspend.
    js = store.get("JobSet", NS, "js")
    assert js is not None
    for rjob in js["spec"]["replicatedJobs"]:
        pod_template = rjob["template"]["spec"]["template"]
        pod_template["spec"]["nodeSelector"] = {"pool": "gpu"}
        pod_template["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
        pod_template["metadata"]["labels"] = {"kueue.x-k8s.io/podset": rjob["name"]}
    js["spec"]["suspend"] = False
    store.update(js)
    dc.step()
    job = children(store)["js-workers-0"]
    assert job["spec"]["suspend"] is False
    template = job["spec"]["template"]
    assert template["spec"]["nodeSelector"] == {"pool": "gpu"}
    assert template["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert template["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "workers"
    assert template["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == "js"  # JobSet's own stay
    pods = store.list("Pod", NS)[0]
    assert len(pods) == 2 and all(p["spec"]["nodeSelector"] == {"pool": "gpu"} for p in pods)
    assert conds(js_status(store)) == {"Suspended": ("False", "ResumeJobs")}

    js = store.get("JobSet", NS, "js")
    assert js is not None
    store.update({**js, "spec": {**js["spec"], "suspend": True}})
    dc.step()
    assert all(j["spec"]["suspend"] is True for j in children(store).values())
    assert store.list("Pod", NS)[0] == []  # the Job controller removed the running pods


def test_a_failed_child_restarts_all_children_until_max_restarts(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(jobset("js", workers=1, annotations={"mkhub.dev/sim-exit-code": "3"}, failurePolicy={"maxRestarts": 1}))
    dc.step()
    first = {n: j["metadata"]["uid"] for n, j in children(store).items()}
    advance(dc, clock, 10)  # js-workers-0 fails; every child is recreated, one restart later
    st = js_status(store)
    assert st["restarts"] == 1 and st["restartsCountTowardsMax"] == 1
    assert conds(st)["RestartingJobSet"] == ("True", "DefaultFailurePolicy")
    again = children(store)
    assert sorted(again) == sorted(first) and all(again[n]["metadata"]["uid"] != first[n] for n in first)
    assert all(j["metadata"]["labels"][RESTART_ATTEMPT] == "1" for j in again.values())
    assert len(store.list("Pod", NS)[0]) == 2  # the old children's pods went with them

    advance(dc, clock, 10)
    st = js_status(store)
    assert conds(st)["Failed"] == ("True", "ReachedMaxRestarts")
    assert st["terminalState"] == "Failed" and st["restarts"] == 1
    assert [c["message"] for c in st["conditions"] if c["type"] == "Failed"] == [
        "jobset failed due to reaching max number of restarts (first failed job: js-workers-0)"]
    assert "js-driver-0" not in children(store)  # the active child is deleted once the JobSet failed


def test_without_a_failure_policy_one_failed_child_fails_the_jobset(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(jobset("js", workers=1, annotations={"mkhub.dev/sim-exit-code": "1"}))
    dc.step()
    advance(dc, clock, 10)
    st = js_status(store)
    assert conds(st) == {"Failed": ("True", "FailedJobs")} and st["terminalState"] == "Failed"
    assert counts(st)["workers"] == (0, 0, 1, 0, 0)


def test_success_policy_any_of_the_targets(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(jobset("js", workers=3, successPolicy={"operator": "Any", "targetReplicatedJobs": ["workers"]}))
    dc.step()
    advance(dc, clock, 10)
    st = js_status(store)
    assert conds(st) == {"Completed": ("True", "AllJobsCompleted")}
    assert "js-driver-0" not in children(store)  # still running when the JobSet completed: deleted


def test_success_policy_all_of_a_target_completes_without_the_others(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(jobset("js", workers=1, successPolicy={"operator": "All", "targetReplicatedJobs": ["workers"]}))
    dc.step()
    advance(dc, clock, 10)
    assert js_status(store)["terminalState"] == "Completed"


def test_jobsets_managed_by_multikueue_are_left_alone(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(jobset("js", managedBy="kueue.x-k8s.io/multikueue"))
    dc.step()
    assert children(store) == {} and js_status(store) == {}


def test_a_restart_reconciles_from_the_store_without_duplicate_children(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(jobset("js", workers=2))
    dc.step()
    uids = {n: j["metadata"]["uid"] for n, j in children(store).items()}
    store.delete("Job", NS, "js-workers-1")  # deleted by hand while the controllers are down
    dc.close()
    dc = cluster(store, clock)  # a new process: reconciles everything from the store at start
    dc.step()
    again = children(store)
    assert sorted(again) == sorted(uids)
    assert again["js-workers-0"]["metadata"]["uid"] == uids["js-workers-0"]
    assert again["js-workers-1"]["metadata"]["uid"] != uids["js-workers-1"]  # made again, once


def test_without_operators_jobsets_are_not_reconciled(store: SQLiteStore, clock: Clock) -> None:
    dc = DevCluster(store, clock=clock, operators=False)
    dc.start()
    store.create(jobset("js"))
    dc.step()
    assert children(store) == {}


def test_dns_hostnames_put_the_pods_in_the_jobsets_subdomain(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(jobset("js", workers=1, network={"enableDNSHostnames": True}))
    store.create(jobset("named", workers=1, network={"enableDNSHostnames": True, "subdomain": "svc"}))
    store.create(jobset("off", workers=1, network={"enableDNSHostnames": False, "subdomain": "svc"}))
    dc.step()
    subdomains = {n: j["spec"]["template"]["spec"].get("subdomain") for n, j in children(store).items() if n.endswith("workers-0")}
    assert subdomains == {"js-workers-0": "js", "named-workers-0": "svc", "off-workers-0": None}


def test_in_order_startup_waits_for_each_replicated_job_to_be_ready(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    stuck = jobset("stuck", workers=2, startupPolicy={"startupPolicyOrder": "InOrder"})
    stuck["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "none"}
    store.create(stuck)
    store.create(jobset("js", workers=2, startupPolicy={"startupPolicyOrder": "InOrder"}))
    dc.step()
    assert sorted(n for n in children(store) if n.startswith("stuck-")) == ["stuck-workers-0", "stuck-workers-1"]
    assert conds(js_status(store, "stuck")) == {"StartupPolicyInProgress": ("True", "InOrderStartupPolicyInProgress")}
    assert sorted(n for n in children(store) if n.startswith("js-")) == ["js-driver-0", "js-workers-0", "js-workers-1"]
    assert conds(js_status(store)) == {"StartupPolicyInProgress": ("False", "InOrderStartupPolicyInProgress"),
                                       "StartupPolicyCompleted": ("True", "InOrderStartupPolicyCompleted")}


def test_condition_changes_are_recorded_as_events(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(jobset("js", workers=1, annotations={"mkhub.dev/sim-exit-code": "1"}))
    dc.step()
    advance(dc, clock, 10)
    events = [e for e in store.list("Event", NS)[0] if e["involvedObject"]["kind"] == "JobSet"]
    assert sorted((e["type"], e["reason"], e["source"]["component"]) for e in events) == [
        ("Warning", "FailedJobs", "jobset-controller")]
    assert events[0]["message"] == "jobset failed due to one or more job failures (first failed job: js-workers-0)"
