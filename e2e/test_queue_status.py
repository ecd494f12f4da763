"""Queue status through the real hub and CLI: counts follow deletions (no drift), and a cohort
cycle makes its ClusterQueues inactive with Kueue's reason until it is broken.

The hub runs with MKHUB_DEBUG_CHECKS=1: after every round it compares each queue's stored
counts with a recount from the workloads and logs any difference as an ERROR.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from cli_harness import HubFactory, multikueue_setup, run_cli, wait_for

from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(120)

SETUP = """
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: lq, namespace: team-a}
spec: {clusterQueue: cq}
""" + multikueue_setup(["worker-1"]) + """---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: mk-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 8}]
  admissionChecks: [multikueue]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: mk-lq, namespace: team-a}
spec: {clusterQueue: mk-cq}
"""


def job(name: str, queue: str, cpu: str) -> str:
    return json.dumps({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": queue},
                     "annotations": {"mkhub.dev/sim-duration": "10m"}},  # runs until the test ends
        "spec": {"template": {"spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}},
    })


@pytest.fixture(scope="module")
def hub(module_hub: HubFactory) -> Iterator[HubProcess]:
    proc = module_hub(SETUP, env={"MKHUB_DEBUG_CHECKS": "1"})
    yield proc
    assert "queue status drift" not in proc.log(), proc.log()[-3000:]
    assert "Traceback" not in proc.log()


def get(hub: HubProcess, kind: str, name: str, namespace: str = "") -> dict[str, Any]:
    args = ["get", kind, name, "-o", "json", *hub.connection_args()] + (["-n", namespace] if namespace else [])
    done = run_cli(args)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def counts(obj: dict[str, Any]) -> tuple[int, int, int]:
    st = obj.get("status") or {}
    return int(st.get("pendingWorkloads", 0)), int(st.get("reservingWorkloads", 0)), int(st.get("admittedWorkloads", 0))


def eventually(what: str, check: Callable[[], bool], timeout: float = 20) -> None:
    wait_for(what, check, timeout)


@pytest.mark.parametrize(
    ("queue", "cq", "cpu", "while_there"),
    [("lq", "cq", "100", (1, 0, 0)),  # too big for the queue: pending for ever
     ("mk-lq", "mk-cq", "1", (1, 0, 0))],  # no agent connected: the MultiKueue check, so the queue, is inactive
    ids=["oversize", "multikueue-without-agent"],
)
def test_deleting_the_only_job_brings_every_count_back_to_zero(
    hub: HubProcess, queue: str, cq: str, cpu: str, while_there: tuple[int, int, int]
) -> None:
    done = run_cli(["apply", "-f", "-", *hub.connection_args()], stdin=job("only", queue, cpu))
    assert done.returncode == 0, done.stderr
    eventually("the queues to count the Job", lambda: counts(get(hub, "cq", cq)) == while_there
               and counts(get(hub, "lq", queue, "team-a")) == while_there)
    done = run_cli(["delete", "job", "only", "-n", "team-a", *hub.connection_args()])
    assert done.returncode == 0, done.stderr
    eventually("the counts to go back to zero", lambda: counts(get(hub, "cq", cq)) == (0, 0, 0)
               and counts(get(hub, "lq", queue, "team-a")) == (0, 0, 0))


def test_a_cohort_cycle_makes_its_cluster_queues_inactive_until_it_is_broken(hub: HubProcess) -> None:
    cycle = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: co-a}
spec: {parentName: co-b}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: co-b}
spec: {parentName: co-a}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq-cycle}
spec:
  cohort: co-b
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: lq-cycle, namespace: team-a}
spec: {clusterQueue: cq-cycle}
"""
    done = run_cli(["apply", "-f", "-", *hub.connection_args()], stdin=cycle + "---\n" + job("in-cycle", "lq-cycle", "1"))
    assert done.returncode == 0, done.stderr  # accepted, as Kueue accepts it

    def active(name: str) -> dict[str, Any]:
        conds = [c for c in (get(hub, "cq", name).get("status") or {}).get("conditions") or [] if c["type"] == "Active"]
        return conds[0] if conds else {}

    eventually("the ClusterQueue to go inactive", lambda: active("cq-cycle").get("status") == "False")
    cond = active("cq-cycle")
    assert cond["reason"] == "CohortCycleDetected"
    assert cond["message"] == 'Can\'t admit new workloads: Cohort "co-b" has a cycle in hierarchy.'
    wide = run_cli(["get", "cq", "cq-cycle", "-o", "wide", *hub.connection_args()])
    assert wide.returncode == 0 and "False" in wide.stdout
    assert counts(get(hub, "cq", "cq-cycle")) == (1, 0, 0)  # the Job waits

    fixed = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: co-a}\nspec: {}\n"
    assert run_cli(["apply", "-f", "-", *hub.connection_args()], stdin=fixed).returncode == 0
    eventually("the ClusterQueue to be active and admit the Job", lambda: active("cq-cycle").get("status") == "True"
               and counts(get(hub, "cq", "cq-cycle")) == (0, 1, 1))
