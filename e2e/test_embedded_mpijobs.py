"""MPIJobs in the embedded hub (SQLite, simulated pods): Kueue's published sample, unchanged,
through ``mkhub apply``, with the ``kubeflow.org/mpijob`` framework enabled: a Workload with the
launcher and worker pod sets, admitted, run, and the MPIJob's status written as the MPI operator
would (Succeeded, the replica statuses); a bad MPIJob refused naming the field, nothing stored."""

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

SAMPLE = Path(__file__).resolve().parent / "kueue-examples" / "sample-mpijob.yaml"
QUEUES = samples_queue_setup({"cpu": "8", "memory": "8Gi"}, flavor="default-flavor")
CONFIG = frameworks_config("batch/job", "kubeflow.org/mpijob")


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


def test_kueues_mpijob_sample_runs_in_the_embedded_hub(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "apply", "-f", str(SAMPLE))
    assert code == 0, err
    deadline = time.monotonic() + 60
    while True:
        job = get_json(hub, "mpijob", "pi")
        if true(job, "Succeeded"):
            break
        assert time.monotonic() < deadline, json.dumps(job)[:2000]
        time.sleep(0.2)
    assert job["spec"]["runPolicy"]["suspend"] is False
    assert job["status"]["replicaStatuses"]["Launcher"] == {"succeeded": 1}
    assert true(job, "Created")
    (wl,) = [w for w in get_json(hub, "workloads")["items"]
             if any(o["kind"] == "MPIJob" and o["name"] == "pi" for o in w["metadata"]["ownerReferences"])]
    assert wl["metadata"]["name"].startswith("mpijob-pi-")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("launcher", 1), ("worker", 2)]
    assert true(wl, "Finished") and true(wl, "Admitted")


def test_a_bad_mpijob_is_refused_naming_the_field_and_nothing_is_stored(hub: HubProcess) -> None:
    bad = yaml.safe_load(SAMPLE.read_text())
    bad["metadata"]["name"] = "bad"
    bad["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"] = 2
    code, out, err = mkhub(hub, "apply", "-f", "-", stdin=yaml.safe_dump(bad))
    assert code == 1
    assert err.strip().splitlines()[-1].startswith(
        'error: MPIJob "default/bad" is invalid: spec.mpiReplicaSpecs[Launcher].replicas'), err
    assert get_json(hub, "mpijobs")["items"] == []
    assert get_json(hub, "workloads")["items"] == []
