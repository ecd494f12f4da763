"""Logs over the agent stream: LogsRequest/LogsCancel to the agent and LogChunk back travel as
control items (never numbered, never handed to the MultiKueue handlers), and the worker Job an
agent in Kubernetes mode creates from the hub's template."""

from __future__ import annotations

from typing import Any

from hub.api.registry import parse_object
from hub.api.workload import Admission, PodSetAssignment, Workload
from hub.federation.loopback import LoopbackNetwork
from hub.federation.session import AgentEndpoint, HubEndpoint
from mkhub.v1 import federation_pb2 as pb
from worker_agent.kube.jobs import failure_message, job_phase, worker_job

from .helpers import RecordingAgent, RecordingHub


def test_logs_travel_as_control_items_in_both_directions() -> None:
    hub = RecordingHub()
    net = LoopbackNetwork(HubEndpoint(hub))
    agent = RecordingAgent("w1")
    endpoint = AgentEndpoint(agent)
    net.add_agent("w1", endpoint)
    asked: list[pb.HubItem] = []
    endpoint.on_logs = asked.append
    chunks: list[tuple[str, pb.LogChunk]] = []
    net.hub.on_log_chunk = lambda cluster, chunk: chunks.append((cluster, chunk))
    net.connect("w1")
    net.pump()
    assert net.hub.send_control("w1", [pb.HubItem(logs_request=pb.LogsRequest(request_id="r1", namespace="ns", job_name="j"))])
    net.pump()
    assert [i.logs_request.job_name for i in asked] == ["j"]
    endpoint.send_control([pb.AgentItem(log_chunk=pb.LogChunk(request_id="r1", pod="j-abc", lines=["x", "y"], done=True))])
    net.pump()
    assert [(c, list(ch.lines), ch.done) for c, ch in chunks] == [("w1", ["x", "y"], True)]
    # Neither side's handler saw them, and nothing numbered is waiting to be acknowledged.
    assert not hub.items and not agent.items
    assert net.hub.unacked("w1") == 0 and endpoint.channel.unacked == 0
    assert not net.hub.send_control("nobody", [pb.HubItem(logs_cancel=pb.LogsCancel(request_id="r1"))])


def admitted_copy() -> Workload:
    wl = parse_object({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "job-train-1a2b3", "namespace": "team-a"},
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 2, "template": {"spec": {
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]},
    })
    assert isinstance(wl, Workload)
    wl.status.admission = Admission("cq", (PodSetAssignment("main", (("cpu", "spot"),), (("cpu", 2000),), 2),))
    return wl


def test_the_worker_job_is_the_hubs_template_adapted_as_multikueue_does() -> None:
    hub_job: dict[str, Any] = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "team-a", "uid": "u-1", "resourceVersion": "7",
                     "labels": {"kueue.x-k8s.io/queue-name": "user-queue", "team": "a", "controller-uid": "u-1"},
                     "ownerReferences": [{"kind": "x"}]},
        "spec": {"parallelism": 2, "suspend": True, "managedBy": "kueue.x-k8s.io/multikueue",
                 "selector": {"matchLabels": {"controller-uid": "u-1"}},
                 "template": {"metadata": {"labels": {"controller-uid": "u-1", "app": "t"}},
                              "spec": {"tolerations": [{"key": "a", "operator": "Exists"}], "containers": [{"name": "main"}]}}},
        "status": {"active": 1},
    }
    spot = {"spec": {"nodeLabels": {"pool": "spot"}, "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]}}
    from worker_agent.kube.jobs import flavor_placement

    wl = admitted_copy()
    out = worker_job(hub_job, wl, "multikueue", flavor_placement(wl, lambda name: spot if name == "spot" else None))
    meta = out["metadata"]
    assert (meta["namespace"], meta["name"]) == ("team-a", "train")
    assert "uid" not in meta and "resourceVersion" not in meta and "ownerReferences" not in meta
    assert meta["labels"] == {"team": "a", "kueue.x-k8s.io/multikueue-origin": "multikueue",
                              "kueue.x-k8s.io/prebuilt-workload-name": "job-train-1a2b3"}
    spec = out["spec"]
    assert spec["suspend"] is False and "managedBy" not in spec and "selector" not in spec and "status" not in out
    pod = spec["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "spot"}
    assert pod["tolerations"] == [{"key": "a", "operator": "Exists"}, {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]
    assert spec["template"]["metadata"]["labels"] == {"app": "t"}
    assert hub_job["spec"]["suspend"] is True  # the hub's manifest is left as it was


def test_a_partial_local_admission_runs_the_worker_job_with_the_admitted_count() -> None:
    hub_job: dict[str, Any] = {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "team-a"},
        "spec": {"parallelism": 2, "suspend": True, "template": {"spec": {"containers": [{"name": "main"}]}}},
    }
    wl = admitted_copy()
    assert worker_job(hub_job, wl, "multikueue", {"main": ({}, [])})["spec"]["parallelism"] == 2
    wl.status.admission = Admission("cq", (PodSetAssignment("main", (("cpu", "spot"),), (("cpu", 1000),), 1),))
    out = worker_job(hub_job, wl, "multikueue", {"main": ({"pool": "spot"}, [])})
    assert out["spec"]["parallelism"] == 1 and out["spec"]["suspend"] is False
    assert out["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "spot"}


def test_job_phase_follows_the_job_conditions() -> None:
    assert job_phase({}) == ""
    assert job_phase({"active": 2, "ready": 1}) == "ready"
    assert job_phase({"succeeded": 2, "conditions": [{"type": "Complete", "status": "True"}]}) == "succeeded"
    failed = {"failed": 1, "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                                           "message": "Job has reached the specified backoff limit"}]}
    assert job_phase(failed) == "failed" and failure_message(failed) == "Job has reached the specified backoff limit"
