"""Kueue's manager Configuration: which sections switch features on, their defaults, and what is rejected."""

from __future__ import annotations

from typing import Any

import pytest

from hub.api.config import (
    ALL_AT_ONCE,
    INCREMENTAL,
    LESS_THAN_INITIAL_SHARE,
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
    parse_configuration,
    parse_duration,
)
from hub.api.errors import ValidationError


def rejected_paths(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as exc:
        parse_configuration(data)
    return [e.path for e in exc.value.errors]


def test_empty_configuration_disables_optional_features() -> None:
    config = parse_configuration({})
    assert not config.wait_for_pods_ready.enabled
    assert not config.fair_sharing.enabled
    assert not config.ignore_undeclared_resources
    assert config.gate("PartialAdmission") and config.gate("PrioritySortingWithinCohort")
    assert not config.gate("PrioritizePreemptorWorkloads")


def test_v1beta2_wait_for_pods_ready_present_means_enabled_with_v1beta2_defaults() -> None:
    wfpr = parse_configuration({"waitForPodsReady": {}}).wait_for_pods_ready
    assert wfpr.enabled
    assert wfpr.timeout == 1800.0
    assert wfpr.block_admission is False
    assert wfpr.recovery_timeout == 1800.0  # defaults to timeout
    assert wfpr.requeue_by_eviction_time is True
    assert (wfpr.backoff_limit_count, wfpr.backoff_base_seconds, wfpr.backoff_max_seconds) == (None, 60, 3600)


def test_explicit_v1beta2_configuration_without_the_section_still_enables_wait_for_pods_ready() -> None:
    config = parse_configuration({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"})
    assert config.wait_for_pods_ready.enabled


def test_v1beta1_wait_for_pods_ready_needs_enable_and_has_older_defaults() -> None:
    off = parse_configuration({"waitForPodsReady": {"enable": False}}).wait_for_pods_ready
    assert not off.enabled
    on = parse_configuration({"waitForPodsReady": {"enable": True}}).wait_for_pods_ready
    assert on.enabled and on.timeout == 300.0
    assert on.block_admission is True  # v1beta1 defaulted blockAdmission to enable


def test_recovery_timeout_zero_disables_recovery_deadline() -> None:
    wfpr = parse_configuration({"waitForPodsReady": {"timeout": "5m", "recoveryTimeout": "0s"}}).wait_for_pods_ready
    assert wfpr.timeout == 300.0 and wfpr.recovery_timeout == 0.0


def test_requeuing_strategy_fields() -> None:
    wfpr = parse_configuration(
        {"waitForPodsReady": {"requeuingStrategy": {"timestamp": "Creation", "backoffLimitCount": 2,
                                                    "backoffBaseSeconds": 10, "backoffMaxSeconds": 100}}}
    ).wait_for_pods_ready
    assert not wfpr.requeue_by_eviction_time
    assert (wfpr.backoff_limit_count, wfpr.backoff_base_seconds, wfpr.backoff_max_seconds) == (2, 10, 100)


def test_negative_durations_and_counts_are_rejected() -> None:
    paths = rejected_paths({"waitForPodsReady": {"timeout": "-1m", "requeuingStrategy": {"backoffLimitCount": -1}}})
    assert "waitForPodsReady.timeout" in paths
    assert "waitForPodsReady.requeuingStrategy.backoffLimitCount" in paths


def test_unknown_requeuing_timestamp_is_rejected() -> None:
    assert rejected_paths({"waitForPodsReady": {"requeuingStrategy": {"timestamp": "Now"}}}) == [
        "waitForPodsReady.requeuingStrategy.timestamp"
    ]


def test_fair_sharing_present_means_enabled_with_both_strategies() -> None:
    fs = parse_configuration({"fairSharing": {}}).fair_sharing
    assert fs.enabled
    assert fs.strategies == (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)


def test_v1beta1_fair_sharing_enable_false() -> None:
    assert not parse_configuration({"fairSharing": {"enable": False}}).fair_sharing.enabled


@pytest.mark.parametrize(
    "strategies",
    [[LESS_THAN_OR_EQUAL_TO_FINAL_SHARE], [LESS_THAN_INITIAL_SHARE], [LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE]],
)
def test_allowed_fair_sharing_strategy_lists(strategies: list[str]) -> None:
    assert parse_configuration({"fairSharing": {"preemptionStrategies": strategies}}).fair_sharing.strategies == tuple(strategies)


@pytest.mark.parametrize(
    "strategies",
    [[LESS_THAN_INITIAL_SHARE, LESS_THAN_OR_EQUAL_TO_FINAL_SHARE], [LESS_THAN_INITIAL_SHARE, LESS_THAN_INITIAL_SHARE], ["Whatever"]],
)
def test_other_fair_sharing_strategy_lists_are_rejected(strategies: list[str]) -> None:
    assert rejected_paths({"fairSharing": {"preemptionStrategies": strategies}}) == ["fairSharing.preemptionStrategies"]


def test_feature_gates_override_defaults_and_must_be_booleans() -> None:
    config = parse_configuration({"featureGates": {"PartialAdmission": False, "PrioritizePreemptorWorkloads": True}})
    assert not config.gate("PartialAdmission") and config.gate("PrioritizePreemptorWorkloads")
    assert rejected_paths({"featureGates": {"PartialAdmission": "no"}}) == ["featureGates.PartialAdmission"]


def test_quota_check_strategy_ignore_undeclared() -> None:
    assert parse_configuration({"resources": {"quotaCheckStrategy": "IgnoreUndeclared"}}).ignore_undeclared_resources


def test_multikueue_defaults_and_step_size() -> None:
    mk = parse_configuration({}).multikueue
    assert (mk.gc_interval, mk.origin, mk.worker_lost_timeout, mk.dispatcher_name, mk.incremental_step_size) == (
        60.0, "multikueue", 900.0, ALL_AT_ONCE, 3)
    mk = parse_configuration({"multiKueue": {"dispatcherName": INCREMENTAL, "incrementalDispatcherConfig": {"stepSize": 5},
                                             "workerLostTimeout": "1m"}}).multikueue
    assert (mk.dispatcher_name, mk.incremental_step_size, mk.worker_lost_timeout) == (INCREMENTAL, 5, 60.0)
    assert rejected_paths({"multiKueue": {"incrementalDispatcherConfig": {"stepSize": 0}}}) == [
        "multiKueue.incrementalDispatcherConfig.stepSize"
    ]


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90.0), ("5m", 300.0), ("1h30m", 5400.0), ("250ms", 0.25), ("0", 0.0), (12, 12.0)])
def test_go_durations(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["5 minutes", "m5", "1x", "5m3"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)
