"""JobSets in the embedded hub (SQLite, simulated pods): Kueue's published sample, unchanged,
through ``mkhub create``, with the ``jobset.x-k8s.io/jobset`` framework enabled: a Workload with a
pod set per replicatedJob, admitted, run, and the JobSet's status written as its controller
would (Completed, the replicated jobs' counts); a bad JobSet refused naming the field, nothing
stored."""

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

SAMPLE = Path(__file__).resolve().parent / "kueue-examples" / "sample-jobset.yaml"
QUEUES = samples_queue_setup({"cpu": "8", "memory": "8Gi"}, flavor="default-flavor")
CONFIG = frameworks_config("batch/job", "jobset.x-k8s.io/jobset")

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


def test_kueues_jobset_sample_runs_in_the_embedded_hub(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "create", "-f", str(SAMPLE))
    assert code == 0, err
    name = out.split()[0].rpartition("/")[2]
    assert name.startswith("sleep-job-")
    deadline = time.monotonic() + 60
    while True:
        jobset = get_json(hub, "jobset", name)
        if true(jobset, "Completed"):
            break
        assert time.monotonic() < deadline, json.dumps(jobset)[:2000]
        time.sleep(0.2)
    assert jobset["spec"]["suspend"] is False
    counts = {s["name"]: s.get("succeeded") for s in jobset["status"]["replicatedJobsStatus"]}
    assert counts == {"workers": 1, "driver": 1}
    (wl,) = [w for w in get_json(hub, "workloads")["items"]
             if any(o["kind"] == "JobSet" and o["name"] == name for o in w["metadata"]["ownerReferences"])]
    assert wl["metadata"]["name"].startswith(f"jobset-{name}-")
    assert [ps["name"] for ps in wl["spec"]["podSets"]] == ["workers", "driver"]
    assert true(wl, "Finished") and true(wl, "Admitted")


def test_a_bad_jobset_is_refused_naming_the_field_and_nothing_is_stored(hub: HubProcess) -> None:
    bad = yaml.safe_load(SAMPLE.read_text())
    bad["metadata"] = {"name": "bad", "labels": bad["metadata"]["labels"]}
    bad["spec"]["replicatedJobs"][0]["replicas"] = -1
    code, out, err = mkhub(hub, "create", "-f", "-", stdin=yaml.safe_dump(bad))
    assert code == 1
    assert err.strip().splitlines()[-1].startswith('error: JobSet "default/bad" is invalid: spec.replicatedJobs[0].replicas')
    assert get_json(hub, "jobsets")["items"] == []
    assert get_json(hub, "workloads")["items"] == []
