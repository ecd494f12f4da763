"""MPIJobs through the hub on a Kubernetes API server, end to end with real processes.

``mkhub dev-cluster`` (with its simulated MPI operator), the hub's webhooks registered in it,
and ``mkhub serve --kubeconfig --webhook-listen`` with a Configuration enabling the
``kubeflow.org/mpijob`` framework. Kueue's published MPIJob sample, unchanged, created with
kubectl: suspended by the webhook (``spec.runPolicy.suspend``), one Workload with the launcher
and worker pod sets, admitted, resumed with the flavor's nodeSelector in both templates, run by
the operator's worker pods and launcher Job, Succeeded, and its Workload Finished. An MPIJob too
big for its queue waits suspended with no worker pod; deleting it deletes its Workload.
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

pytestmark = pytest.mark.timeout(240)

SAMPLE = Path(__file__).resolve().parent / "kueue-examples" / "sample-mpijob.yaml"
QUEUES = samples_queue_setup({"cpu": "4", "memory": "4Gi"}, node_labels={"pool": "cpu"})
CONFIG = frameworks_config("batch/job", "kubeflow.org/mpijob")


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


def workload_of(kc: Path, name: str) -> dict[str, Any] | None:
    for wl in get(kc, "workloads")["items"]:
        if any(o.get("kind") == "MPIJob" and o.get("name") == name for o in wl["metadata"].get("ownerReferences") or []):
            return wl  # type: ignore[no-any-return]
    return None


def test_kueues_mpijob_sample_runs_through_the_webhook_admission_and_the_operator(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    dry = kubectl(kc, "create", "--dry-run=server", "-o", "json", "-f", str(SAMPLE))
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["spec"]["runPolicy"]["suspend"] is True  # the webhook's mutation
    created = kubectl(kc, "create", "-f", str(SAMPLE))
    assert created.returncode == 0, created.stderr

    wl = wait_for("the MPIJob's Workload", lambda: workload_of(kc, "pi"), log=hub.log)
    assert wl["metadata"]["name"].startswith("mpijob-pi-")
    owner = wl["metadata"]["ownerReferences"][0]
    assert (owner["apiVersion"], owner["kind"], owner["controller"]) == ("kubeflow.org/v2beta1", "MPIJob", True)
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("launcher", 1), ("worker", 2)]

    def finished() -> dict[str, Any] | None:
        w = workload_of(kc, "pi")
        return w if w is not None and condition(w, "Finished") else None

    done = wait_for("the Workload to finish", finished, timeout=120, log=hub.log)
    assert condition(done, "Finished")["reason"] == "Succeeded"
    assert {psa["name"] for psa in done["status"]["admission"]["podSetAssignments"]} == {"launcher", "worker"}
    job = get(kc, "mpijob", "pi")
    assert condition(job, "Succeeded") is not None and condition(job, "Created") is not None
    assert job["spec"]["runPolicy"]["suspend"] is False
    for replica in job["spec"]["mpiReplicaSpecs"].values():  # Kueue's injection of the flavor's node labels
        assert replica["template"]["spec"]["nodeSelector"] == {"pool": "cpu"}
    launcher = get(kc, "job", "pi-launcher")
    assert condition(launcher, "Complete") is not None
    assert launcher["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "cpu"}
    table = kubectl(kc, "get", "mpijobs", "-n", "default")  # the MPI operator's CRD columns
    assert table.returncode == 0, table.stderr
    assert table.stdout.split()[:5] == ["NAME", "AGE", "STATE", "pi", table.stdout.split()[4]]
    assert table.stdout.split()[5] == "Succeeded", table.stdout
    table = kubectl(kc, "get", "wl", "-n", "default")  # Kueue's columns
    assert table.returncode == 0, table.stderr
    header, row = table.stdout.splitlines()[:2]
    assert header.split()[:5] == ["NAME", "QUEUE", "RESERVED", "IN", "ADMITTED"]
    assert row.split()[:3] == [done["metadata"]["name"], "user-queue", "cluster-queue"]


def test_an_mpijob_too_big_for_its_queue_waits_suspended_and_goes_with_its_workload(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    big = yaml.safe_load(SAMPLE.read_text())
    big["metadata"]["name"] = "too-big"
    big["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 4  # 4 workers and a launcher of 1 cpu: 5 > 4
    out = kubectl(kc, "create", "-f", "-", stdin=yaml.safe_dump(big))
    assert out.returncode == 0, out.stderr

    def pending() -> dict[str, Any] | None:
        w = workload_of(kc, "too-big")
        reserved = w is not None and any(c["type"] == "QuotaReserved" for c in (w.get("status") or {}).get("conditions") or [])
        return w if reserved else None

    wl = wait_for("the Workload's pending condition", pending, log=hub.log)
    assert not condition(wl, "QuotaReserved")
    job = get(kc, "mpijob", "too-big")
    assert job["spec"]["runPolicy"]["suspend"] is True
    assert condition(job, "Suspended") is not None
    assert not [p for p in get(kc, "pods")["items"] if p["metadata"]["name"].startswith("too-big-worker-")]
    out = kubectl(kc, "delete", "mpijob", "too-big", "-n", "default")
    assert out.returncode == 0, out.stderr
    wait_for("the Workload to go with its MPIJob", lambda: workload_of(kc, "too-big") is None, log=hub.log)
