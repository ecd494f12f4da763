"""The quick hypothesis profile (what ``make test`` runs) still catches a broken invariant.

Each case breaks the engine in one place (a mutation, undone after the test) and runs a
property with the budget of the active profile; the property must fail. If the quick
profile ever became too weak to find the bug, this test fails instead.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from prop_model import ClusterSpec, Op, Run, clusters, examples, scripts

from hub.engine import quota


def _engine_property(spec: ClusterSpec, ops: list[Op]) -> None:
    run = Run(spec)
    for op in ops:
        run.apply(op)


# The same nominal budget as test_prop_engine's classic property, scaled by the profile.
_classic = settings(max_examples=examples(400), deadline=None, database=None, phases=[Phase.generate],  # no shrinking
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])(
    given(clusters(fair=False), scripts())(_engine_property))


def test_quota_check_that_ignores_usage_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """available() reports far more room than there is: queues admit past their quota (invariant a)."""
    real = quota.QuotaNode.available

    def broken(self: quota.QuotaNode, fr: quota.FR) -> int:
        return real(self, fr) + 1_000_000

    monkeypatch.setattr(quota.QuotaNode, "available", broken)
    with pytest.raises((AssertionError, BaseExceptionGroup)):
        _classic()
