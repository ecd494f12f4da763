"""Kueue's balanced placement (TASBalancedPlacement, alpha since v0.15, off by default) for a preferred
pod set without a leader.

Rather than fill the largest domains first and leave a few pods on the last one, it picks, within one
domain a level above the preferred level, the fewest domains that hold the request with the least room
to spare, and spreads the slices evenly: the smallest count on any domain one level below the preferred
level is as large as it can be (the threshold), then as few preferred-level domains as possible are
used. When no such domain holds the request, the standard algorithm places it (as in Kueue).
Runs on the counts :func:`hub.engine.tas.placement.fill_counts` left on the tree; it changes only
``assigned`` on the domains it returns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .tree import Domain, DomainTree


@dataclass(slots=True)
class _View:
    """A domain's counts as the balanced search sees them (pruned below the threshold)."""

    domain: Domain
    slices: int
    pods: int
    children: list[_View]


def _order(views: list[_View]) -> list[_View]:
    return sorted(views, key=lambda v: (-v.slices, v.pods, v.domain.values))


def _greedy(views: list[_View], needed: int) -> tuple[bool, int, int]:
    """Kueue's evaluateGreedyAssignment: (fits, domains used, the last one's slices)."""
    used = last = 0
    for v in _order(views):
        if needed <= 0 or v.slices <= 0:
            break
        used, last, needed = used + 1, v.slices, needed - v.slices
    return needed <= 0, used, last


def _view(d: Domain) -> _View:
    return _View(d, d.slices, d.pods, [_View(c, c.slices, c.pods, []) for c in d.children])


def _pruned(d: Domain, threshold: int, slice_size: int, below_slice_level: bool) -> _View:
    """``d`` with its children under the threshold left out (and itself if then under it)."""
    kept = [_View(c, c.slices, c.pods, []) for c in d.children if c.slices >= threshold]
    if not d.children:
        slices, pods = d.slices, d.pods
    else:
        pods = sum(c.pods for c in kept)
        slices = sum(c.slices for c in kept) if below_slice_level else pods // slice_size
    if slices < threshold:
        return _View(d, 0, 0, [])
    return _View(d, slices, pods, kept)


def _entropy(v: _View) -> float:
    total = sum(c.pods for c in v.children)
    if total == 0:
        return 0.0
    return -sum(c.pods / total * math.log2(c.pods / total) for c in v.children if c.pods > 0)


def _optimal_set(views: list[_View], needed: int, slice_size: int, by_entropy: bool) -> list[_View] | None:
    """The fewest domains (as many as the greedy fill uses) holding ``needed`` slices with the least pods
    to spare (Kueue's selectOptimalDomainSetToFit, a subset-sum over the pods left to place)."""
    fits, count, _ = _greedy(views, needed)
    if not fits:
        return None
    if by_entropy:
        ordered = sorted(views, key=lambda v: (-v.slices, -_entropy(v), v.domain.values))
    else:
        ordered = sorted(views, key=lambda v: v.domain.values)
    states: list[dict[int, list[_View]]] = [{} for _ in range(count + 1)]
    states[0][needed * slice_size] = []
    for v in ordered:
        if v.slices <= 0:
            continue
        for i in range(count, 0, -1):
            for left in sorted(states[i - 1]):
                if left <= 0:
                    continue
                states[i].setdefault(left - v.pods, states[i - 1][left] + [v])
    done = [left for left in states[count] if left <= 0]
    return states[count][max(done)] if done else None


def balanced(tree: DomainTree, level: int, count: int, slice_size: int, slice_level: int) -> tuple[int, list[Domain]] | None:
    """(the level placement starts from, its domains with ``assigned`` set), or None to fall back."""
    needed = count // slice_size
    groups = [tree.per_level[0]] if level == 0 else [p.children for p in tree.per_level[level - 1]]
    below = level < slice_level
    best, best_used, best_group = 0, 0, list[_View]()
    for group in groups:
        lower = [_view(c) for d in group for c in d.children] if below else [_view(d) for d in group]
        fits, used, last = _greedy(lower, needed)
        if not fits:
            continue
        threshold = min(needed // used, last)
        if threshold <= 0 or threshold < best:
            continue
        views = [_pruned(d, threshold, slice_size, below) for d in group]
        fits, used_here, _ = _greedy(views, needed)
        if fits and (threshold > best or used_here < best_used):
            best, best_used, best_group = threshold, used_here, views
    if best <= 0:
        return None
    current, start = best_group, level
    if below:
        chosen = _optimal_set(best_group, needed, slice_size, True)
        if chosen is None:
            return None
        current, start = [c for v in chosen for c in v.children], level + 1
    result = _optimal_set(current, needed, slice_size, False)
    if result is None or needed < len(result) * best:
        return None
    extra = needed - len(result) * best
    for v in _order(result):
        take = min(v.slices - best, extra) if extra > 0 else 0
        v.domain.assigned = (best + take) * slice_size
        extra -= take
    if extra > 0:
        return None
    return start, [v.domain for v in _order(result)]
