"""reread_pod: a Pod's next version read from its last one (hub.api.jobkinds.pod), as the worker
agent's TAS reads each worker Pod event (worker_agent.kube.tas)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import hub.api.jobkinds.pod as pod_module
from hub.api.errors import ValidationError
from hub.api.jobkinds.pod import read_pod, reread_pod


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "j-abcde", "namespace": "team-a", "uid": "u1", "resourceVersion": "10",
                     "labels": {"job-name": "j"}, "annotations": {"kueue.x-k8s.io/workload": "wl"},
                     "finalizers": ["batch.kubernetes.io/job-tracking"],
                     "managedFields": [{"manager": "kube-controller-manager", "time": "2026-11-27T20:00:00Z"}]},
        "spec": {"containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                 "restartPolicy": "Never", "nodeSelector": {"pool": "cpu"}},
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }


def _versions() -> list[dict[str, Any]]:
    """A Job's pod as the dev-cluster writes it: created, bound, Running, Failed, its finalizer dropped."""
    created = _pod()
    bound = copy.deepcopy(created)
    bound["metadata"].update(resourceVersion="11", managedFields=[{"manager": "default-scheduler"}])
    bound["spec"]["nodeName"] = "node-a"
    running = copy.deepcopy(bound)
    running["metadata"]["resourceVersion"] = "12"
    running["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    failed = copy.deepcopy(running)
    failed["metadata"]["resourceVersion"] = "13"
    failed["status"] = {"phase": "Failed", "message": "boom", "conditions": [
        {"type": "Ready", "status": "False"},
        {"type": "ContainersReady", "status": "False", "reason": "PodFailed", "lastTransitionTime": "2026-11-27T20:01:00Z"}]}
    released = copy.deepcopy(failed)
    released["metadata"]["resourceVersion"] = "14"
    del released["metadata"]["finalizers"]
    return [created, bound, running, failed, released]


def test_each_version_reads_as_read_pod_reads_it() -> None:
    last = None
    for manifest in _versions():
        pod = reread_pod(manifest, last)
        assert pod == read_pod(manifest)
        last = (manifest, pod)


def test_the_binding_and_status_writes_reuse_the_last_read(monkeypatch: pytest.MonkeyPatch) -> None:
    full: list[str] = []
    real = pod_module.read_pod

    def counting(manifest: Any) -> Any:
        full.append(manifest["metadata"]["resourceVersion"])
        return real(manifest)

    monkeypatch.setattr(pod_module, "read_pod", counting)
    last = None
    for manifest in _versions():
        last = (manifest, reread_pod(manifest, last))
    # Read in full: the creation and the finalizer's removal (metadata); the binding and statuses reused.
    assert full == ["10", "14"]


@pytest.mark.parametrize("change", ["labels", "annotations", "gates", "selector", "unbound"])
def test_a_change_of_metadata_or_spec_is_read_in_full(change: str) -> None:
    created, bound, running, *_ = _versions()
    after = copy.deepcopy(running)
    if change == "labels":
        after["metadata"]["labels"]["extra"] = "x"
    elif change == "annotations":
        after["metadata"]["annotations"] = {}
    elif change == "gates":
        after["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/topology"}]
    elif change == "selector":
        after["spec"]["nodeSelector"] = {"pool": "gpu"}
    else:
        del after["spec"]["nodeName"]
    pod = reread_pod(after, (running, read_pod(running)))
    assert pod == read_pod(after)


def test_a_bad_status_is_refused_as_read_pod_refuses_it() -> None:
    created, bound, *_ = _versions()
    bad = copy.deepcopy(bound)
    bad["status"] = {"phase": 3}
    with pytest.raises(ValidationError) as full:
        read_pod(bad)
    with pytest.raises(ValidationError) as again:
        reread_pod(bad, (created, read_pod(created)))
    assert str(again.value) == str(full.value)
