"""Concurrent admission by the hub on a Kubernetes API server (``mkhub dev-cluster``), as Kueue
shows it: Kueue's concurrent-admission example (e2e/kueue-examples, unchanged) applied with
kubectl, the hub started with the ConcurrentAdmission gate; a Job's Workload is labelled a parent,
its variants are Workloads owned by it (a valid owner reference: the parent's uid), the parent is
admitted with its variant's flavor and the Job unsuspended; deleting the Job deletes the parent
and its variants."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_kube_jobs import condition, hub_on_dev_cluster, kubectl, wait_for

from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(240)

EXAMPLE = Path(__file__).resolve().parent / "kueue-examples" / "concurrent-admission-setup.yaml"
PARENT = "kueue.x-k8s.io/concurrent-admission-parent"
ALLOWED = "kueue.x-k8s.io/workload-allowed-resource-flavors"
JOB = yaml.safe_dump({
    "apiVersion": "batch/v1", "kind": "Job",
    "metadata": {"name": "sample-job", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "team-queue"}},
    "spec": {"template": {
        "metadata": {"annotations": {"mkhub.dev/sim-duration": "1h"}},
        "spec": {"restartPolicy": "Never", "containers": [
            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}},
})


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Path, KubeHub]]:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                                      "featureGates": {"ConcurrentAdmission": True}}))
    with hub_on_dev_cluster(tmp_path, EXAMPLE.read_text(), hub_args=("--config", str(config))) as running:
        yield running


def workloads(kc: Path, *args: str) -> list[dict[str, Any]]:
    out = kubectl(kc, "get", "workloads", "-n", "default", "-o", "json", *args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["items"]  # type: ignore[no-any-return]


def test_a_job_runs_through_its_variant_on_the_most_preferred_flavor(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    created = kubectl(kc, "create", "-f", "-", stdin=JOB)
    assert created.returncode == 0, created.stderr

    def admitted_parent() -> dict[str, Any] | None:
        parents = workloads(kc, "-l", f"{PARENT}=true")
        return parents[0] if parents and condition(parents[0], "Admitted") else None

    parent = wait_for("the parent Workload admitted", admitted_parent, log=hub.log)
    assert parent["metadata"]["ownerReferences"][0]["name"] == "sample-job"
    assert parent["status"]["admission"]["podSetAssignments"][0]["flavors"] == {"cpu": "reservation", "memory": "reservation"}
    base = parent["metadata"]["name"].rsplit("-", 1)[0]
    assert condition(parent, "Admitted")["message"].startswith(f"The variant {base}-variant-reservation-")
    variants = [w for w in workloads(kc) if w["metadata"]["name"] != parent["metadata"]["name"]]
    assert sorted(v["metadata"]["annotations"][ALLOWED] for v in variants) == ["on-demand", "reservation", "spot"]
    for v in variants:
        (owner,) = v["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"]) == ("Workload", parent["metadata"]["name"], parent["metadata"]["uid"])
        assert PARENT not in (v["metadata"].get("labels") or {})

    def active() -> dict[str, bool]:
        return {v["metadata"]["annotations"][ALLOWED]: v["spec"].get("active", True)
                for v in workloads(kc) if (v["metadata"].get("annotations") or {}).get(ALLOWED)}

    expected = {"reservation": True, "on-demand": False, "spot": False}
    wait_for("the less preferred variants deactivated", lambda: active() == expected, log=hub.log)
    job = json.loads(kubectl(kc, "get", "job", "sample-job", "-n", "default", "-o", "json").stdout)
    assert job["spec"]["suspend"] is False

    deleted = kubectl(kc, "delete", "job", "sample-job", "-n", "default")
    assert deleted.returncode == 0, deleted.stderr
    wait_for("the parent and its variants deleted", lambda: not workloads(kc), log=hub.log)


def test_a_running_job_migrates_when_the_preferred_flavors_quota_is_raised(setup: tuple[Path, KubeHub]) -> None:
    """Kueue's e2e (test/e2e/singlecluster/baseline/concurrent_admission_test.go), on the example."""
    kc, hub = setup
    zero = '[{"op": "replace", "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota", "value": 0}]'
    assert kubectl(kc, "patch", "clusterqueue", "team-cluster-queue", "--type", "json", "-p", zero).returncode == 0
    created = kubectl(kc, "create", "-f", "-", stdin=JOB)
    assert created.returncode == 0, created.stderr

    def admitted_on(flavor: str) -> dict[str, Any] | None:
        parents = workloads(kc, "-l", f"{PARENT}=true")
        ok = parents and condition(parents[0], "Admitted") and \
            parents[0]["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"] == flavor
        return parents[0] if ok else None

    wait_for("the parent admitted on on-demand", lambda: admitted_on("on-demand"), log=hub.log)
    variants = {v["metadata"]["annotations"][ALLOWED]: v for v in workloads(kc) if (v["metadata"].get("annotations") or {}).get(ALLOWED)}
    assert condition(variants["on-demand"], "Admitted")
    assert variants["reservation"]["spec"].get("active", True) is True  # still pursuing the preferred flavor

    four = '[{"op": "replace", "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota", "value": 4}]'
    assert kubectl(kc, "patch", "clusterqueue", "team-cluster-queue", "--type", "json", "-p", four).returncode == 0
    wait_for("the parent migrated to reservation", lambda: admitted_on("reservation"), log=hub.log)
    wait_for("the on-demand variant deactivated", lambda: [
        v for v in workloads(kc) if (v["metadata"].get("annotations") or {}).get(ALLOWED) == "on-demand"
        and v["spec"].get("active", True) is False], log=hub.log)
    job = json.loads(kubectl(kc, "get", "job", "sample-job", "-n", "default", "-o", "json").stdout)
    assert job["spec"]["suspend"] is False  # running again, now on reservation
