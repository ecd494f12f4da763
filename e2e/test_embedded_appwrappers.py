"""AppWrappers in the embedded hub (SQLite, simulated pods): Kueue's published Deployment and
LeaderWorkerSet AppWrapper samples, unchanged, through ``mkhub create`` with the
``workload.codeflare.dev/appwrapper`` framework enabled: one Workload with every component's pod
sets, admitted, run, and the AppWrapper's status written as its controller would (phase and
conditions); a bad one refused naming the field, nothing stored."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import frameworks_config, samples_queue_setup
from test_embedded_jobsets import get_json, mkhub, true

from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(120)

EXAMPLES = Path(__file__).resolve().parent / "kueue-examples" / "appwrapper"
QUEUES = samples_queue_setup({"cpu": "8", "memory": "8Gi"}, flavor="default-flavor")
CONFIG = frameworks_config("batch/job", "workload.codeflare.dev/appwrapper")


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubProcess]:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    with HubProcess(tmp_path / "data", extra_args=["--config", str(tmp_path / "config.yaml"), "--sim-duration", "1s"]) as proc:
        code, out, err = mkhub(proc, "apply", "-f", "-", stdin=QUEUES)
        assert code == 0, err
        yield proc


@pytest.mark.parametrize(("file", "name", "pod_sets"), [
    ("deployment-sample.yaml", "sample-appwrapper-deployment", [("sample-appwrapper-deployment-0", 3)]),
    ("leaderworkerset-sample.yaml", "sample-appwrapper-lws", [("sample-appwrapper-lws-0", 2), ("sample-appwrapper-lws-1", 3)]),
])
def test_kueues_appwrapper_samples_run_in_the_embedded_hub(hub: HubProcess, file: str, name: str,
                                                           pod_sets: list[tuple[str, int]]) -> None:
    code, out, err = mkhub(hub, "create", "-f", str(EXAMPLES / file))
    assert code == 0, err
    assert out.split()[0] == f"appwrapper.workload.codeflare.dev/{name}"
    deadline = time.monotonic() + 60
    while True:
        aw = get_json(hub, "appwrapper", name)
        if (aw.get("status") or {}).get("phase") == "Succeeded":
            break
        assert time.monotonic() < deadline, json.dumps(aw)[:2000]
        time.sleep(0.2)
    assert aw["spec"]["suspend"] is False
    (wl,) = get_json(hub, "workloads")["items"]
    assert [(o["kind"], o["name"]) for o in wl["metadata"]["ownerReferences"]] == [("AppWrapper", name)]
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == pod_sets
    assert true(wl, "Finished") and true(wl, "Admitted")


def test_a_bad_appwrapper_is_refused_naming_the_field_and_nothing_is_stored(hub: HubProcess) -> None:
    bad: dict[str, Any] = yaml.safe_load((EXAMPLES / "deployment-sample.yaml").read_text())
    bad["spec"]["components"][0]["podSets"][0]["path"] = "template.spec.nope"
    code, out, err = mkhub(hub, "create", "-f", "-", stdin=yaml.safe_dump(bad))
    assert code == 1
    assert err.strip().splitlines()[-1].startswith(
        'error: AppWrapper "default/sample-appwrapper-deployment" is invalid: spec.components[0].podSets[0].path: '
        'Invalid value: "template.spec.nope": path does not refer to a v1.PodSpecTemplate')
    assert get_json(hub, "appwrappers")["items"] == []
    assert get_json(hub, "workloads")["items"] == []
