"""ResourceFlavor, ClusterQueue, Cohort and LocalQueue (v1beta2 internal form)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from .meta import (
    Condition,
    ObjectMeta,
    Taint,
    Toleration,
    read_conditions,
    read_label_selector,
    read_taints,
    read_tolerations,
)
from .quantity import QuantityError, parse_quantity
from .reader import Reader
from .selectors import LabelSelector

# Enumerations, spelled as in Kueue.
BEST_EFFORT_FIFO = "BestEffortFIFO"
STRICT_FIFO = "StrictFIFO"
QUEUEING_STRATEGIES = (BEST_EFFORT_FIFO, STRICT_FIFO)

STOP_NONE, STOP_HOLD, STOP_HOLD_AND_DRAIN = "None", "Hold", "HoldAndDrain"
# Kueue's finalizer on ClusterQueues: a deleted queue stays (terminating) while workloads reserve quota in it.
RESOURCE_IN_USE_FINALIZER = "kueue.x-k8s.io/resource-in-use"
STOP_POLICIES = (STOP_NONE, STOP_HOLD, STOP_HOLD_AND_DRAIN)

NEVER, LOWER_PRIORITY, LOWER_OR_NEWER_EQUAL, ANY = "Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any"
WITHIN_CQ_POLICIES = (NEVER, LOWER_PRIORITY, LOWER_OR_NEWER_EQUAL)
RECLAIM_POLICIES = (NEVER, LOWER_PRIORITY, ANY)
BORROW_WITHIN_COHORT_POLICIES = (NEVER, LOWER_PRIORITY)

MAY_STOP_SEARCH, TRY_NEXT_FLAVOR = "MayStopSearch", "TryNextFlavor"
FUNGIBILITY_POLICIES = (MAY_STOP_SEARCH, TRY_NEXT_FLAVOR)
BORROWING_OVER_PREEMPTION, PREEMPTION_OVER_BORROWING = "BorrowingOverPreemption", "PreemptionOverBorrowing"
FUNGIBILITY_PREFERENCES = (BORROWING_OVER_PREEMPTION, PREEMPTION_OVER_BORROWING)


@dataclass(slots=True)
class ResourceFlavor:
    meta: ObjectMeta
    node_labels: dict[str, str] = field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_name: str = ""

    kind = "ResourceFlavor"


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    name: str
    nominal_quota: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    name: str
    resources: tuple[ResourceQuota, ...]


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    when_can_borrow: str = MAY_STOP_SEARCH
    when_can_preempt: str = TRY_NEXT_FLAVOR
    preference: str = ""  # unset behaves as BorrowingOverPreemption


@dataclass(frozen=True, slots=True)
class BorrowWithinCohort:
    policy: str = NEVER
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class Preemption:
    within_cluster_queue: str = NEVER
    reclaim_within_cohort: str = NEVER
    borrow_within_cohort: BorrowWithinCohort = BorrowWithinCohort()


@dataclass(frozen=True, slots=True)
class AdmissionCheckRule:
    name: str
    on_flavors: tuple[str, ...] = ()


CONCURRENT_TRY_PREFERRED = "TryPreferredFlavors"
CONCURRENT_RETAIN_FIRST = "RetainFirstAdmission"
CONCURRENT_MODES = (CONCURRENT_TRY_PREFERRED, CONCURRENT_RETAIN_FIRST)


@dataclass(frozen=True, slots=True)
class ConcurrentAdmissionPolicy:
    """spec.concurrentAdmissionPolicy (Kueue v0.18+, v1beta2): variants of a workload per flavor."""

    mode: str = CONCURRENT_TRY_PREFERRED
    has_constraints: bool = False
    last_acceptable_flavor: str = ""


@dataclass(slots=True)
class ClusterQueue:
    meta: ObjectMeta
    resource_groups: tuple[ResourceGroup, ...] = ()
    cohort_name: str = ""
    queueing_strategy: str = BEST_EFFORT_FIFO
    namespace_selector: LabelSelector | None = None  # None selects no namespace
    flavor_fungibility: FlavorFungibility = FlavorFungibility()
    preemption: Preemption = Preemption()
    admission_checks: tuple[AdmissionCheckRule, ...] = ()
    stop_policy: str = STOP_NONE
    fair_sharing_weight: Fraction = Fraction(1)
    admission_fair_sharing: bool = False
    conditions: list[Condition] = field(default_factory=list)
    concurrent_admission: ConcurrentAdmissionPolicy | None = None

    kind = "ClusterQueue"


@dataclass(slots=True)
class Cohort:
    meta: ObjectMeta
    parent_name: str = ""
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_sharing_weight: Fraction = Fraction(1)

    kind = "Cohort"


@dataclass(slots=True)
class LocalQueue:
    meta: ObjectMeta
    cluster_queue: str = ""
    stop_policy: str = STOP_NONE
    fair_sharing_weight: Fraction = Fraction(1)

    kind = "LocalQueue"


def read_flavor(r: Reader, meta: ObjectMeta) -> ResourceFlavor:
    spec = r.child("spec")
    return ResourceFlavor(
        meta=meta,
        node_labels=spec.string_map("nodeLabels"),
        node_taints=tuple(read_taints(spec, "nodeTaints")),
        tolerations=tuple(read_tolerations(spec, "tolerations")),
        topology_name=spec.string("topologyName"),
    )


def read_resource_groups(spec: Reader) -> tuple[ResourceGroup, ...]:
    groups = []
    for g in spec.items("resourceGroups"):
        covered = tuple(g.strings("coveredResources"))
        flavors = []
        for f in g.items("flavors"):
            resources = []
            for res in f.items("resources"):
                name = res.string("name")
                if not name:
                    res.errors.required(res.at("name"))
                nominal = res.quantity("nominalQuota", name)
                if nominal is None and not res.has("nominalQuota"):
                    res.errors.required(res.at("nominalQuota"))
                resources.append(
                    ResourceQuota(
                        name=name,
                        nominal_quota=nominal or 0,
                        borrowing_limit=res.quantity("borrowingLimit", name),
                        lending_limit=res.quantity("lendingLimit", name),
                    )
                )
            fname = f.string("name")
            if not fname:
                f.errors.required(f.at("name"))
            flavors.append(FlavorQuotas(fname, tuple(resources)))
        groups.append(ResourceGroup(covered, tuple(flavors)))
    return tuple(groups)


def read_weight(r: Reader) -> Fraction:
    fs = r.child("fairSharing")
    raw = fs.raw("weight")
    if raw is None:
        return Fraction(1)
    try:
        return parse_quantity(raw)
    except QuantityError as exc:
        fs.errors.invalid(fs.at("weight"), raw, str(exc))
        return Fraction(1)


def read_cluster_queue(r: Reader, meta: ObjectMeta) -> ClusterQueue:
    spec = r.child("spec")
    ff = spec.child("flavorFungibility")
    pre = spec.child("preemption")
    bwc = pre.child("borrowWithinCohort")
    selector_reader = spec.opt_child("namespaceSelector")
    rules = []
    for rule in spec.child("admissionChecksStrategy").items("admissionChecks"):
        rules.append(AdmissionCheckRule(rule.string("name"), tuple(rule.strings("onFlavors"))))
    # v1beta2 has no plain admissionChecks list, but accept it on internal manifests too.
    for name in spec.strings("admissionChecks"):
        rules.append(AdmissionCheckRule(name))
    scope = spec.child("admissionScope")
    return ClusterQueue(
        meta=meta,
        resource_groups=read_resource_groups(spec),
        cohort_name=spec.string("cohortName"),
        queueing_strategy=spec.enum("queueingStrategy", QUEUEING_STRATEGIES, BEST_EFFORT_FIFO),
        namespace_selector=read_label_selector(selector_reader) if selector_reader is not None else None,
        flavor_fungibility=FlavorFungibility(
            when_can_borrow=ff.enum("whenCanBorrow", FUNGIBILITY_POLICIES, MAY_STOP_SEARCH),
            when_can_preempt=ff.enum("whenCanPreempt", FUNGIBILITY_POLICIES, TRY_NEXT_FLAVOR),
            preference=ff.enum("preference", ("", *FUNGIBILITY_PREFERENCES), ""),
        ),
        preemption=Preemption(
            within_cluster_queue=pre.enum("withinClusterQueue", WITHIN_CQ_POLICIES, NEVER),
            reclaim_within_cohort=pre.enum("reclaimWithinCohort", RECLAIM_POLICIES, NEVER),
            borrow_within_cohort=BorrowWithinCohort(
                policy=bwc.enum("policy", BORROW_WITHIN_COHORT_POLICIES, NEVER),
                max_priority_threshold=bwc.integer("maxPriorityThreshold"),
            ),
        ),
        admission_checks=tuple(rules),
        stop_policy=spec.enum("stopPolicy", STOP_POLICIES, STOP_NONE),
        fair_sharing_weight=read_weight(spec),
        admission_fair_sharing=scope.string("admissionMode") == "UsageBasedAdmissionFairSharing",
        conditions=read_conditions(r.child("status")),
        concurrent_admission=read_concurrent_admission(spec),
    )


def read_concurrent_admission(spec: Reader) -> ConcurrentAdmissionPolicy | None:
    policy = spec.opt_child("concurrentAdmissionPolicy")
    if policy is None:
        return None
    migration = policy.child("migration")
    # Kueue reads an empty mode as TryPreferredFlavors (its migrationMode()).
    mode = migration.enum("mode", ("", *CONCURRENT_MODES), "") or CONCURRENT_TRY_PREFERRED
    constraints = migration.opt_child("constraints")
    last = constraints.string("lastAcceptableFlavorName") if constraints is not None else ""
    return ConcurrentAdmissionPolicy(mode, constraints is not None, last)


def read_cohort(r: Reader, meta: ObjectMeta) -> Cohort:
    spec = r.child("spec")
    return Cohort(
        meta=meta,
        parent_name=spec.string("parentName"),
        resource_groups=read_resource_groups(spec),
        fair_sharing_weight=read_weight(spec),
    )


def read_local_queue(r: Reader, meta: ObjectMeta) -> LocalQueue:
    spec = r.child("spec")
    cq = spec.string("clusterQueue")
    if not cq:
        spec.errors.required(spec.at("clusterQueue"))
    return LocalQueue(
        meta=meta,
        cluster_queue=cq,
        stop_policy=spec.enum("stopPolicy", STOP_POLICIES, STOP_NONE),
        fair_sharing_weight=read_weight(spec),
    )
