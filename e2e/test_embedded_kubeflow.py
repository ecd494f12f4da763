"""Kubeflow Training v1 jobs in the embedded hub (SQLite, simulated pods): Kueue's five published
samples (PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob), unchanged, through ``mkhub apply``
with their frameworks enabled: a Workload with a pod set per replica type in Kueue's order,
admitted, run, and the job's status written as the training operator would (Succeeded,
replicaStatuses); a bad one refused naming the field, nothing stored."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import frameworks_config, run_cli, samples_queue_setup

from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(180)

EXAMPLES = Path(__file__).resolve().parent / "kueue-examples"
# kind, sample, its name in the sample, the Workload's pod sets
SAMPLES = [
    ("PyTorchJob", "sample-pytorchjob.yaml", "pytorch-simple", [("master", 1), ("worker", 1)]),
    ("TFJob", "sample-tfjob.yaml", "tensorflow-dist-mnist", [("ps", 1), ("worker", 2)]),
    ("XGBoostJob", "sample-xgboostjob.yaml", "xgboost-dist-iris-test-train", [("master", 1), ("worker", 2)]),
    ("PaddleJob", "sample-paddlejob.yaml", "paddle-simple-cpu", [("worker", 2)]),
    ("JAXJob", "sample-jaxjob.yaml", "jax-simple", [("worker", 2)]),
]
QUEUES = samples_queue_setup({"cpu": "16", "memory": "8Gi"}, flavor="default-flavor")
CONFIG = frameworks_config("batch/job", *(f"kubeflow.org/{kind.lower()}" for kind, *_ in SAMPLES))


def mkhub(hub: HubProcess, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    done = run_cli([*args, *hub.connection_args()], stdin=stdin)
    return done.returncode, done.stdout, done.stderr


def get_json(hub: HubProcess, *what: str) -> Any:
    code, out, err = mkhub(hub, "get", *what, "-n", "default", "-o", "json")
    assert code == 0, err
    return json.loads(out)


def true(obj: dict[str, Any], type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or [])


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubProcess]:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    with HubProcess(tmp_path / "data", extra_args=["--config", str(tmp_path / "config.yaml"), "--sim-duration", "1s"]) as proc:
        code, out, err = mkhub(proc, "apply", "-f", "-", stdin=QUEUES)
        assert code == 0, err
        yield proc


def test_kueues_kubeflow_samples_run_in_the_embedded_hub(hub: HubProcess) -> None:
    for _, sample, _, _ in SAMPLES:
        code, out, err = mkhub(hub, "apply", "-f", str(EXAMPLES / sample))
        assert code == 0, err
    for kind, _, name, pod_sets in SAMPLES:
        deadline = time.monotonic() + 90
        while not true(job := get_json(hub, kind.lower(), name), "Succeeded"):
            assert time.monotonic() < deadline, json.dumps(job)[:2000]
            time.sleep(0.2)
        assert job["spec"]["runPolicy"]["suspend"] is False
        types = [t for t, _ in pod_sets]
        assert {t.lower(): s for t, s in job["status"]["replicaStatuses"].items()} == {
            t: {"succeeded": n} for t, n in pod_sets}
        (wl,) = [w for w in get_json(hub, "workloads")["items"]
                 if any(o["kind"] == kind and o["name"] == name for o in w["metadata"]["ownerReferences"])]
        assert wl["metadata"]["name"].startswith(f"{kind.lower()}-{name}-")
        assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == pod_sets, types
        assert true(wl, "Finished") and true(wl, "Admitted")
    code, out, err = mkhub(hub, "get", "pytorchjobs", "-n", "default")  # the operator's columns
    assert code == 0, err
    header, row = out.splitlines()[:2]
    assert header.split() == ["NAME", "STATE", "AGE"] and row.split()[:2] == ["pytorch-simple", "Succeeded"]


def test_a_bad_pytorchjob_is_refused_naming_the_field_and_nothing_is_stored(hub: HubProcess) -> None:
    bad = yaml.safe_load((EXAMPLES / "sample-pytorchjob.yaml").read_text())
    bad["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    code, out, err = mkhub(hub, "create", "-f", "-", stdin=yaml.safe_dump(bad))
    assert code == 1
    assert err.strip().splitlines()[-1] == (
        'error: PyTorchJob "default/pytorch-simple" is invalid: spec.pytorchReplicaSpecs[Master].replicas: '
        "Forbidden: must be 1")
    assert get_json(hub, "pytorchjobs")["items"] == []
    assert get_json(hub, "workloads")["items"] == []
