"""The embedded hub's simulated Deployment, StatefulSet, LeaderWorkerSet and CronJob controllers
(hub.service.embedded_operators) with the hub's reconciler on one SQLite store, on a test clock:
Kueue's samples, unchanged, through ``mkhub apply`` (the templates marked as Kueue's webhooks mark
them), their Pods gated, queued through the pod integration, admitted, ungated and Running until
deleted; scaling and deletion free the quota; a CronJob's Jobs queued and run to completion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hub.api.config import parse_configuration
from hub.api.jobkinds.pod import SCHEDULING_GATE
from hub.api.jobkinds.serving import statefulset_workload_name
from hub.controllers.hub import HubReconciler
from hub.service.apply import Applier, ensure_namespace
from hub.service.embedded_operators import EmbeddedOperators
from hub.store import SQLiteStore

EXAMPLES = Path(__file__).resolve().parents[2] / "e2e" / "kueue-examples"
CONFIG = parse_configuration({"integrations": {"frameworks": [
    "batch/job", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset"]}})
T0 = 1_800_000_030.0  # half a minute past a minute: a CronJob's first time is 30 s away
QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 4}, {name: memory, nominalQuota: 8Gi}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: user-queue, namespace: default}
spec: {clusterQueue: cluster-queue}
"""


class Hub:
    """The reconciler and the controllers, stepped together on the test's clock."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store, self.now = store, T0
        ensure_namespace(store)
        self.apply(QUEUES)
        self.ops = EmbeddedOperators(store, CONFIG, clock=lambda: self.now)
        self.rec = HubReconciler(store, CONFIG, T0, ready_delay=0.0, default_duration=5.0)
        self.since = self.rec.load(T0)
        self.ops.open()

    def apply(self, text: str) -> list[str]:
        out = Applier(self.store, pod_webhook=CONFIG, clock=lambda: self.now).apply(text)
        assert not out.rejected, [r.error for r in out.results]
        return out.warnings

    def settle(self, seconds: float = 0.0, rounds: int = 8) -> None:
        """Let ``seconds`` pass, then run controllers and hub until nothing changes."""
        self.now += seconds
        for _ in range(rounds):
            self.ops.step()
            with self.store.watch(since=self.since) as watch:
                while (ev := watch.next(timeout=0)) is not None:
                    self.rec.observe(ev, self.now)
                    self.since = ev.resource_version
            self.rec.round(self.now)

    def items(self, kind: str) -> dict[str, dict[str, Any]]:
        return {o["metadata"]["name"]: o for o in self.store.list(kind)[0]}


@pytest.fixture
def hub() -> Any:
    store = SQLiteStore(":memory:")
    yield Hub(store)
    store.close()


def sample(name: str) -> str:
    return (EXAMPLES / name).read_text()


def running(pod: dict[str, Any]) -> bool:
    gates = [g["name"] for g in pod["spec"].get("schedulingGates") or []]
    return (pod.get("status") or {}).get("phase") == "Running" and SCHEDULING_GATE not in gates


def true(obj: dict[str, Any], type_: str) -> bool:
    return any(c["type"] == type_ and c["status"] == "True" for c in (obj.get("status") or {}).get("conditions") or [])


def admitted_count(hub: Hub) -> int:
    return int((hub.items("ClusterQueue")["cluster-queue"].get("status") or {}).get("admittedWorkloads") or 0)


def test_kueues_deployment_sample_runs_a_workload_per_pod_until_scaled_down_or_deleted(hub: Hub) -> None:
    hub.apply(sample("sample-deployment.yaml"))
    template = hub.items("Deployment")["nginx-deployment"]["spec"]["template"]["metadata"]
    assert template["annotations"]["kueue.x-k8s.io/pod-suspending-parent"] == "deployment"  # Kueue's webhook's mark
    hub.settle()
    hub.settle(60.0)  # long past --sim-duration: a serving Pod runs until deleted
    pods = hub.items("Pod")
    assert len(pods) == 3 and all(running(p) for p in pods.values()), pods
    wls = hub.items("Workload")
    assert len(wls) == 3 and all(true(w, "Admitted") and not true(w, "Finished") for w in wls.values())
    assert sorted(w["metadata"]["ownerReferences"][0]["name"] for w in wls.values()) == sorted(pods)
    status = hub.items("Deployment")["nginx-deployment"]["status"]
    assert status["readyReplicas"] == 3 and status["availableReplicas"] == 3  # ready since admission: available
    hub.apply(sample("sample-deployment.yaml").replace("replicas: 3", "replicas: 1"))
    hub.settle(1.0)
    assert len(hub.items("Pod")) == 1 and len(hub.items("Workload")) == 1 and admitted_count(hub) == 1
    [rs] = hub.items("ReplicaSet").values()  # the same template after the re-apply: no new ReplicaSet
    hub.store.delete("Deployment", "default", "nginx-deployment")
    hub.settle(1.0)
    assert not hub.items("ReplicaSet") and not hub.items("Pod") and not hub.items("Workload")
    assert admitted_count(hub) == 0


def test_a_restarted_hub_keeps_the_serving_pods_and_workloads_it_had(hub: Hub) -> None:
    hub.apply(sample("sample-deployment.yaml") + "---\n" + sample("sample-statefulset.yaml"))
    hub.settle()
    hub.settle(1.0)
    before = {n: p["metadata"]["uid"] for n, p in hub.items("Pod").items()}
    assert len(before) == 6 and all(running(p) for p in hub.items("Pod").values())
    hub.ops.close()  # kill -9: a new hub and new controllers on the same store, some time later
    hub.now += 30.0
    hub.ops = EmbeddedOperators(hub.store, CONFIG, clock=lambda: hub.now)
    hub.rec = HubReconciler(hub.store, CONFIG, hub.now, ready_delay=0.0, default_duration=5.0)
    hub.since = hub.rec.load(hub.now)
    hub.ops.open()
    hub.settle(1.0)
    assert {n: p["metadata"]["uid"] for n, p in hub.items("Pod").items()} == before  # none re-created
    assert all(running(p) for p in hub.items("Pod").values())
    wls = hub.items("Workload")
    assert len(wls) == 4 and all(true(w, "Admitted") and not true(w, "Finished") for w in wls.values())


def test_kueues_statefulset_sample_is_one_group_workload_and_goes_to_zero_and_back(hub: Hub) -> None:
    hub.apply(sample("sample-statefulset.yaml"))
    hub.settle()
    hub.settle(60.0)
    pods = hub.items("Pod")
    assert sorted(pods) == [f"nginx-statefulset-{i}" for i in range(3)]  # OrderedReady: each after the last ran
    assert all(running(p) for p in pods.values())
    name = statefulset_workload_name("nginx-statefulset")
    [(wl_name, wl)] = hub.items("Workload").items()
    assert wl_name == name and [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("main", 3)]
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet" and not true(wl, "Finished")
    refused = Applier(hub.store, pod_webhook=CONFIG).apply(sample("sample-statefulset.yaml").replace("replicas: 3", "replicas: 2"))
    assert refused.rejected and "spec.replicas" in refused.results[0].error  # Kueue: only to zero and back
    hub.apply(sample("sample-statefulset.yaml").replace("replicas: 3", "replicas: 0"))
    hub.settle(1.0)
    hub.settle(1.0)
    assert not hub.items("Pod") and not hub.items("Workload") and admitted_count(hub) == 0
    hub.apply(sample("sample-statefulset.yaml").replace("replicas: 3", "replicas: 2"))
    hub.settle(1.0)
    hub.settle(1.0)
    assert sorted(hub.items("Pod")) == ["nginx-statefulset-0", "nginx-statefulset-1"]
    assert [ps["count"] for ps in hub.items("Workload")[name]["spec"]["podSets"]] == [2]


def test_kueues_leaderworkerset_sample_is_a_workload_per_group(hub: Hub) -> None:
    hub.apply(sample("sample-leaderworkerset.yaml"))
    hub.settle()
    hub.settle(1.0)
    pods = hub.items("Pod")
    assert len(pods) == 6 and all(running(p) for p in pods.values())
    wls = hub.items("Workload")
    assert len(wls) == 2 and all(true(w, "Admitted") for w in wls.values())
    assert all([(ps["name"], ps["count"]) for ps in w["spec"]["podSets"]] == [("leader", 1), ("worker", 2)]
               for w in wls.values())
    hub.apply(sample("sample-leaderworkerset.yaml").replace("replicas: 2", "replicas: 1"))  # a group fewer
    hub.settle(1.0)
    assert len(hub.items("Pod")) == 3 and len(hub.items("Workload")) == 1 and admitted_count(hub) == 1
    hub.store.delete("LeaderWorkerSet", "default", "nginx-leaderworkerset")
    hub.settle(1.0)
    assert not hub.items("Pod") and not hub.items("Workload") and admitted_count(hub) == 0


def test_kueues_cronjob_sample_creates_queued_jobs_that_run_to_completion(hub: Hub) -> None:
    hub.apply(sample("sample-cronjob.yaml"))
    hub.settle()
    assert not hub.items("Job")  # its first time is the next minute
    hub.settle(30.0)
    [(name, job)] = hub.items("Job").items()
    assert name.startswith("sample-cronjob-")
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "user-queue"
    [wl] = hub.items("Workload").values()
    assert true(wl, "Admitted")
    hub.settle(6.0)  # --sim-duration 5 s
    assert true(hub.items("Workload")[wl["metadata"]["name"]], "Finished")
    assert any(c["type"] == "Complete" for c in hub.items("Job")[name]["status"].get("conditions") or [])
    assert "lastSuccessfulTime" in hub.items("CronJob")["sample-cronjob"]["status"]


def test_a_deployment_kueue_does_not_manage_is_stored_with_a_warning(hub: Hub) -> None:
    text = sample("sample-deployment.yaml").replace("kueue.x-k8s.io/queue-name: user-queue", "tier: web")
    [warning] = hub.apply(text)
    assert "has no kueue.x-k8s.io/queue-name label" in warning
