"""mkhub's Python client (:mod:`hub.client`) against a real embedded hub (``mkhub serve``): the Job of
Kueue's Python example (``sample-job.py``: generateName, three completions one at a time) created into
a queue, its Workload admitted, followed to completion with ``wait``; a refused object raises
ApplyError naming the field and stores nothing; missing objects, an unreachable hub and a wait that
runs out each raise their own error."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import samples_queue_setup

from hub.client import ApplyError, Hub, HubError, NotFoundError, has_condition
from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(120)

QUEUES = list(yaml.safe_load_all(samples_queue_setup({"cpu": "3", "memory": "600Mi"}, flavor="default-flavor")))


def sample_job(completions: int = 3) -> dict[str, Any]:
    """What Kueue's site/static/examples/python/sample-job.py submits."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"generateName": "sample-job-", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"parallelism": 1, "completions": completions, "suspend": True, "template": {"spec": {
            "containers": [{"name": "dummy-job", "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                            "args": ["entrypoint-tester", "hello", "world"],
                            "resources": {"requests": {"cpu": 1, "memory": "200Mi"}}}],
            "restartPolicy": "Never"}}},
    }


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    with HubProcess(tmp_path / "data", extra_args=["--sim-duration", "0.3s"]) as proc, \
            Hub.connect(proc.address, insecure=True, timeout=20) as client:
        applied = client.apply(QUEUES)
        assert {a.kind for a in applied} == {"ResourceFlavor", "ClusterQueue", "LocalQueue"}
        yield client


def test_a_job_created_from_python_is_admitted_and_followed_to_completion(hub: Hub) -> None:
    job = hub.create(sample_job())
    name = job["metadata"]["name"]
    assert name.startswith("sample-job-")
    wl = hub.wait_for_workload("Job", name, condition="Admitted", timeout=60)
    assert wl["status"]["admission"]["clusterQueue"] == "cluster-queue"
    done = hub.wait("Job", name, until=lambda j: (j.get("status") or {}).get("succeeded") == 3, timeout=60)
    assert has_condition(done, "Complete")
    finished = hub.wait_for_workload("Job", name, condition="Finished", timeout=60)
    assert finished["metadata"]["name"] == wl["metadata"]["name"]
    assert [j["metadata"]["name"] for j in hub.list("jobs", namespace="default")] == [name]
    hub.delete("Job", name, "default")
    with pytest.raises(NotFoundError):
        hub.get("Job", name, "default")


def test_a_refused_object_names_the_field_and_stores_nothing(hub: Hub) -> None:
    bad = sample_job()
    bad["metadata"] = {"name": "bad", "labels": bad["metadata"]["labels"]}
    bad["spec"]["parallelism"] = -1
    good = sample_job()
    good["metadata"] = {"name": "good", "labels": good["metadata"]["labels"]}
    with pytest.raises(ApplyError) as refused:
        hub.apply([bad, good])
    (line,) = refused.value.errors
    assert 'Job "default/bad"' in line and "spec.parallelism" in line
    assert [(a.kind, a.name, a.action) for a in refused.value.applied] == [("Job", "good", "created")]
    assert [j["metadata"]["name"] for j in hub.list("Job", namespace="default")] == ["good"]


def test_missing_objects_and_waits_that_run_out(hub: Hub) -> None:
    with pytest.raises(NotFoundError):
        hub.get("Job", "nope", "default")
    with pytest.raises(NotFoundError):
        hub.delete("Job", "nope", "default")
    with pytest.raises(HubError, match="resource type"):
        hub.list("RayJobz")
    held = sample_job()
    held["metadata"] = {"name": "held", "labels": {"kueue.x-k8s.io/queue-name": "no-such-queue"}}
    hub.apply(held)
    with pytest.raises(TimeoutError, match='Job "default/held"'):
        hub.wait("Job", "held", until=lambda j: not j["spec"]["suspend"], timeout=1.0)
    assert hub.get("Job", "held", "default")["spec"]["suspend"] is True


def test_an_unreachable_hub_is_one_line() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with Hub.connect(f"127.0.0.1:{port}", insecure=True, timeout=2) as client, \
            pytest.raises(HubError, match="cannot reach the hub|did not answer"):
        client.list("Workload")


def test_the_readmes_python_example_runs_as_written(tmp_path: Path) -> None:
    """README's "From Python" block, run as written against a hub with manifests/samples/1-queues.yaml."""
    import os
    import re
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    (block,) = re.findall(r"### From Python\n.*?```python\n(.*?)```", (root / "README.md").read_text(), re.S)
    with HubProcess(tmp_path / "data", extra_args=["--sim-duration", "0.3s"]) as proc:
        with Hub.connect(proc.address, insecure=True) as client:
            client.apply((root / "manifests" / "samples" / "1-queues.yaml").read_text())
        env = {**os.environ, "MKHUB_SERVER": proc.address, "MKHUB_INSECURE": "1"}
        env.pop("MKHUB_TLS_DIR", None)
        run = subprocess.run([sys.executable, "-c", block], env=env, cwd=root, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    admitted, succeeded = run.stdout.splitlines()
    assert admitted.endswith("admitted by cluster-queue") and succeeded.endswith("succeeded 3")
