"""Submitting from Python with the official ``kubernetes`` client, as Kueue's docs show it
(site/content/en/docs/tasks/run/python_jobs.md), against the hub on ``mkhub dev-cluster``.

Kueue's ``sample-job.py`` run with the kubeconfig of the dev-cluster (changed in one place: the
``kubernetes`` client 37 mkhub installs validates its models with pydantic and refuses the sample's
``"cpu": 1``, an int where a quantity string is due, before any request is made; the sample was
written for older clients, so the test quotes it): its Job
(generateName ``sample-job-``, three completions one at a time, queue ``user-queue``) is
suspended by the hub's webhook, admitted, and followed to completion with the client's watch
(``kubernetes.watch.Watch``); its Workload (read with ``CustomObjectsApi`` at
``kueue.x-k8s.io/v1beta2``) is Admitted then Finished. Kueue's PyTorchJob sample, created with
``CustomObjectsApi`` and followed with its watch, is suspended, admitted and ends Succeeded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import frameworks_config, samples_queue_setup
from test_kube_jobs import hub_on_dev_cluster, wait_for

from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(240)

SAMPLE = Path(__file__).resolve().parent / "kueue-examples" / "python" / "sample-job.py"
PYTORCHJOB = Path(__file__).resolve().parent / "kueue-examples" / "sample-pytorchjob.yaml"
QUEUES = samples_queue_setup({"cpu": "8", "memory": "8Gi"}, flavor="default-flavor")
CONFIG = frameworks_config("batch/job", "kubeflow.org/pytorchjob")


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Path, KubeHub]]:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    with hub_on_dev_cluster(tmp_path, QUEUES, ("--config", str(config))) as running:
        yield running


def condition(obj: dict[str, Any], type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def test_kueues_python_sample_job_is_queued_admitted_and_watched_to_completion(setup: tuple[Path, KubeHub]) -> None:
    from kubernetes import client, config, watch

    kc, hub = setup
    script = kc.parent / "sample-job.py"
    text = SAMPLE.read_text()
    assert '"cpu": 1,' in text
    script.write_text(text.replace('"cpu": 1,', '"cpu": "1",'))
    run = subprocess.run([sys.executable, str(script)], env={**os.environ, "KUBECONFIG": str(kc)},
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "Creating sample job with prefix sample-job-" in run.stdout

    api_client = config.new_client_from_config(str(kc))
    batch = client.BatchV1Api(api_client)
    (job,) = batch.list_namespaced_job("default").items
    name = job.metadata.name
    assert name.startswith("sample-job-") and job.metadata.labels["kueue.x-k8s.io/queue-name"] == "user-queue"

    done = None
    stream = watch.Watch()
    for event in stream.stream(batch.list_namespaced_job, "default", field_selector=f"metadata.name={name}",
                               timeout_seconds=150):
        status = event["object"].status
        if status is not None and (status.succeeded or 0) == 3:
            done = event["object"]
            stream.stop()
    assert done is not None, f"the Job did not complete: {hub.log()[-3000:]}"
    assert done.spec.suspend is False
    assert any(c.type == "Complete" and c.status == "True" for c in done.status.conditions or [])

    custom = client.CustomObjectsApi(api_client)
    def finished_workload() -> dict[str, Any] | None:
        """The Job's Workload once the hub has seen the Job complete (a moment after the Job's own status)."""
        workloads = custom.list_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "default", "workloads")["items"]
        (wl,) = [w for w in workloads if any(o["name"] == name for o in w["metadata"].get("ownerReferences") or [])]
        return wl if condition(wl, "Finished") else None

    wl = wait_for("the Workload finished", finished_workload, log=hub.log)
    assert condition(wl, "Admitted") and wl["status"]["admission"]["clusterQueue"] == "cluster-queue"

    def idle_queue() -> bool:
        lq = custom.get_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "default", "localqueues", "user-queue")
        return bool(lq["status"]["admittedWorkloads"] == 0 and lq["status"]["pendingWorkloads"] == 0)

    wait_for("the LocalQueue's status to show nothing admitted or pending", idle_queue, log=hub.log)


def test_a_pytorchjob_created_from_python_is_admitted_and_watched_to_success(setup: tuple[Path, KubeHub]) -> None:
    from kubernetes import client, config, watch

    kc, hub = setup
    custom = client.CustomObjectsApi(config.new_client_from_config(str(kc)))
    body = yaml.safe_load(PYTORCHJOB.read_text())
    created = custom.create_namespaced_custom_object("kubeflow.org", "v1", "default", "pytorchjobs", body)
    name = created["metadata"]["name"]
    assert created["spec"]["runPolicy"]["suspend"] is True  # the hub's webhook, as Kueue's

    done = None
    stream = watch.Watch()
    for event in stream.stream(custom.list_namespaced_custom_object, "kubeflow.org", "v1", "default", "pytorchjobs",
                               field_selector=f"metadata.name={name}", timeout_seconds=150):
        if condition(event["object"], "Succeeded"):
            done = event["object"]
            stream.stop()
    assert done is not None, f"the PyTorchJob did not succeed: {hub.log()[-3000:]}"
    assert done["spec"]["runPolicy"]["suspend"] is False

    def finished_workload() -> dict[str, Any] | None:
        workloads = custom.list_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "default", "workloads")["items"]
        (wl,) = [w for w in workloads if any(o["name"] == name and o["kind"] == "PyTorchJob"
                                             for o in w["metadata"].get("ownerReferences") or [])]
        return wl if condition(wl, "Finished") else None

    wl = wait_for("the PyTorchJob's Workload to finish", finished_workload, log=hub.log)  # the hub follows the job
    assert condition(wl, "Admitted")
    assert [ps["name"] for ps in wl["spec"]["podSets"]] == ["master", "worker"]
