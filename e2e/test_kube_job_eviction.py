"""Evicting and re-admitting a running Job on a dev-cluster as strict as kube-apiserver.

The dev-cluster refuses what kube-apiserver refuses (hub.kubeapi.jobrules): a started
Job's pod template may not change its nodeSelector or tolerations. The hub runs on it
with the Job webhook; the Job's flavor has nodeLabels and tolerations. A running Job is
evicted (its Workload deactivated), then re-admitted: the hub stops it in Kueue's steps
(suspend, clear ``status.startTime``, restore the template) and starts it again with the
flavor injected, with no refused write, no rebuild and no exit. Before, the one update of
suspend and template was refused with 422, the round failed, the rebuild's first round
failed the same way and ``mkhub serve`` exited.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_kube_jobs import condition, get, hub_on_dev_cluster, job, kubectl, wait_for

from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(240)

TOLERATION = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}

QUEUES = f"""\
apiVersion: v1
kind: Namespace
metadata: {{name: team-a}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {{name: spot}}
spec:
  nodeLabels: {{pool: cpu}}
  tolerations: [{json.dumps(TOLERATION)}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: cluster-queue}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: spot
      resources: [{{name: cpu, nominalQuota: 2}}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{name: user-queue, namespace: team-a}}
spec: {{clusterQueue: cluster-queue}}
"""


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Path, KubeHub]]:
    with hub_on_dev_cluster(tmp_path, QUEUES) as running:
        yield running


def _running(kc: Path) -> dict[str, Any] | None:
    j = get(kc, "job", "long")
    return j if j["spec"].get("suspend") is False and (j.get("status") or {}).get("active") else None


def _set_active(kc: Path, wl_name: str, active: bool) -> None:
    patch = json.dumps({"spec": {"active": active}})
    out = kubectl(kc, "patch", "workload", wl_name, "-n", "team-a", "--type", "merge", "-p", patch)
    assert out.returncode == 0, out.stderr


def test_a_running_job_is_evicted_and_readmitted_on_a_strict_api_server(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    created = kubectl(kc, "create", "-f", "-", stdin=job("long", duration="600s"))
    assert created.returncode == 0, created.stderr
    j = wait_for("the Job running", lambda: _running(kc), log=hub.log)
    pod = j["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "cpu"} and pod["tolerations"] == [TOLERATION]
    assert j["status"].get("startTime")
    # The dev-cluster is as strict as kube-apiserver: a started Job's scheduling directives are fixed.
    refused = kubectl(kc, "patch", "job", "long", "-n", "team-a", "--type", "merge",
                      "-p", '{"spec":{"suspend":true,"template":{"spec":{"nodeSelector":null}}}}')
    assert refused.returncode != 0 and "spec.template" in refused.stderr and "field is immutable" in refused.stderr

    wl_name = get(kc, "workloads")["items"][0]["metadata"]["name"]
    _set_active(kc, wl_name, False)

    def stopped() -> dict[str, Any] | None:
        j = get(kc, "job", "long")
        pod = j["spec"]["template"]["spec"]
        restored = "nodeSelector" not in pod and "tolerations" not in pod
        return j if j["spec"].get("suspend") is True and restored else None

    j = wait_for("the Job stopped and its template restored", stopped, log=hub.log)
    assert "startTime" not in j["status"]  # cleared between the suspend and the restore, as Kueue does
    assert "kueue.x-k8s.io/stopping" not in (j["metadata"].get("annotations") or {})
    wait_for("its pods gone", lambda: not get(kc, "pods", "-l", "batch.kubernetes.io/job-name=long")["items"], log=hub.log)
    assert condition(get(kc, "workload", wl_name), "Evicted") is not None

    _set_active(kc, wl_name, True)
    j = wait_for("the Job running again", lambda: _running(kc), log=hub.log)
    pod = j["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "cpu"} and pod["tolerations"] == [TOLERATION]
    assert condition(get(kc, "workload", wl_name), "Admitted") is not None

    assert hub.proc is not None and hub.proc.poll() is None, hub.log()[-3000:]  # still serving: no crash loop
    log = hub.log()
    assert "rebuilding the engine" not in log, log[-3000:]
    assert "cannot stop Job" not in log and "cannot start Job" not in log, log[-3000:]
