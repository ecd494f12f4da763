"""Flavor assignment: which ResourceFlavor each pod set's resources get, and how.

Follows Kueue's flavorassigner: pod sets in spec order, one flavor per resource
group, flavors tried in the ClusterQueue's order (resuming a previous scan),
eligibility by taints and node selectors restricted to the flavor's own label
keys, and a per-flavor mode (fit / reclaim / preempt / no candidates / no fit)
with a borrowing level, chosen under the queue's flavorFungibility.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

from hub.api.meta import Taint
from hub.api.pods import PodSpecInfo
from hub.api.quantity import format_quantity
from hub.api.queues import (
    PREEMPTION_OVER_BORROWING,
    TRY_NEXT_FLAVOR,
    FlavorFungibility,
    ResourceFlavor,
)
from hub.api.topology_assignment import TopologyAssignment

from .clusterqueue import ClusterQueueState
from .quota import FR, QuotaNode, find_height_of_lowest_subtree_that_fits
from .tas import PodSetPlacement, TASInventory, explicitly_requested
from .workload_info import PodSetRequests, WorkloadInfo

# QuotaReserved=False reasons for a workload that does not fit.
NO_MATCHING_FLAVOR = "NoMatchingFlavor"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
WAITING_FOR_QUOTA = "WaitingForQuota"
TOPOLOGY_PLACEMENT_FAILED = "TopologyPlacementFailed"
_SEVERITY = {NO_MATCHING_FLAVOR: 4, EXCEEDS_MAX_QUOTA: 3, WAITING_FOR_QUOTA: 2, TOPOLOGY_PLACEMENT_FAILED: 1}


def most_severe(a: str, b: str) -> str:
    return a if _SEVERITY.get(a, 0) >= _SEVERITY.get(b, 0) else b


class Mode(IntEnum):
    """A workload's or pod set's assignment mode (Kueue's FlavorAssignmentMode)."""

    NO_FIT = 0
    PREEMPT = 1
    DEFERRED_FIT = 2
    FIT = 3


class PMode(IntEnum):
    """Per-flavor outcome, ordered worst to best (Kueue's preemptionMode)."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4

    def as_mode(self) -> Mode:
        if self is PMode.NO_FIT:
            return Mode.NO_FIT
        if self is PMode.FIT:
            return Mode.FIT
        return Mode.PREEMPT


_WORST_BORROW = 1 << 30


@dataclass(slots=True)
class Granular:
    pmode: PMode
    borrow: int

    def is_preempt(self) -> bool:
        return self.pmode in (PMode.PREEMPT, PMode.RECLAIM)


def is_preferred(a: Granular, b: Granular, ff: FlavorFungibility) -> bool:
    """True if ``a`` is a better outcome than ``b`` under the queue's fungibility."""
    if a.pmode == PMode.NO_FIT:
        return False
    if b.pmode == PMode.NO_FIT:
        return True
    a_none = a.pmode == PMode.NO_CANDIDATES
    b_none = b.pmode == PMode.NO_CANDIDATES
    if a_none != b_none:
        return not a_none
    if ff.preference == PREEMPTION_OVER_BORROWING:
        if a.borrow != b.borrow:
            return a.borrow < b.borrow
        return a.pmode > b.pmode
    if a.pmode != b.pmode:
        return a.pmode > b.pmode
    return a.borrow < b.borrow


def should_try_next_flavor(mode: Granular, ff: FlavorFungibility) -> bool:
    if mode.pmode in (PMode.NO_FIT, PMode.NO_CANDIDATES):
        return True
    if mode.is_preempt() and ff.when_can_preempt == TRY_NEXT_FLAVOR:
        return True
    return mode.borrow != 0 and ff.when_can_borrow == TRY_NEXT_FLAVOR


@dataclass(slots=True)
class FlavorChoice:
    flavor: str
    mode: Mode
    borrow: int
    tried_index: int = -1


@dataclass(slots=True)
class FlavorAttempt:
    flavor: str
    pmode: PMode
    no_fit_reason: str


@dataclass(slots=True)
class PodSetAssignment:
    name: str
    count: int
    requests: dict[str, int]  # totals for ``count`` pods, including ``pods`` when covered
    flavors: dict[str, FlavorChoice] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    attempts: list[FlavorAttempt] = field(default_factory=list)
    no_fit_reason: str = ""  # set when no flavor attempt explains the failure (an uncovered resource)
    topology: TopologyAssignment | None = None  # topology-aware scheduling's placement

    def mode(self) -> Mode:
        if not self.reasons:
            return Mode.FIT
        if not self.flavors:
            return Mode.NO_FIT
        return min((f.mode for f in self.flavors.values()), default=Mode.FIT)

    def message(self) -> str:
        return ", ".join(sorted(self.reasons))


@dataclass(slots=True)
class Assignment:
    pod_sets: list[PodSetAssignment]
    borrowing: int = 0
    usage: dict[FR, int] = field(default_factory=dict)
    last_state: list[dict[str, int]] = field(default_factory=list)
    no_fit_reason: str = ""
    forced_mode: Mode | None = None
    # The TAS pod sets (placed, or waiting for a domain to free: then targets are sought by TAS preemption).
    tas: list[PodSetPlacement] = field(default_factory=list)
    tas_blocked: bool = False

    def mode(self) -> Mode:
        if self.forced_mode is not None:
            return self.forced_mode
        if not self.pod_sets:
            return Mode.NO_FIT
        return min(ps.mode() for ps in self.pod_sets)

    def message(self) -> str:
        parts = []
        for ps in self.pod_sets:
            if ps.mode() == Mode.FIT and not ps.reasons:
                continue
            parts.append(f"couldn't assign flavors to pod set {ps.name}: {ps.message()}")
        return "; ".join(parts)

    def flavors_by_pod_set(self) -> dict[str, dict[str, str]]:
        return {ps.name: {res: c.flavor for res, c in ps.flavors.items()} for ps in self.pod_sets}

    def resolve_no_fit_reason(self, cq: ClusterQueueState) -> None:
        if self.mode() != Mode.NO_FIT:
            return
        overall = ""
        for ps in self.pod_sets:
            if ps.mode() != Mode.NO_FIT:
                continue
            if ps.no_fit_reason:
                overall = most_severe(overall, ps.no_fit_reason)
                continue
            if not ps.attempts:
                overall = most_severe(overall, NO_MATCHING_FLAVOR)
                continue
            per_group: dict[int, str] = {}
            for i, att in enumerate(ps.attempts):
                if att.pmode != PMode.NO_FIT:
                    continue
                groups = [
                    gi for gi, g in enumerate(cq.spec.resource_groups) if any(f.name == att.flavor for f in g.flavors)
                ] or [-1 - i]
                for gi in groups:
                    existing = per_group.get(gi)
                    if existing is None or _SEVERITY.get(att.no_fit_reason, 0) < _SEVERITY.get(existing, 0):
                        per_group[gi] = att.no_fit_reason
            ps_reason = ""
            for reason in per_group.values():
                ps_reason = most_severe(ps_reason, reason)
            overall = most_severe(overall, ps_reason)
        self.no_fit_reason = overall


class PreemptionOracle(Protocol):
    def simulate_preemption(
        self, cq: ClusterQueueState, info: WorkloadInfo, fr: FR, quantity: int
    ) -> tuple[PMode, int]:
        """Whether preempting could make ``quantity`` of ``fr`` fit, and the borrowing level after."""
        ...


def limits_blocking(node: QuotaNode, fr: FR, name: str) -> str:
    """What keeps unused cohort quota from a ClusterQueue: its borrowingLimit, others' lendingLimit."""
    parent = node.parent
    if parent is None:
        return ""
    resource = fr[1]
    out = ""
    quota = node.quotas.get(fr)
    if quota is not None and quota.borrowing_limit is not None:
        unlimited = node.local_available(fr) + parent.available(fr)
        if unlimited > node.available(fr):
            borrowed = max(0, node.usage.get(fr, 0) - node.subtree.get(fr, 0))
            out += (
                f"; borrowing limited by borrowingLimit {format_quantity(resource, quota.borrowing_limit)} of "
                f"ClusterQueue {name} ({format_quantity(resource, borrowed)} borrowed)"
            )
    held = []
    for other in node.root().subtree_cqs():
        if other is node:
            continue
        kept = other.local_available(fr)
        q = other.quotas.get(fr)
        if kept > 0 and q is not None and q.lending_limit is not None:
            held.append(f"{format_quantity(resource, kept)} in ClusterQueue {other.name} (lendingLimit "
                        f"{format_quantity(resource, q.lending_limit)})")
    if held:
        out += "; unused but not lent: " + ", ".join(held)
    return out


def untolerated_taint(taints: tuple[Taint, ...], spec: PodSpecInfo, flavor: ResourceFlavor) -> Taint | None:
    for taint in taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if any(t.tolerates(taint) for t in spec.tolerations) or any(t.tolerates(taint) for t in flavor.tolerations):
            continue
        return taint
    return None


def flavor_matches_node_constraints(spec: PodSpecInfo, flavor: ResourceFlavor) -> bool:
    """nodeSelector and required node affinity, restricted to keys in the flavor's labels."""
    labels = flavor.node_labels
    for key, value in spec.node_selector:
        if key in labels and labels[key] != value:
            return False
    if spec.required_affinity:
        terms = []
        for term in spec.required_affinity:
            kept = [req for req in term.match_expressions if req.key in labels]
            if not kept:
                # A term left empty matches everything, so the whole affinity does.
                return True
            terms.append(kept)
        return any(all(req.matches(labels) for req in term) for term in terms)
    return True


class FlavorAssigner:
    """Assigns flavors for one workload against the current quota state."""

    def __init__(
        self,
        info: WorkloadInfo,
        cq: ClusterQueueState,
        flavors: dict[str, ResourceFlavor],
        oracle: PreemptionOracle,
        *,
        fair_sharing: bool,
        ignore_undeclared: bool = False,
        tas: TASInventory | None = None,
        least_free_profile: bool = True,
        delay_topology: bool = False,
        allowed_flavors: frozenset[str] | None = None,
    ) -> None:
        self.allowed_flavors = allowed_flavors  # concurrent admission's variants: one flavor each
        self.tas = tas
        self.delay_topology = delay_topology
        self.least_free_profile = least_free_profile
        self.info = info
        self.cq = cq
        self.flavors = flavors
        self.oracle = oracle
        self.fair_sharing = fair_sharing
        self.ignore_undeclared = ignore_undeclared
        # Set when the scheduler recomputes an entry: only these flavors may be used.
        self.nomination: dict[str, dict[str, str]] | None = None

    def assign(self, counts: list[int] | None = None) -> Assignment:
        info = self.info
        requests: list[PodSetRequests] = list(info.requests)
        if counts is not None:
            requests = [r.scaled_to(c) for r, c in zip(requests, counts)]
        covers_pods = self.cq.covers("pods")
        assignment = Assignment(pod_sets=[])
        for index, ps_req in enumerate(requests):
            totals = dict(ps_req.total)
            if covers_pods:
                totals["pods"] = ps_req.count
            psa = PodSetAssignment(name=ps_req.name, count=ps_req.count, requests=totals)
            self._assign_pod_set(index, psa, assignment.usage)
            self._append(assignment, psa)
            if totals and not psa.flavors:
                assignment.resolve_no_fit_reason(self.cq)
                return assignment
        if self.tas is not None and assignment.mode() != Mode.NO_FIT:
            self._assign_topology(assignment, requests)
        assignment.resolve_no_fit_reason(self.cq)
        return assignment

    # --- topology-aware scheduling (Kueue's tas_flavorassigner) -------------------------

    def _tas_only(self) -> bool:
        assert self.tas is not None
        return all(self.tas.is_tas_flavor(f.name) for g in self.cq.spec.resource_groups for f in g.flavors)

    def _tas_requested(self, index: int) -> tuple[bool, bool]:
        """(requested, implied): a topology annotation, or none in a queue of TAS flavors only."""
        if self.tas is None:
            return False, False
        if explicitly_requested(self.info.wl.pod_sets[index].topology_request):
            return True, False
        implied = self._tas_only()
        return implied, implied

    def _assign_topology(self, assignment: Assignment, requests: list[PodSetRequests]) -> None:
        tas = self.tas
        assert tas is not None
        if self.delay_topology or not tas.topologies:
            return  # MultiKueue: the worker that runs it places it (Kueue's DelayedTopologyRequest); no TAS at all
        wanted: list[tuple[PodSetAssignment, PodSetPlacement]] = []
        for index, psa in enumerate(assignment.pod_sets):
            requested, implied = self._tas_requested(index)
            if not requested or psa.count == 0:
                continue
            flavors = sorted({c.flavor for c in psa.flavors.values() if tas.is_tas_flavor(c.flavor)})
            if len(flavors) != 1:
                continue
            ps = self.info.wl.pod_sets[index]
            per_pod = dict(requests[index].per_pod)
            per_pod["pods"] = 1
            wanted.append((psa, PodSetPlacement(psa.name, flavors[0], psa.count, tuple(sorted(per_pod.items())),
                                                ps.spec, ps.topology_request or {}, implied, self.least_free_profile)))
        if not wanted:
            return
        placements = [p for _, p in wanted]
        assignment.tas = placements
        by_name = {p.name: psa for psa, p in wanted}
        quota_fits = assignment.mode() == Mode.FIT
        if quota_fits:
            placed, failed, reason = tas.place(placements)
            if not failed:
                for name, ta in placed.items():
                    by_name[name].topology = ta
                return
            by_name[failed].reasons.append(reason)
            self._set_mode(by_name[failed], Mode.PREEMPT)
        _, failed_empty, reason_empty = tas.place(placements, empty=True)
        if failed_empty:
            # Not even on empty nodes: no preemption can help.
            psa = by_name[failed_empty]
            if reason_empty not in psa.reasons:
                psa.reasons.append(reason_empty)
            psa.no_fit_reason = TOPOLOGY_PLACEMENT_FAILED
            self._set_mode(psa, Mode.NO_FIT)
        elif quota_fits:
            # Quota fits but the nodes are taken: only freeing a domain helps (hub.engine.tas_preemption).
            assignment.tas_blocked = True

    @staticmethod
    def _set_mode(psa: PodSetAssignment, mode: Mode) -> None:
        for choice in psa.flavors.values():
            choice.mode = min(choice.mode, mode)

    def _append(self, assignment: Assignment, psa: PodSetAssignment) -> None:
        assignment.pod_sets.append(psa)
        tried: dict[str, int] = {}
        for res, choice in psa.flavors.items():
            assignment.borrowing = max(assignment.borrowing, choice.borrow)
            fr = (choice.flavor, res)
            assignment.usage[fr] = assignment.usage.get(fr, 0) + psa.requests.get(res, 0)
            tried[res] = choice.tried_index
        assignment.last_state.append(tried)

    def _assign_pod_set(self, index: int, psa: PodSetAssignment, assumed: dict[FR, int]) -> None:
        group_flavors: dict[str, FlavorChoice] = {}
        failed_reasons: list[str] | None = None
        for res in sorted(psa.requests):
            quantity = psa.requests[res]
            if not self.cq.covers(res):
                if quantity == 0 or self.ignore_undeclared:
                    continue
                # No flavor of this ClusterQueue has it: waiting cannot help, only changing the
                # queue (or the request) can, so the reason is not WaitingForQuota.
                failed_reasons = [f"resource {res} unavailable in ClusterQueue"]
                psa.no_fit_reason = NO_MATCHING_FLAVOR
                break
            if res in group_flavors:
                continue
            chosen, reasons, attempts = self._find_flavor(index, res, psa, assumed)
            psa.attempts.extend(attempts)
            if not chosen:
                failed_reasons = reasons
                break
            group_flavors.update(chosen)
            psa.reasons.extend(reasons)
        if failed_reasons is not None:
            psa.flavors = {}
            psa.reasons = failed_reasons or ["no flavor could be assigned"]
            return
        psa.flavors = {res: c for res, c in group_flavors.items() if res in psa.requests}

    def _find_flavor(
        self, index: int, res: str, psa: PodSetAssignment, assumed: dict[FR, int]
    ) -> tuple[dict[str, FlavorChoice], list[str], list[FlavorAttempt]]:
        cq = self.cq
        group = cq.spec.resource_groups[cq.group_of_resource[res]]
        group_requests = {r: v for r, v in psa.requests.items() if r in group.covered_resources}
        spec = self.info.wl.pod_sets[index].spec
        ff = cq.spec.flavor_fungibility
        reasons: list[str] = []
        attempts: list[FlavorAttempt] = []
        best: dict[str, FlavorChoice] | None = None
        best_mode = Granular(PMode.NO_FIT, _WORST_BORROW)
        attempted = -1
        flavor_names = [f.name for f in group.flavors]
        start = self.info.next_flavor_index(index, res)
        for idx in range(start, len(flavor_names)):
            attempted = idx
            name = flavor_names[idx]
            if self.nomination is not None and self.nomination.get(psa.name, {}).get(res) not in (None, name):
                reasons.append(f"skipping flavor {name} as it is not found in the nomination mapping for resource {res}")
                continue
            if self.allowed_flavors is not None and name not in self.allowed_flavors:
                reasons.append(f"skipping flavor {name} due to WorkloadAllowedResourceFlavorAnnotation annotation")
                continue
            problem = self._check_flavor(name, spec) or self._check_tas_flavor(index, name, group_requests)
            if problem is not None:
                reasons.append(problem)
                attempts.append(FlavorAttempt(name, PMode.NO_FIT, NO_MATCHING_FLAVOR))
                continue
            choices: dict[str, FlavorChoice] = {}
            representative = Granular(PMode.FIT, 0)
            no_fit_reason = ""
            for r in sorted(group_requests):
                fr = (name, r)
                pmode, borrow, why, reason = self._fits_quota(fr, assumed.get(fr, 0), group_requests[r])
                if why:
                    reasons.append(why)
                    no_fit_reason = most_severe(no_fit_reason, reason)
                mode = Granular(pmode, borrow)
                if is_preferred(representative, mode, ff):
                    representative = mode
                if representative.pmode == PMode.NO_FIT:
                    continue
                choices[r] = FlavorChoice(name, pmode.as_mode(), borrow)
            attempts.append(FlavorAttempt(name, representative.pmode, no_fit_reason))
            if not should_try_next_flavor(representative, ff):
                best, best_mode = choices, representative
                break
            if is_preferred(representative, best_mode, ff):
                best, best_mode = choices, representative
        if best is None:
            return {}, reasons, attempts
        tried = -1 if attempted == len(flavor_names) - 1 else attempted
        for choice in best.values():
            choice.tried_index = tried
        if best_mode.pmode == PMode.FIT:
            return best, [], attempts
        return best, reasons, attempts

    def _check_flavor(self, name: str, spec: PodSpecInfo) -> str | None:
        flavor = self.flavors.get(name)
        if flavor is None:
            return f"flavor {name} not found"
        taint = untolerated_taint(flavor.node_taints, spec, flavor)
        if taint is not None:
            return f"untolerated taint {{{taint.key} {taint.value} {taint.effect}}} in flavor {name}"
        if not flavor_matches_node_constraints(spec, flavor):
            clash = [f"{k}={v} (flavor has {k}={flavor.node_labels[k]})" for k, v in spec.node_selector
                     if k in flavor.node_labels and flavor.node_labels[k] != v]
            return f"flavor {name} doesn't match node affinity" + (f": nodeSelector {', '.join(clash)}" if clash else "")
        return None

    def _check_tas_flavor(self, index: int, name: str, group_requests: dict[str, int]) -> str | None:
        """Kueue's checkPodSetAndFlavorMatchForTAS."""
        tas = self.tas
        if tas is None:
            return None
        requested, implied = self._tas_requested(index)
        flavor = self.flavors[name]
        if not requested:
            return f'Flavor "{name}" supports only TopologyAwareScheduling' if flavor.topology_name else None
        if implied:
            return None
        if not flavor.topology_name:
            return f'Flavor "{name}" does not support TopologyAwareScheduling' if any(group_requests.values()) else None
        tree = tas.tree(name)
        if tree is None:
            return f'Flavor "{name}" information missing in TAS cache'
        request = self.info.wl.pod_sets[index].topology_request or {}
        for key in ("required", "preferred", "podSetSliceRequiredTopology"):
            level = request.get(key)
            if level and tree.level_index(str(level)) < 0:
                return f'Flavor "{name}" does not contain the requested level'
        return None

    def _fits_quota(self, fr: FR, assumed: int, request: int) -> tuple[PMode, int, str, str]:
        """(mode, borrowing level, message, no-fit reason) for one flavor-resource."""
        node = self.cq.node
        value = assumed + request
        resource = fr[1]
        maximum = node.potential_available(fr)
        if value > maximum:
            msg = (
                f"insufficient quota for {resource} in flavor {fr[0]}, previously considered podsets requests "
                f"({format_quantity(resource, assumed)}) + current podset request ({format_quantity(resource, request)}) "
                f"> maximum capacity ({format_quantity(resource, maximum)}): "
                f"{format_quantity(resource, value - maximum)} more than ClusterQueue {self.cq.name} can ever get"
            )
            return PMode.NO_FIT, 0, msg, EXCEEDS_MAX_QUOTA
        borrow, may_reclaim = find_height_of_lowest_subtree_that_fits(node, fr, value)
        available = node.available(fr)
        if value <= available:
            return PMode.FIT, borrow, "", ""
        where = f"{self.cq.name} and its cohort" if node.parent is not None else self.cq.name
        msg = (
            f"insufficient unused quota for {resource} in flavor {fr[0]}, "
            f"{format_quantity(resource, value - available)} more needed "
            f"({format_quantity(resource, value)} requested, {format_quantity(resource, max(0, available))} "
            f"available in {where}){limits_blocking(node, fr, self.cq.name)}"
        )
        if self.cq.quota_for(fr).nominal >= value or may_reclaim or self._can_preempt_while_borrowing():
            pmode, borrow_after = self.oracle.simulate_preemption(self.cq, self.info, fr, value)
            return pmode, borrow_after, msg, ("" if pmode != PMode.NO_FIT else WAITING_FOR_QUOTA)
        return PMode.NO_FIT, borrow, msg, WAITING_FOR_QUOTA

    def _can_preempt_while_borrowing(self) -> bool:
        pre = self.cq.spec.preemption
        return pre.borrow_within_cohort.policy != "Never" or (
            self.fair_sharing and pre.reclaim_within_cohort != "Never"
        )
