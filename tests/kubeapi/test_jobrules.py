"""batch/v1 Job update rules as kube-apiserver enforces them (pkg/apis/batch/validation):
the dev-cluster refuses what a real API server refuses, with 422 Invalid and the field path."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hub.kubeapi.jobrules import status_update_errors, update_errors

from .conftest import Env

JOBS = "/apis/batch/v1/namespaces/default/jobs"
MERGE = "application/merge-patch+json"


def job(name: str = "j", *, suspend: bool = True, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "suspend": suspend,
            "parallelism": 2,
            "completions": 2,
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
            },
            **spec,
        },
    }


def _paths(errs: list[Any]) -> list[str]:
    return [e.path for e in errs]


def with_template(stored: dict[str, Any], **pod: Any) -> dict[str, Any]:
    new = copy.deepcopy(stored)
    new["spec"]["template"]["spec"].update(pod)
    return new


DIRECTIVES = {
    "nodeSelector": {"cloud.example/flavor": "spot"},
    "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
    "schedulingGates": [{"name": "example.com/gate"}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
}


@pytest.mark.parametrize("field", sorted(DIRECTIVES))
def test_scheduling_directives_change_only_while_suspended_and_never_started(field: str) -> None:
    stored = job()
    new = with_template(stored, **{field: DIRECTIVES[field]})
    assert update_errors(stored, new) == []
    running = job(suspend=False)
    assert _paths(update_errors(running, with_template(running, **{field: DIRECTIVES[field]}))) == ["spec.template"]
    started = {**job(), "status": {"startTime": "2026-01-01T00:00:00Z"}}
    assert _paths(update_errors(started, with_template(started, **{field: DIRECTIVES[field]}))) == ["spec.template"]


def test_template_labels_and_annotations_follow_the_same_rule() -> None:
    stored = job()
    new = copy.deepcopy(stored)
    new["spec"]["template"]["metadata"] = {"labels": {"app": "x", "team": "a"}, "annotations": {"a": "b"}}
    assert update_errors(stored, new) == []
    started = {**stored, "status": {"startTime": "2026-01-01T00:00:00Z"}}
    assert _paths(update_errors(started, new)) == ["spec.template"]


def test_the_rest_of_the_template_is_immutable_even_when_suspended() -> None:
    stored = job()
    new = with_template(stored, containers=[{"name": "c", "image": "busybox:2"}])
    errs = update_errors(stored, new)
    assert _paths(errs) == ["spec.template"]
    assert str(errs[0]).endswith("field is immutable")
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
    pod_affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    assert _paths(update_errors(stored, with_template(stored, affinity=pod_affinity))) == ["spec.template"]


def test_completions_are_immutable_but_for_indexed_jobs_in_tandem_with_parallelism() -> None:
    stored = job()
    new = copy.deepcopy(stored)
    new["spec"]["completions"] = 3
    assert _paths(update_errors(stored, new)) == ["spec.completions"]
    indexed = job(completionMode="Indexed")
    alone = copy.deepcopy(indexed)
    alone["spec"]["completions"] = 3
    errs = update_errors(indexed, alone)
    assert _paths(errs) == ["spec.completions"] and "in tandem with spec.parallelism" in str(errs[0])
    together = copy.deepcopy(alone)
    together["spec"]["parallelism"] = 3
    assert update_errors(indexed, together) == []


@pytest.mark.parametrize("field,value", [
    ("selector", {"matchLabels": {"app": "y"}}), ("completionMode", "Indexed"), ("managedBy", "kueue.x-k8s.io/multikueue"),
    ("backoffLimitPerIndex", 1), ("podFailurePolicy", {"rules": []}), ("successPolicy", {"rules": []}),
])
def test_other_immutable_fields(field: str, value: Any) -> None:
    stored = job()
    new = copy.deepcopy(stored)
    new["spec"][field] = value
    assert field in "".join(_paths(update_errors(stored, new)))


def test_parallelism_suspend_and_metadata_stay_mutable_while_running() -> None:
    running = {**job(suspend=False), "status": {"startTime": "2026-01-01T00:00:00Z"}}
    new = copy.deepcopy(running)
    new["spec"].update(parallelism=1, suspend=True)
    new["metadata"]["labels"] = {"user": "added"}
    assert update_errors(running, new) == []


def test_start_time_changes_only_on_a_suspended_job() -> None:
    started = {**job(suspend=False), "status": {"startTime": "2026-01-01T00:00:00Z", "active": 2}}
    cleared = {**started, "status": {"active": 2}}
    errs = status_update_errors(started, cleared)
    assert _paths(errs) == ["status.startTime"] and "cannot be removed for unsuspended job" in str(errs[0])
    suspended = {**started, "spec": {**started["spec"], "suspend": True}}
    assert status_update_errors(suspended, {**suspended, "status": {}}) == []
    fresh = {**job(suspend=False), "status": {}}
    assert status_update_errors(fresh, started) == []  # nil -> set: the Job controller starting it


# --- through the API, as kubectl and controllers meet them ------------------------------------


def test_api_refuses_a_running_jobs_node_selector_with_422(env: Env) -> None:
    status, _, body = env.raw("POST", JOBS, job(suspend=False))
    assert status == 201, body
    status, _, body = env.raw("PATCH", f"{JOBS}/j", {"spec": {"suspend": True, "template": {"spec": {"nodeSelector": {"a": "b"}}}}},
                              content_type=MERGE)
    assert status == 422, body
    assert body["reason"] == "Invalid"
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.template"]
    assert 'Job.batch "j" is invalid: spec.template: Invalid value' in body["message"]


def test_api_takes_the_staged_stop_kueue_makes(env: Env) -> None:
    """Suspend, clear status.startTime, then restore the template: each step is accepted."""
    assert env.raw("POST", JOBS, job(suspend=False))[0] == 201
    status, _, body = env.raw("PATCH", f"{JOBS}/j/status", {"status": {"startTime": "2026-01-01T00:00:00Z"}}, content_type=MERGE)
    assert status == 200, body
    status, _, body = env.raw("PATCH", f"{JOBS}/j/status", {"status": {"startTime": None}}, content_type=MERGE)
    assert status == 422 and body["details"]["causes"][0]["field"] == "status.startTime", body
    assert env.raw("PATCH", f"{JOBS}/j", {"spec": {"suspend": True}}, content_type=MERGE)[0] == 200
    patch = {"spec": {"template": {"spec": {"nodeSelector": {"a": "b"}}}}}
    assert env.raw("PATCH", f"{JOBS}/j", patch, content_type=MERGE)[0] == 422  # still started
    assert env.raw("PATCH", f"{JOBS}/j/status", {"status": {"startTime": None}}, content_type=MERGE)[0] == 200
    status, _, body = env.raw("PATCH", f"{JOBS}/j", patch, content_type=MERGE)
    assert status == 200, body
    assert body["spec"]["template"]["spec"]["nodeSelector"] == {"a": "b"}
