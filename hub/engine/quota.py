"""Quota accounting over the ClusterQueue / Cohort hierarchy.

This is Kueue's resource-node model (pkg/cache/scheduler/resource_node.go),
per (flavor, resource) pair ("FR"), in integers:

* A ClusterQueue's ``subtree`` quota is its nominal quota; a Cohort's is its own
  nominal plus what every child lends (child subtree minus child local quota).
* ``local`` quota is capacity a node keeps for itself because of a lending limit:
  ``max(0, subtree - lendingLimit)``, never visible to the parent.
* Usage bubbles up: a node's usage above its local quota counts in its parent.

Usage is a state function of the ClusterQueues' usage, so adding and removing
in any order gives the same tree; that is what lets the scheduler take
temporary reservations and simulate victim removal, then undo them exactly.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

FR = tuple[str, str]  # (flavor, resource)


@dataclass(frozen=True, slots=True)
class Quota:
    nominal: int = 0
    borrowing_limit: int | None = None
    lending_limit: int | None = None


class QuotaNode:
    """A ClusterQueue or a Cohort in the hierarchy."""

    __slots__ = (
        "name",
        "is_cohort",
        "parent",
        "child_cohorts",
        "child_cqs",
        "quotas",
        "subtree",
        "local",
        "usage",
        "explicit",
        "in_cycle",
        "weight",
    )

    def __init__(self, name: str, is_cohort: bool) -> None:
        self.name = name
        self.is_cohort = is_cohort
        self.parent: QuotaNode | None = None
        self.child_cohorts: dict[str, QuotaNode] = {}
        self.child_cqs: dict[str, QuotaNode] = {}
        self.quotas: dict[FR, Quota] = {}
        self.subtree: dict[FR, int] = {}
        self.local: dict[FR, int] = {}
        self.usage: dict[FR, int] = {}
        self.explicit = not is_cohort  # cohorts may exist only because something points at them
        self.in_cycle = False
        self.weight: float = 1.0

    def __repr__(self) -> str:
        return f"<{'Cohort' if self.is_cohort else 'CQ'} {self.name}>"

    # --- reading --------------------------------------------------------------------------

    def local_available(self, fr: FR) -> int:
        return max(0, self.local.get(fr, 0) - self.usage.get(fr, 0))

    def available(self, fr: FR) -> int:
        """Capacity this node can still take for ``fr``.

        A cohort's value goes negative after over-admission (a quota shrink); a
        ClusterQueue's is clamped at 0, as Kueue's ``ClusterQueueSnapshot.Available``.
        """
        parent = self.parent
        if parent is None:
            value = self.subtree.get(fr, 0) - self.usage.get(fr, 0)
        else:
            parent_available = parent.available(fr)
            quota = self.quotas.get(fr)
            if quota is not None and quota.borrowing_limit is not None:
                lq = self.local.get(fr, 0)
                stored_in_parent = self.subtree.get(fr, 0) - lq
                used_in_parent = max(0, self.usage.get(fr, 0) - lq)
                parent_available = min(parent_available, stored_in_parent - used_in_parent + quota.borrowing_limit)
            value = self.local_available(fr) + parent_available
        return value if self.is_cohort else max(0, value)

    def potential_available(self, fr: FR) -> int:
        """The most this node could ever get for ``fr`` with nothing else running."""
        parent = self.parent
        if parent is None:
            return self.subtree.get(fr, 0)
        avail = self.local.get(fr, 0) + parent.potential_available(fr)
        quota = self.quotas.get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            avail = min(avail, self.subtree.get(fr, 0) + quota.borrowing_limit)
        return avail

    def borrowing_with(self, fr: FR, value: int) -> bool:
        return self.usage.get(fr, 0) + value > self.subtree.get(fr, 0)

    def is_borrowing(self, fr: FR) -> bool:
        return self.usage.get(fr, 0) > self.subtree.get(fr, 0)

    def within_nominal(self, frs: Iterator[FR] | set[FR] | list[FR]) -> bool:
        return all(self.usage.get(fr, 0) <= self.subtree.get(fr, 0) for fr in frs)

    def nominal(self, fr: FR) -> int:
        quota = self.quotas.get(fr)
        return quota.nominal if quota is not None else 0

    def root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def ancestors(self) -> Iterator[QuotaNode]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def height(self) -> int:
        """Kueue's getNodeHeight: 1 for a cohort with only ClusterQueues, +1 per cohort level."""
        best = min(len(self.child_cqs) + len(self.child_cohorts), 1)
        for child in self.child_cohorts.values():
            best = max(best, child.height() + 1)
        return best

    def subtree_cqs(self) -> Iterator[QuotaNode]:
        if not self.is_cohort:
            yield self
            return
        yield from self.child_cqs.values()
        for child in self.child_cohorts.values():
            yield from child.subtree_cqs()

    # --- writing --------------------------------------------------------------------------

    def add_usage(self, fr: FR, value: int) -> None:
        """Add (or, with a negative value, remove) usage and bubble the part above local quota."""
        node: QuotaNode | None = self
        while node is not None and value:
            before = node.usage.get(fr, 0)
            after = before + value
            node.usage[fr] = after
            lq = node.local.get(fr, 0)
            value = max(0, after - lq) - max(0, before - lq)
            node = node.parent

    def add_usage_map(self, usage: dict[FR, int], sign: int = 1) -> None:
        for fr, value in usage.items():
            self.add_usage(fr, sign * value)


def find_height_of_lowest_subtree_that_fits(cq: QuotaNode, fr: FR, value: int) -> tuple[int, bool]:
    """Kueue's borrowing level: 0 when the CQ doesn't borrow, else the height of the
    lowest ancestor whose subtree fits the request; the flag says a proper subtree fits
    (so reclaiming inside it is possible)."""
    if not cq.borrowing_with(fr, value) or cq.parent is None:
        return 0, cq.parent is not None
    remaining = value - cq.local_available(fr)
    for node in cq.ancestors():
        if not node.borrowing_with(fr, remaining):
            return node.height(), node.parent is not None
        remaining -= node.local_available(fr)
    return cq.root().height(), False


class QuotaTree:
    """All ClusterQueue and Cohort nodes; recomputes aggregates on structural change."""

    def __init__(self) -> None:
        self.cqs: dict[str, QuotaNode] = {}
        self.cohorts: dict[str, QuotaNode] = {}
        # cohort name -> parent name, for explicit Cohort objects (kept even while cyclic)
        self._cohort_parent: dict[str, str] = {}
        self._cq_cohort: dict[str, str] = {}

    def cohort(self, name: str) -> QuotaNode:
        node = self.cohorts.get(name)
        if node is None:
            node = QuotaNode(name, is_cohort=True)
            self.cohorts[name] = node
        return node

    def set_cluster_queue(self, name: str, cohort: str, quotas: dict[FR, Quota], weight: float = 1.0) -> set[str]:
        """Create or update a ClusterQueue node; returns the ClusterQueues whose trees changed."""
        node = self.cqs.get(name)
        if node is None:
            node = QuotaNode(name, is_cohort=False)
            self.cqs[name] = node
        before = self._roots_of([node])
        node.quotas = quotas
        node.weight = weight
        self._cq_cohort[name] = cohort
        return self._rebuild(before, [node])

    def remove_cluster_queue(self, name: str) -> set[str]:
        node = self.cqs.pop(name, None)
        self._cq_cohort.pop(name, None)
        before = self._roots_of([node] if node is not None else [])
        if node is not None and node.parent is not None:
            node.parent.child_cqs.pop(name, None)
        return self._rebuild(before, [])

    def set_cohort(self, name: str, parent: str, quotas: dict[FR, Quota], weight: float = 1.0) -> set[str]:
        node = self.cohort(name)
        before = self._roots_of([node])
        node.explicit = True
        node.quotas = quotas
        node.weight = weight
        self._cohort_parent[name] = parent
        return self._rebuild(before, [node])

    def remove_cohort(self, name: str) -> set[str]:
        node = self.cohorts.get(name)
        before = self._roots_of([node] if node is not None else [])
        if node is not None:
            node.explicit = False
            node.quotas = {}
            node.weight = 1.0
        self._cohort_parent.pop(name, None)
        return self._rebuild(before, [node] if node is not None else [])

    def _roots_of(self, nodes: list[QuotaNode]) -> list[QuotaNode]:
        roots = []
        for node in nodes:
            walker = node
            steps = 0
            while walker.parent is not None and steps <= len(self.cohorts):
                walker = walker.parent
                steps += 1
            roots.append(walker)
        return roots

    def _rebuild(self, before: list[QuotaNode], touched: list[QuotaNode]) -> set[str]:
        """Relink the hierarchy and recompute subtree quotas and usage of the affected trees.

        Relinking is a cheap pass over all nodes; the accumulation, which walks
        every flavor-resource, runs only for the trees that contained or now
        contain a touched node. Per-workload accounting stays incremental via
        :meth:`QuotaNode.add_usage`. Returns the ClusterQueues in those trees.
        """
        referenced = {n for n in list(self._cq_cohort.values()) + list(self._cohort_parent.values()) if n}
        # Implicit cohorts live only while something points at them; keep the node objects
        # of those that stay so their aggregates survive a partial rebuild.
        for name in [n for n, c in self.cohorts.items() if not c.explicit and n not in referenced]:
            del self.cohorts[name]
        for name in referenced:
            self.cohort(name)
        for node in self.cohorts.values():
            node.parent = None
            node.child_cohorts = {}
            node.child_cqs = {}
            node.in_cycle = False
        for name, parent in self._cohort_parent.items():
            if parent:
                child = self.cohorts[name]
                child.parent = self.cohorts[parent]
                child.parent.child_cohorts[name] = child
        for name, node in self.cqs.items():
            cohort = self._cq_cohort.get(name, "")
            node.parent = self.cohorts[cohort] if cohort else None
            node.in_cycle = False
            if node.parent is not None:
                node.parent.child_cqs[name] = node
        self._mark_cycles()
        live = [n for n in touched if (n.name in self.cqs if not n.is_cohort else n.name in self.cohorts)]
        roots: dict[int, QuotaNode] = {}
        for root in self._roots_of(live) + [r for r in before if r.name in self.cohorts or r.name in self.cqs]:
            if root.is_cohort and root.name in self.cohorts:
                root = self._roots_of([self.cohorts[root.name]])[0]
            elif not root.is_cohort and root.name in self.cqs:
                root = self._roots_of([self.cqs[root.name]])[0]
            roots[id(root)] = root
        affected: set[str] = set()
        for root in roots.values():
            if root.in_cycle:
                for node in self.cqs.values():
                    if node.in_cycle:
                        self._refresh_cq(node)
                        affected.add(node.name)
                continue
            if root.is_cohort:
                self._accumulate(root)
                affected.update(cq.name for cq in root.subtree_cqs())
            else:
                self._refresh_cq(root)
                affected.add(root.name)
        return affected

    def _mark_cycles(self) -> None:
        # A cohort is cyclic if walking parents revisits a node; everything under a
        # cycle (its whole tree) is disabled, as in Kueue.
        cyclic: set[str] = set()
        for start in self.cohorts.values():
            seen: list[QuotaNode] = []
            node: QuotaNode | None = start
            while node is not None and node not in seen:
                seen.append(node)
                node = node.parent
            if node is not None:
                cyclic.add(start.name)
        if not cyclic:
            return
        # Mark every node whose parent chain reaches a cyclic cohort.
        for node in list(self.cohorts.values()) + list(self.cqs.values()):
            walker: QuotaNode | None = node
            steps = 0
            while walker is not None and steps <= len(self.cohorts) + 1:
                if walker.is_cohort and walker.name in cyclic:
                    node.in_cycle = True
                    break
                walker = walker.parent
                steps += 1

    @staticmethod
    def _refresh_cq(node: QuotaNode) -> None:
        node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
        node.local = {
            fr: max(0, node.subtree[fr] - q.lending_limit)
            for fr, q in node.quotas.items()
            if q.lending_limit is not None
        }

    def _accumulate(self, cohort: QuotaNode) -> None:
        if cohort.in_cycle:
            return
        subtree = {fr: q.nominal for fr, q in cohort.quotas.items()}
        usage: dict[FR, int] = {}
        children: list[QuotaNode] = []
        for child in cohort.child_cohorts.values():
            self._accumulate(child)
            children.append(child)
        for child in cohort.child_cqs.values():
            self._refresh_cq(child)
            children.append(child)
        for child in children:
            for fr, value in child.subtree.items():
                subtree[fr] = subtree.get(fr, 0) + value - child.local.get(fr, 0)
            for fr, value in child.usage.items():
                above = value - child.local.get(fr, 0)
                if above > 0:
                    usage[fr] = usage.get(fr, 0) + above
        cohort.subtree = subtree
        cohort.local = {
            fr: max(0, subtree.get(fr, 0) - q.lending_limit)
            for fr, q in cohort.quotas.items()
            if q.lending_limit is not None
        }
        cohort.usage = usage
