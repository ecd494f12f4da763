"""Workload: spec, status, and their (de)serialisation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .meta import (
    CONDITION_TRUE,
    Condition,
    ObjectMeta,
    conditions_to_list,
    format_time,
    read_conditions,
    read_time,
)
from .pods import PodSpecInfo, read_pod_template
from .quantity import format_quantity
from .reader import Reader
from .topology_assignment import TopologyAssignment, read_topology_assignment, to_v1beta2

DEFAULT_POD_SET_NAME = "main"

# Condition types.
QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
# Concurrent admission (Kueue v0.18+): a parent Workload and its per-flavor variants.
CONCURRENT_PARENT_LABEL = "kueue.x-k8s.io/concurrent-admission-parent"
ALLOWED_FLAVORS_ANNOTATION = "kueue.x-k8s.io/workload-allowed-resource-flavors"
GATE_OPEN, GATE_CLOSED = "Open", "Closed"  # a preemption gate's position
PODS_READY = "PodsReady"
EVICTED = "Evicted"
PREEMPTED = "Preempted"
REQUEUED = "Requeued"
FINISHED = "Finished"
DEACTIVATION_TARGET = "DeactivationTarget"
BLOCKED_ON_PREEMPTION_GATES = "BlockedOnPreemptionGates"

# Admission check states.
CHECK_PENDING, CHECK_READY, CHECK_RETRY, CHECK_REJECTED = "Pending", "Ready", "Retry", "Rejected"
CHECK_STATES = (CHECK_PENDING, CHECK_READY, CHECK_RETRY, CHECK_REJECTED)

WORKLOAD_PRIORITY_CLASS_GROUP = "kueue.x-k8s.io"
WORKLOAD_PRIORITY_CLASS_KIND = "WorkloadPriorityClass"
POD_PRIORITY_CLASS_GROUP = "scheduling.k8s.io"
POD_PRIORITY_CLASS_KIND = "PriorityClass"


@dataclass(frozen=True, slots=True)
class PodSet:
    name: str
    count: int
    template: dict[str, Any]
    spec: PodSpecInfo
    min_count: int | None = None
    topology_request: dict[str, Any] | None = None  # as Kueue writes it (hub.engine.tas reads it)

    def __hash__(self) -> int:  # templates are dicts; identity is enough for interning
        return id(self)


@dataclass(frozen=True, slots=True)
class PriorityClassRef:
    group: str
    kind: str
    name: str

    @property
    def is_workload_priority_class(self) -> bool:
        return self.group == WORKLOAD_PRIORITY_CLASS_GROUP and self.kind == WORKLOAD_PRIORITY_CLASS_KIND


@dataclass(frozen=True, slots=True)
class PodSetAssignment:
    name: str
    flavors: tuple[tuple[str, str], ...]  # resource -> flavor, sorted by resource
    resource_usage: tuple[tuple[str, int], ...]  # resource -> total for all counted pods
    count: int
    topology_assignment: TopologyAssignment | None = None  # set by topology-aware scheduling



@dataclass(frozen=True, slots=True)
class Admission:
    cluster_queue: str
    pod_set_assignments: tuple[PodSetAssignment, ...]


@dataclass(slots=True)
class AdmissionCheckState:
    name: str
    state: str = CHECK_PENDING
    last_transition_time: float = 0.0
    message: str = ""
    requeue_after_seconds: int | None = None
    retry_count: int | None = None
    pod_set_updates: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class RequeueState:
    count: int | None = None
    requeue_at: float | None = None


@dataclass(slots=True)
class EvictionStat:
    reason: str
    underlying_cause: str
    count: int


@dataclass(slots=True)
class PreemptionGateState:
    """status.preemptionGates[]: a gate named in spec.preemptionGates, Open or Closed."""

    name: str
    position: str = GATE_CLOSED
    last_transition_time: float = 0.0


@dataclass(slots=True)
class WorkloadStatus:
    conditions: list[Condition] = field(default_factory=list)
    admission: Admission | None = None
    requeue_state: RequeueState | None = None
    reclaimable_pods: dict[str, int] = field(default_factory=dict)
    admission_checks: list[AdmissionCheckState] = field(default_factory=list)
    accumulated_past_execution_time_seconds: int | None = None
    evictions: list[EvictionStat] = field(default_factory=list)
    nominated_cluster_names: list[str] = field(default_factory=list)
    cluster_name: str | None = None
    # status.unhealthyNodes: assigned nodes that failed (TAS node replacement), by name.
    unhealthy_nodes: list[str] = field(default_factory=list)
    # status.resourceRequests as last propagated; written by the engine, never read back.
    resource_requests: list[dict[str, Any]] = field(default_factory=list)
    preemption_gates: tuple[PreemptionGateState, ...] = ()  # a tuple: no list per workload (rarely set)

    # The lookups below run tens of times per admission: kept as plain loops (no helper calls).
    def condition(self, type_: str) -> Condition | None:
        for c in self.conditions:
            if c.type == type_:
                return c
        return None

    def is_true(self, type_: str) -> bool:
        for c in self.conditions:
            if c.type == type_:
                return c.status == CONDITION_TRUE
        return False

    def check(self, name: str) -> AdmissionCheckState | None:
        for c in self.admission_checks:
            if c.name == name:
                return c
        return None


@dataclass(slots=True)
class Workload:
    meta: ObjectMeta
    pod_sets: tuple[PodSet, ...]
    queue_name: str = ""
    priority_class_ref: PriorityClassRef | None = None
    priority: int | None = None
    active: bool = True
    maximum_execution_time_seconds: int | None = None
    status: WorkloadStatus = field(default_factory=WorkloadStatus)
    preemption_gates: tuple[str, ...] = ()  # spec.preemptionGates[].name
    # Why the controllers found it inadmissible before queueing (Kueue's DRA checks: hub.controllers.dra);
    # never stored, worked out again on every apply.
    inadmissible: str = ""

    kind = "Workload"

    @property
    def key(self) -> str:
        return self.meta.key

    @property
    def is_quota_reserved(self) -> bool:
        for c in self.status.conditions:
            if c.type == QUOTA_RESERVED:
                return c.status == CONDITION_TRUE
        return False

    @property
    def is_admitted(self) -> bool:
        for c in self.status.conditions:
            if c.type == ADMITTED:
                return c.status == CONDITION_TRUE
        return False

    @property
    def is_finished(self) -> bool:
        for c in self.status.conditions:
            if c.type == FINISHED:
                return c.status == CONDITION_TRUE
        return False


def read_workload(r: Reader, meta: ObjectMeta) -> Workload:
    spec = r.child("spec")
    pod_sets = []
    for ps in spec.items("podSets"):
        count = ps.integer("count", 1, minimum=0, bits=32)
        template = ps.raw("template")
        pod_sets.append(
            PodSet(
                name=ps.string("name", DEFAULT_POD_SET_NAME),
                count=count if count is not None else 1,
                template=dict(template) if isinstance(template, dict) else {},
                spec=read_pod_template(ps.child("template")),
                min_count=ps.integer("minCount", None, bits=32),
                topology_request=_topology_request(ps.raw("topologyRequest")),
            )
        )
    if not pod_sets and not spec.has("podSets"):
        spec.errors.required(spec.at("podSets"))
    ref_reader = spec.opt_child("priorityClassRef")
    ref = None
    if ref_reader is not None:
        ref = PriorityClassRef(
            ref_reader.string("group"), ref_reader.string("kind"), ref_reader.string("name")
        )
    return Workload(
        meta=meta,
        pod_sets=tuple(pod_sets),
        queue_name=spec.string("queueName"),
        priority_class_ref=ref,
        priority=spec.integer("priority", bits=32),
        active=spec.boolean("active", True),
        maximum_execution_time_seconds=spec.integer("maximumExecutionTimeSeconds", bits=32),
        status=read_workload_status(r.child("status")),
        preemption_gates=tuple(g.string("name") for g in spec.items("preemptionGates")),
    )


def read_workload_status(st: Reader) -> WorkloadStatus:
    status = WorkloadStatus(conditions=read_conditions(st))
    adm = st.opt_child("admission")
    if adm is not None:
        assignments = []
        for psa in adm.items("podSetAssignments"):
            flavors = psa.string_map("flavors")
            usage = psa.resource_list("resourceUsage")
            assignments.append(
                PodSetAssignment(
                    name=psa.string("name", DEFAULT_POD_SET_NAME),
                    flavors=tuple(sorted(flavors.items())),
                    resource_usage=tuple(sorted(usage.items())),
                    count=psa.integer("count", 0) or 0,
                    topology_assignment=read_topology_assignment(
                        psa.raw("topologyAssignment"), psa.at("topologyAssignment"), psa.errors),
                )
            )
        status.admission = Admission(adm.string("clusterQueue"), tuple(assignments))
    rq = st.opt_child("requeueState")
    if rq is not None:
        status.requeue_state = RequeueState(rq.integer("count"), read_time(rq, "requeueAt"))
    for rp in st.items("reclaimablePods"):
        status.reclaimable_pods[rp.string("name")] = rp.integer("count", 0) or 0
    for ac in st.items("admissionChecks"):
        status.admission_checks.append(
            AdmissionCheckState(
                name=ac.string("name"),
                state=ac.enum("state", CHECK_STATES, CHECK_PENDING),
                last_transition_time=read_time(ac, "lastTransitionTime") or 0.0,
                message=ac.string("message"),
                requeue_after_seconds=ac.integer("requeueAfterSeconds"),
                retry_count=ac.integer("retryCount"),
                pod_set_updates=[dict(u.data) for u in ac.items("podSetUpdates")],
            )
        )
    status.accumulated_past_execution_time_seconds = st.integer("accumulatedPastExecutionTimeSeconds")
    for ev in st.child("schedulingStats").items("evictions"):
        status.evictions.append(
            EvictionStat(ev.string("reason"), ev.string("underlyingCause"), ev.integer("count", 0) or 0)
        )
    status.nominated_cluster_names = st.strings("nominatedClusterNames")
    status.cluster_name = st.opt_string("clusterName")
    status.preemption_gates = tuple(
        PreemptionGateState(gate.string("name"), gate.enum("position", (GATE_CLOSED, GATE_OPEN), GATE_CLOSED),
                            read_time(gate, "lastTransitionTime") or 0.0)
        for gate in st.items("preemptionGates"))
    status.unhealthy_nodes = [n.string("name") for n in st.items("unhealthyNodes")]
    return status


def admission_to_dict(admission: Admission) -> dict[str, Any]:
    return {
        "clusterQueue": admission.cluster_queue,
        "podSetAssignments": [
            {
                "name": psa.name,
                "flavors": dict(psa.flavors),
                "resourceUsage": {res: format_quantity(res, v) for res, v in psa.resource_usage},
                "count": psa.count,
                **({"topologyAssignment": to_v1beta2(psa.topology_assignment)}
                   if psa.topology_assignment is not None else {}),
            }
            for psa in admission.pod_set_assignments
        ],
    }


def workload_status_to_dict(status: WorkloadStatus) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if status.conditions:
        out["conditions"] = conditions_to_list(status.conditions)
    if status.admission is not None:
        out["admission"] = admission_to_dict(status.admission)
    if status.requeue_state is not None:
        rs: dict[str, Any] = {}
        if status.requeue_state.count is not None:
            rs["count"] = status.requeue_state.count
        if status.requeue_state.requeue_at is not None:
            rs["requeueAt"] = format_time(status.requeue_state.requeue_at)
        out["requeueState"] = rs
    if status.reclaimable_pods:
        out["reclaimablePods"] = [{"name": n, "count": c} for n, c in status.reclaimable_pods.items()]
    if status.admission_checks:
        checks = []
        for ac in status.admission_checks:
            item: dict[str, Any] = {
                "name": ac.name,
                "state": ac.state,
                "lastTransitionTime": format_time(ac.last_transition_time),
                "message": ac.message,
            }
            if ac.requeue_after_seconds is not None:
                item["requeueAfterSeconds"] = ac.requeue_after_seconds
            if ac.retry_count is not None:
                item["retryCount"] = ac.retry_count
            if ac.pod_set_updates:
                item["podSetUpdates"] = [dict(u) for u in ac.pod_set_updates]
            checks.append(item)
        out["admissionChecks"] = checks
    if status.resource_requests:
        # Kubernetes quantities ("6", "6Gi"), never the engine's integers (cpu in milli-units).
        out["resourceRequests"] = [
            {**r, "resources": {res: _quantity_text(res, v) for res, v in (r.get("resources") or {}).items()}}
            for r in status.resource_requests
        ]
    if status.accumulated_past_execution_time_seconds is not None:
        out["accumulatedPastExecutionTimeSeconds"] = status.accumulated_past_execution_time_seconds
    if status.evictions:
        out["schedulingStats"] = {
            "evictions": [
                {"reason": e.reason, "underlyingCause": e.underlying_cause, "count": e.count}
                for e in status.evictions
            ]
        }
    if status.nominated_cluster_names:
        out["nominatedClusterNames"] = list(status.nominated_cluster_names)
    if status.cluster_name is not None:
        out["clusterName"] = status.cluster_name
    if status.preemption_gates:
        out["preemptionGates"] = [
            {"name": g.name, "position": g.position, "lastTransitionTime": format_time(g.last_transition_time)}
            for g in status.preemption_gates
        ]
    if status.unhealthy_nodes:
        out["unhealthyNodes"] = [{"name": n} for n in status.unhealthy_nodes]
    return out


def _topology_request(raw: object) -> dict[str, Any] | None:
    return dict(raw) if isinstance(raw, dict) else None


def workload_spec_to_dict(wl: Workload) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "podSets": [
            {
                "name": ps.name,
                "count": ps.count,
                "template": ps.template,
                **({"minCount": ps.min_count} if ps.min_count is not None else {}),
                **({"topologyRequest": ps.topology_request} if ps.topology_request is not None else {}),
            }
            for ps in wl.pod_sets
        ],
        "active": wl.active,
    }
    if wl.queue_name:
        spec["queueName"] = wl.queue_name
    if wl.priority_class_ref is not None:
        ref = wl.priority_class_ref
        spec["priorityClassRef"] = {"group": ref.group, "kind": ref.kind, "name": ref.name}
    if wl.priority is not None:
        spec["priority"] = wl.priority
    if wl.maximum_execution_time_seconds is not None:
        spec["maximumExecutionTimeSeconds"] = wl.maximum_execution_time_seconds
    if wl.preemption_gates:
        spec["preemptionGates"] = [{"name": name} for name in wl.preemption_gates]
    return spec


def _quantity_text(resource: str, value: Any) -> Any:
    return format_quantity(resource, value) if isinstance(value, int) and not isinstance(value, bool) else value
