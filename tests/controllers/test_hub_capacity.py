"""Capacity reports in a store-backed hub: quota automation writes the manager ClusterQueue's
nominal quota into the stored spec, and the MultiKueueCluster's status.fleet is stored."""

from __future__ import annotations

from typing import Any

from hub_objects import T0, seed

from hub.api.config import parse_configuration
from hub.api.registry import parse_object
from hub.controllers.hub import HubReconciler
from hub.engine.engine import Engine
from hub.federation.loopback import LoopbackNetwork
from hub.federation.multikueue import MultiKueueController
from hub.federation.session import AgentEndpoint, HubEndpoint
from hub.sim.cluster import SimCluster
from hub.store import SQLiteStore
from worker_agent.agent import Agent

CONFIG = parse_configuration({"multiKueue": {"dispatcherName": "mkhub.dev/capacity-aware"}})
MK = "kueue.x-k8s.io/multikueue"


def queues(cpu: str, hub: bool) -> list[dict[str, Any]]:
    cq: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}],
    }
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "default"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": cq},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "team"}, "spec": {"clusterQueue": "cq"}},
    ]
    if hub:
        cq["admissionChecks"] = ["mk"]
        out += [
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "MultiKueueCluster", "metadata": {"name": "worker-1"},
             "spec": {"kubeConfig": {"locationType": "Secret", "location": "w1"}}},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig", "metadata": {"name": "fleet"},
             "spec": {"clusters": ["worker-1"], "quotaManagement": "Automated"}},
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "AdmissionCheck", "metadata": {"name": "mk"},
             "spec": {"controllerName": MK, "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "fleet"}}},
        ]
    return out


def test_automated_quota_and_fleet_status_are_stored() -> None:
    now = T0
    store = SQLiteStore(":memory:")
    seed(store, queues("0", hub=True))
    mk = MultiKueueController(Engine(CONFIG, now), CONFIG, auto_flush=False)
    net = LoopbackNetwork(HubEndpoint(mk, authorize=mk.authorize, instance_id="hub", monotonic=lambda: now))
    worker = SimCluster("worker-1", CONFIG, now)
    for obj in queues("6", hub=False):
        worker.controller.apply(parse_object(obj), now)
    agent = Agent("worker-1", worker.controller, capacity_interval=0.0)
    endpoint = AgentEndpoint(agent, session_id="w1", monotonic=lambda: now, now_ms=lambda: int(now * 1000))
    agent.send = endpoint.send
    net.add_agent("worker-1", endpoint)
    rec = HubReconciler(store, CONFIG, now, ready_delay=0.0, federation=mk)
    rec.load(now)
    net.connect_all()
    for _ in range(6):
        now += 1.5
        rec.round(now)
        mk.flush()
        net.pump()
        worker.controller.settle(now)
        net.pump()
    cq = store.get("ClusterQueue", "", "cq")
    assert cq is not None
    assert cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == "6"
    cluster = store.get("MultiKueueCluster", "", "worker-1")
    assert cluster is not None
    fleet = cluster["status"]["fleet"]
    assert fleet["connected"] is True and fleet["capacityVersion"] == 1
    assert fleet["quota"] == [{"clusterQueue": "cq", "flavor": "default", "resource": "cpu", "nominal": "6", "usage": "0"}]
    store.close()
