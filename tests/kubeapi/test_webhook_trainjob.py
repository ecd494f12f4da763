"""Kueue's TrainJob webhook (hub.service.webhook): suspended, handed to MultiKueue when its queue
is, and given Kueue's (empty) entry in spec.runtimePatches, as Kueue's Default does."""

from __future__ import annotations

import json
from typing import Any

from hub.api.config import parse_configuration
from hub.service.webhook import review

from .test_webhook import FIXTURES, lookup, patch_of

TRAINER = parse_configuration({"integrations": {"frameworks": ["batch/job", "trainer.kubeflow.org/trainjob"]}})
KUEUE_ENTRY = {"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": {"template": {"spec": {}}}}


def trainjob_review(queue: str, **spec: Any) -> dict[str, Any]:
    request = json.loads((FIXTURES / "create-multikueue-job.json").read_text())
    request["request"].update({
        "kind": {"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": "TrainJob"},
        "resource": {"group": "trainer.kubeflow.org", "version": "v1alpha1", "resource": "trainjobs"},
        "object": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                   "metadata": {"name": "tj", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": queue}},
                   "spec": {"runtimeRef": {"name": "torch-distributed"}, **spec}},
    })
    return request


def test_a_queued_trainjob_is_suspended_and_gets_kueues_runtime_patch_entry() -> None:
    assert patch_of(review(trainjob_review("user-queue"), lookup, TRAINER)["response"]) == [
        {"op": "add", "path": "/spec/suspend", "value": True},
        {"op": "add", "path": "/spec/runtimePatches", "value": [KUEUE_ENTRY]}]
    mine = {"manager": "example.com/me"}
    assert patch_of(review(trainjob_review("user-queue", runtimePatches=[mine], suspend=True), lookup,
                           TRAINER)["response"]) == [
        {"op": "replace", "path": "/spec/runtimePatches", "value": [mine, KUEUE_ENTRY]}]
    assert patch_of(review(trainjob_review("user-queue", runtimePatches=[KUEUE_ENTRY], suspend=True), lookup,
                           TRAINER)["response"]) == []


def test_a_trainjob_of_a_multikueue_queue_is_handed_to_multikueue() -> None:
    ops = patch_of(review(trainjob_review("mk-queue", managedBy="trainer.kubeflow.org/trainjob-controller"), lookup,
                          TRAINER)["response"])
    assert ops[0] == {"op": "replace", "path": "/spec/managedBy", "value": "kueue.x-k8s.io/multikueue"}
