"""Pod groups as Kueue's pod integration queues them (hub.api.jobkinds.pod_group): validation, roles,
the group's Workload, admission, replacements of failed Pods, the end and eviction. Kueue's own
sample group (plain_pods.md) goes in unchanged."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from hub.api.errors import ValidationError
from hub.api.jobkinds.framework import PodSetInfo
from hub.api.jobkinds.pod import Pod, default_at_creation, pods_to_stop, read_pod, role_hash
from hub.api.jobkinds.pod_group import (
    compose_group,
    group_finished,
    group_pods_ready,
    group_suspended,
    match_to_workload,
    reclaimable_pods,
    role_of,
    ungate_group,
    validate_group,
    waiting_for_replacement,
)
from hub.api.meta import Condition, format_time
from hub.api.registry import parse_object
from hub.api.workload import workload_spec_to_dict

# site/static/examples/pods-kueue/kueue-pod-group.yaml, as Kueue's plain_pods.md shows it.
KUEUE_POD_GROUP = """\
---
apiVersion: v1
kind: Pod
metadata:
  generateName: sample-leader-
  labels:
    kueue.x-k8s.io/queue-name: user-queue
    kueue.x-k8s.io/pod-group-name: "sample-group"
  annotations:
    kueue.x-k8s.io/pod-group-total-count: "2"
spec:
  restartPolicy: Never
  containers:
  - name: sleep
    image: busybox
    command: ["sh", "-c", 'echo "hello world from the leader pod" && sleep 3']
    resources:
      requests:
        cpu: 3
---
apiVersion: v1
kind: Pod
metadata:
  generateName: sample-worker-
  labels:
    kueue.x-k8s.io/queue-name: user-queue
    kueue.x-k8s.io/pod-group-name: "sample-group"
  annotations:
    kueue.x-k8s.io/pod-group-total-count: "2"
spec:
  restartPolicy: Never
  containers:
  - name: sleep
    image: busybox
    command: ["sh", "-c", 'echo "hello world from the worker pod" && sleep 2']
    resources:
      requests:
        cpu: 3
"""

GROUP = "kueue.x-k8s.io/pod-group-name"
COUNT = "kueue.x-k8s.io/pod-group-total-count"
QUEUE = "kueue.x-k8s.io/queue-name"


def sample_group() -> list[dict[str, Any]]:
    """Kueue's sample as the API server stores it after Kueue's webhook: named, timed, gated."""
    out = []
    for i, doc in enumerate(yaml.safe_load_all(KUEUE_POD_GROUP)):
        doc["metadata"].update({"name": doc["metadata"]["generateName"] + "x", "namespace": "default",
                                "uid": f"uid-{i}", "creationTimestamp": format_time(float(i))})
        out.append(default_at_creation(doc))
    return out


def pod(name: str, cpu: str = "1", total: str = "2", t: float = 0.0, queue: str = "lq", group: str = "g",
        phase: str = "", gated: bool = True, **annotations: str) -> dict[str, Any]:
    m: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "creationTimestamp": format_time(t),
                     "labels": {QUEUE: queue, GROUP: group}, "annotations": {COUNT: total, **annotations}},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]},
    }
    m = default_at_creation(m)
    if not gated:
        m["spec"].pop("schedulingGates")
    if phase:
        m["status"] = {"phase": phase}
    return m


def read(*manifests: dict[str, Any]) -> list[Pod]:
    return [read_pod(m) for m in manifests]


def test_kueues_sample_group_is_one_workload_named_as_the_group() -> None:
    leader, worker = sample_group()
    plan = compose_group(read(leader, worker))
    assert plan.error is None and not plan.waiting and not plan.to_delete
    wl = plan.workload
    assert wl is not None
    assert (wl.meta.name, wl.meta.namespace, wl.queue_name) == ("sample-group", "default", "user-queue")
    assert wl.meta.annotations == {"kueue.x-k8s.io/is-group-workload": "true"}
    # Same requests, only the commands differ: one role of two Pods.
    assert [(ps.name, ps.count) for ps in wl.pod_sets] == [(role_hash(leader["spec"]), 2)]
    assert dict(wl.pod_sets[0].spec.per_pod_requests) == {"cpu": 3000}
    assert wl.meta.owner_references == [
        {"apiVersion": "v1", "kind": "Pod", "name": "sample-leader-x", "uid": "uid-0"},
        {"apiVersion": "v1", "kind": "Pod", "name": "sample-worker-x", "uid": "uid-1"}]
    assert workload_spec_to_dict(wl)["podSets"][0]["count"] == 2


def test_the_sample_group_waits_for_its_second_pod() -> None:
    leader, _ = sample_group()
    plan = compose_group(read(leader))
    assert plan.workload is None and plan.error is None
    assert plan.waiting == "'sample-group' group has fewer runnable pods than expected"


def test_the_role_hash_covers_requests_ports_and_scheduling_fields_only() -> None:
    base = {"containers": [{"name": "a", "image": "x", "command": ["a"], "resources": {"requests": {"cpu": "1"}}}]}
    assert role_hash(base) == "06264ae2"  # stable across runs and processes
    renamed = copy.deepcopy(base)
    renamed["containers"][0].update({"name": "b", "image": "y", "command": ["b"], "env": [{"name": "E"}]})
    renamed["restartPolicy"] = "Never"
    renamed["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    assert role_hash(renamed) == role_hash(base)
    milli = copy.deepcopy(base)
    milli["containers"][0]["resources"]["requests"]["cpu"] = "1000m"
    assert role_hash(milli) == role_hash(base)  # quantities by value
    for change in ({"nodeSelector": {"z": "a"}}, {"tolerations": [{"key": "k"}]}, {"priority": 5},
                   {"affinity": {"nodeAffinity": {}}}, {"runtimeClassName": "r"}, {"overhead": {"cpu": "1"}},
                   {"topologySpreadConstraints": [{"maxSkew": 1}]}, {"resourceClaims": [{"name": "c"}]},
                   {"resources": {"requests": {"cpu": "2"}}}, {"initContainers": [{"name": "i"}]}):
        assert role_hash({**base, **change}) != role_hash(base), change
    ported = copy.deepcopy(base)
    ported["containers"][0]["ports"] = [{"containerPort": 80}]
    assert role_hash(ported) != role_hash(base)
    assert role_hash({"containers": "junk", "overhead": {"cpu": "lots"}})  # never a traceback


def test_the_role_written_at_creation_wins_over_the_spec() -> None:
    m = pod("a")
    m["spec"]["nodeSelector"] = {"injected": "by-admission"}
    assert role_of(read_pod(m)) == role_hash(pod("a")["spec"]) != role_hash(m["spec"])


def test_two_roles_are_two_pod_sets_in_name_order_summing_to_the_total() -> None:
    pods = [pod("leader", "1", total="4", t=0)] + [pod(f"w{i}", "2", total="4", t=i + 1) for i in range(3)]
    wl = compose_group(read(*pods)).workload
    assert wl is not None
    roles = {role_hash(pods[0]["spec"]): 1, role_hash(pods[1]["spec"]): 3}
    assert [(ps.name, ps.count) for ps in wl.pod_sets] == sorted(roles.items())


@pytest.mark.parametrize(("change", "refused", "path"), [
    (lambda ms: ms[1]["metadata"]["annotations"].update({COUNT: "3"}), "b", f"metadata.annotations[{COUNT}]"),
    (lambda ms: ms[1]["metadata"]["labels"].update({QUEUE: "other"}), "b", f"metadata.labels[{QUEUE}]"),
    (lambda ms: ms[0]["metadata"]["annotations"].update({COUNT: "-1"}), "a", f"metadata.annotations[{COUNT}]"),
    (lambda ms: ms[1]["metadata"]["annotations"].pop(COUNT), "b", f"metadata.annotations[{COUNT}]"),
    (lambda ms: ms[1]["metadata"]["labels"].pop(GROUP), "b", f"metadata.labels[{GROUP}]"),
    (lambda ms: ms[1]["metadata"]["labels"].update({GROUP: "h"}), "b", f"metadata.labels[{GROUP}]"),
    (lambda ms: ms[1]["metadata"].update({"namespace": "other"}), "b", "metadata.namespace"),
    (lambda ms: ms[1]["metadata"]["annotations"].update({"kueue.x-k8s.io/role-hash": "Not_A_Name"}), "b",
     "metadata.annotations[kueue.x-k8s.io/role-hash]"),
])
def test_a_group_that_disagrees_is_refused_naming_the_pod_and_the_field(change: Any, refused: str, path: str) -> None:
    ms = [pod("a", t=0), pod("b", t=1)]
    change(ms)
    plan = compose_group(read(*ms))
    assert plan.workload is None and plan.error is not None
    text = str(plan.error)
    ns = ms[1]["metadata"]["namespace"] if refused == "b" else "ns"
    assert text.startswith(f'Pod "{ns}/{refused}" is invalid: {path}') and "\n" not in text


def test_a_failed_pods_queue_and_count_do_not_matter_and_it_is_let_go() -> None:
    failed = pod("a", t=0, phase="Failed", queue="old")
    plan = compose_group(read(pod("b", t=1), failed, pod("c", t=2)))
    assert plan.error is None and plan.workload is not None
    assert [p.meta.name for p in plan.to_finalize] == ["a"]
    assert [r["name"] for r in plan.workload.meta.owner_references] == ["b", "c"]


def test_more_than_eighteen_roles_are_refused() -> None:
    ms = [pod(f"p{i}", cpu=str(i + 1), total="19", t=i) for i in range(19)]
    error = validate_group(read(*ms))
    assert error is not None and "can't include more than 18 roles" in str(error)


def test_pods_beyond_the_total_are_deleted_newest_and_gated_first() -> None:
    ms = [pod("a", t=0, gated=False), pod("b", t=1), pod("c", t=2, gated=False)]
    plan = compose_group(read(*ms))
    assert plan.workload is not None and sum(ps.count for ps in plan.workload.pod_sets) == 2
    assert [p.meta.name for p in plan.to_delete] == ["b"]  # ungated ones are kept first


def test_fast_admission_queues_the_total_with_the_first_pod_alone() -> None:
    fast = {"kueue.x-k8s.io/pod-group-fast-admission": "true"}
    plan = compose_group(read(pod("a", total="3", **fast)))
    assert plan.workload is not None and not plan.waiting
    assert [(ps.name, ps.count) for ps in plan.workload.pod_sets] == [(role_hash(pod("a")["spec"]), 3)]
    later = match_to_workload(read(pod("a", total="3", **fast), pod("b", t=1, total="3", **fast)), plan.workload, 0.0)
    assert later.absent == 0 and later.equivalent and [p.meta.name for p in later.kept] == ["a", "b"]
    gone = match_to_workload(read(pod("a", total="3", phase="Failed", **fast)), plan.workload, 0.0)
    assert gone.absent == 1  # one missing Pod is all fast admission counts for a role with none running


def test_admission_ungates_each_gated_pod_with_its_roles_injection() -> None:
    ms = [pod("leader", "1", total="3", t=0), pod("w1", "2", total="3", t=1), pod("w2", "2", total="3", t=2)]
    leader_role, worker_role = role_hash(ms[0]["spec"]), role_hash(ms[1]["spec"])
    infos = [PodSetInfo(leader_role, 1, {"flavor": "small"}), PodSetInfo(worker_role, 2, {"flavor": "big"})]
    changed, error = ungate_group(ms, infos)
    assert error is None
    assert [(m["metadata"]["name"], m["spec"]["nodeSelector"]) for m in changed] == [
        ("leader", {"flavor": "small"}), ("w1", {"flavor": "big"}), ("w2", {"flavor": "big"})]
    assert all("schedulingGates" not in m["spec"] for m in changed)
    assert all("schedulingGates" in m["spec"] for m in ms)  # the inputs stay as they were
    again, error = ungate_group(changed, infos)
    assert again == [] and error is None


def test_admission_ungates_no_more_pods_of_a_role_than_its_count() -> None:
    ms = [pod("a", t=0, gated=False, phase="Running"), pod("b", t=1), pod("c", t=2)]
    changed, error = ungate_group(ms, [PodSetInfo(role_hash(ms[0]["spec"]), 2, {"f": "x"})])
    assert error is None and [m["metadata"]["name"] for m in changed] == ["b"]


def test_a_pod_whose_role_the_admission_lacks_is_an_error_naming_it() -> None:
    changed, error = ungate_group([pod("a")], [PodSetInfo("other", 1)])
    assert changed == [] and error is not None and 'Pod "ns/a"' in error and "\n" not in error


def test_the_group_finishes_when_total_pods_succeeded() -> None:
    a, b = pod("a", t=0, phase="Succeeded"), pod("b", t=1, phase="Running", gated=False)
    assert group_finished(read(a, b)) is None
    assert reclaimable_pods(read(a, b)) == {role_hash(a["spec"]): 1}
    b["status"]["phase"] = "Succeeded"
    assert group_finished(read(a, b)) == ("succeeded", "Pods succeeded: 2/2.")


def test_a_failed_pod_waits_for_its_replacement_unless_the_group_is_unretriable() -> None:
    a, b = pod("a", t=0, phase="Succeeded"), pod("b", t=1, phase="Failed")
    assert group_finished(read(a, b)) is None
    b["metadata"]["annotations"]["kueue.x-k8s.io/retriable-in-group"] = "false"
    # Kueue reports an ended unretriable group as finished successfully, counting what succeeded.
    assert group_finished(read(a, b)) == ("succeeded", "Pods succeeded: 1/2.")
    serving = [pod("a", phase="Succeeded", **{"kueue.x-k8s.io/pod-group-serving": "true"}),
               pod("b", t=1, phase="Succeeded", **{"kueue.x-k8s.io/pod-group-serving": "true"})]
    assert group_finished(read(*serving)) is None and reclaimable_pods(read(*serving)) == {}


def test_a_replacement_takes_the_failed_pods_place() -> None:
    a, b = pod("a", t=0, gated=False, phase="Running"), pod("b", t=1, gated=False, phase="Failed")
    wl = compose_group(read(pod("a", t=0), pod("b", t=1))).workload
    assert wl is not None
    waiting = match_to_workload(read(a, b), wl, now=100.0)
    assert waiting.absent == 1 and waiting.to_finalize == [] and waiting.equivalent
    assert [p.meta.name for p in waiting.kept] == ["a", "b"]
    replacement = pod("b2", t=2)
    replaced = match_to_workload(read(a, b, replacement), wl, now=100.0)
    assert replaced.absent == 0 and replaced.equivalent
    assert [p.meta.name for p in replaced.to_finalize] == ["b"]
    assert [p.meta.name for p in replaced.kept] == ["a", "b2"]
    changed, error = ungate_group([a, replacement], [PodSetInfo(wl.pod_sets[0].name, 2, {"f": "x"})])
    assert error is None and [m["metadata"]["name"] for m in changed] == ["b2"]


def test_waiting_for_replacement_pods_condition() -> None:
    wl = compose_group(read(pod("a", t=0), pod("b", t=1))).workload
    assert wl is not None
    assert waiting_for_replacement(0, wl) is None  # never set, nothing to clear
    assert waiting_for_replacement(1, wl) == ("True", "PodsFailed", "Some Failed pods need replacement")
    wl.status.conditions = [Condition("Evicted", "True", "Preempted", "Preempted by a higher priority", 1.0)]
    assert waiting_for_replacement(2, wl) == ("True", "Preempted", "Preempted by a higher priority")
    wl.status.conditions = [Condition("WaitingForReplacementPods", "True", "Preempted", "was evicted", 1.0)]
    assert waiting_for_replacement(1, wl) == ("True", "Preempted", "was evicted")
    assert waiting_for_replacement(0, wl) == ("False", "PodsReady", "No pods need replacement")


def test_extra_pods_and_new_roles_after_the_workload() -> None:
    wl = compose_group(read(pod("a", t=0), pod("b", t=1))).workload
    assert wl is not None
    extra = match_to_workload(read(pod("a", t=0, gated=False), pod("b", t=1, gated=False), pod("c", t=2)), wl, 0.0)
    assert [p.meta.name for p in extra.to_delete] == ["c"] and extra.equivalent
    other = match_to_workload(read(pod("a", t=0), pod("b", t=1, cpu="5")), wl, 0.0)
    assert other.absent == 1 and other.equivalent  # b's role is not the Workload's: it is not kept
    renamed = match_to_workload(read(pod("a", t=0, group="h"), pod("b", t=1, group="h")), wl, 0.0)
    assert not renamed.equivalent


def test_ready_suspended_and_stopped() -> None:
    a, b = pod("a", t=0, gated=False), pod("b", t=1, gated=False)
    for m in (a, b):
        m["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    assert group_pods_ready(read(a, b)) and not group_suspended(read(a, b))
    assert not group_pods_ready(read(a))  # one of two
    assert group_suspended(read(a, pod("c", t=2)))
    assert [p.meta.name for p in pods_to_stop(read(a, b, pod("c", t=2)))] == ["a", "b"]


# --- any group: accepted with counts summing to the total, waiting, or refused in one line -------------

def _mostly(good: list[Any], bad: list[Any]) -> st.SearchStrategy[Any]:
    """Good values thirty times as often as each bad one, so that whole groups get through as often as they fail."""
    return st.sampled_from(good * (30 * len(bad)) + bad)


_member = st.fixed_dictionaries({
    "name": st.sampled_from(["a", "b", "c"]),
    "total": _mostly([None], ["1", "4", "0", "-2", "x", "", "99999999999999999999", "+3"]),  # None: the group's
    "cpu": _mostly(["1", "2", "3", "1000m"], ["lots"]),
    "queue": _mostly(["lq"], ["other"]),
    "group": _mostly(["g"], ["Bad_Name", ""]),
    "phase": st.sampled_from(["", "", "Running", "Succeeded", "Failed"]),
    "gated": st.booleans(),
    "deleting": _mostly([False], [True]),
    "role": _mostly([None], ["r1", "R!"]),
    "fast": _mostly([False], [True]),
})


def _manifest(i: int, spec: dict[str, Any], total: str) -> dict[str, Any]:
    m = pod(f"{spec['name']}{i}", cpu="1", total=spec["total"] or total, t=float(i), queue=spec["queue"], group=spec["group"],
            phase=spec["phase"], gated=spec["gated"])
    m["spec"]["containers"][0]["resources"]["requests"]["cpu"] = spec["cpu"]
    if not spec["group"]:
        del m["metadata"]["labels"][GROUP]
    if spec["role"] is not None:
        m["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"] = spec["role"]
    if spec["fast"]:
        m["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-fast-admission"] = "true"
    if spec["deleting"]:
        m["metadata"]["deletionTimestamp"] = format_time(50.0)
    return m


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(["1", "2", "3", "5"]), st.lists(_member, min_size=1, max_size=7))
def test_any_group_is_accepted_summing_to_its_total_waits_or_is_refused_naming_a_pod_and_field(
        total: str, members: list[dict[str, Any]]) -> None:
    manifests = [_manifest(i, spec, total) for i, spec in enumerate(members)]
    pods: list[Pod] = []
    for m in manifests:
        try:
            pods.append(read_pod(m))
        except ValidationError as exc:  # a Pod that does not read is refused on its own, in one line
            assert str(exc).startswith(f'Pod "ns/{m["metadata"]["name"]}" is invalid: spec.') and "\n" not in str(exc)
    plan = compose_group(pods)
    names = {p.meta.name for p in pods}
    if plan.error is not None:
        text = str(plan.error)
        assert "\n" not in text and plan.workload is None
        (error,) = plan.error.errors
        assert plan.error.name in names and error.path.startswith("metadata.")
        return
    if plan.workload is None:
        assert plan.waiting
        return
    alive = [p for p in pods if p.phase != "Failed"] or pods
    first = min(alive, key=lambda p: (p.meta.creation_timestamp or 0.0, p.meta.name))
    total = int(first.meta.annotations[COUNT])
    assert sum(ps.count for ps in plan.workload.pod_sets) == total
    # Kueue's Workload webhook takes it (pod-set names, counts, templates).
    parse_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                  "metadata": {"name": plan.workload.meta.name, "namespace": "ns"},
                  "spec": workload_spec_to_dict(plan.workload)})
    owners = [r["name"] for r in plan.workload.meta.owner_references]
    assert not set(owners) & {p.meta.name for p in plan.to_delete + plan.to_finalize}
    matched = match_to_workload([p for p in pods if p.meta.name in owners], plan.workload, 0.0)
    assert matched.equivalent and not matched.to_delete and not matched.to_finalize and matched.absent == 0
    infos = [PodSetInfo(ps.name, ps.count, {"f": "x"}) for ps in plan.workload.pod_sets]
    kept = [m for m in manifests if m["metadata"]["name"] in owners]
    changed, problem = ungate_group(kept, infos)
    assert problem is None
    assert len(changed) <= total
