"""Random clusters and workloads for the engine properties, and the invariants checked after every step.

The invariants are computed independently of the engine's own bookkeeping:
quota trees are rebuilt here from the generated specs (kueue-semantics §5.1)
and usage from the reserved workloads' ``status.admission``.

The number of examples follows the hypothesis profile (tests/conftest.py:
``MKHUB_HYPOTHESIS_PROFILE=deep`` for ten times the nominal count), and
``PROPERTY_SCALE`` (an environment variable, default 1) multiplies it, e.g.
``PROPERTY_SCALE=20 pytest tests/properties`` for a long hunt.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine_helpers import Sim, cohort, cq, flavor, wl
from hypothesis import strategies as st
from hypothesis_budget import SCALE as SCALE
from hypothesis_budget import examples as budget

from hub.api.quantity import resource_value
from hub.controllers.queue_status import current_statuses, drift, recount
from hub.engine.engine import Engine
from hub.engine.flavors import Assignment, Mode
from hub.engine.preemption import Target, workload_fits
from hub.engine.quota import FR, find_height_of_lowest_subtree_that_fits
from hub.engine.workload_info import WorkloadInfo

NEVER, LOWER, LOWER_OR_NEWER, ANY = "Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any"
QuotaTriple = tuple[int, int | None, int | None]  # nominal, borrowingLimit, lendingLimit


def examples(n: int) -> int:
    return budget(n)


# --- specs -----------------------------------------------------------------------------------


@dataclass
class NodeSpec:
    name: str
    parent: str | None
    quotas: dict[str, dict[str, QuotaTriple]]  # flavor -> resource -> quota
    options: dict[str, Any] = field(default_factory=dict)
    is_cohort: bool = False


@dataclass
class ClusterSpec:
    flavors: list[str]
    resources: list[str]
    cohorts: list[NodeSpec]
    queues: list[NodeSpec]
    fair: bool

    def manifests(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [flavor(f) for f in self.flavors]
        for c in self.cohorts:
            out.append(cohort(c.name, dict(c.quotas) or None, parent=c.parent, **c.options))
        for q in self.queues:
            out.append(cq(q.name, dict(q.quotas), cohort=q.parent, **q.options))
        return out

    def sim(self) -> Sim:
        config: dict[str, Any] = {"fairSharing": {}} if self.fair else {}
        sim = Sim(config)
        sim.add(*self.manifests()[: len(self.flavors) + len(self.cohorts)])
        sim.queue(*self.manifests()[len(self.flavors) + len(self.cohorts):])
        return sim


def _quota(draw: st.DrawFn, with_parent: bool, is_cohort: bool, max_nominal: int) -> QuotaTriple:
    nominal = draw(st.integers(0, max_nominal))
    if not with_parent:
        return nominal, None, None
    borrowing = draw(st.one_of(st.none(), st.integers(0, 6)))
    lending_max = 8 if is_cohort else nominal
    lending = draw(st.one_of(st.none(), st.integers(0, lending_max)))
    return nominal, borrowing, lending


@st.composite
def clusters(draw: st.DrawFn, fair: bool | None = None) -> ClusterSpec:
    flavors = ["f0", "f1"][: draw(st.integers(1, 2))]
    resources = ["cpu", "memory"][: draw(st.integers(1, 2))]
    fair_sharing = draw(st.booleans()) if fair is None else fair
    cohorts: list[NodeSpec] = []
    for i in range(draw(st.integers(1, 3))):
        parent = draw(st.sampled_from([None] + [c.name for c in cohorts]))
        quotas: dict[str, dict[str, QuotaTriple]] = {}
        if draw(st.booleans()):
            quotas = {f: {r: _quota(draw, parent is not None, True, 4) for r in resources} for f in flavors}
        options: dict[str, Any] = {}
        if fair_sharing and draw(st.booleans()):
            options["weight"] = draw(st.sampled_from(["0", "1", "2"]))
        cohorts.append(NodeSpec(f"co{i}", parent, quotas, options, is_cohort=True))
    queues: list[NodeSpec] = []
    for i in range(draw(st.integers(1, 4))):
        parent = draw(st.sampled_from([c.name for c in cohorts] + [None]))
        own = draw(st.lists(st.sampled_from(flavors), min_size=1, max_size=len(flavors), unique=True))
        quotas = {f: {r: _quota(draw, parent is not None, False, 8) for r in resources} for f in own}
        reclaim = draw(st.sampled_from([NEVER, LOWER, ANY, ANY]))
        options = {
            "within": draw(st.sampled_from([NEVER, LOWER, LOWER, LOWER_OR_NEWER])),
            "reclaim": reclaim,
            "when_can_borrow": draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"])),
            "when_can_preempt": draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"])),
            "strategy": draw(st.sampled_from(["BestEffortFIFO", "BestEffortFIFO", "StrictFIFO"])),
        }
        if reclaim != NEVER and not fair_sharing and draw(st.booleans()):
            options["borrow_within"] = LOWER
            options["threshold"] = draw(st.one_of(st.none(), st.integers(0, 3)))
        if fair_sharing:
            options["weight"] = draw(st.sampled_from(["0", "1", "1", "2"]))
        queues.append(NodeSpec(f"q{i}", parent, quotas, options))
    return ClusterSpec(flavors, resources, cohorts, queues, fair_sharing)


@dataclass(frozen=True)
class Create:
    queue: int
    cpu: int
    memory: int
    count: int
    min_count: int | None
    priority: int


@dataclass(frozen=True)
class Schedule:
    cycles: int


@dataclass(frozen=True)
class Finish:
    pick: int


@dataclass(frozen=True)
class Evict:
    pick: int


@dataclass(frozen=True)
class Delete:
    """Delete any live workload (pending or holding quota): the queues' counts must follow."""

    pick: int


Op = Create | Schedule | Finish | Evict | Delete


@st.composite
def creates(draw: st.DrawFn, max_priority: int = 3, partial: bool = True) -> Create:
    count = draw(st.integers(1, 3))
    min_count = draw(st.one_of(st.none(), st.integers(1, count))) if count > 1 and partial else None
    return Create(draw(st.integers(0, 3)), draw(st.integers(0, 3)), draw(st.integers(0, 3)), count, min_count,
                  draw(st.integers(0, max_priority)))


operations = st.one_of(
    creates(),
    st.builds(Schedule, st.integers(1, 3)),
    st.builds(Schedule, st.integers(1, 3)),
    st.builds(Finish, st.integers(0, 20)),
    st.builds(Evict, st.integers(0, 20)),
    st.builds(Delete, st.integers(0, 20)),
)


@st.composite
def scripts(draw: st.DrawFn, max_ops: int = 20) -> list[Op]:
    """A burst of arrivals; a second, more urgent burst once the first is running (to provoke
    preemption); then mixed operations and a last scheduling pass."""
    first: list[Op] = list(draw(st.lists(creates(), min_size=2, max_size=8)))
    second: list[Op] = list(draw(st.lists(creates(max_priority=5), min_size=1, max_size=5)))
    mixed: list[Op] = draw(st.lists(operations, max_size=max_ops))
    return first + [Schedule(2)] + second + [Schedule(2)] + mixed + [Schedule(5)]


class Run:
    """A generated cluster driven by generated operations, checking the invariants after every step."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        self.sim = spec.sim()
        self.audit = PreemptionAudit(self.sim.engine)
        self.created: list[str] = []
        self.made = 0  # names are never reused, even after a Delete

    def apply(self, op: Op) -> None:
        sim = self.sim
        sim.now += 1.0  # distinct creation times; no timers are configured
        if isinstance(op, Create):
            queue = self.spec.queues[op.queue % len(self.spec.queues)]
            name = f"w{self.made}"
            self.made += 1
            requests: dict[str, Any] = {"cpu": op.cpu}
            if "memory" in self.spec.resources:
                requests["memory"] = op.memory
            sim.add(wl(name, queue.name, requests=requests, count=op.count, min_count=op.min_count, priority=op.priority))
            self.created.append(f"team/{name}")
        elif isinstance(op, Schedule):
            sim.settle(cycles=op.cycles)
        elif isinstance(op, Delete):
            if self.created:
                key = self.created.pop(op.pick % len(self.created))
                sim.engine.delete("Workload", *key.split("/", 1), sim.now)
        else:
            holding = sorted(sim.reserved())
            if holding:
                name = holding[op.pick % len(holding)]
                if isinstance(op, Finish):
                    sim.finish(name)
                else:
                    sim.evict(name)
        check_invariants(self)


# --- invariants ------------------------------------------------------------------------------


def _value(resource: str, amount: int) -> int:
    return resource_value(resource, str(amount))


class ModelTree:
    """Kueue's quota tree recomputed from the specs and the ClusterQueues' usage."""

    def __init__(self, spec: ClusterSpec, cq_usage: dict[str, Counter[FR]]) -> None:
        self.nodes = {n.name: n for n in spec.cohorts + spec.queues}
        self.children: dict[str, list[str]] = {n: [] for n in self.nodes}
        for node in self.nodes.values():
            if node.parent is not None:
                self.children[node.parent].append(node.name)
        self.cq_usage = cq_usage
        self.subtree: dict[str, Counter[FR]] = {}
        self.local: dict[str, Counter[FR]] = {}
        self.usage: dict[str, Counter[FR]] = {}
        for name, node in self.nodes.items():
            if node.parent is None:
                self._compute(name)

    def quota(self, name: str, fr: FR) -> QuotaTriple | None:
        return self.nodes[name].quotas.get(fr[0], {}).get(fr[1])

    def _compute(self, name: str) -> None:
        node = self.nodes[name]
        subtree: Counter[FR] = Counter()
        usage: Counter[FR] = Counter()
        for f, resources in node.quotas.items():
            for r, (nominal, _, _) in resources.items():
                subtree[(f, r)] += _value(r, nominal)
        if not node.is_cohort:
            usage.update(self.cq_usage.get(name, Counter()))
        for child in self.children[name]:
            self._compute(child)
            for fr, value in self.subtree[child].items():
                subtree[fr] += value - self.local[child][fr]
            for fr, value in self.usage[child].items():
                usage[fr] += max(0, value - self.local[child][fr])
        local: Counter[FR] = Counter()
        for f, resources in node.quotas.items():
            for r, (_, _, lending) in resources.items():
                if lending is not None and node.parent is not None:
                    local[(f, r)] = max(0, subtree[(f, r)] - _value(r, lending))
        self.subtree[name], self.local[name], self.usage[name] = subtree, local, usage


def _nonzero(values: dict[FR, int]) -> dict[FR, int]:
    return {fr: v for fr, v in values.items() if v}


def check_invariants(run: Run) -> None:
    engine = run.sim.engine
    holders: dict[str, str] = {}
    for name, state in engine.cqs.items():
        for key in state.reserving:
            assert key not in holders, f"{key} holds quota in {holders[key]} and {name}"
            holders[key] = name
    cq_usage: dict[str, Counter[FR]] = {q.name: Counter() for q in run.spec.queues}
    for key in run.created:
        w = engine.workloads.get(key)
        assert w is not None, f"{key} was lost"
        if w.is_finished:
            assert key not in holders, f"finished {key} still holds quota"
            continue
        if w.is_quota_reserved:
            assert w.status.admission is not None
            assert holders.get(key) == w.status.admission.cluster_queue, f"{key} is reserved but not accounted"
            for psa in w.status.admission.pod_set_assignments:
                usage = dict(psa.resource_usage)
                for res, fl in psa.flavors:
                    cq_usage[w.status.admission.cluster_queue][(fl, res)] += usage.get(res, 0)
            continue
        assert key not in holders, f"pending {key} holds quota in {holders.get(key)}"
        assert w.status.admission is None, f"pending {key} keeps an admission"
        info = engine.infos.get(key)
        assert info is not None, f"pending {key} is unknown to the engine"
        queued = info.cluster_queue is not None and engine.queues[info.cluster_queue].contains(key)
        blocked = engine.blocked_entry is not None and engine.blocked_entry.info.key == key
        assert queued or key in engine.orphans or blocked, f"pending {key} is in no queue"
    assert set(holders) <= set(run.created)
    # Every queue status equals a recount from the workloads, and so do the kept admitted usage and
    # the hub's totals.
    assert drift(recount(engine), current_statuses(engine, run.sim.now)) == []
    admitted_usage: dict[str, Counter[FR]] = {name: Counter() for name in engine.cqs}
    for name, state in engine.cqs.items():
        for info in state.reserving.values():
            if info.wl.is_admitted:
                admitted_usage[name].update(info.usage)
        assert _nonzero(state.admitted_usage) == _nonzero(admitted_usage[name]), f"admitted usage of {name}"
        assert state.admitted_count == sum(1 for i in state.reserving.values() if i.wl.is_admitted), name
    totals = [0, 0, 0, 0]
    for w in engine.workloads.values():
        totals[3 if w.is_finished else 2 if w.is_admitted else 1 if w.is_quota_reserved else 0] += 1
    assert engine.counts.totals() == tuple(totals)

    model = ModelTree(run.spec, cq_usage)
    for name, node in model.nodes.items():
        engine_node = engine.tree.cohorts[name] if node.is_cohort else engine.cqs[name].node
        assert _nonzero(engine_node.usage) == _nonzero(model.usage[name]), f"usage of {name}"
        assert _nonzero(engine_node.subtree) == _nonzero(model.subtree[name]), f"subtree quota of {name}"
        assert _nonzero(engine_node.local) == _nonzero(model.local[name]), f"local quota of {name}"
        for fr, used in model.usage[name].items():
            if node.parent is None:
                assert used <= model.subtree[name][fr], f"{name} uses {used} of {fr} above its quota {model.subtree[name][fr]}"
                continue
            quota = model.quota(name, fr)
            if quota is not None and quota[1] is not None:
                limit = model.subtree[name][fr] + _value(fr[1], quota[1])
                assert used <= limit, f"{name} uses {used} of {fr} above nominal + borrowingLimit {limit}"


# --- preemption audit ------------------------------------------------------------------------


class PreemptionAudit:
    """Checks every preemption decision when it is made, against the quota state it was made on."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.validated: set[int] = set()
        self.pairs: list[tuple[str, str]] = []
        self.decisions = 0
        original_get: Callable[..., list[Target]] = engine.preemptor.get_targets
        original_issue: Callable[[WorkloadInfo, list[Target]], int] = engine.issue_preemptions

        def get_targets(info: WorkloadInfo, assignment: Assignment, state: Any) -> list[Target]:
            targets = original_get(info, assignment, state)
            if targets:
                self.check(info, assignment, state, targets)
                self.validated.update(id(t) for t in targets)
            return targets

        def issue(preemptor: WorkloadInfo, targets: list[Target]) -> int:
            for t in targets:
                assert id(t) in self.validated, "issued a target no preemption search returned"
                self.pairs.append((preemptor.key, t.info.key))
            return original_issue(preemptor, targets)

        engine.preemptor.get_targets = get_targets  # type: ignore[method-assign, assignment]
        engine.issue_preemptions = issue  # type: ignore[method-assign]

    def _allowed(self, policy: str, preemptor: WorkloadInfo, victim: WorkloadInfo) -> bool:
        if policy == LOWER:
            return victim.priority < preemptor.priority
        if policy == LOWER_OR_NEWER:
            ts = self.engine.queue_timestamp
            return victim.priority < preemptor.priority or (
                victim.priority == preemptor.priority and ts(preemptor) < ts(victim)
            )
        return policy == ANY

    def check(self, info: WorkloadInfo, assignment: Assignment, state: Any, targets: list[Target]) -> None:
        engine = self.engine
        self.decisions += 1
        fair = engine.config.fair_sharing.enabled
        pre = state.spec.preemption
        contested = {
            (choice.flavor, res)
            for ps in assignment.pod_sets
            for res, choice in ps.flavors.items()
            if choice.mode == Mode.PREEMPT
        }
        usage = {fr: v for fr, v in assignment.usage.items() if v}
        assert len({t.info.key for t in targets}) == len(targets), "a victim is listed twice"
        for t in targets:
            victim = t.info
            assert victim.key != info.key
            owner = engine.cqs[victim.cluster_queue or ""]
            assert victim.key in owner.reserving, f"{victim.key} holds no quota"
            assert any(fr in contested for fr in victim.usage), f"{victim.key} uses no contested flavor-resource"
            if victim.cluster_queue == state.name:
                assert t.reason == "InClusterQueue"
                assert self._allowed(pre.within_cluster_queue, info, victim), (
                    f"withinClusterQueue={pre.within_cluster_queue} forbids {info.key} (p{info.priority}) "
                    f"preempting {victim.key} (p{victim.priority})"
                )
                continue
            assert state.node.parent is not None and owner.node.root() is state.node.root(), "victim outside the cohort"
            assert self._allowed(pre.reclaim_within_cohort, info, victim), (
                f"reclaimWithinCohort={pre.reclaim_within_cohort} forbids {info.key} (p{info.priority}) "
                f"preempting {victim.key} (p{victim.priority})"
            )
            assert any(owner.node.usage.get(fr, 0) > owner.node.subtree.get(fr, 0) for fr in contested), (
                f"{victim.key}'s queue does not borrow what {info.key} needs"
            )
            if t.reason == "InCohortReclaimWhileBorrowing":
                bwc = pre.borrow_within_cohort
                assert not fair and bwc.policy == LOWER and victim.priority < info.priority
                assert bwc.max_priority_threshold is None or victim.priority <= bwc.max_priority_threshold
            else:
                assert t.reason in (("InCohortFairSharing", "InCohortReclamation") if fair else ("InCohortReclamation",))
        if not fair and pre.borrow_within_cohort.policy == NEVER:
            for fr in contested:
                within_nominal = usage[fr] <= state.node.nominal(fr)
                _, may_reclaim = find_height_of_lowest_subtree_that_fits(state.node, fr, usage[fr])
                assert within_nominal or may_reclaim, f"{info.key} preempts for {fr} beyond its nominal quota"
        self._check_minimal(state, usage, targets, rules=(True,) if fair else (True, False))

    def _check_minimal(self, state: Any, usage: dict[FR, int], targets: list[Target], rules: tuple[bool, ...]) -> None:
        cqs = self.engine.cqs

        def move(t: Target, sign: int) -> None:
            cqs[t.info.cluster_queue or ""].node.add_usage_map(t.info.usage, sign)

        for t in targets:
            move(t, -1)
        try:
            minimal_under = []
            for allow_borrowing in rules:
                if not workload_fits(state, usage, allow_borrowing):
                    continue
                needed = True
                for t in targets:
                    move(t, 1)
                    still_fits = workload_fits(state, usage, allow_borrowing)
                    move(t, -1)
                    needed = needed and not still_fits
                minimal_under.append(needed)
            assert minimal_under, "the preemptor does not fit even with every target removed"
            assert any(minimal_under), (
                f"not minimal: some target of {[t.info.key for t in targets]} is not needed"
            )
        finally:
            for t in targets:
                move(t, 1)
