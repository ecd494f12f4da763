"""A single plain Pod as Kueue's pod integration queues it (hub.api.jobkinds.pod): managed or not,
what the webhook does at creation, its Workload, ungating with the admission, finished, pods ready,
stopping by deletion, and the webhook's validation. Kueue's own sample Pod goes in unchanged."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest
import yaml

from hub.api.config import parse_configuration
from hub.api.errors import ValidationError
from hub.api.jobkinds import POD, adapter_for
from hub.api.jobkinds.framework import PodSetInfo, workload_for
from hub.api.jobkinds.pod import (
    InjectionConflict,
    default_at_creation,
    json_patch,
    manages_pod,
    pods_to_stop,
    read_pod,
    remove_finalizer,
    termination_target,
    ungate,
    validate_pod,
)
from hub.kubeapi.patch import json_patch as apply_patch

# site/static/examples/pods-kueue/kueue-pod.yaml, as Kueue's plain_pods.md shows it.
KUEUE_POD = """\
apiVersion: v1
kind: Pod
metadata:
  generateName: kueue-sleep-
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  containers:
    - name: sleep
      image: busybox
      command:
        - sleep
      args:
        - 3s
      resources:
        requests:
          cpu: 3
  restartPolicy: OnFailure
"""

GATE = {"name": "kueue.x-k8s.io/admission"}


def created(text: str = KUEUE_POD, name: str = "kueue-sleep-abcde", uid: str = "uid-1") -> dict[str, Any]:
    """The manifest as the API server stores it: named from generateName, in a namespace, with a uid."""
    m = yaml.safe_load(text)
    m["metadata"].update({"name": name, "namespace": "default", "uid": uid})
    return dict(m)


def config(**fields: Any) -> Any:
    return parse_configuration({"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration", **fields})


POD_ON = config(integrations={"frameworks": ["pod"]})


def test_kueues_sample_pod_is_managed_where_the_pod_framework_is_on() -> None:
    pod = read_pod(created())
    assert manages_pod(POD_ON, pod, None)
    assert not manages_pod(config(), pod, None)  # mkhub's default frameworks: batch/job alone
    assert not manages_pod(POD_ON, pod, None, owner_managed=True)  # a managed Job's pod is the Job's
    no_queue = created()
    del no_queue["metadata"]["labels"]
    assert not manages_pod(POD_ON, read_pod(no_queue), None)
    in_system = created()
    in_system["metadata"]["namespace"] = "kube-system"
    assert not manages_pod(POD_ON, read_pod(in_system), None)


def test_the_webhook_labels_finalizes_gates_and_hashes_the_role_as_a_json_patch() -> None:
    before = created()
    after = default_at_creation(before)
    assert before == created()  # the input is left alone
    meta = after["metadata"]
    assert meta["labels"]["kueue.x-k8s.io/managed"] == "true"
    assert meta["finalizers"] == ["kueue.x-k8s.io/managed"]
    assert after["spec"]["schedulingGates"] == [GATE]
    assert len(meta["annotations"]["kueue.x-k8s.io/role-hash"]) == 8
    assert default_at_creation(after) == after  # twice is once
    ops = json_patch(before, after)
    assert apply_patch(before, ops) == after
    assert {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1managed", "value": "true"} in ops


def test_a_pod_suspended_by_its_parent_is_gated_without_the_managed_label_or_finalizer() -> None:
    m = created()
    m["metadata"]["annotations"] = {"kueue.x-k8s.io/pod-suspending-parent": "deployment"}
    after = default_at_creation(m)
    assert after["spec"]["schedulingGates"] == [GATE]
    assert "kueue.x-k8s.io/managed" not in after["metadata"]["labels"]
    assert "finalizers" not in after["metadata"]


def test_kueues_marks_are_read_back() -> None:
    plain = read_pod(created())
    assert not plain.kueue_managed and plain.group_name == ""
    marked = created()
    marked["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] = "g"
    pod = read_pod(default_at_creation(marked))
    assert pod.kueue_managed and pod.gated and pod.group_name == "g"


def test_the_workload_is_kueues_pod_workload() -> None:
    pod = read_pod(default_at_creation(created()))
    assert adapter_for("v1", "Pod") is POD
    wl = workload_for(POD, pod)
    digest = hashlib.sha1(b"Pod\n\nkueue-sleep-abcde\nuid-1").hexdigest()[:5]
    assert wl.meta.name == f"pod-kueue-sleep-abcde-{digest}"
    assert wl.meta.owner_references == [{"apiVersion": "v1", "kind": "Pod", "name": "kueue-sleep-abcde",
                                         "uid": "uid-1", "controller": True, "blockOwnerDeletion": True}]
    assert wl.queue_name == "user-queue"
    (ps,) = wl.pod_sets
    assert (ps.name, ps.count) == ("main", 1)
    assert dict(ps.spec.per_pod_requests) == {"cpu": 3000}
    assert ps.template == {"spec": pod.spec}  # Kueue keeps the Pod's spec alone, gate included


def test_admission_ungates_with_the_flavors_node_selector_and_tolerations() -> None:
    m = default_at_creation(created())
    m["spec"]["nodeSelector"] = {"zone": "a"}
    m["spec"]["schedulingGates"] = [{"name": "other"}, GATE, {"name": "kueue.x-k8s.io/topology"}]
    toleration = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    info = PodSetInfo("main", 1, {"cloud.google.com/gke-spot": "true"}, [toleration], {"l": "1"}, {"a": "2"})
    before = copy.deepcopy(m)
    assert ungate(m, info) is None
    assert m["spec"]["schedulingGates"] == [{"name": "other"}]  # Kueue's gate and TAS's go, others stay
    assert m["spec"]["nodeSelector"] == {"zone": "a", "cloud.google.com/gke-spot": "true"}
    assert m["spec"]["tolerations"] == [toleration]
    assert m["metadata"]["labels"]["l"] == "1" and m["metadata"]["annotations"]["a"] == "2"
    assert apply_patch(before, json_patch(before, m)) == m
    once = copy.deepcopy(m)
    assert ungate(m, info) is None and m == once  # an ungated Pod is left alone


def test_an_admission_conflicting_with_the_pods_node_selector_leaves_it_gated_with_a_one_line_reason() -> None:
    m = default_at_creation(created())
    m["spec"]["nodeSelector"] = {"zone": "a"}
    before = copy.deepcopy(m)
    problem = ungate(m, PodSetInfo("main", 1, {"zone": "b"}))
    assert problem is not None and "\n" not in problem
    assert 'Pod "default/kueue-sleep-abcde"' in problem and "zone=b" in problem and "zone=a" in problem
    assert m == before
    with pytest.raises(InjectionConflict):
        POD.run_with_pod_sets_info(m, [PodSetInfo("main", 1, {"zone": "b"})], [])


def test_finished_from_the_phase_and_ready_from_the_ready_condition() -> None:
    m = default_at_creation(created())
    assert POD.finished(read_pod(m)) is None and not POD.pods_ready(read_pod(m))
    assert POD.is_suspended(read_pod(m))
    m["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    assert POD.pods_ready(read_pod(m)) and POD.finished(read_pod(m)) is None
    m["status"] = {"phase": "Succeeded", "message": "all good"}
    assert POD.finished(read_pod(m)) == ("succeeded", "all good")
    m["status"] = {"phase": "Failed"}
    assert POD.finished(read_pod(m)) == ("failed", "Pod failed")
    assert POD.is_suspended(read_pod(m))


def _with(phase: str = "Running", gated: bool = False, deleting: bool = False) -> Any:
    m = created()
    if gated:
        m["spec"]["schedulingGates"] = [GATE]
    if deleting:
        m["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    m["status"] = {"phase": phase}
    return read_pod(m)


def test_eviction_deletes_the_running_pod_and_a_deleted_workload_every_pod_not_yet_going() -> None:
    running, gated, done, going = _with(), _with("Pending", gated=True), _with("Succeeded"), _with(deleting=True)
    assert pods_to_stop([running, gated, done, going]) == [running]
    assert pods_to_stop([running, gated, done, going], workload_deleted=True) == [running, gated, done]
    cond = termination_target("WorkloadEvicted", "Preempted", 0.0)
    assert cond == {"type": "TerminationTarget", "status": "True", "reason": "WorkloadEvicted",
                    "message": "Preempted", "lastTransitionTime": "1970-01-01T00:00:00Z"}


def test_the_finalizer_is_removed_once() -> None:
    m = default_at_creation(created())
    assert remove_finalizer(m) and "finalizers" not in m["metadata"]
    assert not remove_finalizer(m)


def test_the_worker_copy_keeps_the_pod_and_drops_kueues_gate_and_the_managers_metadata() -> None:
    m = default_at_creation(created())
    m["spec"]["schedulingGates"].append({"name": "other"})
    m["metadata"]["ownerReferences"] = [{"kind": "X"}]
    m["status"] = {"phase": "Pending"}
    copy_ = POD.worker_copy(m)
    assert set(copy_["metadata"]) == {"name", "namespace", "labels", "annotations"}
    assert copy_["spec"]["schedulingGates"] == [{"name": "other"}] and "status" not in copy_
    assert copy_["spec"]["containers"] == m["spec"]["containers"]


@pytest.mark.parametrize(("labels", "annotations", "path", "reason"), [
    ({"kueue.x-k8s.io/managed": "yes"}, {}, "metadata.labels[kueue.x-k8s.io/managed]", "can only be 'true'"),
    ({"kueue.x-k8s.io/queue-name": "Bad.Queue"}, {}, "metadata.labels[kueue.x-k8s.io/queue-name]",
     "RFC 1123 subdomain"),
    ({"kueue.x-k8s.io/max-exec-time-seconds": "soon"}, {}, "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]",
     'strconv.Atoi: parsing "soon": invalid syntax'),
    ({"kueue.x-k8s.io/max-exec-time-seconds": "0"}, {}, "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]",
     "Invalid value: 0: should be greater than 0"),
    ({"kueue.x-k8s.io/pod-group-name": "g"}, {}, "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]",
     "Required value"),
    ({}, {"kueue.x-k8s.io/pod-group-total-count": "2"}, "metadata.labels[kueue.x-k8s.io/pod-group-name]",
     "Required value"),
    ({"kueue.x-k8s.io/pod-group-name": "g"}, {"kueue.x-k8s.io/pod-group-total-count": "two"},
     "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]",
     'Invalid value: "two": strconv.Atoi: parsing "two": invalid syntax'),
    ({"kueue.x-k8s.io/pod-group-name": "g"}, {"kueue.x-k8s.io/pod-group-total-count": "99999999999999999999"},
     "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]", "value out of range"),
    ({"kueue.x-k8s.io/pod-group-name": "g"}, {"kueue.x-k8s.io/pod-group-total-count": "0"},
     "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]",
     "incorrect annotation value 'kueue.x-k8s.io/pod-group-total-count=0': group total count should be greater than zero"),
    ({"kueue.x-k8s.io/pod-group-name": "Bad_Group"}, {"kueue.x-k8s.io/pod-group-total-count": "1"},
     "metadata.labels[kueue.x-k8s.io/pod-group-name]", "RFC 1123 subdomain"),
    ({"kueue.x-k8s.io/pod-group-name": "g", "kueue.x-k8s.io/prebuilt-workload-name": "w"},
     {"kueue.x-k8s.io/pod-group-total-count": "1"}, "metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]",
     "prebuilt workload and pod group should be equal"),
])
def test_the_webhook_refuses_bad_group_metadata_naming_pod_and_field(
        labels: dict[str, str], annotations: dict[str, str], path: str, reason: str) -> None:
    m = created()
    m["metadata"]["labels"].update(labels)
    m["metadata"]["annotations"] = annotations
    error = validate_pod(m)
    assert error is not None
    text = str(error)
    assert text.startswith('Pod "default/kueue-sleep-abcde" is invalid: ' + path) and reason in text and "\n" not in text


def test_the_webhook_accepts_good_pods_and_refuses_group_changes_on_update() -> None:
    m = created()
    assert validate_pod(m) is None
    m["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] = "g"
    m["metadata"]["annotations"] = {"kueue.x-k8s.io/pod-group-total-count": "+2",
                                    "kueue.x-k8s.io/retriable-in-group": "false"}
    assert validate_pod(m) is None  # Go's Atoi takes a sign
    renamed = copy.deepcopy(m)
    renamed["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] = "h"
    assert "metadata.labels[kueue.x-k8s.io/pod-group-name]: Invalid value: \"h\": field is immutable" in str(
        validate_pod(renamed, m))
    retriable = copy.deepcopy(m)
    del retriable["metadata"]["annotations"]["kueue.x-k8s.io/retriable-in-group"]
    assert "unretriable pod group can't be converted to retriable" in str(validate_pod(retriable, m))
    assert validate_pod(m, m) is None


def test_the_queue_and_maximum_execution_time_are_fixed_once_the_pod_runs() -> None:
    gated = default_at_creation(created())
    moved = copy.deepcopy(gated)
    moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other-queue"
    assert validate_pod(moved, gated) is None  # still gated: it may move
    running = copy.deepcopy(gated)
    del running["spec"]["schedulingGates"]
    moved_running = copy.deepcopy(running)
    moved_running["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other-queue"
    text = str(validate_pod(moved_running, running))
    assert 'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "other-queue": field is immutable' in text
    timed = copy.deepcopy(running)
    timed["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "60"
    assert "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]" in str(validate_pod(timed, running))
    assert validate_pod("not a pod") is not None  # type: ignore[arg-type]


def test_the_webhook_takes_null_maps_and_refuses_what_does_not_read() -> None:
    m = created()
    m["metadata"]["labels"] = None
    m["metadata"]["annotations"] = None
    after = default_at_creation(m)
    assert after["metadata"]["labels"] == {"kueue.x-k8s.io/managed": "true"}
    with pytest.raises(ValidationError) as err:
        default_at_creation({"metadata": {"name": "p", "namespace": "n"}, "spec": {"containers": "x"}})
    assert 'Pod "n/p" is invalid: spec.containers' in str(err.value)


@pytest.mark.parametrize(("manifest", "field"), [
    ("not a pod", ""),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}, "spec": {"containers": 3}},
     "spec.containers"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}, "spec": {}}, "spec.containers"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"},
      "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}},
     "spec.containers[0].resources.requests[cpu]"),
])
def test_a_bad_pod_is_refused_in_one_line_naming_the_field(manifest: Any, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        read_pod(manifest)
    text = str(err.value)
    assert text.startswith('Pod "') and field in text and "\n" not in text


def test_json_patch_escapes_keys_removes_and_replaces() -> None:
    before = {"a": {"x/y": 1, "t~": 2, "gone": 3}, "l": [1]}
    after = {"a": {"x/y": 5, "t~": 2}, "l": [1, 2], "new": {}}
    ops = json_patch(before, after)
    assert {"op": "replace", "path": "/a/x~1y", "value": 5} in ops
    assert {"op": "remove", "path": "/a/gone"} in ops
    assert apply_patch(before, ops) == after
