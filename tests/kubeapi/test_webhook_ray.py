"""Kueue's RayJob, RayCluster and RayService webhooks (hub.service.webhook): suspended at creation
where each kind is suspended, handed to MultiKueue through ``spec.managedBy``."""

from __future__ import annotations

from typing import Any

import pytest

from hub.api.config import parse_configuration
from hub.service.webhook import review

from .test_webhook import lookup, patch_of

RAY = parse_configuration({"integrations": {"frameworks": ["batch/job", "ray.io/rayjob", "ray.io/raycluster",
                                                            "ray.io/rayservice"]}})
CLUSTER = {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": "ray"}]}}}}


def ray_review(kind: str, queue: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "u-1", "operation": "CREATE", "namespace": "team-a", "name": "r",
            "kind": {"group": "ray.io", "version": "v1", "kind": kind},
            "resource": {"group": "ray.io", "version": "v1", "resource": kind.lower() + "s"},
            "object": {"apiVersion": "ray.io/v1", "kind": kind,
                       "metadata": {"name": "r", "namespace": "team-a",
                                    "labels": {"kueue.x-k8s.io/queue-name": queue}}, "spec": spec},
        },
    }


@pytest.mark.parametrize("kind,spec", [("RayJob", {"rayClusterSpec": CLUSTER}), ("RayCluster", CLUSTER)])
def test_rayjobs_and_rayclusters_are_created_suspended_and_handed_to_multikueue(kind: str, spec: dict[str, Any]) -> None:
    assert patch_of(review(ray_review(kind, "user-queue", spec), lookup, RAY)["response"]) == [
        {"op": "add", "path": "/spec/suspend", "value": True}]
    assert patch_of(review(ray_review(kind, "mk-queue", {**spec, "managedBy": "ray.io/kuberay-operator"}), lookup,
                           RAY)["response"]) == [
        {"op": "replace", "path": "/spec/managedBy", "value": "kueue.x-k8s.io/multikueue"},
        {"op": "add", "path": "/spec/suspend", "value": True}]


def test_a_rayservice_is_suspended_through_its_cluster_config() -> None:
    spec = {"rayClusterConfig": {**CLUSTER, "suspend": False}}
    assert patch_of(review(ray_review("RayService", "user-queue", spec), lookup, RAY)["response"]) == [
        {"op": "replace", "path": "/spec/rayClusterConfig/suspend", "value": True}]


def test_without_the_ray_frameworks_ray_objects_are_not_kueues() -> None:
    assert patch_of(review(ray_review("RayJob", "user-queue", {"rayClusterSpec": CLUSTER}), lookup)["response"]) == []
