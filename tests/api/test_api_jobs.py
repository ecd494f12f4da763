"""batch/v1 Job -> Workload, named and shaped as Kueue's job reconciler makes it."""

from __future__ import annotations

import hashlib
from typing import Any

from hub.api.jobs import workload_for_job, workload_name_for_job
from hub.api.others import Job
from hub.api.registry import parse_object


def job(name: str = "sample", uid: str = "1234-abcd", labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None, **spec: Any) -> Job:
    template = spec.pop("template", None) or {
        "metadata": {"labels": {"app": "x", "controller-uid": "u", "job-name": name,
                                "batch.kubernetes.io/job-name": name, "batch.kubernetes.io/controller-uid": "u"}},
        "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "2"}}}],
                 "restartPolicy": "Never"},
    }
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "team", "uid": uid,
                     "labels": {"kueue.x-k8s.io/queue-name": "lq", **(labels or {})},
                     "annotations": annotations or {}},
        "spec": {"template": template, **spec},
    }
    obj = parse_object(manifest)
    assert isinstance(obj, Job)
    return obj


def kueue_hash(name: str, uid: str) -> str:
    return hashlib.sha1(f"Job\nbatch\n{name}\n{uid}".encode()).hexdigest()[:5]


def test_workload_name_is_kind_name_and_five_hex_of_the_owner_hash() -> None:
    assert workload_name_for_job("sample", "1234-abcd") == f"job-sample-{kueue_hash('sample', '1234-abcd')}"


def test_workload_name_differs_per_uid() -> None:
    assert workload_name_for_job("sample", "a") != workload_name_for_job("sample", "b")


def test_long_job_names_are_truncated_to_253_characters() -> None:
    name = "j" * 300
    wl_name = workload_name_for_job(name, "u")
    assert len(wl_name) == 253
    assert wl_name == ("job-" + name)[:247] + "-" + kueue_hash(name, "u")


def test_one_main_pod_set_counting_min_of_parallelism_and_completions() -> None:
    wl = workload_for_job(job(parallelism=4, completions=3))
    assert [(ps.name, ps.count) for ps in wl.pod_sets] == [("main", 3)]
    assert workload_for_job(job(parallelism=2, completions=10)).pod_sets[0].count == 2
    assert workload_for_job(job()).pod_sets[0].count == 1


def test_queue_name_comes_from_the_label() -> None:
    assert workload_for_job(job()).queue_name == "lq"


def test_job_controller_labels_are_dropped_from_the_template() -> None:
    wl = workload_for_job(job())
    assert wl.pod_sets[0].template["metadata"]["labels"] == {"app": "x"}


def test_template_requests_are_parsed() -> None:
    assert dict(workload_for_job(job(parallelism=2)).pod_sets[0].spec.per_pod_requests) == {"cpu": 2000}


def test_min_parallelism_annotation_sets_min_count() -> None:
    wl = workload_for_job(job(parallelism=5, annotations={"kueue.x-k8s.io/job-min-parallelism": "2"}))
    assert wl.pod_sets[0].min_count == 2


def test_workload_priority_class_label_wins_over_pod_priority_class() -> None:
    template = {"spec": {"priorityClassName": "pod-high", "containers": [{"name": "c"}]}}
    wl = workload_for_job(job(labels={"kueue.x-k8s.io/priority-class": "wpc-low"}, template=template))
    ref = wl.priority_class_ref
    assert ref is not None and (ref.group, ref.kind, ref.name) == ("kueue.x-k8s.io", "WorkloadPriorityClass", "wpc-low")


def test_pod_priority_class_is_used_without_the_label() -> None:
    template = {"spec": {"priorityClassName": "pod-high", "containers": [{"name": "c"}]}}
    ref = workload_for_job(job(template=template)).priority_class_ref
    assert ref is not None and (ref.group, ref.kind, ref.name) == ("scheduling.k8s.io", "PriorityClass", "pod-high")


def test_no_priority_class_at_all() -> None:
    assert workload_for_job(job()).priority_class_ref is None


def test_max_execution_time_label() -> None:
    wl = workload_for_job(job(labels={"kueue.x-k8s.io/max-exec-time-seconds": "600"}))
    assert wl.maximum_execution_time_seconds == 600


def test_owner_reference_and_job_uid_label() -> None:
    wl = workload_for_job(job(uid="u-1"))
    assert wl.meta.labels == {"kueue.x-k8s.io/job-uid": "u-1"}
    [owner] = wl.meta.owner_references
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("Job", "sample", "u-1", True)
    assert wl.meta.namespace == "team"


def test_topology_annotations_become_the_pod_sets_topology_request_as_kueue_builds_it() -> None:
    from hub.api.jobkinds.framework import topology_request

    def req(**annotations: str) -> Any:
        return topology_request({"metadata": {"annotations": {f"kueue.x-k8s.io/podset-{k.replace('_', '-')}": v
                                                              for k, v in annotations.items()}}}, "idx")

    assert req() is None
    assert req(preferred_topology="block") == {"preferred": "block", "podIndexLabel": "idx"}
    assert req(required_topology="rack", preferred_topology="block") == {"required": "rack", "podIndexLabel": "idx"}
    assert req(unconstrained_topology="true") == {"unconstrained": True, "podIndexLabel": "idx"}
    assert req(unconstrained_topology="true", group_name="g") == {"unconstrained": True, "podIndexLabel": "idx"}
    assert req(slice_required_topology="rack", slice_size="4") == {
        "podSetSliceRequiredTopology": "rack", "podSetSliceSize": 4, "podIndexLabel": "idx"}
    assert req(slice_required_topology="rack") is None  # a slice needs its size
    annotated = job(template={"metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": "rack"}},
                              "spec": {"containers": [{"name": "c", "image": "pause"}], "restartPolicy": "Never"}})
    assert workload_for_job(annotated).pod_sets[0].topology_request == {
        "required": "rack", "podIndexLabel": "batch.kubernetes.io/job-completion-index"}


def test_a_workloads_topology_request_is_kept_through_parse_and_write() -> None:
    from hub.api.workload import Workload, workload_spec_to_dict

    manifest = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
                "metadata": {"name": "w", "namespace": "team"},
                "spec": {"queueName": "lq", "podSets": [{
                    "name": "main", "count": 2, "topologyRequest": {"required": "rack"},
                    "template": {"spec": {"containers": [{"name": "c", "image": "pause"}]}}}]}}
    wl = parse_object(manifest)
    assert isinstance(wl, Workload)
    assert workload_spec_to_dict(wl)["podSets"][0]["topologyRequest"] == {"required": "rack"}



def test_a_simulated_job_completes_with_all_its_completions_succeeded() -> None:
    """A Job with three completions run one at a time ends with succeeded 3 (Kueue's Python sample);
    without completions, with as many as ran."""
    from hub.api.jobkinds import BATCH_JOB
    from hub.api.meta import Condition

    for spec, succeeded in (({"parallelism": 1, "completions": 3}, 3), ({"parallelism": 2}, 2)):
        sample = job(**spec)
        wl = workload_for_job(sample)
        wl.status.conditions = [Condition("Admitted", "True", "Admitted", "", 1.0),
                                Condition("Finished", "True", "Succeeded", "done", 2.0)]
        assert BATCH_JOB.simulated_status(wl, sample, None, None)["succeeded"] == succeeded
