"""Random clusters (1-3 possibly nested cohorts, queues with random quotas and limits, 1-2 flavors)
under random operations (create, schedule, finish, evict); after every step:

(a) no queue or cohort uses more than its quota and limits allow (usage <= nominal + borrowingLimit,
    root usage <= root subtree quota, lending limits respected through local quota);
(b) a workload holds quota in at most one queue, exactly when it is QuotaReserved, and the engine's
    usage equals what the reserved workloads' admissions add up to;
(c) every workload is finished, reserved, or pending in a queue: nothing is lost;
(d) every preemption decision respects the policies and cohort/borrowing conditions and is minimal.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, target
from prop_model import SCALE, ClusterSpec, Op, Run, clusters, examples, scripts

# Generous: the number of examples is fixed, and a loaded machine must not turn slowness into a failure.
pytestmark = pytest.mark.timeout(900 * SCALE)

HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=examples(400), deadline=None, suppress_health_check=HEALTH)
@given(clusters(fair=False), scripts())
def test_classic_engine_invariants(spec: ClusterSpec, ops: list[Op]) -> None:
    run = Run(spec)
    for op in ops:
        run.apply(op)
    target(float(run.audit.decisions), label="preemption decisions")


@settings(max_examples=examples(300), deadline=None, suppress_health_check=HEALTH)
@given(clusters(fair=True), scripts())
def test_fair_sharing_engine_invariants(spec: ClusterSpec, ops: list[Op]) -> None:
    run = Run(spec)
    for op in ops:
        run.apply(op)
    target(float(run.audit.decisions), label="preemption decisions")
