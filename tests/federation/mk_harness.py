"""A manager and worker clusters joined by the MultiKueue controller and agents over the loopback
transport, on a simulated clock (shared by the MultiKueue unit tests)."""

from __future__ import annotations

from typing import Any

from hub.api.config import parse_configuration
from hub.api.meta import parse_time
from hub.api.registry import parse_object
from hub.api.workload import Workload
from hub.federation.multikueue import MultiKueueController
from hub.sim.cluster import SimCluster
from hub.sim.federation import SimFederation
from worker_agent.agent import Agent

START = parse_time("2025-01-01T00:00:00Z")
MK = "kueue.x-k8s.io/multikueue"


def namespace(name: str = "team") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def flavor(name: str = "default") -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": name}}


def cluster_queue(cpu: str, checks: list[str] | None = None, name: str = "cq", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}
        ],
        **spec,
    }
    if checks:
        body["admissionChecks"] = checks
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": body}


def local_queue(cq: str = "cq") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"name": "lq", "namespace": "team"},
        "spec": {"clusterQueue": cq},
    }


def mk_objects(clusters: list[str], extra_checks: list[str] | None = None, hub_cpu: str = "8") -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [namespace(), flavor()]
    for name in clusters:
        objs.append({
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "MultiKueueCluster",
            "metadata": {"name": name},
            "spec": {"kubeConfig": {"locationType": "Secret", "location": name}},
        })
    objs.append({
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "MultiKueueConfig",
        "metadata": {"name": "mk-config"},
        "spec": {"clusters": clusters},
    })
    objs.append({
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "AdmissionCheck",
        "metadata": {"name": "mk-check"},
        "spec": {"controllerName": MK, "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "mk-config"}},
    })
    for check in extra_checks or []:
        objs.append({
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "AdmissionCheck",
            "metadata": {"name": check},
            "spec": {"controllerName": "example.com/prov"},
            "status": {"conditions": [{"type": "Active", "status": "True", "reason": "Active", "message": "",
                                       "lastTransitionTime": "2025-01-01T00:00:00Z"}]},
        })
    objs.append(cluster_queue(hub_cpu, ["mk-check", *(extra_checks or [])]))
    objs.append(local_queue())
    return objs


def worker_objects(cpu: str) -> list[dict[str, Any]]:
    return [namespace(), flavor(), cluster_queue(cpu), local_queue()]


def job(name: str, cpu: str = "1", *, managed_by: str | None = None, priority_class: str | None = None) -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "lq"}
    if priority_class:
        labels["kueue.x-k8s.io/priority-class"] = priority_class
    spec: dict[str, Any] = {
        "parallelism": 1,
        "completions": 1,
        "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "main", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]}},
    }
    if managed_by is not None:
        spec["managedBy"] = managed_by
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}", "labels": labels,
                     "annotations": {"mkhub.dev/sim-duration": "10s"}},
        "spec": spec,
    }


class Fed:
    """The manager, its workers and the federation between them."""

    def __init__(
        self,
        workers: dict[str, str],
        *,
        multikueue: dict[str, Any] | None = None,
        extra_checks: list[str] | None = None,
        hub_cpu: str = "8",
        connect: bool = True,
        feature_gates: dict[str, bool] | None = None,
    ) -> None:
        mk = {"gcInterval": "1m", "workerLostTimeout": "5m", **(multikueue or {})}
        self.config = parse_configuration({"multiKueue": mk, "featureGates": feature_gates or {}})
        self.now = START
        self.manager = SimCluster("manager", self.config, self.now)
        self.workers = {name: SimCluster(name, self.config, self.now) for name in workers}
        for obj in mk_objects(list(workers), extra_checks, hub_cpu):
            self.manager.controller.apply(parse_object(obj), self.now)
        for name, cpu in workers.items():
            for obj in worker_objects(cpu):
                self.workers[name].controller.apply(parse_object(obj), self.now)
        self.fed = SimFederation(self.manager, self.workers, self.config)
        if connect:
            self.fed.start(self.now)

    # --- handles
    @property
    def mk(self) -> MultiKueueController:
        return self.fed.controller

    def agent(self, name: str) -> Agent:
        return self.fed.agents[name]

    # --- driving
    def submit(self, name: str, cpu: str = "1", **kwargs: Any) -> str:
        self.now += 1
        manifest = job(name, cpu, **kwargs)
        self.manager.controller.apply(parse_object(manifest), self.now)
        key = self.manager.controller.jobs.workload_key(f"team/{name}")
        assert key is not None
        return key

    def settle(self) -> None:
        self.fed.settle(self.now)

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.react()

    def react(self) -> None:
        self.manager.controller.react(self.now)
        for w in self.workers.values():
            w.controller.react(self.now)

    def set_worker_quota(self, worker: str, cpu: str) -> None:
        self.workers[worker].controller.apply(parse_object(cluster_queue(cpu)), self.now)

    # --- reading
    def hub(self, key: str) -> Workload:
        return self.manager.engine.workloads[key]

    def copy(self, worker: str, key: str) -> Workload | None:
        return self.workers[worker].engine.workloads.get(key)

    def running(self, worker: str) -> set[str]:
        """Workloads whose pods run in the worker (the simulated runner behind the Start gate)."""
        runner = self.workers[worker].runner
        return set(runner.running)

    def check(self, key: str) -> str:
        state = self.hub(key).status.check("mk-check")
        assert state is not None
        return state.state

    def events(self, cluster: SimCluster | None = None) -> list[tuple[str, str]]:
        c = cluster or self.manager
        return [(ev.type, ev.key) for ev in c.controller.event_log]
