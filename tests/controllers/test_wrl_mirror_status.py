"""The manager's MultiKueue Job status on a Kubernetes API server (issue 26): Kueue writes it only
by copying the winning worker's Job status (``SyncJob``), so while an agent that reports its Jobs'
statuses (Hello ``reports_job_status``) is to run the copy, the hub writes no status of its own
(neither the Suspended condition on the hold nor a derived ``active`` at admission): the first
status the manager's Job gets is the worker's. Agents that do not report keep the derived one."""

from __future__ import annotations

import json
from typing import Any

from hub_objects import T0, is_true, seed

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

CONFIG = parse_configuration({"multiKueue": {"workerLostTimeout": "5m", "gcInterval": "1m"}})
WORKER_STATUS = {"active": 1, "ready": 1, "startTime": "2027-01-15T08:00:01Z"}


class ClusterStore(SQLiteStore):
    """The real SQLite store, declaring (as the Kubernetes store does) that the cluster runs Jobs."""

    runs_jobs = True


def objects(*, hub: bool) -> list[dict[str, Any]]:
    g = "kueue.x-k8s.io/v1beta1"
    cq: dict[str, Any] = {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
        {"apiVersion": g, "kind": "ResourceFlavor", "metadata": {"name": "default"}},
        {"apiVersion": g, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": cq},
        {"apiVersion": g, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "team"}, "spec": {"clusterQueue": "cq"}},
    ]
    if hub:
        cq["admissionChecks"] = ["mk"]
        out += [
            {"apiVersion": g, "kind": "MultiKueueCluster", "metadata": {"name": "worker-1"},
             "spec": {"kubeConfig": {"locationType": "Secret", "location": "w1"}}},
            {"apiVersion": g, "kind": "MultiKueueConfig", "metadata": {"name": "fleet"}, "spec": {"clusters": ["worker-1"]}},
            {"apiVersion": g, "kind": "AdmissionCheck", "metadata": {"name": "mk"}, "spec": {
                "controllerName": "kueue.x-k8s.io/multikueue",
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "fleet"}}},
            {"apiVersion": "batch/v1", "kind": "Job",  # created without Kueue's webhook, as `bench kube --workers` does
             "metadata": {"name": "j", "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "lq"},
                          "annotations": {"mkhub.dev/sim-duration": "10h"}},
             "spec": {"managedBy": "kueue.x-k8s.io/multikueue", "template": {"spec": {
                 "restartPolicy": "Never", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}},
        ]
    return out


class Fleet:
    """A hub reconciler on a store whose cluster runs Jobs, and one agent over the loopback transport."""

    def __init__(self, *, reports_job_status: bool) -> None:
        self.now = T0
        self.store = ClusterStore(":memory:")
        seed(self.store, objects(hub=True))
        self.mk = MultiKueueController(Engine(CONFIG, self.now), CONFIG, auto_flush=False)
        self.net = LoopbackNetwork(HubEndpoint(self.mk, authorize=self.mk.authorize, instance_id="hub",
                                               monotonic=lambda: self.now))
        self.worker = SimCluster("worker-1", CONFIG, self.now)
        for obj in objects(hub=False):
            self.worker.controller.apply(parse_object(obj), self.now)
        self.agent = Agent("worker-1", self.worker.controller)
        if reports_job_status:  # what the Kubernetes-mode agent reads from its cluster's Job
            self.agent.job_status_of = lambda key: ("j", json.dumps(WORKER_STATUS))
        endpoint = AgentEndpoint(self.agent, session_id="w1", monotonic=lambda: self.now,
                                 now_ms=lambda: int(self.now * 1000))
        self.agent.send = endpoint.send
        self.net.add_agent("worker-1", endpoint)
        self.rec = HubReconciler(self.store, CONFIG, self.now, ready_delay=0.0, federation=self.mk)
        self.rec.load(self.now)

    def round(self) -> None:
        self.now += 0.5
        self.rec.round(self.now)

    def exchange(self) -> None:
        self.net.pump()
        self.worker.controller.settle(self.now)
        self.net.pump()

    def job(self) -> dict[str, Any]:
        got = self.store.get("Job", "team", "j")
        assert got is not None
        return got

    def workload(self) -> dict[str, Any]:
        [wl] = self.store.list("Workload")[0]
        return wl


def run_to_the_start(fleet: Fleet) -> list[dict[str, Any]]:
    """The manager Job's status after each step: reserved and held, admitted (won), running."""
    seen = []
    fleet.net.connect("worker-1")
    fleet.exchange()
    fleet.round()  # the agent's Hello: the cluster and its check become Active
    seen.append(fleet.job().get("status") or {})
    fleet.round()  # reserved, the copy dispatched; the Job created running is held (suspended)
    assert is_true(fleet.workload(), "QuotaReserved") and fleet.job()["spec"]["suspend"] is True
    seen.append(fleet.job().get("status") or {})
    fleet.exchange()
    fleet.round()  # the copy admitted in the worker: it wins, the manager's Job is unsuspended
    assert is_true(fleet.workload(), "Admitted") and fleet.job()["spec"]["suspend"] is False
    seen.append(fleet.job().get("status") or {})
    fleet.exchange()  # the Start; the worker runs its copy and reports
    fleet.round()
    seen.append(fleet.job().get("status") or {})
    return seen


def test_the_manager_job_gets_only_the_workers_status_from_an_agent_that_reports_it() -> None:
    fleet = Fleet(reports_job_status=True)
    pending, held, admitted, running = run_to_the_start(fleet)
    assert pending == {} and held == {} and admitted == {}  # no Suspended condition, no derived active/startTime
    assert running == WORKER_STATUS
    assert fleet.mk.mirrors_job_status(f"team/{fleet.workload()['metadata']['name']}")
    fleet.store.close()

    # An agent that does not report its Jobs' statuses (embedded mode): the hub derives them, as before.
    fleet = Fleet(reports_job_status=False)
    pending, held, admitted, running = run_to_the_start(fleet)
    assert is_true({"status": held}, "Suspended")
    assert admitted.get("active") == 1 and admitted.get("startTime")
    assert not fleet.mk.mirrors_job_status(f"team/{fleet.workload()['metadata']['name']}")
    fleet.store.close()
