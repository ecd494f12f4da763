"""``/metrics`` of a real hub and two real agents after a scripted MultiKueue run.

A hub ClusterQueue of 5 CPUs (MultiKueue check, preemption of lower priorities
within the queue) dispatches to two workers. The script: ``low`` (4 CPUs) runs;
``high`` (4 CPUs, higher priority) preempts it; ``short`` (1 CPU, 300 ms) runs
to the end; ``high`` is deactivated (an eviction), and ``low`` is admitted and
runs again. Each named metric is then checked for its value, on the hub and on
the agents.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable

import pytest
import yaml
from cli_harness import AgentFactory, HubFactory, multikueue_setup, run_cli
from prometheus_client.parser import text_string_to_metric_families

from hub.demo.processes import AgentProcess, HubProcess, free_port

pytestmark = pytest.mark.timeout(120)

WORKERS = ("worker-1", "worker-2")
CQ = "cq"

HUB_SETUP = """
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default-flavor}
""" + multikueue_setup(WORKERS) + """---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  cohort: all
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 5, borrowingLimit: 1, lendingLimit: 2}
  admissionChecks: [multikueue]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {namespace: team-a, name: lq}
spec: {clusterQueue: cq}
"""

WORKER_OBJECTS = """
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
  - coveredResources: ["cpu"]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 16}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {namespace: team-a, name: lq}
spec: {clusterQueue: cq}
"""


def workload(name: str, cpu: int, priority: int, duration: str, active: bool = True) -> str:
    return yaml.safe_dump({
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "team-a", "annotations": {"mkhub.dev/sim-duration": duration}},
        "spec": {
            "queueName": "lq",
            "priority": priority,
            "active": active,
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": str(cpu)}}}
            ]}}}],
        },
    })


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(samples: Samples, metric: str, **labels: str) -> float:
    """One sample's value (0 when absent: counters not yet incremented)."""
    return samples.get((metric, frozenset(labels.items())), 0.0)


def total(samples: Samples, metric: str, **labels: str) -> float:
    """Sum over the samples of ``metric`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == metric and want <= ls)


def wait_for(port: int, check: Callable[[Samples], bool], what: str, timeout: float = 40.0) -> Samples:
    deadline = time.monotonic() + timeout
    samples: Samples = {}
    while time.monotonic() < deadline:
        samples = scrape(port)
        if check(samples):
            return samples
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def wait_for_agents(ports: list[int], check: Callable[[list[Samples]], bool], what: str,
                    timeout: float = 20.0) -> list[Samples]:
    deadline = time.monotonic() + timeout
    while True:
        samples = [scrape(p) for p in ports]
        if check(samples) or time.monotonic() >= deadline:
            return samples  # the assertions that follow say what is missing
        time.sleep(0.1)


@pytest.fixture
def fleet(start_hub: HubFactory, start_agent: AgentFactory) -> tuple[HubProcess, int, list[tuple[AgentProcess, int]]]:
    hub_port = free_port()
    hub = start_hub(HUB_SETUP, extra_args=["--metrics-listen", f"127.0.0.1:{hub_port}"])
    agents: list[tuple[AgentProcess, int]] = []
    for name in WORKERS:
        port = free_port()
        agents.append((start_agent(name, hub.address, WORKER_OBJECTS, extra_args=["--metrics-listen", f"127.0.0.1:{port}"]), port))
    return hub, hub_port, agents


def apply(hub: HubProcess, manifest: str) -> None:
    done = run_cli(["apply", "-f", "-", *hub.connection_args()], stdin=manifest)
    assert done.returncode == 0, done.stderr


def test_metrics_after_a_scripted_run(fleet: tuple[HubProcess, int, list[tuple[AgentProcess, int]]]) -> None:
    hub, port, agents = fleet
    started = "mkhub_worker_dispatch_to_start_seconds_count"
    wait_for(port, lambda s: all(value(s, "mkhub_worker_connected", cluster=w) == 1 for w in WORKERS), "both workers")

    apply(hub, workload("low", 4, 10, "1h"))
    wait_for(port, lambda s: total(s, started) == 1, "low running on a worker")
    apply(hub, workload("high", 4, 100, "1h"))
    wait_for(port, lambda s: total(s, started) == 2, "high running after preempting low")
    apply(hub, workload("short", 1, 50, "300ms"))
    wait_for(port, lambda s: value(s, "kueue_finished_workloads_total", cluster_queue=CQ) == 1, "short finished")
    apply(hub, workload("high", 4, 100, "1h", active=False))
    s = wait_for(port, lambda s: total(s, started) == 4 and total(s, "mkhub_worker_running_workloads") == 1,
                 "low running again after high was deactivated")

    lq = {"name": "lq", "namespace": "team-a"}
    res = {"cohort": "all", "cluster_queue": CQ, "flavor": "default-flavor", "resource": "cpu"}
    # Decisions: low, high, short, low again reserved and admitted; low preempted by high; short finished.
    assert value(s, "kueue_quota_reserved_workloads_total", cluster_queue=CQ) == 4
    assert value(s, "kueue_quota_reserved_wait_time_seconds_count", cluster_queue=CQ) == 4
    assert value(s, "kueue_admitted_workloads_total", cluster_queue=CQ) == 4
    assert value(s, "kueue_admission_wait_time_seconds_count", cluster_queue=CQ) == 4
    assert value(s, "kueue_admission_checks_wait_time_seconds_count", cluster_queue=CQ) == 4
    assert value(s, "kueue_finished_workloads_total", cluster_queue=CQ) == 1
    assert value(s, "kueue_evicted_workloads_total", cluster_queue=CQ, reason="Preempted") == 1
    assert value(s, "kueue_evicted_workloads_total", cluster_queue=CQ, reason="Deactivated") == 1
    assert value(s, "kueue_preempted_workloads_total", preempting_cluster_queue=CQ, reason="InClusterQueue") == 1
    attempts = total(s, "kueue_admission_attempts_total")
    assert value(s, "kueue_admission_attempts_total", result="success") >= 4
    assert attempts == total(s, "kueue_admission_attempt_duration_seconds_count")
    # Scrape-time gauges: low holds 4 of 5 CPUs, nothing pending.
    assert value(s, "kueue_pending_workloads", cluster_queue=CQ, status="active") == 0
    assert value(s, "kueue_pending_workloads", cluster_queue=CQ, status="inadmissible") == 0
    assert value(s, "kueue_reserving_active_workloads", cluster_queue=CQ) == 1
    assert value(s, "kueue_admitted_active_workloads", cluster_queue=CQ) == 1
    assert value(s, "kueue_cluster_queue_status", cluster_queue=CQ, status="active") == 1
    assert value(s, "kueue_cluster_queue_status", cluster_queue=CQ, status="pending") == 0
    assert value(s, "kueue_cluster_queue_resource_reservation", **res) == 4
    assert value(s, "kueue_cluster_queue_resource_usage", **res) == 4
    assert value(s, "kueue_cluster_queue_nominal_quota", **res) == 5
    assert value(s, "kueue_cluster_queue_borrowing_limit", **res) == 1
    assert value(s, "kueue_cluster_queue_lending_limit", **res) == 2
    assert (("kueue_cluster_queue_weighted_share", frozenset({("cluster_queue", CQ)}))) in s
    assert value(s, "kueue_cluster_queue_weighted_share", cluster_queue=CQ) == 0
    assert value(s, "kueue_cohort_weighted_share", cohort="all") == 0
    # The LocalQueue twins.
    assert value(s, "kueue_local_queue_quota_reserved_workloads_total", **lq) == 4
    assert value(s, "kueue_local_queue_admitted_workloads_total", **lq) == 4
    assert value(s, "kueue_local_queue_finished_workloads_total", **lq) == 1
    assert value(s, "kueue_local_queue_evicted_workloads_total", **lq, reason="Preempted") == 1
    assert value(s, "kueue_local_queue_pending_workloads", **lq, status="active") == 0
    assert value(s, "kueue_local_queue_reserving_active_workloads", **lq) == 1
    assert value(s, "kueue_local_queue_admitted_active_workloads", **lq) == 1
    assert value(s, "kueue_local_queue_status", **lq, active="True") == 1
    assert value(s, "kueue_local_queue_resource_reservation", **lq, flavor="default-flavor", resource="cpu") == 4
    assert total(s, "kueue_build_info", git_version="0.1.0") == 1
    # MultiKueue: every reservation dispatched to both workers (AllAtOnce), each won by one.
    for w in WORKERS:
        assert value(s, "multikueue_workloads_dispatched_total", cluster_queue=CQ, cluster=w) == 4
        assert value(s, "mkhub_worker_connected", cluster=w) == 1
        assert 0 <= value(s, "mkhub_worker_last_heartbeat_age_seconds", cluster=w) < 30
        assert value(s, "multikueue_cluster_status", cluster_queue=CQ, cluster=w, active="True") == 1
    assert total(s, "multikueue_workloads_admitted_total", cluster_queue=CQ) == 4
    assert total(s, "mkhub_worker_running_workloads") == 1
    assert total(s, "mkhub_worker_dispatch_to_start_seconds_count") == 4
    assert total(s, "mkhub_worker_lost_workloads_total") == 0
    assert total(s, "mkhub_worker_dispatch_rejections_total") == 0
    assert value(s, "mkhub_engine_cycle_duration_seconds_count") > 0
    assert value(s, "mkhub_store_write_duration_seconds_count", operation="batch") > 0
    assert value(s, "mkhub_events_recorded_total", reason="Preempted") == 1

    # The agents: each got every dispatch; the winners started 4 runs between them, one finished.
    # The hub counts a dispatch when it sends it: a losing agent may still be taking in the last one.
    agent_samples = wait_for_agents([p for _, p in agents], lambda ss: sum(
        value(a, "mkagent_hub_items_total", kind="dispatch") for a in ss) >= 8, "every dispatch taken in")
    assert all(value(a, "mkagent_hub_connected") == 1 for a in agent_samples)
    assert sum(value(a, "mkagent_hub_items_total", kind="dispatch") for a in agent_samples) == 8
    assert sum(value(a, "mkagent_hub_items_total", kind="start") for a in agent_samples) == 4
    assert sum(value(a, "mkagent_workloads_finished_total", result="Succeeded") for a in agent_samples) == 1
    assert sum(value(a, "mkagent_dispatch_to_start_seconds_count") for a in agent_samples) == 4
    # Agents run the same engine: its metrics count local admissions (at least the 4 winning copies).
    assert sum(value(a, "kueue_admitted_workloads_total", cluster_queue=CQ) for a in agent_samples) >= 4
    assert sum(value(a, "kueue_finished_workloads_total", cluster_queue=CQ) for a in agent_samples) == 1
    assert sum(value(a, "kueue_cluster_queue_nominal_quota", cohort="", cluster_queue=CQ, flavor="default-flavor",
                     resource="cpu") for a in agent_samples) == 32
