"""Kueue's Job integration on a Kubernetes API server, end to end with real processes.

``mkhub dev-cluster`` (one node labelled ``pool: cpu``), the hub's mutating webhook
registered in it with a ``MutatingWebhookConfiguration`` applied with kubectl, and
``mkhub serve --kubeconfig --webhook-listen`` standalone. A Job created with
``kubectl create`` is suspended by the webhook, gets a Workload owned by it, is
admitted, unsuspended with the flavor's nodeSelector, run by the dev-cluster's Job
controller and pods, and its completion finishes the Workload. A deactivated
Workload suspends its Job and restores the template; deleting the Job deletes the
Workload; a Job with a bad queue label is refused with the field named; a Job of a
MultiKueue queue gets ``managedBy: kueue.x-k8s.io/multikueue`` and is never run in the manager.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import one_queue_setup

from hub.demo.processes import free_port
from tests.store.kube.harness import ApiServer, _server_of, register_job_webhook
from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[1]

NODES = {"nodes": [{"name": "cpu-1", "labels": {"pool": "cpu"}}]}

QUEUES = one_queue_setup(2, flavor="cpu-pool", node_labels={"pool": "cpu"})


def job(name: str, queue: str = "user-queue", duration: str = "1s", cpu: str = "1") -> str:
    return yaml.safe_dump({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {"template": {
            "metadata": {"annotations": {"mkhub.dev/sim-duration": duration}},
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}},
    })


def kubectl(
    kubeconfig: Path, *args: str, stdin: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )


def get(kubeconfig: Path, *what: str) -> dict[str, Any]:
    out = kubectl(kubeconfig, "get", *what, "-n", "team-a", "-o", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0, log: Callable[[], str] = str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{log()[-3000:]}"
        time.sleep(0.1)


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_ and c.get("status") == "True":
            return c  # type: ignore[no-any-return]
    return None


def start_dev_cluster(data: Path) -> ApiServer:
    data.mkdir(parents=True, exist_ok=True)
    (data.parent / "nodes.yaml").write_text(yaml.safe_dump(NODES))
    log = (data.parent / "dev-cluster.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hub.cli", "dev-cluster", "--data-dir", str(data), "--listen", "127.0.0.1:0",
         "--nodes", str(data.parent / "nodes.yaml")],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while not (data / "kubeconfig").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"mkhub dev-cluster did not start: {log.name}")
        time.sleep(0.05)
    return ApiServer(data / "kubeconfig", _server_of(data / "kubeconfig"), proc)


@contextmanager
def hub_on_dev_cluster(tmp_path: Path, queues: str, hub_args: tuple[str, ...] = ()) -> Iterator[tuple[Path, KubeHub]]:
    """A dev-cluster with Kueue's CRDs, ``queues`` applied and the hub's webhooks registered, and a hub on it
    (with ``hub_args`` too: ``--config FILE``...)."""
    api = start_dev_cluster(tmp_path / "cluster")
    hub: KubeHub | None = None
    try:
        kc = api.kubeconfig
        certs = subprocess.run([sys.executable, "-m", "hub.cli", "certs", "--out", str(tmp_path / "certs")],
                               cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert certs.returncode == 0, certs.stderr
        port = free_port()
        register_job_webhook(kc, tmp_path / "certs", port)
        for args in (("apply", "-f", str(ROOT / "manifests/crds")), ("apply", "-f", "-")):
            out = kubectl(kc, *args, stdin=queues)
            assert out.returncode == 0, out.stderr
        hub = KubeHub(kc, tmp_path / "hub.log", extra_args=[
            "--lease-duration", "3s", "--renew-deadline", "2s", "--retry-period", "0.5s",
            "--webhook-listen", f"127.0.0.1:{port}", "--webhook-tls-dir", str(tmp_path / "certs"), *hub_args]).start()
        hub.wait_serving()
        yield kc, hub
    finally:
        if hub is not None:
            hub.kill()
        api.stop()


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Path, KubeHub]]:
    with hub_on_dev_cluster(tmp_path, QUEUES) as running:
        yield running


def test_job_runs_through_the_webhook_admission_and_the_cluster(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    dry = kubectl(kc, "create", "--dry-run=server", "-o", "json", "-f", "-", stdin=job("sample", duration="1s"))
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["spec"]["suspend"] is True  # the webhook's mutation, as the API server stores it
    assert "managedBy" not in json.loads(dry.stdout)["spec"]  # no MultiKueue admission check on this queue
    created = kubectl(kc, "create", "-f", "-", stdin=job("sample", duration="1s"))
    assert created.returncode == 0, created.stderr
    stored = get(kc, "job", "sample")

    def workload() -> dict[str, Any] | None:
        items = get(kc, "workloads")["items"]
        return items[0] if items else None

    wl = wait_for("the Workload", workload, log=hub.log)
    assert wl["metadata"]["name"].startswith("job-sample-")
    owner = wl["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("Job", "sample", stored["metadata"]["uid"], True)

    def running() -> dict[str, Any] | None:
        j = get(kc, "job", "sample")
        return j if j["spec"].get("suspend") is False else None

    j = wait_for("the Job unsuspended", running, log=hub.log)
    assert j["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "cpu"}  # the flavor's nodeLabels
    done = wait_for("the Job complete", lambda: condition(get(kc, "job", "sample"), "Complete"), log=hub.log)
    assert done["reason"] == "CompletionsReached"
    pods = get(kc, "pods", "-l", "batch.kubernetes.io/job-name=sample")["items"]
    assert [p["spec"].get("nodeName") for p in pods] == ["cpu-1"]
    fin = wait_for("the Workload finished", lambda: condition(get(kc, "workload", wl["metadata"]["name"]), "Finished"),
                   log=hub.log)
    assert fin["reason"] == "Succeeded"
    assert get(kc, "job", "sample")["status"]["succeeded"] == 1  # the Job controller's count, not the hub's

    deleted = kubectl(kc, "delete", "job", "sample", "-n", "team-a")
    assert deleted.returncode == 0, deleted.stderr
    wait_for("the Workload deleted with its Job", lambda: not get(kc, "workloads")["items"], log=hub.log)


def test_evicted_job_is_suspended_with_its_template_restored(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    created = kubectl(kc, "create", "-f", "-", stdin=job("long", duration="600s"))
    assert created.returncode == 0, created.stderr

    def running() -> dict[str, Any] | None:
        j = get(kc, "job", "long")
        return j if j["spec"].get("suspend") is False and (j.get("status") or {}).get("active") else None

    j = wait_for("the Job running", running, log=hub.log)
    assert j["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "cpu"}
    wl_name = get(kc, "workloads")["items"][0]["metadata"]["name"]
    out = kubectl(kc, "patch", "workload", wl_name, "-n", "team-a", "--type", "merge", "-p", '{"spec":{"active":false}}')
    assert out.returncode == 0, out.stderr

    def suspended() -> dict[str, Any] | None:
        j = get(kc, "job", "long")
        # Kueue's stop is staged: suspend (marked stopping) first, the template restored by the next write.
        stopping = "kueue.x-k8s.io/stopping" in (j["metadata"].get("annotations") or {})
        return j if j["spec"].get("suspend") is True and not stopping else None

    j = wait_for("the Job suspended", suspended, log=hub.log)
    assert "nodeSelector" not in j["spec"]["template"]["spec"]  # restored from the Workload's pod set
    wait_for("its pods gone", lambda: not get(kc, "pods", "-l", "batch.kubernetes.io/job-name=long")["items"], log=hub.log)
    wl = get(kc, "workload", wl_name)
    assert condition(wl, "Evicted") is not None and condition(wl, "Finished") is None


def test_job_with_a_bad_queue_label_is_refused_by_the_webhook(setup: tuple[Path, KubeHub]) -> None:
    kc, _ = setup
    out = kubectl(kc, "create", "-f", "-", stdin=job("bad", queue="Not_A_Name"))
    assert out.returncode != 0
    assert 'admission webhook "mjob.kb.io" denied the request' in out.stderr, out.stderr
    assert "metadata.labels[kueue.x-k8s.io/queue-name]" in out.stderr, out.stderr
    assert not get(kc, "jobs")["items"]  # nothing stored


def test_a_job_of_a_multikueue_queue_is_managed_by_multikueue_and_never_run_in_the_manager(
    setup: tuple[Path, KubeHub],
) -> None:
    kc, hub = setup
    out = kubectl(kc, "apply", "-f", str(ROOT / "manifests/samples/multikueue/hub.yaml"))
    assert out.returncode == 0, out.stderr

    def hub_knows_the_queue() -> bool:
        # the webhook reads the hub's cache: wait until the hub has seen the LocalQueue
        dry = kubectl(kc, "create", "--dry-run=server", "-o", "json", "-f", "-", stdin=job("gpu", queue="gpu-queue"))
        return dry.returncode == 0 and json.loads(dry.stdout)["spec"].get("managedBy") == "kueue.x-k8s.io/multikueue"

    wait_for("the webhook to set managedBy", hub_knows_the_queue, log=hub.log)
    created = kubectl(kc, "create", "-f", "-", stdin=job("gpu", queue="gpu-queue"))
    assert created.returncode == 0, created.stderr
    stored = get(kc, "job", "gpu")
    assert stored["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue" and stored["spec"]["suspend"] is True

    def pending() -> dict[str, Any] | None:
        items = get(kc, "workloads")["items"]
        return items[0] if items and (items[0].get("status") or {}).get("conditions") else None

    wl = wait_for("its Workload in the manager", pending, log=hub.log)
    assert wl["spec"]["queueName"] == "gpu-queue" and condition(wl, "Admitted") is None
    # no worker connected: the MultiKueue check is inactive and nothing is dispatched or run
    assert get(kc, "job", "gpu")["spec"]["suspend"] is True
    assert not get(kc, "pods")["items"]
