"""A Topology's domain tree over the Nodes a TAS flavor selects.

Levels come from ``Topology.spec.levels`` (highest first); a domain at level ``i`` is the tuple
of its nodes' label values at levels ``0..i``; leaves are the lowest level's domains (one Node
each when the lowest level is ``kubernetes.io/hostname``). A Node missing a level's label, not
Ready or unschedulable, or without the flavor's ``nodeLabels`` is not in the tree.
Per-placement counts live on the domains (``pods``, ``slices``, ``assigned``), as Kueue keeps
its domain state: the engine is single-threaded and every placement fills them afresh.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hub.api.queues import ResourceFlavor
from hub.api.tas_kinds import HOSTNAME_LABEL, Node, Topology

Values = tuple[str, ...]


@dataclass(slots=True, eq=False)
class Domain:
    values: Values
    children: list[Domain] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)  # leaves only
    pods: int = 0  # how many of the pod set's pods fit below here
    slices: int = 0  # how many whole slices fit (at and above the slice level)
    assigned: int = 0  # pods placed here by the current placement
    # A pod-set group's leader (Kueue's leaderCount, podCountWithLeader, sliceCountWithLeader):
    # whether it fits here, and how many workers still fit beside it.
    leader: int = 0
    pods_wl: int = 0
    slices_wl: int = 0
    assigned_leader: int = 0


@dataclass(slots=True)
class DomainTree:
    topology: str
    levels: tuple[str, ...]
    per_level: list[list[Domain]]
    leaves: dict[Values, Domain]
    host_to_leaf: dict[str, Values]

    @property
    def lowest_is_node(self) -> bool:
        return self.levels[-1] == HOSTNAME_LABEL

    def level_index(self, key: str) -> int:
        try:
            return self.levels.index(key)
        except ValueError:
            return -1

    def leaf_of(self, levels: tuple[str, ...], values: Values) -> Values | None:
        """The leaf an assignment's domain names (by hostname alone, or by all levels)."""
        if levels == self.levels:
            return values if values in self.leaves else None
        if len(levels) == 1 and levels[0] == HOSTNAME_LABEL:
            return self.host_to_leaf.get(values[0])
        return None


def build_tree(topology: Topology, flavor: ResourceFlavor, nodes: list[Node]) -> DomainTree:
    levels = topology.levels
    leaves: dict[Values, Domain] = {}
    host_to_leaf: dict[str, Values] = {}
    for node in sorted(nodes, key=lambda n: n.meta.name):
        labels = node.meta.labels
        if not node.schedulable or any(labels.get(k) != v for k, v in flavor.node_labels.items()):
            continue
        values = tuple(labels.get(level, "") for level in levels)
        if "" in values:
            continue
        leaf = leaves.get(values)
        if leaf is None:
            leaf = leaves[values] = Domain(values)
        leaf.nodes.append(node)
        host_to_leaf[labels.get(HOSTNAME_LABEL, node.meta.name)] = values
    per_level: list[list[Domain]] = [[] for _ in levels]
    per_level[-1] = [leaves[v] for v in sorted(leaves)]
    for depth in range(len(levels) - 2, -1, -1):
        parents: dict[Values, Domain] = {}
        for child in per_level[depth + 1]:
            key = child.values[: depth + 1]
            parent = parents.get(key)
            if parent is None:
                parent = parents[key] = Domain(key)
            parent.children.append(child)
        per_level[depth] = [parents[k] for k in sorted(parents)]
    return DomainTree(topology.meta.name, levels, per_level, leaves, host_to_leaf)
