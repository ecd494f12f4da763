"""TrainJobs through the hub on a Kubernetes API server, end to end with real processes.

``mkhub dev-cluster`` (with its simulated Trainer and JobSet operator), the hub's webhooks
registered in it, and ``mkhub serve --kubeconfig --webhook-listen`` with a Configuration enabling
the ``trainer.kubeflow.org/trainjob`` framework (and JobSet's, to show the TrainJob's JobSet is
not queued on its own). Kueue's documented ClusterTrainingRuntime and TrainJob, unchanged,
applied with kubectl: suspended by the webhook, one Workload with the runtime's pod set of
``numNodes`` pods, admitted, resumed with the flavor's node labels in Kueue's runtime patch, run
as the Trainer's JobSet (its pods on the flavor's nodes), Complete, and its Workload Finished.
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

DOCS = Path(__file__).resolve().parent / "kueue-shaped" / "trainjob-cluster-runtime.yaml"
QUEUES = samples_queue_setup({"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "2"}, node_labels={"pool": "cpu"})
CONFIG = frameworks_config("batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob")


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


def workloads_of(kc: Path, kind: str) -> list[dict[str, Any]]:
    return [wl for wl in get(kc, "workloads")["items"]
            if any(o.get("kind") == kind for o in wl["metadata"].get("ownerReferences") or [])]


def test_kueues_documented_trainjob_runs_through_the_webhook_admission_and_the_trainer(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    runtime, job = yaml.safe_load_all(DOCS.read_text())
    dry = kubectl(kc, "create", "--dry-run=server", "-o", "json", "-f", "-", stdin=yaml.safe_dump(job))
    assert dry.returncode == 0, dry.stderr
    mutated = json.loads(dry.stdout)["spec"]  # the webhook's mutation: suspended, Kueue's runtime patch entry
    assert mutated["suspend"] is True
    assert mutated["runtimePatches"] == [{"manager": "kueue.x-k8s.io/manager",
                                          "trainingRuntimeSpec": {"template": {"spec": {}}}}]
    created = kubectl(kc, "apply", "-f", str(DOCS))
    assert created.returncode == 0, created.stderr

    (wl,) = wait_for("the TrainJob's Workload", lambda: workloads_of(kc, "TrainJob") or None, log=hub.log)
    assert wl["metadata"]["name"].startswith("trainjob-pytorch-distributed-")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("node", 2)]

    def finished() -> dict[str, Any] | None:
        done = workloads_of(kc, "TrainJob")
        return done[0] if done and condition(done[0], "Finished") else None

    done = wait_for("the Workload to finish", finished, timeout=120, log=hub.log)
    assert condition(done, "Finished")["reason"] == "Succeeded"
    trainjob = get(kc, "trainjob", "pytorch-distributed")
    assert condition(trainjob, "Complete") is not None and trainjob["spec"]["suspend"] is False
    (patch,) = [p for p in trainjob["spec"]["runtimePatches"] if p["manager"] == "kueue.x-k8s.io/manager"]
    (rj_patch,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert rj_patch == {"name": "node", "template": {"spec": {"template": {"spec": {"nodeSelector": {"pool": "cpu"}}}}}}
    jobset = get(kc, "jobset", "pytorch-distributed")
    assert jobset["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    pod_spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod_spec["nodeSelector"] == {"pool": "cpu"}
    assert workloads_of(kc, "JobSet") == []  # its owner is Kueue's: never queued on its own
    table = kubectl(kc, "get", "wl", "-n", "default")  # Kueue's columns
    assert table.returncode == 0, table.stderr
    header, row = table.stdout.splitlines()[:2]
    assert header.split()[:5] == ["NAME", "QUEUE", "RESERVED", "IN", "ADMITTED"]
    assert row.split()[:3] == [done["metadata"]["name"], "user-queue", "cluster-queue"]
    table = kubectl(kc, "get", "trainjobs", "-n", "default")  # the Trainer's CRD columns
    assert table.returncode == 0 and table.stdout.split()[:4] == ["NAME", "STATE", "AGE", "pytorch-distributed"]
