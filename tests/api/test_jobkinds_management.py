"""Which Jobs Kueue manages: integrations.frameworks, manageJobsWithoutQueueName and
managedJobsNamespaceSelector, parsed from the Configuration and decided as Kueue v0.15+ does."""

from __future__ import annotations

from typing import Any

import pytest

from hub.api.config import parse_configuration
from hub.api.errors import ValidationError
from hub.api.jobkinds.management import manages


def config(**fields: Any) -> Any:
    return parse_configuration({"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration", **fields})


def test_batch_job_is_the_default_framework_and_a_list_replaces_it() -> None:
    assert config().frameworks == ("batch/job",)
    assert config(integrations={"frameworks": ["pod"]}).frameworks == ("pod",)
    assert not manages(config(integrations={"frameworks": ["pod"]}), "batch/job", "lq", "team", None)
    assert manages(config(integrations={"frameworks": ["pod", "batch/job"]}), "batch/job", "lq", "team", None)


def test_unknown_and_duplicate_frameworks_are_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as err:
        config(integrations={"frameworks": ["batch/job", "example.com/thing", "batch/job"]})
    text = str(err.value)
    assert 'integrations.frameworks[1]: Unsupported value: "example.com/thing"' in text
    assert 'integrations.frameworks[2]: Duplicate value: "batch/job"' in text
    assert "\n" not in text


def test_default_selector_leaves_out_kube_system_and_kueues_namespace() -> None:
    default = config()
    assert manages(default, "batch/job", "lq", "team", None)
    assert not manages(default, "batch/job", "lq", "kube-system", None)
    assert not manages(default, "batch/job", "lq", "kueue-system", None)
    moved = config(namespace="queues")
    assert not manages(moved, "batch/job", "lq", "queues", None)
    assert manages(moved, "batch/job", "lq", "kueue-system", None)


def test_without_a_queue_name_only_under_manage_jobs_without_queue_name() -> None:
    assert not manages(config(), "batch/job", "", "team", None)
    assert manages(config(manageJobsWithoutQueueName=True), "batch/job", "", "team", None)
    assert not manages(config(manageJobsWithoutQueueName=True), "batch/job", "", "kube-system", None)


def test_the_selector_is_always_respected_by_default_and_weak_with_the_gate_off() -> None:
    selector = {"matchLabels": {"managed-by-kueue": "true"}}
    strong = config(manageJobsWithoutQueueName=True, managedJobsNamespaceSelector=selector)
    assert manages(strong, "batch/job", "lq", "team", {"managed-by-kueue": "true"})
    assert manages(strong, "batch/job", "", "team", {"managed-by-kueue": "true"})
    assert not manages(strong, "batch/job", "lq", "team", {})  # a queue name does not get past the selector
    weak = config(manageJobsWithoutQueueName=True, managedJobsNamespaceSelector=selector,
                  featureGates={"ManagedJobsNamespaceSelectorAlwaysRespected": False})
    assert manages(weak, "batch/job", "lq", "team", {})
    assert not manages(weak, "batch/job", "", "team", {})


def test_a_bad_selector_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as err:
        config(managedJobsNamespaceSelector={"matchExpressions": [{"key": "a", "operator": "In"}]})
    assert "managedJobsNamespaceSelector.matchExpressions[0].values" in str(err.value)
