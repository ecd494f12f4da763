"""Terse Kueue manifests and a small driver around the real engine, for engine tests.

Everything goes through ``parse_object`` (so manifests are validated as users'
would be) and the engine's public calls. :class:`Sim` wraps a
``ClusterController`` with the simulator's ``InstantRunner``: an evicted
workload's job stops at once, so a preemption releases quota within the same
call, as in ``mkhub simulate``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hub.api.config import Configuration, parse_configuration
from hub.api.meta import Condition, format_time, parse_time
from hub.api.registry import parse_object, validate_update
from hub.api.workload import Workload
from hub.controllers.cluster import ClusterController
from hub.engine.engine import Engine, EngineEvent
from hub.engine.entry import CycleResult
from hub.engine.flavors import Assignment
from hub.engine.preemption import Target
from hub.engine.quota import FR
from hub.sim.cluster import InstantRunner

V2 = "kueue.x-k8s.io/v1beta2"
NS = "team"
T0 = parse_time("2025-01-01T00:00:00Z")

Quota = int | str | tuple[Any, Any, Any]  # nominal, or (nominal, borrowingLimit, lendingLimit) with None for unset


# --- manifests --------------------------------------------------------------------------------


def flavor(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
           tolerations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if labels:
        spec["nodeLabels"] = labels
    if taints:
        spec["nodeTaints"] = taints
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def _resource_quota(resource: str, q: Quota) -> dict[str, Any]:
    if isinstance(q, tuple):
        nominal, borrowing, lending = q
        out: dict[str, Any] = {"name": resource, "nominalQuota": str(nominal)}
        if borrowing is not None:
            out["borrowingLimit"] = str(borrowing)
        if lending is not None:
            out["lendingLimit"] = str(lending)
        return out
    return {"name": resource, "nominalQuota": str(q)}


def resource_groups(quotas: Mapping[str, Mapping[str, Quota]]) -> list[dict[str, Any]]:
    """``{flavor: {resource: quota}}`` -> resource groups; flavors covering the same resources share a group."""
    groups: dict[tuple[str, ...], dict[str, Any]] = {}
    for flavor_name, resources in quotas.items():
        covered = tuple(resources)
        group = groups.setdefault(covered, {"coveredResources": list(covered), "flavors": []})
        group["flavors"].append(
            {"name": flavor_name, "resources": [_resource_quota(r, q) for r, q in resources.items()]}
        )
    return list(groups.values())


def cq(name: str, quotas: Mapping[str, Mapping[str, Quota]], *, cohort: str | None = None,
       within: str | None = None, reclaim: str | None = None, borrow_within: str | None = None,
       threshold: int | None = None, when_can_borrow: str | None = None, when_can_preempt: str | None = None,
       preference: str | None = None, strategy: str | None = None, weight: str | None = None,
       checks: list[str | tuple[str, list[str]]] | None = None, selector: dict[str, Any] | None = None,
       stop: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"namespaceSelector": {} if selector is None else selector,
                            "resourceGroups": resource_groups(quotas)}
    if cohort:
        spec["cohortName"] = cohort
    preemption: dict[str, Any] = {}
    if within:
        preemption["withinClusterQueue"] = within
    if reclaim:
        preemption["reclaimWithinCohort"] = reclaim
    if borrow_within:
        preemption["borrowWithinCohort"] = {"policy": borrow_within}
        if threshold is not None:
            preemption["borrowWithinCohort"]["maxPriorityThreshold"] = threshold
    if preemption:
        spec["preemption"] = preemption
    ff: dict[str, str] = {}
    if when_can_borrow:
        ff["whenCanBorrow"] = when_can_borrow
    if when_can_preempt:
        ff["whenCanPreempt"] = when_can_preempt
    if preference:
        ff["preference"] = preference
    if ff:
        spec["flavorFungibility"] = ff
    if strategy:
        spec["queueingStrategy"] = strategy
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    if checks:
        rules = []
        for check in checks:
            if isinstance(check, tuple):
                rules.append({"name": check[0], "onFlavors": check[1]})
            else:
                rules.append({"name": check})
        spec["admissionChecksStrategy"] = {"admissionChecks": rules}
    if stop:
        spec["stopPolicy"] = stop
    return {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def cohort(name: str, quotas: Mapping[str, Mapping[str, Quota]] | None = None, *, parent: str | None = None,
           weight: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent:
        spec["parentName"] = parent
    if quotas:
        spec["resourceGroups"] = resource_groups(quotas)
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"apiVersion": V2, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def local_queue(name: str, cluster_queue: str, ns: str = NS) -> dict[str, Any]:
    return {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": name, "namespace": ns},
            "spec": {"clusterQueue": cluster_queue}}


def admission_check(name: str, controller: str = "example.com/check") -> dict[str, Any]:
    return {"apiVersion": V2, "kind": "AdmissionCheck", "metadata": {"name": name},
            "spec": {"controllerName": controller},
            "status": {"conditions": [{"type": "Active", "status": "True", "reason": "Active",
                                       "lastTransitionTime": format_time(T0)}]}}


def pod_set(name: str = "main", count: int = 1, requests: dict[str, Any] | None = None, *,
            min_count: int | None = None, node_selector: dict[str, str] | None = None,
            tolerations: list[dict[str, str]] | None = None,
            affinity_terms: list[list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [
        {"name": "c", "image": "pause", "resources": {"requests": {k: str(v) for k, v in (requests or {}).items()}}}
    ]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    if affinity_terms:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": term} for term in affinity_terms]}}}
    out: dict[str, Any] = {"name": name, "count": count, "template": {"spec": spec}}
    if min_count is not None:
        out["minCount"] = min_count
    return out


def wl(name: str, queue: str, *, cpu: Any = None, memory: Any = None, requests: dict[str, Any] | None = None,
       count: int = 1, priority: int | None = None, created: float | None = None,
       pod_sets: list[dict[str, Any]] | None = None, **pod_set_options: Any) -> dict[str, Any]:
    """A Workload in namespace ``team`` queued in LocalQueue ``queue``; ``created`` is seconds after T0."""
    reqs = dict(requests or {})
    if cpu is not None:
        reqs["cpu"] = cpu
    if memory is not None:
        reqs["memory"] = memory
    spec: dict[str, Any] = {"queueName": queue,
                            "podSets": pod_sets or [pod_set(count=count, requests=reqs, **pod_set_options)]}
    if priority is not None:
        spec["priority"] = priority
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}"}
    if created is not None:
        meta["creationTimestamp"] = format_time(T0 + created)
    return {"apiVersion": V2, "kind": "Workload", "metadata": meta, "spec": spec}


def reserved(manifest: dict[str, Any], cluster_queue: str, flavors: dict[str, str], at: float = 0.0,
             admitted: bool = True) -> dict[str, Any]:
    """``manifest`` arriving already holding quota in ``cluster_queue`` (reserved ``at`` seconds after T0)."""
    ps = manifest["spec"]["podSets"][0]
    count = ps.get("count", 1)
    requests = ps["template"]["spec"]["containers"][0]["resources"]["requests"]
    usage = {res: _times(res, q, count) for res, q in requests.items()}
    stamp = format_time(T0 + at)
    conditions = [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "restored",
                   "lastTransitionTime": stamp}]
    if admitted:
        conditions.append({"type": "Admitted", "status": "True", "reason": "Admitted", "message": "restored",
                           "lastTransitionTime": stamp})
    out = dict(manifest)
    out["status"] = {
        "admission": {"clusterQueue": cluster_queue, "podSetAssignments": [
            {"name": ps.get("name", "main"), "flavors": flavors, "resourceUsage": usage, "count": count}]},
        "conditions": conditions,
    }
    return out


def _times(resource: str, quantity: Any, count: int) -> str:
    from hub.api.quantity import format_quantity, resource_value

    return format_quantity(resource, resource_value(resource, quantity) * count)


# --- the driver -------------------------------------------------------------------------------


class HoldingRunner(InstantRunner):
    """An evicted workload's job keeps running (and its quota held) until the test says it stopped."""

    def __init__(self) -> None:
        super().__init__()
        self.stopping: set[str] = set()

    def stop(self, key: str, now: float) -> None:
        self.stopping.add(key)


class Sim:
    """One cluster: the engine, the controllers, an instant runner, and a clock we move by hand.

    With ``hold_evicted=True`` evicted workloads keep their quota until :meth:`stopped`.
    """

    def __init__(self, config: Configuration | dict[str, Any] | None = None, now: float = T0,
                 hold_evicted: bool = False) -> None:
        if isinstance(config, dict):
            config = parse_configuration(config)
        self.config = config or Configuration()
        self.now = now
        self.engine = Engine(self.config, now)
        self.runner = HoldingRunner() if hold_evicted else InstantRunner()
        self.ctl = ClusterController(self.engine, self.runner)  # type: ignore[arg-type]  # as hub.sim.cluster does
        self._seen_events = 0

    def stopped(self, *names: str) -> Sim:
        """The evicted workloads' jobs have no active pods any more: their quota is released."""
        for name in names:
            self.engine.workload_stopped(key(name), self.now)
        self.ctl.react(self.now)
        return self

    # inputs

    def add(self, *manifests: dict[str, Any] | Iterable[dict[str, Any]]) -> Sim:
        for item in manifests:
            for manifest in [item] if isinstance(item, dict) else item:
                obj = parse_object(manifest, partial_admission=self.config.gate("PartialAdmission"))
                self.ctl.apply(obj, self.now)
        self.ctl.react(self.now)
        return self

    def update(self, manifest: dict[str, Any]) -> Sim:
        """Replace a Workload's spec as a user's update would: its status and creation time are kept."""
        new = parse_object(manifest, partial_admission=self.config.gate("PartialAdmission"))
        assert isinstance(new, Workload)
        old = self.engine.workloads[new.meta.key]
        new.status = old.status
        new.meta.creation_timestamp = old.meta.creation_timestamp
        validate_update(old, new)
        self.ctl.apply(new, self.now)
        self.ctl.react(self.now)
        return self

    def queue(self, *cluster_queues: dict[str, Any]) -> Sim:
        """Add ClusterQueues, each with a same-named LocalQueue in namespace ``team``."""
        for manifest in cluster_queues:
            name = manifest["metadata"]["name"]
            self.add(manifest, local_queue(name, name))
        return self

    def advance(self, seconds: float) -> Sim:
        self.now += seconds
        self.ctl.react(self.now)
        return self

    def cycle(self) -> CycleResult:
        return self.ctl.schedule_once(self.now)

    def settle(self, cycles: int | None = None) -> Sim:
        self.ctl.settle(self.now, cycles)
        return self

    def finish(self, *names: str) -> Sim:
        for name in names:
            self.engine.finish(key(name), now=self.now)
        self.ctl.react(self.now)
        return self

    def evict(self, name: str, reason: str = "NodeFailures") -> Sim:
        self.engine.evict(key(name), reason, "evicted by the test", now=self.now)
        self.ctl.react(self.now)
        return self

    def checks(self, name: str, **states: str) -> Sim:
        self.engine.set_check_states(key(name), {c: (s, "", None) for c, s in states.items()}, now=self.now)
        self.ctl.react(self.now)
        return self

    def pods_ready(self, *names: str) -> Sim:
        for name in names:
            self.engine.pods_ready(key(name), True, self.now)
        self.ctl.react(self.now)
        return self

    # reading

    def workload(self, name: str) -> Workload:
        return self.engine.workloads[key(name)]

    def state(self, name: str) -> str:
        w = self.workload(name)
        if w.is_finished:
            return "finished"
        if w.is_admitted:
            return "admitted"
        if w.is_quota_reserved:
            return "reserved"
        return "pending"

    def reserved(self) -> set[str]:
        """Names of unfinished workloads holding quota (QuotaReserved)."""
        return {w.meta.name for w in self.engine.workloads.values() if w.is_quota_reserved and not w.is_finished}

    def admitted(self) -> set[str]:
        return {w.meta.name for w in self.engine.workloads.values() if w.is_admitted and not w.is_finished}

    def pending(self) -> set[str]:
        return {w.meta.name for w in self.engine.workloads.values()
                if not w.is_quota_reserved and not w.is_finished}

    def flavors(self, name: str, pod_set_name: str = "main") -> dict[str, str]:
        adm = self.workload(name).status.admission
        assert adm is not None, f"{name} has no admission"
        for psa in adm.pod_set_assignments:
            if psa.name == pod_set_name:
                return dict(psa.flavors)
        raise KeyError(pod_set_name)

    def cluster_queue_of(self, name: str) -> str | None:
        adm = self.workload(name).status.admission
        return adm.cluster_queue if adm is not None else None

    def condition(self, name: str, type_: str) -> Condition | None:
        return self.workload(name).status.condition(type_)

    def reason(self, name: str, type_: str = "QuotaReserved") -> str:
        cond = self.condition(name, type_)
        return cond.reason if cond is not None else ""

    def events(self, type_: str | None = None) -> list[EngineEvent]:
        """Events since the last call (optionally of one type)."""
        new = self.ctl.event_log[self._seen_events:]
        self._seen_events = len(self.ctl.event_log)
        return [e for e in new if type_ is None or e.type == type_]

    def preempted(self) -> dict[str, str]:
        """Victims since the last call -> Preempted reason."""
        return {e.key.split("/", 1)[1]: e.reason for e in self.events("Preempted")}

    def usage(self, cluster_queue: str) -> dict[FR, int]:
        return {fr: v for fr, v in self.engine.usage_of(cluster_queue).items() if v}

    def available(self, cluster_queue: str, fr: FR) -> int:
        return self.engine.cqs[cluster_queue].node.available(fr)

    def nominate(self, name: str) -> tuple[Assignment, list[Target]]:
        """The flavor assignment and preemption targets the scheduler would compute now (no side effects on quota)."""
        info = self.engine.infos[key(name)]
        assert info.cluster_queue is not None
        state = self.engine.cqs[info.cluster_queue]
        saved = info.last_assignment
        try:
            return self.engine.scheduler.get_assignments(info, state)
        finally:
            info.last_assignment = saved


def key(name: str) -> str:
    return name if "/" in name else f"{NS}/{name}"


def target_names(targets: list[Target]) -> dict[str, str]:
    return {t.info.wl.meta.name: t.reason for t in targets}
