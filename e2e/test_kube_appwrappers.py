"""AppWrappers through the hub on a Kubernetes API server, end to end with real processes.

``mkhub dev-cluster`` (with its simulated AppWrapper controller, which creates the components
through the API), the hub's webhooks registered in it, and ``mkhub serve --kubeconfig
--webhook-listen`` with a Configuration enabling ``workload.codeflare.dev/appwrapper``. Kueue's
published Deployment and LeaderWorkerSet AppWrapper samples, unchanged, created with kubectl:
suspended by the webhook, ONE Workload with every component's pod sets, admitted, the flavor's
nodeSelector written into the wrapped templates, the components created owned by the
AppWrapper (not queued on their own) and their Pods Running; deleting it takes the Workload
and the components with it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import frameworks_config, samples_queue_setup
from test_kube_jobs import condition, hub_on_dev_cluster, kubectl, wait_for
from test_kube_jobsets import get, workload_of

from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(300)

EXAMPLES = Path(__file__).resolve().parent / "kueue-examples" / "appwrapper"
QUEUES = samples_queue_setup({"cpu": "4", "memory": "4Gi"}, node_labels={"pool": "cpu"})
CONFIG = frameworks_config("batch/job", "workload.codeflare.dev/appwrapper")
LABEL = "workload.codeflare.dev/appwrapper"


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Path, KubeHub]]:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    with hub_on_dev_cluster(tmp_path, QUEUES, ("--config", str(config))) as running:
        yield running


def running_pods(kc: Path, appwrapper: str) -> list[dict[str, Any]]:
    out = kubectl(kc, "get", "pods", "-n", "default", "-l", f"{LABEL}={appwrapper}", "-o", "json")
    assert out.returncode == 0, out.stderr
    return [p for p in json.loads(out.stdout)["items"] if (p.get("status") or {}).get("phase") == "Running"]


def run_sample(kc: Path, hub: KubeHub, file: str, name: str, pods: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Create Kueue's sample with kubectl; its Workload and the AppWrapper once ``pods`` Pods run."""
    sample = (EXAMPLES / file).read_text()
    dry = kubectl(kc, "create", "--dry-run=server", "-o", "json", "-f", "-", stdin=sample)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["spec"]["suspend"] is True  # the webhook's mutation, as stored
    created = kubectl(kc, "create", "-f", "-", stdin=sample)
    assert created.returncode == 0, created.stderr

    def running() -> dict[str, Any] | None:
        aw = get(kc, "appwrapper", name)
        ready = (aw.get("status") or {}).get("phase") == "Running" and condition(aw, "PodsReady")
        return aw if ready and len(running_pods(kc, name)) == pods else None

    aw = wait_for(f"{name} Running with {pods} Pods", running, timeout=150, log=hub.log)
    wl = workload_of(kc, "AppWrapper", name)
    assert wl is not None and condition(wl, "Admitted") and not condition(wl, "Finished")
    return aw, wl


def test_kueues_deployment_appwrapper_is_one_workload_and_runs(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    aw, wl = run_sample(kc, hub, "deployment-sample.yaml", "sample-appwrapper-deployment", 3)
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("sample-appwrapper-deployment-0", 3)]
    owner = wl["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("AppWrapper", aw["metadata"]["name"], aw["metadata"]["uid"])
    assert aw["spec"]["suspend"] is False
    template = aw["spec"]["components"][0]["template"]["spec"]["template"]
    assert template["spec"]["nodeSelector"] == {"pool": "cpu"}  # Kueue's admission, in the wrapped template
    dep = get(kc, "deployment", "nginx-deployment")
    assert dep["metadata"]["ownerReferences"][0]["kind"] == "AppWrapper"
    assert dep["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "cpu"}
    assert all(p["spec"]["nodeSelector"] == {"pool": "cpu"} for p in running_pods(kc, "sample-appwrapper-deployment"))
    assert len(get(kc, "workloads")["items"]) == 1  # the Deployment and its Pods are not queued on their own
    table = kubectl(kc, "get", "aw", "-n", "default")
    assert table.returncode == 0, table.stderr
    assert table.stdout.split()[:7] == ["NAME", "STATUS", "QUOTA", "RESERVED", "RESOURCES", "DEPLOYED", "UNHEALTHY"]

    deleted = kubectl(kc, "delete", "appwrapper", "sample-appwrapper-deployment", "-n", "default")
    assert deleted.returncode == 0, deleted.stderr
    wait_for("the Workload and the Deployment gone with the AppWrapper",
             lambda: workload_of(kc, "AppWrapper", "sample-appwrapper-deployment") is None
             and kubectl(kc, "get", "deployment", "nginx-deployment", "-n", "default").returncode != 0, log=hub.log)


def test_kueues_leaderworkerset_appwrapper_admits_both_pod_sets_as_one(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    _, wl = run_sample(kc, hub, "leaderworkerset-sample.yaml", "sample-appwrapper-lws", 6)
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("sample-appwrapper-lws-0", 2),
                                                                           ("sample-appwrapper-lws-1", 3)]
    assert sorted(psa["name"] for psa in wl["status"]["admission"]["podSetAssignments"]) == \
        ["sample-appwrapper-lws-0", "sample-appwrapper-lws-1"]
    lws = get(kc, "leaderworkerset", "nginx-leaderworkerset")
    assert lws["metadata"]["ownerReferences"][0]["kind"] == "AppWrapper"
    assert len(get(kc, "workloads")["items"]) == 1


def test_an_appwrapper_too_big_for_its_queue_waits_suspended_with_nothing_created(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    big = yaml.safe_load((EXAMPLES / "deployment-sample.yaml").read_text())
    big["metadata"]["name"] = "too-big"
    big["spec"]["components"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    out = kubectl(kc, "create", "-f", "-", stdin=yaml.safe_dump(big))  # 3 x 2 CPUs > 4
    assert out.returncode == 0, out.stderr

    def pending() -> dict[str, Any] | None:
        w = workload_of(kc, "AppWrapper", "too-big")
        tried = w is not None and any(c["type"] == "QuotaReserved" for c in (w.get("status") or {}).get("conditions") or [])
        return w if tried else None

    wl = wait_for("the Workload pending", pending, log=hub.log)
    assert not condition(wl, "QuotaReserved")
    aw = get(kc, "appwrapper", "too-big")
    assert aw["spec"]["suspend"] is True and aw["status"]["phase"] == "Suspended"
    assert kubectl(kc, "get", "deployment", "nginx-deployment", "-n", "default").returncode != 0
