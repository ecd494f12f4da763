"""KubeRay's kinds in the embedded hub (SQLite, simulated pods): Kueue's published samples,
unchanged, through ``mkhub create`` with the Ray frameworks enabled. The RayJob's Workload (head,
worker group, submitter) is admitted and finishes, the RayJob's status written as KubeRay would
(SUCCEEDED, Complete); the RayCluster and the RayService run (ready) and their Workloads stay
admitted past the simulated run time, holding quota until the object is deleted."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import frameworks_config, run_cli, samples_queue_setup

from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(120)

EXAMPLES = Path(__file__).resolve().parent / "kueue-examples"
QUEUES = samples_queue_setup({"cpu": "10", "memory": "20Gi"}, flavor="default-flavor")
CONFIG = frameworks_config("batch/job", "ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice")


def mkhub(hub: HubProcess, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    done = run_cli([*args, *hub.connection_args()], stdin=stdin)
    return done.returncode, done.stdout, done.stderr


def get_json(hub: HubProcess, *what: str) -> Any:
    code, out, err = mkhub(hub, "get", *what, "-n", "default", "-o", "json")
    assert code == 0, err
    return json.loads(out)


def true(obj: dict[str, Any], type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or [])


def workloads_of(hub: HubProcess, kind: str) -> list[dict[str, Any]]:
    return [w for w in get_json(hub, "workloads")["items"] if any(o["kind"] == kind for o in w["metadata"]["ownerReferences"])]


def until(what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return value


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubProcess]:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    with HubProcess(tmp_path / "data", extra_args=["--config", str(tmp_path / "config.yaml"), "--sim-duration", "1s"]) as proc:
        code, out, err = mkhub(proc, "apply", "-f", "-", stdin=QUEUES)
        assert code == 0, err
        yield proc


def test_kueues_rayjob_sample_runs_to_completion_in_the_embedded_hub(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "create", "-f", str(EXAMPLES / "ray-job-sample.yaml"))
    assert code == 0, err
    job = until("the RayJob to complete", lambda: (lambda j: j if (j.get("status") or {}).get(
        "jobDeploymentStatus") == "Complete" else None)(get_json(hub, "rayjob", "rayjob-sample")))
    assert job["status"]["jobStatus"] == "SUCCEEDED" and job["spec"]["suspend"] is False
    (wl,) = workloads_of(hub, "RayJob")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("head", 1), ("small-group", 1), ("submitter", 1)]
    assert true(wl, "Finished") and true(wl, "Admitted")


@pytest.mark.parametrize("sample,kind,name", [("ray-cluster-sample.yaml", "RayCluster", "raycluster-complete"),
                                               ("ray-service-sample.yaml", "RayService", "test-rayservice")])
def test_kueues_long_running_ray_samples_hold_their_quota_until_deleted(
        hub: HubProcess, sample: str, kind: str, name: str) -> None:
    code, out, err = mkhub(hub, "create", "-f", str(EXAMPLES / sample))
    assert code == 0, err

    def ready() -> dict[str, Any] | None:
        obj = get_json(hub, kind.lower(), name)
        status = obj.get("status") or {}
        return obj if status.get("state") == "ready" or true(obj, "Ready") else None

    until(f"the {kind} to be ready", ready)
    time.sleep(3)  # three times the simulated run time: a Job would have finished by now
    (wl,) = workloads_of(hub, kind)
    assert true(wl, "Admitted") and not true(wl, "Finished")  # running (no waitForPodsReady: no PodsReady)
    code, out, err = mkhub(hub, "delete", kind.lower(), name, "-n", "default")
    assert code == 0, err
    until("the Workload to go with its object", lambda: not workloads_of(hub, kind))
