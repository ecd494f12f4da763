"""SparkApplications (Kueue's alpha SparkApplication integration) through the hub on a Kubernetes API
server, end to end with real processes, and through ``mkhub create`` against the embedded hub.

``mkhub dev-cluster`` (its simulated Spark operator creates the driver, then the executors, through
the API), the hub's webhooks registered in it, and ``mkhub serve --kubeconfig --webhook-listen`` with a
Configuration enabling ``sparkoperator.k8s.io/sparkapplication`` (and its feature gate). Kueue's
published sample, unchanged, created with kubectl: suspended by the webhook, one Workload with a
``driver`` (1) and an ``executor`` (2) pod set, admitted, the flavor's nodeSelector in both roles, the
driver then its executors running there, COMPLETED, and the Workload Finished.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import samples_queue_setup
from test_embedded_jobsets import get_json, mkhub, true
from test_kube_jobs import condition, hub_on_dev_cluster, kubectl, wait_for
from test_kube_jobsets import get, workload_of

from hub.demo.processes import HubProcess
from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(300)

SAMPLE = Path(__file__).resolve().parent / "kueue-examples" / "sample-sparkapplication.yaml"
QUEUES = samples_queue_setup({"cpu": "4", "memory": "4Gi"}, node_labels={"pool": "cpu"})
CONFIG = {"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration",
          "featureGates": {"SparkApplicationIntegration": True},
          "integrations": {"frameworks": ["batch/job", "sparkoperator.k8s.io/sparkapplication"]}}


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Path, KubeHub]]:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    with hub_on_dev_cluster(tmp_path, QUEUES, ("--config", str(config))) as running:
        yield running


def test_kueues_sparkapplication_sample_runs_driver_then_executors(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    dry = kubectl(kc, "create", "--dry-run=server", "-o", "json", "-f", str(SAMPLE))
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["spec"]["suspend"] is True  # the webhook's mutation, as stored
    created = kubectl(kc, "create", "-f", str(SAMPLE))
    assert created.returncode == 0, created.stderr

    def running() -> dict[str, Any] | None:
        pods = {p["metadata"]["name"]: p for p in get(kc, "pods")["items"]
                if (p.get("status") or {}).get("phase") == "Running"}
        return pods if {"spark-pi-driver", "spark-pi-exec-1", "spark-pi-exec-2"} <= set(pods) else None

    pods = wait_for("the driver and both executors running", running, timeout=150, log=hub.log)
    assert all(p["spec"]["nodeSelector"] == {"pool": "cpu"} for p in pods.values())  # the flavor's, in both roles
    wl = workload_of(kc, "SparkApplication", "spark-pi")
    assert wl is not None and condition(wl, "Admitted")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("driver", 1), ("executor", 2)]
    app = get(kc, "sparkapplication", "spark-pi")
    assert app["spec"]["suspend"] is False and app["spec"]["driver"]["nodeSelector"] == {"pool": "cpu"}

    def finished() -> dict[str, Any] | None:
        w = workload_of(kc, "SparkApplication", "spark-pi")
        return w if w is not None and condition(w, "Finished") else None

    done = wait_for("the Workload finished", finished, timeout=120, log=hub.log)
    assert condition(done, "Finished")["reason"] == "Succeeded"
    assert get(kc, "sparkapplication", "spark-pi")["status"]["applicationState"]["state"] == "COMPLETED"
    table = kubectl(kc, "get", "sparkapp", "-n", "default")
    assert table.returncode == 0 and table.stdout.split()[:3] == ["NAME", "STATUS", "ATTEMPTS"], table.stderr


def test_kueues_sparkapplication_sample_runs_in_the_embedded_hub(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    queues = samples_queue_setup({"cpu": "8", "memory": "8Gi"}, flavor="default-flavor")
    with HubProcess(tmp_path / "data", extra_args=["--config", str(tmp_path / "config.yaml"), "--sim-duration", "1s"]) as hub:
        code, _, err = mkhub(hub, "apply", "-f", "-", stdin=queues)
        assert code == 0, err
        code, out, err = mkhub(hub, "create", "-f", str(SAMPLE))
        assert code == 0, err
        deadline = time.monotonic() + 60
        while True:
            app = get_json(hub, "sparkapplication", "spark-pi")
            if ((app.get("status") or {}).get("applicationState") or {}).get("state") == "COMPLETED":
                break
            assert time.monotonic() < deadline, json.dumps(app)[:2000]
            time.sleep(0.2)
        (wl,) = get_json(hub, "workloads")["items"]
        assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("driver", 1), ("executor", 2)]
        assert true(wl, "Finished") and true(wl, "Admitted")
        bad = yaml.safe_load(SAMPLE.read_text())
        bad["metadata"]["name"] = "client-mode"
        bad["spec"]["mode"] = "client"
        code, _, err = mkhub(hub, "create", "-f", "-", stdin=yaml.safe_dump(bad))
        assert code == 1 and 'spec.mode: Invalid value: "client": only Cluster mode is supported' in err
