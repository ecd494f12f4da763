"""Kueue's FindTopologyAssignment over a :class:`DomainTree` whose leaves' pod counts are filled.

Phase 1 rolls the leaves' counts up (pods, and whole slices at and above the slice level).
Phase 2a picks the level and domains: the requested level's best domain, for a required
request or else one level up at a time (preferred), and several top-level domains as a last
resort (preferred, unconstrained). Phase 2b walks down, at each level giving the pods to as
few domains as it can. Profiles, as in Kueue with TASProfileMixed (its default since v0.15):
BestFit everywhere (largest domains first, the last one the tightest that fits), except
LeastFreeCapacity (smallest first) for unconstrained pod sets. A pod-set group's leader (one
pod) goes with its workers: domains are ranked first by whether the leader fits, and the
workers' room beside it (``pods_wl``, ``slices_wl``) is what counts where the leader goes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hub.api.topology_assignment import TopologyAssignment

from .balanced import balanced
from .tree import Domain, DomainTree


@dataclass(frozen=True, slots=True)
class Request:
    count: int
    level: int  # the requested (required / preferred) level's index
    required: bool
    unconstrained: bool
    slice_size: int = 1
    slice_level: int = -1  # -1: the lowest level
    least_free: bool = False  # LeastFreeCapacity (the mixed profile's choice for unconstrained)
    leader: int = 0  # 1 for a pod-set group with a leader
    balanced: bool = False  # TASBalancedPlacement (hub.engine.tas.balanced), for preferred pod sets


class NoFit(Exception):
    """The pod set fits nowhere; the message is Kueue's."""


Count = Callable[[Domain], int]


def _slices(d: Domain) -> int:
    return d.slices


def _pods(d: Domain) -> int:
    return d.pods


def _slices_wl(d: Domain) -> int:
    return d.slices_wl


def _pods_wl(d: Domain) -> int:
    return d.pods_wl


def _sorted(domains: list[Domain], least_free: bool) -> list[Domain]:
    if least_free:
        return sorted(domains, key=lambda d: (d.slices, d.pods, d.values))
    return sorted(domains, key=lambda d: (-d.slices, d.pods, d.values))


def _sorted_with_leader(domains: list[Domain], least_free: bool) -> list[Domain]:
    if least_free:
        return sorted(domains, key=lambda d: (-d.leader, d.slices_wl, d.pods_wl, d.values))
    return sorted(domains, key=lambda d: (-d.leader, -d.slices_wl, d.pods_wl, d.values))


def _best_fit(domains: list[Domain], needed: int, count: Count, leader: int = 0) -> Domain:
    """The first domain with the smallest count that still holds ``needed`` (else the first)."""
    best, best_count = domains[0], -1
    for d in domains:
        if d.leader < leader:
            continue
        c = count(d)
        if c >= needed and (best_count < 0 or c < best_count):
            best, best_count = d, c
    return best


def fill_counts(tree: DomainTree, slice_size: int, slice_level: int, leader_required: bool) -> None:
    """Leaves' ``pods`` (and ``leader``, ``pods_wl``) are set; roll them up and count whole slices at and
    above ``slice_level`` (Kueue's fillInCountsHelper)."""
    depth = len(tree.levels) - 1
    if not leader_required:
        _fill_counts_plain(tree, slice_size, slice_level)
        return
    for leaf in tree.per_level[depth]:
        at_slice = depth == slice_level
        leaf.slices = leaf.pods // slice_size if at_slice else 0
        leaf.slices_wl = leaf.pods_wl // slice_size if at_slice else 0
        leaf.assigned = leaf.assigned_leader = 0
    for level in range(depth - 1, -1, -1):
        for d in tree.per_level[level]:
            pods = slices = leader = 0
            min_pod_gap = min_slice_gap = -1
            for c in d.children:
                pods += c.pods
                slices += c.slices
                if not leader_required or c.leader > 0:
                    gap, sgap = c.pods - c.pods_wl, c.slices - c.slices_wl
                    min_pod_gap = gap if min_pod_gap < 0 else min(min_pod_gap, gap)
                    min_slice_gap = sgap if min_slice_gap < 0 else min(min_slice_gap, sgap)
                leader = max(leader, c.leader)
            d.pods, d.leader = pods, leader
            d.pods_wl = pods - min_pod_gap if min_pod_gap >= 0 else 0
            slices_wl = slices - min_slice_gap if min_slice_gap >= 0 else 0
            if level == slice_level:
                slices, slices_wl = pods // slice_size, d.pods_wl // slice_size
            elif level > slice_level:
                slices = slices_wl = 0
            d.slices, d.slices_wl = slices, slices_wl
            d.assigned = d.assigned_leader = 0


def _fill_counts_plain(tree: DomainTree, slice_size: int, slice_level: int) -> None:
    """:func:`fill_counts` without a leader: the leader fields are never read then, so not filled."""
    depth = len(tree.levels) - 1
    per_level = tree.per_level
    for leaf in per_level[depth]:
        leaf.slices = leaf.pods // slice_size if depth == slice_level else 0
        leaf.assigned = 0
    for level in range(depth - 1, -1, -1):
        below_slices = level < slice_level
        for d in per_level[level]:
            pods = slices = 0
            for c in d.children:
                pods += c.pods
                slices += c.slices
            d.pods = pods
            d.slices = pods // slice_size if level == slice_level else slices if below_slices else 0
            d.assigned = 0


def not_fit_message(topology: str, fit: int, total: int, slice_size: int) -> str:
    unit = "pod" if slice_size == 1 else "slice"
    if fit <= 0:
        return f'topology "{topology}" doesn\'t allow to fit any of {total} {unit}(s)'
    return f'topology "{topology}" allows to fit only {fit} out of {total} {unit}(s)'


def _prioritize_leader(domains: list[Domain], count: int, leader: int, slice_size: int, by_slices: bool) -> list[Domain]:
    """Move to the front the first domain that can take the leader without leaving the rest short."""
    if leader == 0 or len(domains) < 2:
        return domains
    needed = count // slice_size if by_slices else count
    available = sum(d.slices if by_slices else d.pods for d in domains)
    for i, d in enumerate(domains):
        if d.leader < leader:
            continue
        penalty = (d.slices - d.slices_wl) if by_slices else (d.pods - d.pods_wl)
        if available - penalty < needed:
            continue
        return domains if i == 0 else [d, *domains[:i], *domains[i + 1:]]
    return domains


def _find_level(tree: DomainTree, req: Request, level: int) -> tuple[int, list[Domain]]:
    domains = tree.per_level[level]
    if not domains:
        raise NoFit(f"no topology domains at level: {tree.levels[level]}")
    lf, lead = req.least_free, req.leader
    needed = req.count // req.slice_size
    if not lead:
        single = _single_fit(domains, needed, lf)
        if single is not None:
            return level, [single]
    # Without a leader the leader fields are unset: rank and count by the plain ones.
    ordered = _sorted_with_leader(domains, lf) if lead else _sorted(domains, lf)
    key_wl = _slices_wl if lead else _slices
    top = ordered[0]
    if not lf and key_wl(top) >= needed and top.leader >= lead:
        top = _best_fit(ordered, needed, key_wl, lead)
    if lf:
        for d in ordered:
            if lead > 0 and d.leader < lead:
                continue
            if (d.slices_wl if lead > 0 else d.slices) >= needed:
                return level, [d]
        if req.required:
            raise NoFit(not_fit_message(tree.topology, ordered[-1].pods, needed, req.slice_size))
    if key_wl(top) >= needed and top.leader >= lead:
        return level, [top]
    if req.required:
        raise NoFit(not_fit_message(tree.topology, top.slices, needed, req.slice_size))
    if level > 0 and not req.unconstrained:
        return _find_level(tree, req, level - 1)
    chosen: list[Domain] = []
    remaining, remaining_leader = needed, lead
    ordered = _prioritize_leader(ordered, req.count, lead, req.slice_size, True)
    idx = 0
    while remaining_leader > 0 and idx < len(ordered) and ordered[idx].leader > 0:
        d = ordered[idx]
        if not lf and d.slices_wl >= remaining:
            d = _best_fit(ordered[idx:], remaining, _slices_wl, remaining_leader)
        chosen.append(d)
        remaining_leader -= d.leader
        remaining -= d.slices_wl
        idx += 1
    if remaining_leader > 0:
        raise NoFit(not_fit_message(tree.topology, lead - remaining_leader, needed, req.slice_size))
    rest = _sorted(ordered[idx:], lf)
    for i, d in enumerate(rest):
        if remaining <= 0:
            break
        if not lf and d.slices >= remaining:
            d = _best_fit(rest[i:], remaining, _slices)
        chosen.append(d)
        remaining -= d.slices
    if remaining > 0:
        raise NoFit(not_fit_message(tree.topology, needed - remaining, needed, req.slice_size))
    return level, chosen


def _single_fit(domains: list[Domain], needed: int, least_free: bool) -> Domain | None:
    """The one domain :func:`_find_level` picks when one holds every slice, in a scan rather than a sort:
    LeastFreeCapacity's first in ascending order, BestFit's tightest (ties in BestFit's order)."""
    best: Domain | None = None
    for d in domains:
        if d.slices >= needed and (best is None or (d.slices, d.pods, d.values) < (best.slices, best.pods, best.values)):
            best = d
    return best


def _to_minimum(domains: list[Domain], count: int, leader: int, slice_size: int, by_slices: bool,
                least_free: bool) -> list[Domain]:
    """Give ``count`` pods (and the leader) to as few of ``domains`` (in order) as hold them; BestFit
    tightens the last one (Kueue's updateCountsToMinimumGeneric)."""
    domains = _prioritize_leader(domains, count, leader, slice_size, by_slices)
    remaining = count // slice_size if by_slices else count
    per = slice_size if by_slices else 1
    key, key_wl = (_slices, _slices_wl) if by_slices else (_pods, _pods_wl)
    out: list[Domain] = []
    for i, d in enumerate(domains):
        if remaining <= 0 and leader <= 0:
            break
        if leader > 0:
            if not least_free and key_wl(d) >= remaining and d.leader >= leader:
                d = _best_fit(domains[i:], remaining, key_wl, leader)
            lead = min(d.leader, leader)
            take = min(key_wl(d), remaining)
            d.assigned_leader, d.assigned = lead, take * per
            leader -= lead
        else:
            if not least_free and key(d) >= remaining:
                d = _best_fit(domains[i:], remaining, key)
            take = min(key(d), remaining)
            d.assigned_leader, d.assigned = 0, take * per
        remaining -= take
        out.append(d)
    return out


def place(tree: DomainTree, req: Request) -> tuple[TopologyAssignment, TopologyAssignment | None]:
    """Kueue's assignment for one pod set (and its group's leader); raises :class:`NoFit`."""
    depth = len(tree.levels) - 1
    slice_level = depth if req.slice_level < 0 else req.slice_level
    fill_counts(tree, req.slice_size, slice_level, req.leader > 0)
    spread = None
    if req.balanced and not req.required and not req.unconstrained and not req.leader:
        spread = balanced(tree, req.level, req.count, req.slice_size, slice_level)
    if spread is not None:  # each domain keeps its even share on the way down
        level, fit = spread
        while level < min(depth, slice_level):
            fit = [c for d in fit for c in _to_minimum(_sorted(d.children, False), d.assigned, 0, req.slice_size, True,
                                                         False)]
            level += 1
    else:
        level, fit = _find_level(tree, req, req.level)
        fit = _to_minimum(fit, req.count, req.leader, req.slice_size, True, req.least_free)
    while level < min(depth, slice_level):
        lower = _sorted([c for d in fit for c in d.children], req.least_free)
        fit = _to_minimum(lower, req.count, req.leader, req.slice_size, True, req.least_free)
        level += 1
    while level < depth:
        placed: list[Domain] = []
        for d in fit:
            placed.extend(_to_minimum(_sorted(d.children, req.least_free), d.assigned, d.assigned_leader, 1, False,
                                      req.least_free))
        fit = placed
        level += 1
    workers = build_assignment(tree, [(d, d.assigned) for d in fit])
    leader = build_assignment(tree, [(d, d.assigned_leader) for d in fit]) if req.leader else None
    return workers, leader


def build_assignment(tree: DomainTree, leaves: list[tuple[Domain, int]]) -> TopologyAssignment:
    """Leaves with pods, in their values' order; only the hostname level when that is the lowest."""
    used = sorted(((d, n) for d, n in leaves if n > 0), key=lambda dn: dn[0].values)
    if tree.lowest_is_node:
        return TopologyAssignment((tree.levels[-1],), tuple(((d.values[-1],), n) for d, n in used))
    return TopologyAssignment(tree.levels, tuple((d.values, n) for d, n in used))
