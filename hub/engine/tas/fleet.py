"""What a worker tells the hub about its free topology domains (TAS across the fleet).

Kueue's MultiKueue manager dispatches a TAS workload without knowing whether a worker can place
it in one domain. mkhub's agents report, per TAS flavor and per topology level, a few of their
largest free domains: each domain's free capacity (its eligible nodes' allocatable minus the usage
of the workloads placed there) and its roomiest node's free capacity. For every resource the
``top`` domains with the most of it free are kept, so the report stays small on a fleet of
thousands of nodes while the domain that fits a gang best on any one resource is in it.

The hub's test with it (:func:`may_fit`) is a necessary condition: a domain must hold the gang's
total and its largest node one pod. Fragmentation can still keep a gang out; the worker's own
engine then leaves it pending and the capacity-aware dispatcher moves on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .inventory import TASInventory
from .tree import Domain, DomainTree

Amounts = dict[str, int]


@dataclass(frozen=True, slots=True)
class FreeDomain:
    values: tuple[str, ...]  # the domain's label values from the highest level down to its own
    free: Mapping[str, int]
    largest_node: Mapping[str, int]
    nodes: int


@dataclass(frozen=True, slots=True)
class FreeLevel:
    level: str  # the node label of the level
    domains: tuple[FreeDomain, ...]
    domain_count: int  # how many domains the level has in all


@dataclass(frozen=True, slots=True)
class FreeTopology:
    flavor: str
    topology: str
    levels: tuple[FreeLevel, ...]


def _leaf_free(inv: TASInventory, tree: DomainTree, leaf: Domain) -> Amounts:
    free: Amounts = {}
    for node in leaf.nodes:
        for r, v in inv.node_free(node).items():
            free[r] = free.get(r, 0) + v
    used = inv.usage.get((tree.topology, leaf.values[-1] if tree.lowest_is_node else leaf.values), {})
    return {r: max(0, v - used.get(r, 0)) for r, v in free.items()}


def _most_free(domains: list[tuple[str, ...]], free: dict[tuple[str, ...], Amounts], r: str) -> list[tuple[str, ...]]:
    return sorted(domains, key=lambda v: (-free[v].get(r, 0), v))


def free_topologies(inv: TASInventory, top: int = 4) -> list[FreeTopology]:
    """Every TAS flavor's levels with their largest free domains (see the module docstring)."""
    out: list[FreeTopology] = []
    for flavor in sorted(inv.flavors):
        tree = inv.tree(flavor)
        if tree is None:
            continue
        free: dict[tuple[str, ...], Amounts] = {}
        largest: dict[tuple[str, ...], Amounts] = {}
        nodes: dict[tuple[str, ...], int] = {}
        for leaf in tree.per_level[-1]:
            amounts = _leaf_free(inv, tree, leaf)
            for depth in range(len(tree.levels)):
                key = leaf.values[: depth + 1]
                total, most = free.setdefault(key, {}), largest.setdefault(key, {})
                for r, v in amounts.items():
                    total[r] = total.get(r, 0) + v
                    most[r] = max(most.get(r, 0), v)
                nodes[key] = nodes.get(key, 0) + len(leaf.nodes)
        levels = []
        for depth, level in enumerate(tree.levels):
            domains = [d.values for d in tree.per_level[depth]]
            kept: dict[tuple[str, ...], None] = {}
            for r in sorted({r for v in domains for r in free[v]}):
                for values in _most_free(domains, free, r)[:top]:
                    kept[values] = None
            levels.append(FreeLevel(level, tuple(
                FreeDomain(v, dict(sorted(free[v].items())), dict(sorted(largest[v].items())), nodes[v])
                for v in sorted(kept)), len(domains)))
        out.append(FreeTopology(flavor, tree.topology, tuple(levels)))
    return out


def may_fit(levels: Sequence[FreeLevel], level: str, count: int, per_pod: Mapping[str, int]) -> bool:
    """Some reported domain at ``level`` could hold ``count`` pods of ``per_pod`` (a necessary
    condition). A level not reported (not in this worker's topology) cannot."""
    for reported in levels:
        if reported.level != level:
            continue
        return any(all(d.free.get(r, 0) >= v * count and d.largest_node.get(r, 0) >= v for r, v in per_pod.items() if v > 0)
                   for d in reported.domains)
    return False


def largest_gang(levels: Sequence[FreeLevel], per_pod: Mapping[str, int]) -> dict[str, int]:
    """Per level, the most pods of ``per_pod`` its best reported domain could take now (the fleet
    view's "largest gang"; by totals, as :func:`may_fit`)."""
    out: dict[str, int] = {}
    wanted = {r: v for r, v in per_pod.items() if v > 0}
    for reported in levels:
        best = 0
        for d in reported.domains:
            if not wanted or any(d.largest_node.get(r, 0) < v for r, v in wanted.items()):
                continue
            best = max(best, min(d.free.get(r, 0) // v for r, v in wanted.items()))
        out[reported.level] = best
    return out
