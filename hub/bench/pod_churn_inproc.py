"""``mkhub bench kube --pod-churn N --in-process``: the hub reconciler's own cost per pod Kueue does
not manage, without an API server.

A :class:`~hub.controllers.hub.HubReconciler` on an in-memory SQLite store that, as the Kubernetes
store, runs the pods (``runs_jobs``); ``--churn-nodes`` Nodes (racks of hosts) under a Topology and a
TAS flavor, ``--churn-tas-backlog`` TAS Workloads too big for any rack (``--churn-no-tas``: the
flavor has no topology, no backlog). Each step creates a pod bound
to the next node and deletes the one created N steps before, then the hub observes both events and
runs a round: the CPU per step is the hub's cost per replaced pod (plus the store's two writes).
"""

from __future__ import annotations

import time
from typing import Any

from hub.api.config import Configuration
from hub.api.meta import parse_time
from hub.controllers.hub import HubReconciler
from hub.store import SQLiteStore

T0 = parse_time("2026-01-01T00:00:00Z")


class _ClusterStore(SQLiteStore):
    runs_jobs = True  # as the Kubernetes store: the cluster runs the pods


def _objects(racks: int, hosts: int, cpu: int, backlog: int, tas: bool) -> list[dict[str, Any]]:
    kueue = "kueue.x-k8s.io/v1beta2"
    objs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in ("team", "churn")]
    objs += [
        {"apiVersion": kueue, "kind": "Topology", "metadata": {"name": "t"},
         "spec": {"levels": [{"nodeLabel": "rack"}, {"nodeLabel": "kubernetes.io/hostname"}]}},
        {"apiVersion": kueue, "kind": "ResourceFlavor", "metadata": {"name": "tas"},
         "spec": {"nodeLabels": {"pool": "tas"}, **({"topologyName": "t"} if tas else {})}},
        {"apiVersion": kueue, "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
             {"name": "tas", "resources": [{"name": "cpu", "nominalQuota": str(racks * hosts * cpu)}]}]}]}},
        {"apiVersion": kueue, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "team"},
         "spec": {"clusterQueue": "cq"}},
    ]
    for i in range(racks * hosts):
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {
            "rack": f"r{i // hosts}", "kubernetes.io/hostname": f"n{i}", "pool": "tas"}},
            "status": {"allocatable": {"cpu": str(cpu), "pods": "110"}, "conditions": [{"type": "Ready", "status": "True"}]}})
    for i in range(backlog if tas else 0):
        objs.append({"apiVersion": kueue, "kind": "Workload", "metadata": {"name": f"gang-{i}", "namespace": "team"},
                     "spec": {"queueName": "lq", "podSets": [{
                         "name": "main", "count": hosts * cpu + 1, "topologyRequest": {"required": "rack"},
                         "template": {"spec": {"containers": [
                             {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}})
    return objs


def run(live: int, steps: int, racks: int, hosts: int, cpu: int, backlog: int, tas: bool = True) -> dict[str, float]:
    store = _ClusterStore(":memory:")
    try:
        for obj in _objects(racks, hosts, cpu, backlog, tas):
            store.create(obj)
        rec = HubReconciler(store, Configuration(), T0, ready_delay=0.0)
        rec.load(T0)
        since = store.list("Pod")[1]
        now = T0
        rec.round(now)
        nodes = racks * hosts

        def step(i: int) -> None:
            nonlocal since, now
            now += 0.02
            store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "churn"},
                          "spec": {"nodeName": f"n{i % nodes}", "containers": [
                              {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}]},
                          "status": {"phase": "Running"}})
            if i >= live:
                store.delete("Pod", "churn", f"p{i - live}")
            with store.watch(since=since) as watch:
                while (ev := watch.next(timeout=0)) is not None:
                    rec.observe(ev, now)
                    since = ev.resource_version
            rec.round(now)

        for i in range(live):
            step(i)
        start = time.process_time()
        for i in range(live, live + steps):
            step(i)
        return {"inproc_cpu_ms_per_replaced_pod": (time.process_time() - start) * 1000 / steps,
                "live_churn_pods": live, "nodes": nodes, "tas_backlog": backlog if tas else 0}
    finally:
        store.close()
