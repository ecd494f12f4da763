"""Kueue's FindTopologyAssignment over a :class:`DomainTree` whose leaves' pod counts are filled.

Phase 1 rolls the leaves' counts up (pods, and whole slices at and above the slice level).
Phase 2a picks the level and domains: the requested level's best domain, for a required
request or else one level up at a time (preferred), and several top-level domains as a last
resort (preferred, unconstrained). Phase 2b walks down, at each level giving the pods to as
few domains as it can. Profiles, as in Kueue with TASProfileMixed (its default since v0.15):
BestFit everywhere (largest domains first, the last one the tightest that fits), except
LeastFreeCapacity (smallest first) for unconstrained pod sets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hub.api.topology_assignment import TopologyAssignment

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


class NoFit(Exception):
    """The pod set fits nowhere; the message is Kueue's."""


def _sorted(domains: list[Domain], least_free: bool) -> list[Domain]:
    if least_free:
        return sorted(domains, key=lambda d: (d.slices, d.pods, d.values))
    return sorted(domains, key=lambda d: (-d.slices, d.pods, d.values))


def _best_fit(domains: list[Domain], needed: int, count: Callable[[Domain], int]) -> Domain:
    """The first domain with the smallest count that still holds ``needed`` (else the first)."""
    best, best_count = domains[0], -1
    for d in domains:
        c = count(d)
        if c >= needed and (best_count < 0 or c < best_count):
            best, best_count = d, c
    return best


def _slices(d: Domain) -> int:
    return d.slices


def _pods(d: Domain) -> int:
    return d.pods


def fill_counts(tree: DomainTree, slice_size: int, slice_level: int) -> None:
    """Leaves' ``pods`` are set; sum them up and count whole slices at and above ``slice_level``."""
    depth = len(tree.levels) - 1
    for leaf in tree.per_level[depth]:
        leaf.slices = leaf.pods // slice_size if depth == slice_level else 0
        leaf.assigned = 0
    for level in range(depth - 1, -1, -1):
        for d in tree.per_level[level]:
            pods = 0
            for c in d.children:
                pods += c.pods
            d.pods = pods
            if level == slice_level:
                d.slices = d.pods // slice_size
            elif level < slice_level:
                d.slices = sum(c.slices for c in d.children)
            else:
                d.slices = 0
            d.assigned = 0


def not_fit_message(topology: str, fit: int, total: int, slice_size: int, stats: str = "") -> str:
    unit = "pod" if slice_size == 1 else "slice"
    if fit <= 0:
        text = f'topology "{topology}" doesn\'t allow to fit any of {total} {unit}(s)'
    else:
        text = f'topology "{topology}" allows to fit only {fit} out of {total} {unit}(s)'
    return text + (f". {stats}" if stats else "")


def _find_level(tree: DomainTree, req: Request, level: int, stats: str) -> tuple[int, list[Domain]]:
    domains = tree.per_level[level]
    if not domains:
        raise NoFit(f"no topology domains at level: {tree.levels[level]}")
    ordered = _sorted(domains, req.least_free)
    needed = req.count // req.slice_size
    top = ordered[0]
    if not req.least_free and top.slices >= needed:
        top = _best_fit(ordered, needed, _slices)
    if req.least_free:
        for d in ordered:
            if d.slices >= needed:
                return level, [d]
        if req.required:
            raise NoFit(not_fit_message(tree.topology, ordered[-1].pods, needed, req.slice_size, stats))
    if top.slices < needed:
        if req.required:
            raise NoFit(not_fit_message(tree.topology, top.slices, needed, req.slice_size, stats))
        if level > 0 and not req.unconstrained:
            return _find_level(tree, req, level - 1, stats)
        chosen: list[Domain] = []
        remaining = needed
        for i, d in enumerate(ordered):
            if remaining <= 0:
                break
            if not req.least_free and d.slices >= remaining:
                d = _best_fit(ordered[i:], remaining, _slices)
            chosen.append(d)
            remaining -= d.slices
        if remaining > 0:
            raise NoFit(not_fit_message(tree.topology, needed - remaining, needed, req.slice_size, stats))
        return level, chosen
    return level, [top]


def _to_minimum(domains: list[Domain], count: int, slice_size: int, by_slices: bool, least_free: bool) -> list[Domain]:
    """Give ``count`` pods to as few of ``domains`` (in order) as hold them; BestFit tightens the last."""
    remaining = count // slice_size if by_slices else count
    per = slice_size if by_slices else 1
    key = _slices if by_slices else _pods
    out: list[Domain] = []
    for i, d in enumerate(domains):
        if remaining <= 0:
            break
        if not least_free and key(d) >= remaining:
            d = _best_fit(domains[i:], remaining, key)
        take = min(key(d), remaining)
        d.assigned = take * per
        remaining -= take
        out.append(d)
    return out


def place(tree: DomainTree, req: Request, stats: str = "") -> TopologyAssignment:
    """Kueue's assignment for one pod set; raises :class:`NoFit` with Kueue's message."""
    depth = len(tree.levels) - 1
    slice_level = depth if req.slice_level < 0 else req.slice_level
    fill_counts(tree, req.slice_size, slice_level)
    level, fit = _find_level(tree, req, req.level, stats)
    fit = _to_minimum(fit, req.count, req.slice_size, True, req.least_free)
    while level < min(depth, slice_level):
        lower = _sorted([c for d in fit for c in d.children], req.least_free)
        fit = _to_minimum(lower, req.count, req.slice_size, True, req.least_free)
        level += 1
    while level < depth:
        placed: list[Domain] = []
        for d in fit:
            placed.extend(_to_minimum(_sorted(d.children, req.least_free), d.assigned, 1, False, req.least_free))
        fit = placed
        level += 1
    return build_assignment(tree, fit)


def build_assignment(tree: DomainTree, leaves: list[Domain]) -> TopologyAssignment:
    """Leaves with pods, in their values' order; only the hostname level when that is the lowest."""
    used = sorted((d for d in leaves if d.assigned > 0), key=lambda d: d.values)
    if tree.lowest_is_node:
        return TopologyAssignment((tree.levels[-1],), tuple(((d.values[-1],), d.assigned) for d in used))
    return TopologyAssignment(tree.levels, tuple((d.values, d.assigned) for d in used))
