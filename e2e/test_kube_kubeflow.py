"""Kubeflow Training v1 jobs through the hub on a Kubernetes API server, end to end with real
processes.

``mkhub dev-cluster`` (with its simulated training operator), the hub's webhooks registered in it,
and ``mkhub serve --kubeconfig --webhook-listen`` with a Configuration enabling the five
``kubeflow.org`` frameworks. Kueue's published samples, unchanged, created with kubectl: suspended
by the webhook in ``spec.runPolicy``, one Workload each with a pod set per replica type, admitted,
resumed with the flavor's nodeSelector in every replica's template, run by the operator's pods,
Succeeded, and their Workloads Finished; ``kubectl get`` shows the operator's and Kueue's columns.
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
# kind, sample, its name in the sample, the Workload's pod sets
SAMPLES = [
    ("PyTorchJob", "sample-pytorchjob.yaml", "pytorch-simple", [("master", 1), ("worker", 1)]),
    ("TFJob", "sample-tfjob.yaml", "tensorflow-dist-mnist", [("ps", 1), ("worker", 2)]),
    ("XGBoostJob", "sample-xgboostjob.yaml", "xgboost-dist-iris-test-train", [("master", 1), ("worker", 2)]),
    ("PaddleJob", "sample-paddlejob.yaml", "paddle-simple-cpu", [("worker", 2)]),
    ("JAXJob", "sample-jaxjob.yaml", "jax-simple", [("worker", 2)]),
]
QUEUES = samples_queue_setup({"cpu": "16", "memory": "8Gi"}, node_labels={"pool": "cpu"})
CONFIG = frameworks_config("batch/job", *(f"kubeflow.org/{kind.lower()}" for kind, *_ in SAMPLES))


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
        if any(o.get("kind") == kind and o.get("name") == name for o in wl["metadata"].get("ownerReferences") or []):
            return wl  # type: ignore[no-any-return]
    return None


def test_kueues_kubeflow_samples_run_through_the_webhook_admission_and_the_operator(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    sample = (EXAMPLES / "sample-pytorchjob.yaml").read_text()
    dry = kubectl(kc, "create", "--dry-run=server", "-o", "json", "-f", "-", stdin=sample)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["spec"]["runPolicy"]["suspend"] is True  # the webhook's mutation, as stored
    for _, file, _, _ in SAMPLES:
        created = kubectl(kc, "create", "-f", str(EXAMPLES / file))
        assert created.returncode == 0, created.stderr

    for kind, _, name, pod_sets in SAMPLES:
        def finished(kind: str = kind, name: str = name) -> dict[str, Any] | None:
            w = workload_of(kc, kind, name)
            return w if w is not None and condition(w, "Finished") else None

        done = wait_for(f"the {kind}'s Workload to finish", finished, timeout=150, log=hub.log)
        assert condition(done, "Finished")["reason"] == "Succeeded"
        assert done["metadata"]["name"].startswith(f"{kind.lower()}-{name}-")
        owner = done["metadata"]["ownerReferences"][0]
        assert (owner["apiVersion"], owner["kind"], owner["controller"]) == ("kubeflow.org/v1", kind, True)
        assert [(ps["name"], ps["count"]) for ps in done["spec"]["podSets"]] == pod_sets
        job = get(kc, kind.lower(), name)
        assert condition(job, "Succeeded") is not None and job["spec"]["runPolicy"]["suspend"] is False
        for rs in job["spec"][next(k for k in job["spec"] if k.endswith("ReplicaSpecs"))].values():
            assert rs["template"]["spec"]["nodeSelector"] == {"pool": "cpu"}  # Kueue's injection
        pods = [p for p in get(kc, "pods")["items"]
                if p["metadata"]["labels"].get("training.kubeflow.org/job-name") == name]
        assert sorted(p["metadata"]["name"] for p in pods) == sorted(
            f"{name}-{t}-{i}" for t, n in pod_sets for i in range(n))
        assert all(p["spec"]["nodeSelector"] == {"pool": "cpu"} for p in pods)

    table = kubectl(kc, "get", "pytorchjobs", "-n", "default")  # the operator's columns
    assert table.returncode == 0, table.stderr
    header, row = table.stdout.splitlines()[:2]
    assert header.split() == ["NAME", "STATE", "AGE"] and row.split()[:2] == ["pytorch-simple", "Succeeded"]
    table = kubectl(kc, "get", "workloads", "-n", "default")  # Kueue's columns
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:5] == ["NAME", "QUEUE", "RESERVED", "IN", "ADMITTED"]
    assert len(lines) == 1 + len(SAMPLES) and all(line.split()[1:3] == ["user-queue", "cluster-queue"] for line in lines[1:])
