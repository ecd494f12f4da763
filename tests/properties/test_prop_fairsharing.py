"""Preemption terminates: with no new input, two workloads never preempt each other back and forth
(kueue-semantics §6.3), and with fair sharing alone deciding between queues the cluster comes to rest.

Two things can keep preempting, in Kueue as here, so the generated workloads exclude them:
- mixing mechanisms can cycle through three workloads: a zero-weight queue takes a workload's place
  by rule S2-b, a queue within its nominal quota reclaims from it, and the first workload then evicts
  that reclaimer inside its own queue by LowerOrNewerEqualPriority ("comes to rest" is therefore only
  asserted where fair sharing alone decides);
- partial admission: a preemptor that preempted for its minCount is nominated at full size in the
  next cycle (see tests/engine/test_engine_fairsharing.py::
  test_partial_admission_preemptor_and_its_victim_keep_swapping);
- and, with fair sharing, the same mix makes a pair swap: A evicts B by fair sharing, then an in-queue
  preemption (LowerOrNewerEqualPriority) in A's queue replaces a smaller workload by a larger one, A's
  queue's share rises, and B evicts A by fair sharing. Each decision is Kueue's on the state it sees, so
  test_fair_sharing_never_preempts_back_and_forth tolerates exactly that pair (see
  tests/engine/test_engine_fairsharing.py::
  test_fair_sharing_victim_evicts_its_preemptor_after_an_in_queue_preemption); the other tests do not;
- a preemptor within its queue's nominal quota on the contested resources reclaims from a borrower without a
  share comparison (FairSharingPreemptWithinNominal), then loses the next tournament to its victim, which
  takes its room back: "comes to rest" tolerates exactly one such pair repeating (see
  tests/engine/test_engine_fairsharing.py::test_within_nominal_reclaimer_loses_the_tournament_to_its_victim).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st
from prop_model import (
    NEVER,
    SCALE,
    ClusterSpec,
    Create,
    Run,
    Schedule,
    check_invariants,
    clusters,
    creates,
    examples,
)

# Generous: the number of examples is fixed, and a loaded machine must not turn slowness into a failure.
pytestmark = pytest.mark.timeout(900 * SCALE)

HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]
CYCLES = 40  # a handful of workloads settle in far fewer


def drive(spec: ClusterSpec, first: list[Create], second: list[Create]) -> tuple[Run, bool]:
    """Two bursts of arrivals, then up to CYCLES cycles with no input; True if it came to rest."""
    run = Run(spec)
    for op in first:
        run.apply(op)
    run.apply(Schedule(2))
    for op in second:
        run.apply(op)
    sim = run.sim
    rested = False
    for _ in range(CYCLES):
        events = len(sim.ctl.event_log)
        result = sim.ctl.schedule_once(sim.now)
        check_invariants(run)
        if not result.changed and len(sim.ctl.event_log) == events:
            rested = True
            break
    target(float(len(run.audit.pairs)), label="preemptions")
    return run, rested


def mutual(run: Run, tolerate_in_queue_change: bool = False) -> set[tuple[str, str]]:
    """Workloads that preempted each other; with ``tolerate_in_queue_change``, except the documented
    mixed-mechanism case: between A evicting B and B evicting A, an in-ClusterQueue preemption in A's queue
    changed A's share (see tests/engine/test_engine_fairsharing.py::
    test_fair_sharing_victim_evicts_its_preemptor_after_an_in_queue_preemption)."""
    pairs = set(run.audit.pairs)
    found = {(a, b) for a, b in pairs if (b, a) in pairs}
    if not tolerate_in_queue_change:
        return found
    steps = [_preemption(e.key, e.reason, e.message) for e in run.sim.ctl.event_log if e.type == "Preempted"]
    seen = {(s[0], s[1]) for s in steps}
    return {
        (a, b) for a, b in found
        if not ((a, b) in seen and (b, a) in seen and _requeued_between(steps, a, b) and _requeued_between(steps, b, a))
    }


def _preemption(victim: str, reason: str, message: str) -> tuple[str, str, str, str]:
    """(preemptor, victim, reason, preemptor's queue path) from a Preempted event."""
    preemptor = message.split("(UID: uid-", 1)[1].split(",", 1)[0]
    path = message.split("preemptor path: ", 1)[1].split(";", 1)[0]
    return f"team/{preemptor}", victim, reason, path


def _requeued_between(steps: list[tuple[str, str, str, str]], a: str, b: str) -> bool:
    """Every time B evicted A after A evicted B, A's queue had an in-ClusterQueue preemption in between."""
    a_path = ""
    since: int | None = None
    for i, (preemptor, victim, _, path) in enumerate(steps):
        if (preemptor, victim) == (a, b):
            a_path, since = path, i
        elif (preemptor, victim) == (b, a) and since is not None and not any(
            r == "InClusterQueue" and p == a_path for _, _, r, p in steps[since + 1 : i]
        ):
            return False
    return True


def fair_sharing_only(spec: ClusterSpec) -> ClusterSpec:
    """No priority-based preemption within queues and no zero weights: only fair sharing decides."""
    queues = [
        dataclasses.replace(q, options={**q.options, "within": NEVER, "weight": q.options.get("weight", "1").replace("0", "1")})
        for q in spec.queues
    ]
    cohorts = [dataclasses.replace(c, options={}) for c in spec.cohorts]
    return dataclasses.replace(spec, queues=queues, cohorts=cohorts)


def reclaim_livelock(run: Run) -> bool:
    """The documented within-nominal reclaim livelock: the last preemptions (at least CYCLES // 4) are one
    preemptor reclaiming the same victim by InCohortReclamation, the victim winning its room back each time
    (see tests/engine/test_engine_fairsharing.py::
    test_within_nominal_reclaimer_loses_the_tournament_to_its_victim)."""
    steps = [_preemption(e.key, e.reason, e.message) for e in run.sim.ctl.event_log if e.type == "Preempted"]
    tail = steps[-(CYCLES // 4):]
    return len(tail) == CYCLES // 4 and len(set(tail)) == 1 and tail[0][2] == "InCohortReclamation"


BURSTS = (
    st.lists(creates(partial=False), min_size=2, max_size=8),
    st.lists(creates(max_priority=5, partial=False), max_size=5),
)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=HEALTH)
@given(clusters(fair=True), *BURSTS)
def test_fair_sharing_never_preempts_back_and_forth(spec: ClusterSpec, first: list[Create], second: list[Create]) -> None:
    run, _ = drive(spec, first, second)
    assert not mutual(run, True), f"workloads preempted each other: {sorted(mutual(run, True))}"


@settings(max_examples=examples(150), deadline=None, suppress_health_check=HEALTH)
@given(clusters(fair=True), *BURSTS)
def test_fair_sharing_alone_comes_to_rest(spec: ClusterSpec, first: list[Create], second: list[Create]) -> None:
    run, rested = drive(fair_sharing_only(spec), first, second)
    assert rested or reclaim_livelock(run), f"still preempting after {CYCLES} cycles: {run.audit.pairs}"
    assert not mutual(run)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=HEALTH)
@given(clusters(fair=False), *BURSTS)
def test_classic_preemption_never_preempts_back_and_forth(spec: ClusterSpec, first: list[Create], second: list[Create]) -> None:
    run, _ = drive(spec, first, second)
    assert not mutual(run), f"workloads preempted each other: {sorted(mutual(run))}"

