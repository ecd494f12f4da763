"""Kueue's CronJob sample through the hub on a Kubernetes API server, end to end.

``mkhub dev-cluster`` with its controllers' clock at 60 times real time (``--time-scale``, from
``$MKHUB_DEV_CLUSTER_TIME_SCALE``: the sample's ``* * * * *`` fires every real second, so no test
waits a minute), the hub's webhooks registered in it and ``mkhub serve --kubeconfig
--webhook-listen``. Kueue's published CronJob sample, unchanged, created with kubectl: the CronJob
controller creates its Jobs through the API, they carry the queue label of its jobTemplate, the
hub's webhook creates them suspended (one waits so while its queue is too small), they get their
Workloads, are admitted, run and complete. A malformed ``--time-scale`` is refused in one line.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_harness import samples_queue_setup
from test_kube_jobs import ROOT, condition, hub_on_dev_cluster, kubectl, wait_for

from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(240)

SAMPLE = Path(__file__).resolve().parent / "kueue-examples" / "sample-cronjob.yaml"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

# 2 CPUs at first: the sample's Jobs (3 pods of 1 CPU) wait until the test raises it to 3.
QUEUES = samples_queue_setup({"cpu": "2", "memory": "1Gi"}, node_labels={"pool": "cpu"})


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, KubeHub]]:
    monkeypatch.setenv("MKHUB_DEV_CLUSTER_TIME_SCALE", "60")  # read by the dev-cluster the fixture starts
    with hub_on_dev_cluster(tmp_path, QUEUES) as running:
        yield running


def get(kc: Path, *what: str) -> dict[str, Any]:
    out = kubectl(kc, "get", *what, "-n", "default", "-o", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def cron_jobs(kc: Path) -> list[dict[str, Any]]:
    """The CronJob's Jobs, oldest first."""
    jobs = [j for j in get(kc, "jobs")["items"]
            if any(o.get("kind") == "CronJob" and o.get("name") == "sample-cronjob"
                   for o in j["metadata"].get("ownerReferences") or [])]
    return sorted(jobs, key=lambda j: int(j["metadata"]["name"].rpartition("-")[2]))


def workload_of(kc: Path, job: str) -> dict[str, Any] | None:
    for wl in get(kc, "workloads")["items"]:
        if any(o.get("kind") == "Job" and o.get("name") == job for o in wl["metadata"].get("ownerReferences") or []):
            return wl  # type: ignore[no-any-return]
    return None


def test_kueues_cronjob_sample_creates_queued_jobs_that_are_admitted_and_complete(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    out = kubectl(kc, "create", "-f", str(SAMPLE))
    assert out.returncode == 0, out.stderr
    # Keep every finished Job (the default history of 3 would delete the ones this test reads while
    # later ones, one a simulated minute, finish on a slow machine).
    keep = '{"spec": {"successfulJobsHistoryLimit": 100, "failedJobsHistoryLimit": 100}}'
    out = kubectl(kc, "patch", "cronjob", "sample-cronjob", "-n", "default", "--type", "merge", "-p", keep)
    assert out.returncode == 0, out.stderr
    first = wait_for("the CronJob's first Job", lambda: cron_jobs(kc)[:1], log=hub.log)[0]
    name = first["metadata"]["name"]
    assert re.fullmatch(r"sample-cronjob-\d+", name)
    assert first["metadata"]["labels"][QUEUE_LABEL] == "user-queue"  # from the jobTemplate
    pending = wait_for("its Workload pending", lambda: (lambda w: w if w and (w.get("status") or {}).get("conditions")
                                                        else None)(workload_of(kc, name)), log=hub.log)
    assert pending["metadata"]["name"].startswith(f"job-{name}-")
    assert not condition(pending, "QuotaReserved")  # 3 CPUs asked, 2 in the queue
    assert get(kc, "job", name)["spec"]["suspend"] is True  # the hub's webhook, on the controller's create

    raise_quota = '[{"op": "replace", "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota", "value": 3}]'
    out = kubectl(kc, "patch", "clusterqueue", "cluster-queue", "--type", "json", "-p", raise_quota)
    assert out.returncode == 0, out.stderr
    done = wait_for(f"{name} Complete", lambda: condition(get(kc, "job", name), "Complete"), timeout=120, log=hub.log)
    assert done["reason"] == "CompletionsReached"
    job = get(kc, "job", name)
    assert job["spec"]["suspend"] is False and job["status"]["succeeded"] == 3
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "cpu"}  # the flavor's nodeLabels
    fin = wait_for("its Workload Finished", lambda: condition(workload_of(kc, name) or {}, "Finished"), log=hub.log)
    assert fin["reason"] == "Succeeded"

    out = kubectl(kc, "patch", "cronjob", "sample-cronjob", "-n", "default", "--type", "merge",
                  "-p", '{"spec": {"suspend": true}}')
    assert out.returncode == 0, out.stderr
    jobs = cron_jobs(kc)
    assert len(jobs) >= 2  # one a (simulated) minute: the later ones queued behind the first
    assert all(j["metadata"]["labels"][QUEUE_LABEL] == "user-queue" for j in jobs)
    second = jobs[1]["metadata"]["name"]
    wait_for(f"{second} Complete too", lambda: condition(get(kc, "job", second), "Complete"), timeout=120, log=hub.log)
    cj = get(kc, "cronjob", "sample-cronjob")
    assert cj["status"]["lastSuccessfulTime"]


@pytest.mark.parametrize("scale", ["fast", "0", "-2", "nan", "1e9"])
def test_a_malformed_time_scale_is_refused_in_one_line(tmp_path: Path, scale: str) -> None:
    out = subprocess.run([sys.executable, "-m", "hub.cli", "dev-cluster", "--data-dir", str(tmp_path / "dc"),
                          "--listen", "127.0.0.1:0", "--time-scale", scale],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        f"error: --time-scale {scale!r}: must be a number from 0.001 to 3600 (how many times faster than real time "
        "the simulated controllers' clock runs)"]
    assert not (tmp_path / "dc").exists()
