"""Deployments, StatefulSets, LeaderWorkerSets and CronJobs in the embedded hub (SQLite, simulated
runs): Kueue's published samples, unchanged, through ``mkhub apply`` against ``mkhub serve`` with a
Configuration enabling their frameworks. The hub's simulated controllers create their Pods (gated
as Kueue's pod webhook gates them, the templates marked as Kueue's webhooks mark them) and Jobs;
they are queued, admitted, ungated and run (serving Pods until deleted, a CronJob's Jobs to
completion); re-applying with other replicas scales them and deleting them frees the quota."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import frameworks_config, run_cli, samples_queue_setup

from hub.api.jobkinds.pod import SCHEDULING_GATE
from hub.api.jobkinds.serving import statefulset_workload_name
from hub.demo.processes import HubProcess, free_port

pytestmark = pytest.mark.timeout(180)

EXAMPLES = Path(__file__).resolve().parent / "kueue-examples"
QUEUES = samples_queue_setup({"cpu": "4", "memory": "4Gi"}, flavor="default-flavor")
CONFIG = frameworks_config("batch/job", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset")


def mkhub(hub: HubProcess, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    done = run_cli([*args, *hub.connection_args()], stdin=stdin)
    return done.returncode, done.stdout, done.stderr


def items(hub: HubProcess, kind: str) -> dict[str, dict[str, Any]]:
    code, out, err = mkhub(hub, "get", kind, "-n", "default", "-o", "json")
    assert code == 0, err
    return {o["metadata"]["name"]: o for o in json.loads(out)["items"]}


def true(obj: dict[str, Any], type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or [])


def running(pod: dict[str, Any]) -> bool:
    gates = [g["name"] for g in pod["spec"].get("schedulingGates") or []]
    return (pod.get("status") or {}).get("phase") == "Running" and SCHEDULING_GATE not in gates


def wait(what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def apply(hub: HubProcess, text: str) -> str:
    code, out, err = mkhub(hub, "apply", "-f", "-", stdin=text)
    assert code == 0, err
    return out


def sample(name: str) -> str:
    return (EXAMPLES / name).read_text()


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubProcess]:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    with HubProcess(tmp_path / "data", extra_args=["--config", str(tmp_path / "config.yaml"), "--sim-duration", "1s"]) as proc:
        apply(proc, QUEUES)
        yield proc


def admitted_workloads(hub: HubProcess) -> int:
    return int((items_cluster(hub, "clusterqueue")["cluster-queue"].get("status") or {}).get("admittedWorkloads") or 0)


def items_cluster(hub: HubProcess, kind: str) -> dict[str, dict[str, Any]]:
    code, out, err = mkhub(hub, "get", kind, "-o", "json")
    assert code == 0, err
    return {o["metadata"]["name"]: o for o in json.loads(out)["items"]}


def pods_running(hub: HubProcess, count: int) -> Callable[[], dict[str, dict[str, Any]] | None]:
    def check() -> dict[str, dict[str, Any]] | None:
        pods = items(hub, "pods")
        return pods if len(pods) == count and all(running(p) for p in pods.values()) else None

    return check


def test_kueues_deployment_sample_runs_scales_and_goes(hub: HubProcess) -> None:
    assert "deployment.apps/nginx-deployment created" in apply(hub, sample("sample-deployment.yaml"))
    pods = wait("the Deployment's 3 Pods running", pods_running(hub, 3))
    assert all(p["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true" for p in pods.values())
    time.sleep(2)  # past --sim-duration: a serving Pod runs until deleted
    wls = items(hub, "workloads")
    assert len(wls) == 3 and all(true(w, "Admitted") and not true(w, "Finished") for w in wls.values())
    assert sorted(w["metadata"]["ownerReferences"][0]["name"] for w in wls.values()) == sorted(pods)
    code, table, err = mkhub(hub, "get", "deployments")
    assert code == 0 and "nginx-deployment" in table, err
    code, table, err = mkhub(hub, "get", "wl")
    assert code == 0 and len(table.splitlines()) == 4, (table, err)
    apply(hub, sample("sample-deployment.yaml").replace("replicas: 3", "replicas: 1"))
    wait("scaled down to one Pod and one Workload",
         lambda: len(items(hub, "pods")) == 1 and len(items(hub, "workloads")) == 1 and admitted_workloads(hub) == 1)
    code, _, err = mkhub(hub, "delete", "deployment", "nginx-deployment")
    assert code == 0, err
    wait("the Pods and Workloads gone with the Deployment",
         lambda: not items(hub, "pods") and not items(hub, "workloads") and admitted_workloads(hub) == 0)


def test_kueues_statefulset_sample_runs_as_one_group_to_zero_and_back(hub: HubProcess) -> None:
    apply(hub, sample("sample-statefulset.yaml"))
    pods = wait("the StatefulSet's 3 Pods running", pods_running(hub, 3))
    assert sorted(pods) == [f"nginx-statefulset-{i}" for i in range(3)]
    name = statefulset_workload_name("nginx-statefulset")
    [(wl_name, wl)] = items(hub, "workloads").items()
    assert wl_name == name and [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("main", 3)]
    assert true(wl, "Admitted") and not true(wl, "Finished")
    code, _, err = mkhub(hub, "apply", "-f", "-", stdin=sample("sample-statefulset.yaml").replace("replicas: 3", "replicas: 2"))
    assert code != 0 and "spec.replicas" in err  # Kueue's rule: to zero and back only
    apply(hub, sample("sample-statefulset.yaml").replace("replicas: 3", "replicas: 0"))
    wait("the Pods and the Workload gone at zero",
         lambda: not items(hub, "pods") and not items(hub, "workloads") and admitted_workloads(hub) == 0)
    apply(hub, sample("sample-statefulset.yaml").replace("replicas: 3", "replicas: 2"))
    wait("the StatefulSet's 2 Pods running", pods_running(hub, 2))
    assert [ps["count"] for ps in items(hub, "workloads")[name]["spec"]["podSets"]] == [2]
    code, _, err = mkhub(hub, "delete", "statefulset", "nginx-statefulset")
    assert code == 0, err
    wait("the Workload gone with the StatefulSet", lambda: not items(hub, "pods") and not items(hub, "workloads"))


def test_kueues_leaderworkerset_sample_runs_a_workload_per_group(hub: HubProcess) -> None:
    out = apply(hub, sample("sample-leaderworkerset.yaml"))
    assert "leaderworkerset.leaderworkerset.x-k8s.io/nginx-leaderworkerset created" in out
    wait("the set's 6 Pods running", pods_running(hub, 6))
    wls = items(hub, "workloads")
    assert len(wls) == 2 and all(true(w, "Admitted") for w in wls.values())
    assert all([(ps["name"], ps["count"]) for ps in w["spec"]["podSets"]] == [("leader", 1), ("worker", 2)]
               for w in wls.values())
    code, _, err = mkhub(hub, "delete", "lws", "nginx-leaderworkerset")
    assert code == 0, err
    wait("the groups gone with the set", lambda: not items(hub, "pods") and not items(hub, "workloads"))


def test_kueues_cronjob_sample_runs_its_jobs_to_completion(hub: HubProcess) -> None:
    apply(hub, sample("sample-cronjob.yaml"))

    def finished_job() -> dict[str, Any] | None:
        done = [j for j in items(hub, "jobs").values()
                if any(c["type"] == "Complete" and c["status"] == "True" for c in (j.get("status") or {}).get("conditions") or [])]
        return done[0] if done else None

    job = wait("a Job of the CronJob's next minute run to completion", finished_job, timeout=90)  # "* * * * *"
    assert job["metadata"]["name"].startswith("sample-cronjob-")
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    [wl] = [w for w in items(hub, "workloads").values() if w["metadata"]["ownerReferences"][0]["name"] == job["metadata"]["name"]]
    assert true(wl, "Admitted") and true(wl, "Finished")
    cronjob = wait("the CronJob's status", lambda: (lambda c: c if "lastSuccessfulTime" in (c.get("status") or {}) else None)(
        items(hub, "cronjobs")["sample-cronjob"]))
    assert "lastScheduleTime" in cronjob["status"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_against_the_embedded_hub_runs_kueues_deployment_sample(tmp_path: Path) -> None:
    """``mkhub serve --kube-listen``: ``kubectl create`` of the sample is marked as Kueue's webhook marks
    it (in-process), so its Pods are gated, queued and run, as through ``mkhub apply``."""
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    port = free_port()
    args = ["--config", str(tmp_path / "config.yaml"), "--sim-duration", "1s", "--kube-listen", f"127.0.0.1:{port}"]
    with HubProcess(tmp_path / "data", extra_args=args) as proc:
        apply(proc, QUEUES)
        created = subprocess.run([str(shutil.which("kubectl")), "--server", f"http://127.0.0.1:{port}", "create", "-f",
                                  str(EXAMPLES / "sample-deployment.yaml"), "-n", "default"],
                                 capture_output=True, text=True, timeout=60, check=False)
        assert created.returncode == 0, created.stderr
        wait("the Deployment's 3 Pods running", pods_running(proc, 3))
        assert len(items(proc, "workloads")) == 3
