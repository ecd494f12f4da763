"""The writer hands admission its own copy of the object (``owned``): one deep copy less per write
(hub.kubeapi.writes.Writer._admit, hub.service.apply.Applier.admit). What a caller passed in stays
as it was, an update keeps the stored status, and a generated name's retries start from the same
object."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hub.api.conversion import json_copy
from hub.kubeapi.reads import Target
from hub.kubeapi.resources import BY_KIND
from hub.kubeapi.writes import Options

from .conftest import Env


def _job(name: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default", "labels": {"a": "b"}},
            "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never",
                                                            "containers": [{"name": "c", "image": "busybox"}]}}}}


def _workload(name: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": name, "namespace": "default"},
            "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def _event(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"kind": "Job", "namespace": "default", "name": "j"}, "reason": "R", "message": "m",
            "type": "Normal", "count": 1}


def test_a_callers_object_is_left_as_it_was(env: Env) -> None:
    writer = env.server.api.writer
    for kind, version, body in (("Job", "v1", _job("j")), ("Workload", "v1beta2", _workload("w")), ("Event", "v1", _event("e"))):
        before = copy.deepcopy(body)
        written = writer.create(Target(BY_KIND[kind], version, "default"), body, Options.of({}, "test"))
        assert body == before, kind
        assert written.obj == env.store.get(kind, "default", body["metadata"]["name"])
        changed = json_copy(written.obj)
        changed["metadata"]["labels"] = {"x": "y"}
        kept = copy.deepcopy(changed)
        writer.update(Target(BY_KIND[kind], version, "default", body["metadata"]["name"]), changed, Options.of({}, "test"))
        assert changed == kept, kind


def test_an_update_keeps_the_stored_status(env: Env) -> None:
    writer = env.server.api.writer
    job = Target(BY_KIND["Job"], "v1", "default", "j")
    writer.create(job, _job("j"), Options.of({}, "test"))
    writer.update(Target(BY_KIND["Job"], "v1", "default", "j", "status"),
                  {**_job("j"), "status": {"active": 1}}, Options.of({}, "test"))
    for kind, target, patch in (("Job", job, {"metadata": {"labels": {"a": "c"}}}),):
        written = writer.patch(target, "application/merge-patch+json", patch, Options.of({}, "test"))
        assert written.obj["status"] == {"active": 1}
        stored = env.store.get(kind, "default", "j")
        assert stored is not None and stored["status"] == {"active": 1} and stored["metadata"]["labels"] == {"a": "c"}
    current = env.store.get("Job", "default", "j")
    assert current is not None
    status, _, body = env.raw("PUT", "/apis/batch/v1/namespaces/default/jobs/j",
                              {**current, "spec": {**current["spec"], "suspend": False}, "status": {}})
    assert status == 200, body
    assert body["status"] == {"active": 1} and body["spec"]["suspend"] is False
    # A dry run answers what admission left (the store does not put the status back).
    for method, path, sent, media in (
        ("PUT", "/apis/batch/v1/namespaces/default/jobs/j", {**body, "metadata": {**body["metadata"], "labels": {"d": "e"}}},
         "application/json"),
        ("PATCH", "/apis/batch/v1/namespaces/default/jobs/j", {"metadata": {"labels": {"d": "f"}}}, "application/merge-patch+json"),
    ):
        status, _, answer = env.raw(method, path, sent, content_type=media, query=[("dryRun", "All")])
        assert status == 200, answer
        assert answer["status"] == {"active": 1}, method


def test_a_pod_update_compares_against_the_stored_status(env: Env) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    status, _, created = env.raw("POST", "/api/v1/namespaces/default/pods", pod)
    assert status == 201, created
    status, _, body = env.raw("PUT", "/api/v1/namespaces/default/pods/p",
                              {**created, "metadata": {**created["metadata"], "labels": {"a": "b"}}})
    assert status == 200, body
    assert body["status"] == created["status"] and body["metadata"]["labels"] == {"a": "b"}
    status, _, body = env.raw("PUT", "/api/v1/namespaces/default/pods/p",
                              {**body, "spec": {**body["spec"], "containers": [{"name": "c", "image": "other"}]}})
    assert status == 200, body  # the image may change
    status, _, body = env.raw("PUT", "/api/v1/namespaces/default/pods/p",
                              {**body, "spec": {**body["spec"], "containers": [{"name": "d", "image": "other"}]}})
    assert status == 422, body  # any other container change may not


def test_a_generated_names_retry_starts_from_the_same_object(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    env.store.create({**_job("job-aaaaa"), "metadata": {**_job("")["metadata"], "name": "job-aaaaa"}})
    names = iter(["job-aaaaa", "job-bbbbb"])
    monkeypatch.setattr("hub.store.interface.generated_name", lambda base: next(names))
    body = _job("")
    body["metadata"] = {"generateName": "job-", "namespace": "default", "labels": {"a": "b"}}
    written = env.server.api.writer.create(Target(BY_KIND["Job"], "v1", "default"), body, Options.of({}, "test"))
    assert written.obj["metadata"]["name"] == "job-bbbbb"
    assert written.obj["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"
