"""Plain Pods in the embedded hub (SQLite, simulated runs): Kueue's published pod and pod-group
samples, unchanged, through ``mkhub create`` with the ``pod`` framework enabled: created gated with
Kueue's label and finalizer, a Workload each (the group: one, named as the group), admitted,
ungated, run to Succeeded, the Workload Finished and Kueue's finalizer gone."""

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
QUEUES = samples_queue_setup({"cpu": "9"}, flavor="default-flavor")
CONFIG = frameworks_config("batch/job", "pod")

def mkhub(hub: HubProcess, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    done = run_cli([*args, *hub.connection_args()], stdin=stdin)
    return done.returncode, done.stdout, done.stderr


def get_json(hub: HubProcess, *what: str) -> Any:
    code, out, err = mkhub(hub, "get", *what, "-n", "default", "-o", "json")
    assert code == 0, err
    return json.loads(out)


def true(obj: dict[str, Any], type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or [])


def wait(what: str, check: Callable[[], Any]) -> Any:
    deadline = time.monotonic() + 60
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubProcess]:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    with HubProcess(tmp_path / "data", extra_args=["--config", str(tmp_path / "config.yaml"), "--sim-duration", "1s"]) as proc:
        code, out, err = mkhub(proc, "apply", "-f", "-", stdin=QUEUES)
        assert code == 0, err
        yield proc


def created(hub: HubProcess, sample: str) -> list[str]:
    code, out, err = mkhub(hub, "create", "-f", str(EXAMPLES / sample))
    assert code == 0, err
    return [line.split()[0].rpartition("/")[2] for line in out.splitlines() if line.startswith("pod/")]


def finished_and_released(hub: HubProcess, name: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        pod = get_json(hub, "pod", name)
        released = "kueue.x-k8s.io/managed" not in (pod["metadata"].get("finalizers") or [])
        return pod if (pod.get("status") or {}).get("phase") == "Succeeded" and released else None

    pod = wait(f"{name} Succeeded, its finalizer gone", done)
    assert pod["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true"
    assert not pod["spec"].get("schedulingGates")  # ungated by the admission
    return pod  # type: ignore[no-any-return]


def owned_by(wl: dict[str, Any], pod: str) -> bool:
    return any(o["kind"] == "Pod" and o["name"] == pod for o in wl["metadata"]["ownerReferences"])


def test_kueues_pod_sample_runs_to_succeeded_in_the_embedded_hub(hub: HubProcess) -> None:
    [name] = created(hub, "kueue-pod.yaml")
    assert name.startswith("kueue-sleep-")
    finished_and_released(hub, name)
    (wl,) = [w for w in get_json(hub, "workloads")["items"] if owned_by(w, name)]
    assert wl["metadata"]["name"].startswith(f"pod-{name}-")
    assert true(wl, "Admitted") and true(wl, "Finished")


def test_kueues_pod_group_sample_runs_as_one_workload_in_the_embedded_hub(hub: HubProcess) -> None:
    names = created(hub, "kueue-pod-group.yaml")
    assert [n.rpartition("-")[0] for n in names] == ["sample-leader", "sample-worker"]
    for name in names:
        finished_and_released(hub, name)
    (wl,) = get_json(hub, "workloads")["items"]
    assert wl["metadata"]["name"] == "sample-group"
    assert all(owned_by(wl, name) for name in names)
    assert true(wl, "Admitted") and true(wl, "Finished")
