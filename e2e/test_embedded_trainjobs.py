"""TrainJobs in the embedded hub (SQLite, simulated pods), with the
``trainer.kubeflow.org/trainjob`` framework enabled: Kueue's documented ClusterTrainingRuntime and
TrainJob, unchanged, through ``mkhub apply``: a Workload with the runtime's pod set of
``numNodes`` pods, admitted, run, and the TrainJob's status written as the Trainer would
(Complete, its jobs' counts). A TrainJob applied before its runtime waits without a Workload
until the runtime is applied, as Kueue's reconciler cannot build one without it."""

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

pytestmark = pytest.mark.timeout(120)

DOCS = Path(__file__).resolve().parent / "kueue-shaped" / "trainjob-cluster-runtime.yaml"
QUEUES = samples_queue_setup({"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "2"}, flavor="default-flavor")
CONFIG = frameworks_config("batch/job", "trainer.kubeflow.org/trainjob")


def mkhub(hub: HubProcess, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    done = run_cli([*args, *hub.connection_args()], stdin=stdin)
    return done.returncode, done.stdout, done.stderr


def get_json(hub: HubProcess, *what: str) -> Any:
    code, out, err = mkhub(hub, "get", *what, "-n", "default", "-o", "json")
    assert code == 0, err
    return json.loads(out)


def true(obj: dict[str, Any], type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or [])


def workloads(hub: HubProcess) -> list[dict[str, Any]]:
    return [w for w in get_json(hub, "workloads")["items"]
            if any(o["kind"] == "TrainJob" for o in w["metadata"]["ownerReferences"])]


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubProcess]:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    with HubProcess(tmp_path / "data", extra_args=["--config", str(tmp_path / "config.yaml"), "--sim-duration", "1s"]) as proc:
        code, out, err = mkhub(proc, "apply", "-f", "-", stdin=QUEUES)
        assert code == 0, err
        yield proc


def test_kueues_documented_trainjob_runs_in_the_embedded_hub(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "apply", "-f", str(DOCS))
    assert code == 0, err
    deadline = time.monotonic() + 60
    while True:
        job = get_json(hub, "trainjob", "pytorch-distributed")
        if true(job, "Complete"):
            break
        assert time.monotonic() < deadline, json.dumps(job)[:2000]
        time.sleep(0.2)
    assert job["spec"]["suspend"] is False
    assert job["status"]["jobsStatus"] == [{"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0,
                                            "suspended": 0}]
    (wl,) = workloads(hub)
    assert wl["metadata"]["name"].startswith("trainjob-pytorch-distributed-")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("node", 2)]
    requests = wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]
    assert requests == {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}
    assert true(wl, "Finished") and true(wl, "Admitted")
    code, out, err = mkhub(hub, "get", "clustertrainingruntimes", "-o", "json")
    assert code == 0 and [r["metadata"]["name"] for r in json.loads(out)["items"]] == ["torch-distributed"], err


def test_a_trainjob_waits_without_a_workload_until_its_runtime_exists(hub: HubProcess) -> None:
    runtime, job = yaml.safe_load_all(DOCS.read_text())
    code, out, err = mkhub(hub, "apply", "-f", "-", stdin=yaml.safe_dump(job))
    assert code == 0, err
    time.sleep(1.0)  # the hub has seen it (not a timing assertion: nothing may appear however long it waits)
    assert workloads(hub) == []
    assert get_json(hub, "trainjob", "pytorch-distributed")["spec"]["suspend"] is True
    code, out, err = mkhub(hub, "apply", "-f", "-", stdin=yaml.safe_dump(runtime))
    assert code == 0, err
    deadline = time.monotonic() + 60
    while not workloads(hub) or not true(get_json(hub, "trainjob", "pytorch-distributed"), "Complete"):
        assert time.monotonic() < deadline
        time.sleep(0.2)
