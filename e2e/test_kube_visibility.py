"""Kueue's visibility API on Kubernetes, end to end: ``mkhub dev-cluster`` proxies the
``APIService`` of ``manifests/dev-cluster/visibility.yaml`` (an ExternalName Service, the
hub's CA as caBundle, checked for ``mkhub-visibility.mkhub-system.svc``) to
``mkhub serve --kubeconfig --visibility-listen``, as kube-apiserver's aggregator proxies
Kueue's visibility server; real kubectl reads it with ``get --raw`` and lists the group
(``api-versions``). The APIService is Available only while the hub answers.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import one_queue_setup

from hub.demo.processes import free_port
from tests.store.kube.harness import ApiServer, start_dev_cluster
from tests.store.kube.hubproc import FAST_LEASE, KubeHub

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[1]
GROUP = "visibility.kueue.x-k8s.io"


def kubectl(kc: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", str(kc), *args], input=stdin, capture_output=True, text=True,
                          timeout=60)


def raw(kc: Path, path: str) -> dict[str, Any]:
    out = kubectl(kc, "get", "--raw", path)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0, log: Callable[[], str] = str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{log()[-3000:]}"
        time.sleep(0.2)


def available(kc: Path, version: str) -> dict[str, Any]:
    obj = json.loads(kubectl(kc, "get", "apiservice", f"{version}.{GROUP}", "-o", "json").stdout)
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "Available"), {"status": ""})  # type: ignore[no-any-return]


def workload(name: str) -> str:
    return yaml.safe_dump({
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
        # Runs (simulated) longer than the test: the second and third stay pending however slow it goes.
        "metadata": {"name": name, "namespace": "team-a", "annotations": {"mkhub.dev/sim-duration": "10m"}},
        "spec": {"queueName": "user-queue", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]},
    })


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[Path, Path, int]]:
    if not shutil.which("kubectl"):
        pytest.skip("kubectl is not installed")
    api: ApiServer = start_dev_cluster(tmp_path / "cluster")
    try:
        certs = subprocess.run([sys.executable, "-m", "hub.cli", "certs", "--out", str(tmp_path / "certs"),
                                "--hub-name", "mkhub-visibility.mkhub-system.svc"],
                               cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert certs.returncode == 0, certs.stderr
        port = free_port()
        docs = list(yaml.safe_load_all((ROOT / "manifests/dev-cluster/visibility.yaml").read_text()))
        ca = base64.b64encode((tmp_path / "certs" / "ca.crt").read_bytes()).decode()
        for doc in docs:
            if doc["kind"] == "APIService":  # checked against the hub's CA instead of not at all
                del doc["spec"]["insecureSkipTLSVerify"]
                doc["spec"]["caBundle"] = ca
                doc["spec"]["service"]["port"] = port
        kc = api.kubeconfig
        for args, stdin in ((("apply", "-f", str(ROOT / "manifests/crds")), None),
                            (("apply", "-f", "-"), one_queue_setup(1)),
                            (("create", "namespace", "mkhub-system"), None),
                            (("apply", "-f", "-"), yaml.safe_dump_all(docs))):
            out = kubectl(kc, *args, stdin=stdin)
            assert out.returncode == 0, out.stderr
        yield kc, tmp_path, port
    finally:
        api.stop()


def test_visibility_api_through_the_dev_clusters_aggregator(cluster: tuple[Path, Path, int]) -> None:
    kc, tmp, port = cluster
    # No hub yet: the APIService is not available, the group is not in discovery, requests get 503.
    down = wait_for("the APIService checked", lambda: available(kc, "v1beta2").get("reason") == "FailedDiscoveryCheck"
                    and available(kc, "v1beta2"))
    assert down["status"] == "False" and f"https://127.0.0.1:{port}/apis/{GROUP}/v1beta2" in down["message"]
    assert GROUP not in kubectl(kc, "api-versions").stdout
    refused = kubectl(kc, "get", "--raw", f"/apis/{GROUP}/v1beta2/clusterqueues/cluster-queue/pendingworkloads")
    assert refused.returncode != 0 and "ServiceUnavailable" in refused.stderr, refused.stderr

    hub = KubeHub(kc, tmp / "hub.log", extra_args=[
        *FAST_LEASE, "--visibility-listen", f"127.0.0.1:{port}", "--webhook-tls-dir", str(tmp / "certs")]).start()
    try:
        hub.wait_serving()
        for name in ("first", "second", "third"):
            out = kubectl(kc, "create", "-f", "-", stdin=workload(name))
            assert out.returncode == 0, out.stderr
            if name == "first":  # one CPU: the first is admitted, the others wait in creation order
                wait_for("the first admitted", lambda: any(
                    c["type"] == "QuotaReserved" and c["status"] == "True"
                    for c in json.loads(kubectl(kc, "get", "workload", "first", "-n", "team-a", "-o", "json").stdout)
                    .get("status", {}).get("conditions", [])), log=hub.log)
            time.sleep(1.1)  # distinct creation seconds: a defined queue order
        for version in ("v1beta2", "v1beta1"):
            up = wait_for(f"{version} available", lambda v=version: available(kc, v)["status"] == "True"
                          and available(kc, v), log=hub.log)
            assert (up["reason"], up["message"]) == ("Passed", "all checks passed")
        table = kubectl(kc, "get", "apiservices").stdout.splitlines()
        assert [line.split()[:3] for line in table] == [
            ["NAME", "SERVICE", "AVAILABLE"], [f"v1beta1.{GROUP}", "mkhub-system/mkhub-visibility", "True"],
            [f"v1beta2.{GROUP}", "mkhub-system/mkhub-visibility", "True"]]

        def pending() -> dict[str, Any] | None:
            doc = raw(kc, f"/apis/{GROUP}/v1beta1/clusterqueues/cluster-queue/pendingworkloads")
            return doc if len(doc["items"]) == 2 else None

        summary = wait_for("two pending workloads", pending, log=hub.log)
        assert (summary["kind"], summary["apiVersion"]) == ("PendingWorkloadsSummary", f"{GROUP}/v1beta1")
        assert [(i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"], i["localQueueName"])
                for i in summary["items"]] == [("second", 0, 0, "user-queue"), ("third", 1, 1, "user-queue")]
        page = raw(kc, f"/apis/{GROUP}/v1beta2/namespaces/team-a/localqueues/user-queue/pendingworkloads?limit=1&offset=1")
        assert page["apiVersion"] == f"{GROUP}/v1beta2"
        assert [i["metadata"]["name"] for i in page["items"]] == ["third"]
        missing = kubectl(kc, "get", "--raw", f"/apis/{GROUP}/v1beta2/clusterqueues/nope/pendingworkloads")
        assert missing.returncode != 0 and "NotFound" in missing.stderr, missing.stderr

        # Discovery lists the group (preferred v1beta2) with Kueue's resources and subresources.
        versions = kubectl(kc, "api-versions").stdout.split()
        assert {f"{GROUP}/v1beta2", f"{GROUP}/v1beta1"} <= set(versions), versions
        group = raw(kc, f"/apis/{GROUP}")
        assert group["preferredVersion"]["version"] == "v1beta2"
        names = {r["name"]: r["verbs"] for r in raw(kc, f"/apis/{GROUP}/v1beta2")["resources"]}
        assert names == {"clusterqueues": [], "clusterqueues/pendingworkloads": ["get"], "localqueues": [],
                         "localqueues/pendingworkloads": ["get"]}
        assert kubectl(kc, "get", "clusterqueues").returncode == 0  # still Kueue's ClusterQueues, not this group's
    finally:
        hub.kill()
    # The hub gone: unavailable again, and the group leaves discovery.
    wait_for("unavailable after the hub stopped", lambda: available(kc, "v1beta2")["status"] == "False")
    assert GROUP not in kubectl(kc, "api-versions").stdout
