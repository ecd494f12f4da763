"""JobSets through the hub on a Kubernetes API server, end to end with real processes.

``mkhub dev-cluster`` (with its simulated JobSet operator), the hub's webhooks registered in
it, and ``mkhub serve --kubeconfig --webhook-listen`` with a Configuration enabling the
``jobset.x-k8s.io/jobset`` framework. Kueue's published JobSet sample, unchanged, created with
kubectl: suspended by the webhook, one Workload with a pod set per replicatedJob, admitted,
resumed with the flavor's nodeSelector in every template, run by the JobSet operator's child
Jobs, Completed, and its Workload Finished. A JobSet of a queue that cannot hold it waits
suspended; deleting it deletes its Workload.
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

SAMPLE = Path(__file__).resolve().parent / "kueue-examples" / "sample-jobset.yaml"

QUEUES = samples_queue_setup({"cpu": "4", "memory": "4Gi"}, node_labels={"pool": "cpu"})

CONFIG = frameworks_config("batch/job", "jobset.x-k8s.io/jobset")


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


def workload_of(kc: Path, kind: str, name: str) -> dict[str, Any] | None:
    for wl in get(kc, "workloads")["items"]:
        owners = wl["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == kind and o.get("name") == name for o in owners):
            return wl  # type: ignore[no-any-return]
    return None


def test_kueues_jobset_sample_runs_through_the_webhook_admission_and_the_operator(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    sample = SAMPLE.read_text()
    dry = kubectl(kc, "create", "--dry-run=server", "-o", "json", "-f", "-", stdin=sample)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["spec"]["suspend"] is True  # the webhook's mutation, as the API server stores it
    created = kubectl(kc, "create", "-f", str(SAMPLE), "-o", "name")
    assert created.returncode == 0, created.stderr
    name = created.stdout.strip().rpartition("/")[2]
    assert name.startswith("sleep-job-")

    wl = wait_for("the JobSet's Workload", lambda: workload_of(kc, "JobSet", name), log=hub.log)
    assert wl["metadata"]["name"].startswith(f"jobset-{name}-")
    owner = wl["metadata"]["ownerReferences"][0]
    assert (owner["apiVersion"], owner["kind"], owner["controller"]) == ("jobset.x-k8s.io/v1alpha2", "JobSet", True)
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("workers", 1), ("driver", 1)]

    def finished() -> dict[str, Any] | None:
        w = workload_of(kc, "JobSet", name)
        return w if w is not None and condition(w, "Finished") else None

    done = wait_for("the Workload to finish", finished, timeout=120, log=hub.log)
    assert condition(done, "Finished")["reason"] == "Succeeded"
    assignments = {psa["name"]: psa["flavors"] for psa in done["status"]["admission"]["podSetAssignments"]}
    assert assignments == {"workers": {"cpu": "cpu-pool", "memory": "cpu-pool"},
                           "driver": {"cpu": "cpu-pool", "memory": "cpu-pool"}}
    jobset = get(kc, "jobset", name)
    assert condition(jobset, "Completed") is not None
    assert jobset["spec"]["suspend"] is False
    for rj in jobset["spec"]["replicatedJobs"]:  # Kueue's injection of the flavor's node labels
        assert rj["template"]["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "cpu"}
    children = [j for j in get(kc, "jobs")["items"]
                if j["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name") == name]
    assert sorted(j["metadata"]["name"] for j in children) == [f"{name}-driver-0", f"{name}-workers-0"]
    assert all(condition(j, "Complete") for j in children)
    table = kubectl(kc, "get", "workloads", "-n", "default")  # Kueue's columns
    assert table.returncode == 0, table.stderr
    header, row = table.stdout.splitlines()[:2]
    assert header.split()[:5] == ["NAME", "QUEUE", "RESERVED", "IN", "ADMITTED"]
    assert row.split()[:3] == [done["metadata"]["name"], "user-queue", "cluster-queue"]


def test_a_jobset_too_big_for_its_queue_waits_suspended_and_goes_with_its_workload(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    big = yaml.safe_load(SAMPLE.read_text())
    big["metadata"] = {"name": "too-big", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}}
    big["spec"]["replicatedJobs"][0]["replicas"] = 5  # 5 workers of 1 cpu and a driver of 2: 7 > 4
    out = kubectl(kc, "create", "-f", "-", stdin=yaml.safe_dump(big))
    assert out.returncode == 0, out.stderr

    def pending() -> dict[str, Any] | None:
        w = workload_of(kc, "JobSet", "too-big")
        reserved = w is not None and any(c["type"] == "QuotaReserved" for c in (w.get("status") or {}).get("conditions") or [])
        return w if reserved else None

    wl = wait_for("the Workload's pending condition", pending, log=hub.log)
    assert not condition(wl, "QuotaReserved")
    jobset = get(kc, "jobset", "too-big")
    assert jobset["spec"]["suspend"] is True
    assert not [j for j in get(kc, "jobs")["items"] if j["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name") == "too-big"
                and not j["spec"].get("suspend")]
    out = kubectl(kc, "delete", "jobset", "too-big", "-n", "default")
    assert out.returncode == 0, out.stderr
    wait_for("the Workload to go with its JobSet", lambda: workload_of(kc, "JobSet", "too-big") is None, log=hub.log)
