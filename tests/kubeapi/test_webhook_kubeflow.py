"""Kueue's webhook for the Kubeflow Training v1 kinds (hub.service.webhook): at Kueue's path, a queued
job is suspended in ``spec.runPolicy`` (made when absent, as Kueue's samples have none) and handed to
MultiKueue in ``spec.runPolicy.managedBy``."""

from __future__ import annotations

import json
from typing import Any

from hub.api.config import parse_configuration
from hub.api.jobkinds import ADAPTERS
from hub.service.webhook import review, webhook_path

from .test_webhook import FIXTURES, lookup, patch_of

KUBEFLOW = parse_configuration({"integrations": {"frameworks": ["batch/job", "kubeflow.org/pytorchjob"]}})


def pytorch_review(queue: str, run_policy: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {
        "containers": [{"name": "pytorch", "image": "img"}]}}}}}
    if run_policy is not None:
        spec["runPolicy"] = run_policy
    request = json.loads((FIXTURES / "create-multikueue-job.json").read_text())
    request["request"].update({
        "kind": {"group": "kubeflow.org", "version": "v1", "kind": "PyTorchJob"},
        "resource": {"group": "kubeflow.org", "version": "v1", "resource": "pytorchjobs"},
        "object": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                   "metadata": {"name": "pt", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": queue}},
                   "spec": spec},
    })
    return request


def test_kueues_paths() -> None:
    assert [webhook_path(ADAPTERS[f"kubeflow.org/{k}"]) for k in ("pytorchjob", "tfjob", "jaxjob")] == [
        "/mutate-kubeflow-org-v1-pytorchjob", "/mutate-kubeflow-org-v1-tfjob", "/mutate-kubeflow-org-v1-jaxjob"]


def test_a_queued_pytorchjob_is_suspended_in_its_run_policy() -> None:
    assert patch_of(review(pytorch_review("user-queue"), lookup, KUBEFLOW)["response"]) == [
        {"op": "add", "path": "/spec/runPolicy", "value": {"suspend": True}}]
    assert patch_of(review(pytorch_review("user-queue", {"suspend": False}), lookup, KUBEFLOW)["response"]) == [
        {"op": "replace", "path": "/spec/runPolicy/suspend", "value": True}]
    assert patch_of(review(pytorch_review("user-queue", {"suspend": True}), lookup, KUBEFLOW)["response"]) == []


def test_a_pytorchjob_of_a_multikueue_queue_gets_managed_by() -> None:
    assert patch_of(review(pytorch_review("mk-queue"), lookup, KUBEFLOW)["response"]) == [
        {"op": "add", "path": "/spec/runPolicy", "value": {"managedBy": "kueue.x-k8s.io/multikueue"}},
        {"op": "add", "path": "/spec/runPolicy/suspend", "value": True}]
    # Naming the training operator is the same as naming none (Kueue's CanDefaultManagedBy).
    named = pytorch_review("mk-queue", {"managedBy": "kubeflow.org/training-operator", "suspend": False})
    assert patch_of(review(named, lookup, KUBEFLOW)["response"]) == [
        {"op": "replace", "path": "/spec/runPolicy/managedBy", "value": "kueue.x-k8s.io/multikueue"},
        {"op": "replace", "path": "/spec/runPolicy/suspend", "value": True}]


def test_without_the_framework_pytorchjobs_are_not_kueues() -> None:
    assert patch_of(review(pytorch_review("user-queue"), lookup)["response"]) == []
