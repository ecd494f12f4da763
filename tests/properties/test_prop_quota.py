"""The quota tree (kueue-semantics §5.1) over random hierarchies: usage is a state function of the
ClusterQueues' usage, ``available`` is exactly the most that can be added without breaking a
limit, and ``potential_available`` bounds it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prop_model import SCALE, examples

from hub.engine.quota import Quota, QuotaNode, QuotaTree, find_height_of_lowest_subtree_that_fits

# Generous: the number of examples is fixed, and a loaded machine must not turn slowness into a failure.
pytestmark = pytest.mark.timeout(900 * SCALE)

FR = ("f", "cpu")
HEALTH = [HealthCheck.too_slow]


@dataclass
class Shape:
    cohorts: list[tuple[str, str, Quota]]  # name, parent ("" for a root), quota
    queues: list[tuple[str, str, Quota]]  # name, cohort ("" for none), quota

    def build(self) -> QuotaTree:
        tree = QuotaTree()
        for name, parent, quota in self.cohorts:
            tree.set_cohort(name, parent, {FR: quota})
        for name, cohort, quota in self.queues:
            tree.set_cluster_queue(name, cohort, {FR: quota})
        return tree


@st.composite
def quotas(draw: st.DrawFn, has_parent: bool, is_cohort: bool) -> Quota:
    nominal = draw(st.integers(0, 10))
    if not has_parent:
        return Quota(nominal)
    borrowing = draw(st.one_of(st.none(), st.integers(0, 8)))
    lending = draw(st.one_of(st.none(), st.integers(0, 12 if is_cohort else nominal)))
    return Quota(nominal, borrowing, lending)


@st.composite
def shapes(draw: st.DrawFn) -> Shape:
    cohorts: list[tuple[str, str, Quota]] = []
    for i in range(draw(st.integers(1, 4))):
        parent = draw(st.sampled_from([""] + [c[0] for c in cohorts]))
        cohorts.append((f"c{i}", parent, draw(quotas(bool(parent), True))))
    queues: list[tuple[str, str, Quota]] = []
    for i in range(draw(st.integers(1, 5))):
        cohort = draw(st.sampled_from([c[0] for c in cohorts] + [""]))
        queues.append((f"q{i}", cohort, draw(quotas(bool(cohort), False))))
    return Shape(cohorts, queues)


def limits_hold(tree: QuotaTree) -> bool:
    """Every root within its subtree quota; every node with a parent within subtree + borrowingLimit."""
    for node in list(tree.cohorts.values()) + list(tree.cqs.values()):
        used, subtree = node.usage.get(FR, 0), node.subtree.get(FR, 0)
        quota = node.quotas.get(FR)
        if node.parent is None:
            if used > subtree:
                return False
        elif quota is not None and quota.borrowing_limit is not None and used > subtree + quota.borrowing_limit:
            return False
    return True


def usages(tree: QuotaTree) -> dict[str, int]:
    nodes: list[QuotaNode] = list(tree.cohorts.values()) + list(tree.cqs.values())
    return {n.name: n.usage.get(FR, 0) for n in nodes}


@settings(max_examples=examples(150), deadline=None, suppress_health_check=HEALTH)
@given(shapes(), st.data())
def test_usage_is_a_state_function_of_queue_usage(shape: Shape, data: st.DataObject) -> None:
    tree = shape.build()
    names = [q[0] for q in shape.queues]
    held = {n: 0 for n in names}
    for _ in range(data.draw(st.integers(1, 20))):
        name = data.draw(st.sampled_from(names))
        delta = data.draw(st.integers(-held[name], 10))
        tree.cqs[name].add_usage(FR, delta)
        held[name] += delta
    fresh = shape.build()
    for name in data.draw(st.permutations(names)):
        fresh.cqs[name].add_usage(FR, held[name])
    assert usages(tree) == usages(fresh)
    shape.queues.append(("late", shape.cohorts[0][0], Quota(1)))
    tree.set_cluster_queue("late", shape.cohorts[0][0], {FR: Quota(1)})  # a rebuild recomputes the same usage
    fresh.set_cluster_queue("late", shape.cohorts[0][0], {FR: Quota(1)})
    assert usages(tree) == usages(fresh)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=HEALTH)
@given(shapes(), st.data())
def test_available_is_exactly_what_fits(shape: Shape, data: st.DataObject) -> None:
    tree = shape.build()
    names = [q[0] for q in shape.queues]
    for _ in range(data.draw(st.integers(0, 12))):
        node = tree.cqs[data.draw(st.sampled_from(names))]
        room = node.available(FR)
        if room > 0:
            node.add_usage(FR, data.draw(st.integers(1, room)))
        assert limits_hold(tree)
    for name in names:
        node = tree.cqs[name]
        room = node.available(FR)
        assert 0 <= room <= node.potential_available(FR)
        node.add_usage(FR, room)
        assert limits_hold(tree), f"{name} took {room}, which breaks a limit"
        node.add_usage(FR, 1)
        assert not limits_hold(tree), f"{name} could take more than the {room} available"
        node.add_usage(FR, -room - 1)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=HEALTH)
@given(shapes())
def test_potential_available_is_what_an_empty_tree_offers(shape: Shape) -> None:
    tree = shape.build()
    for node in tree.cqs.values():
        assert node.potential_available(FR) == node.available(FR)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=HEALTH)
@given(shapes(), st.data())
def test_borrowing_level_is_zero_exactly_without_borrowing(shape: Shape, data: st.DataObject) -> None:
    tree = shape.build()
    name = data.draw(st.sampled_from([q[0] for q in shape.queues]))
    node = tree.cqs[name]
    node.add_usage(FR, data.draw(st.integers(0, node.available(FR))))
    request = data.draw(st.integers(0, 15))
    level, _ = find_height_of_lowest_subtree_that_fits(node, FR, request)
    borrows = node.parent is not None and node.borrowing_with(FR, request)
    assert (level > 0) == borrows
    if borrows:
        assert level <= node.root().height()
