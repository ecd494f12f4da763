"""KubeRay's kinds through the hub on a Kubernetes API server, end to end with real processes.

``mkhub dev-cluster`` (with its simulated KubeRay operator), the hub's webhooks registered in it,
and ``mkhub serve --kubeconfig --webhook-listen`` with a Configuration enabling the
``ray.io/rayjob``, ``ray.io/raycluster`` and ``ray.io/rayservice`` frameworks. Kueue's published
Ray samples, unchanged, created with kubectl: the RayJob suspended by the webhook, one Workload
(head, worker group, submitter), admitted, resumed with the flavor's nodeSelector, its cluster
made, its submitter run, SUCCEEDED and its cluster deleted; the RayCluster and the RayService
admitted and Running (ready) with Workloads that stay admitted while they exist; the autoscaling
sample refused as Kueue refuses it without elastic jobs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import frameworks_config, samples_queue_setup
from test_kube_jobs import condition, hub_on_dev_cluster, kubectl, wait_for

from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(300)

EXAMPLES = Path(__file__).resolve().parent / "kueue-examples"
QUEUES = samples_queue_setup({"cpu": "10", "memory": "20Gi"}, node_labels={"pool": "cpu"})
CONFIG = frameworks_config("batch/job", "ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice")


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Path, KubeHub]]:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    with hub_on_dev_cluster(tmp_path, QUEUES, ("--config", str(config))) as running:
        yield running


def get(kc: Path, *what: str) -> dict[str, Any]:
    out = kubectl(kc, "get", *what, "-n", "default", "-o", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def workloads_of(kc: Path, kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [wl for wl in get(kc, "workloads")["items"]
            if any(o.get("kind") == kind and name in (None, o.get("name")) for o in wl["metadata"].get("ownerReferences") or [])]


def one_workload(kc: Path, kind: str, name: str) -> dict[str, Any] | None:
    found = workloads_of(kc, kind, name)
    return found[0] if found else None


def wl_row(kc: Path, name: str) -> list[str]:
    table = kubectl(kc, "get", "workloads", "-n", "default")  # Kueue's columns
    assert table.returncode == 0, table.stderr
    rows = [line.split() for line in table.stdout.splitlines()]
    assert rows[0][:5] == ["NAME", "QUEUE", "RESERVED", "IN", "ADMITTED"]
    return next(r for r in rows if r[0] == name)


def test_kueues_rayjob_sample_runs_to_completion_through_the_operator(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    code = kubectl(kc, "create", "-f", str(EXAMPLES / "ray-job-code-sample.yaml"))
    assert code.returncode == 0, code.stderr
    sample = (EXAMPLES / "ray-job-sample.yaml").read_text()
    dry = kubectl(kc, "create", "--dry-run=server", "-o", "json", "-f", "-", stdin=sample)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["spec"]["suspend"] is True  # the webhook's mutation
    created = kubectl(kc, "create", "-f", str(EXAMPLES / "ray-job-sample.yaml"))
    assert created.returncode == 0, created.stderr

    wl = wait_for("the RayJob's Workload", lambda: one_workload(kc, "RayJob", "rayjob-sample"), log=hub.log)
    assert wl["metadata"]["name"].startswith("rayjob-rayjob-sample-")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("head", 1), ("small-group", 1),
                                                                           ("submitter", 1)]

    def finished() -> dict[str, Any] | None:
        w = one_workload(kc, "RayJob", "rayjob-sample")
        return w if w is not None and condition(w, "Finished") else None

    done = wait_for("the Workload to finish", finished, timeout=150, log=hub.log)
    assert condition(done, "Finished")["reason"] == "Succeeded"
    job = get(kc, "rayjob", "rayjob-sample")
    assert (job["status"]["jobStatus"], job["status"]["jobDeploymentStatus"]) == ("SUCCEEDED", "Complete")
    assert job["spec"]["suspend"] is False
    cluster_spec = job["spec"]["rayClusterSpec"]
    assert cluster_spec["headGroupSpec"]["template"]["spec"]["nodeSelector"] == {"pool": "cpu"}  # Kueue's injection
    assert cluster_spec["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"] == {"pool": "cpu"}
    assert job["spec"]["submitterPodTemplate"]["spec"]["nodeSelector"] == {"pool": "cpu"}
    wait_for("the RayCluster to be deleted (shutdownAfterJobFinishes)",
             lambda: not get(kc, "rayclusters")["items"], log=hub.log)
    # The RayJob's cluster carried its queue label but was the RayJob's: no Workload of its own.
    assert len(get(kc, "workloads")["items"]) == 1
    assert wl_row(kc, done["metadata"]["name"])[1:3] == ["user-queue", "cluster-queue"]


def test_kueues_raycluster_sample_runs_and_holds_its_quota_until_deleted(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    created = kubectl(kc, "create", "-f", str(EXAMPLES / "ray-cluster-sample.yaml"))
    assert created.returncode == 0, created.stderr

    def ready() -> dict[str, Any] | None:
        rc = get(kc, "raycluster", "raycluster-complete")
        return rc if (rc.get("status") or {}).get("state") == "ready" else None

    rc = wait_for("the RayCluster to be ready", ready, timeout=120, log=hub.log)
    assert rc["spec"]["suspend"] is False
    pods = get(kc, "pods", "-l", "ray.io/cluster=raycluster-complete")["items"]
    assert sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in pods) == ["head", "worker"]
    assert all(p["status"]["phase"] == "Running" and p["spec"]["nodeSelector"] == {"pool": "cpu"} for p in pods)
    wl = one_workload(kc, "RayCluster", "raycluster-complete")
    assert wl is not None and condition(wl, "Admitted") and not condition(wl, "Finished")
    assert wl_row(kc, wl["metadata"]["name"])[1:4] == ["user-queue", "cluster-queue", "True"]
    table = kubectl(kc, "get", "rayclusters", "-n", "default")  # KubeRay's columns
    assert table.returncode == 0 and "ready" in table.stdout.split("\n")[1], table.stdout
    out = kubectl(kc, "delete", "raycluster", "raycluster-complete", "-n", "default")
    assert out.returncode == 0, out.stderr
    wait_for("the Workload to go with its RayCluster",
             lambda: one_workload(kc, "RayCluster", "raycluster-complete") is None, log=hub.log)


def test_kueues_rayservice_sample_is_admitted_and_ready(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    created = kubectl(kc, "create", "-f", str(EXAMPLES / "ray-service-sample.yaml"))
    assert created.returncode == 0, created.stderr

    def ready() -> dict[str, Any] | None:
        svc = get(kc, "rayservice", "test-rayservice")
        return svc if condition(svc, "Ready") else None

    svc = wait_for("the RayService to be ready", ready, timeout=120, log=hub.log)
    assert svc["status"]["serviceStatus"] == "Running"
    assert svc["spec"]["rayClusterConfig"]["suspend"] is False
    assert set(svc["status"]["activeServiceStatus"]["applicationStatuses"]) == {"fruit_app", "math_app"}
    wl = one_workload(kc, "RayService", "test-rayservice")
    assert wl is not None and condition(wl, "Admitted") and not condition(wl, "Finished")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("head", 1), ("small-group", 1)]
    assert len(get(kc, "workloads")["items"]) == 1  # none for the service's own RayCluster


def test_the_autoscaling_sample_is_refused_as_kueue_refuses_it(setup: tuple[Path, KubeHub]) -> None:
    kc, _ = setup
    out = kubectl(kc, "create", "-f", str(EXAMPLES / "ray-job-autoscaling-sample.yaml"))
    assert out.returncode != 0
    assert "spec.rayClusterSpec.enableInTreeAutoscaling" in out.stderr and "elastic job" in out.stderr
    assert "\n" not in out.stderr.strip()
