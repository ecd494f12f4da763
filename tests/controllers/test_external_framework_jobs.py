"""The hub's side of MultiKueue's external frameworks (hub.controllers.jobs.JobIntegration): it
makes no Workload for an object of such a kind, links the Workload its own controller made (owned by
the object), never suspends or writes the object's spec, and waits for an object not seen yet."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hub.api.config import Configuration, parse_configuration
from hub.api.jobkinds import register_external_frameworks
from hub.api.registry import parse_object, serve_external_frameworks
from hub.controllers.cluster import ClusterController
from hub.controllers.simrunner import SimRunner
from hub.engine.engine import Engine
from hub.store.interface import ObjectKey

CONFIG = {"multiKueue": {"externalFrameworks": [{"name": "MyJob.v1.example.com"}]}}


@pytest.fixture(autouse=True)
def _registered() -> Iterator[None]:
    serve_external_frameworks(parse_configuration(CONFIG))
    yield
    register_external_frameworks(Configuration())


def _myjob(name: str = "j") -> Any:
    return parse_object({"apiVersion": "example.com/v1", "kind": "MyJob",
                         "metadata": {"name": name, "namespace": "team", "uid": "u-" + name,
                                      "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
                         "spec": {"managedBy": "kueue.x-k8s.io/multikueue"}})


def _workload(owner: str = "j", api_version: str = "example.com/v1") -> Any:
    return parse_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                         "metadata": {"name": f"myjob-{owner}", "namespace": "team", "ownerReferences": [
                             {"apiVersion": api_version, "kind": "MyJob", "name": owner, "uid": "u-" + owner,
                              "controller": True}]},
                         "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                             "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}]}})


def _controller() -> ClusterController:
    engine = Engine(parse_configuration(CONFIG), 0.0)
    return ClusterController(engine, SimRunner())


def test_no_workload_is_made_for_the_object_and_the_owned_one_is_linked() -> None:
    c = _controller()
    c.apply(_myjob(), 0.0)
    assert not c.engine.workloads and ObjectKey("MyJob", "team", "j") in c.jobs.jobs
    c.apply(_workload(), 0.0)
    assert c.jobs.job_of["team/myjob-j"] == ObjectKey("MyJob", "team", "j")
    assert not c.jobs.awaited("team/myjob-j")
    assert c.jobs.on_events([]) == [] and not c.jobs.suspended  # never suspended by the hub


def test_a_workload_before_its_object_waits_for_it() -> None:
    c = _controller()
    c.apply(_workload(), 0.0)
    assert c.jobs.awaited("team/myjob-j")
    c.apply(_myjob(), 0.0)
    assert not c.jobs.awaited("team/myjob-j")


def test_an_owner_of_another_version_is_not_linked_and_a_deleted_workload_is_unlinked() -> None:
    c = _controller()
    c.apply(_workload(api_version="example.com/v2"), 0.0)
    assert "team/myjob-j" not in c.jobs.job_of
    c.apply(_myjob(), 0.0)
    c.apply(_workload(), 0.0)
    c.delete("Workload", "team", "myjob-j", 0.0)
    assert "team/myjob-j" not in c.jobs.job_of and ObjectKey("MyJob", "team", "j") not in c.jobs.workload_of
    assert ObjectKey("MyJob", "team", "j") in c.jobs.jobs  # the object stays: it is not the Workload's


def test_deleting_the_object_deletes_its_workload_as_the_garbage_collector_would() -> None:
    c = _controller()
    c.apply(_myjob(), 0.0)
    c.apply(_workload(), 0.0)
    assert "team/myjob-j" in c.engine.workloads
    c.delete("MyJob", "team", "j", 0.0)
    assert "team/myjob-j" not in c.engine.workloads
