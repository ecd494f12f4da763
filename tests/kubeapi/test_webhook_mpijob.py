"""Kueue's MPIJob webhook (hub.service.webhook): suspend and managedBy live in spec.runPolicy,
made when the MPIJob has no runPolicy, kept when it names another manager."""

from __future__ import annotations

import json
from typing import Any

from hub.api.config import parse_configuration
from hub.service.webhook import review

from .test_webhook import FIXTURES, lookup, patch_of

MPI = parse_configuration({"integrations": {"frameworks": ["batch/job", "kubeflow.org/mpijob"]}})


def mpijob_review(queue: str, run_policy: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": {"spec": {
        "containers": [{"name": "c", "image": "busybox"}]}}}}}
    if run_policy is not None:
        spec["runPolicy"] = run_policy
    request = json.loads((FIXTURES / "create-multikueue-job.json").read_text())
    request["request"].update({
        "kind": {"group": "kubeflow.org", "version": "v2beta1", "kind": "MPIJob"},
        "resource": {"group": "kubeflow.org", "version": "v2beta1", "resource": "mpijobs"},
        "object": {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                   "metadata": {"name": "pi", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": queue}},
                   "spec": spec},
    })
    return request


def test_a_queued_mpijob_is_suspended_in_its_run_policy() -> None:
    assert patch_of(review(mpijob_review("user-queue", None), lookup, MPI)["response"]) == [
        {"op": "add", "path": "/spec/runPolicy", "value": {"suspend": True}}]
    assert patch_of(review(mpijob_review("user-queue", {"suspend": False, "cleanPodPolicy": "Running"}), lookup,
                           MPI)["response"]) == [{"op": "replace", "path": "/spec/runPolicy/suspend", "value": True}]


def test_an_mpijob_of_a_multikueue_queue_is_handed_to_multikueue_in_its_run_policy() -> None:
    # No runPolicy: one object made by the first operation, the second adds to it.
    assert patch_of(review(mpijob_review("mk-queue", None), lookup, MPI)["response"]) == [
        {"op": "add", "path": "/spec/runPolicy", "value": {"managedBy": "kueue.x-k8s.io/multikueue"}},
        {"op": "add", "path": "/spec/runPolicy/suspend", "value": True}]
    assert patch_of(review(mpijob_review("mk-queue", {"managedBy": "kubeflow.org/mpi-operator"}), lookup,
                           MPI)["response"]) == [
        {"op": "replace", "path": "/spec/runPolicy/managedBy", "value": "kueue.x-k8s.io/multikueue"},
        {"op": "add", "path": "/spec/runPolicy/suspend", "value": True}]
    # Without the framework enabled, MPIJobs are not Kueue's.
    assert patch_of(review(mpijob_review("user-queue", None), lookup)["response"]) == []
