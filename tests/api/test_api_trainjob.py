"""Kubeflow Trainer v2: TrainJob and its runtimes read and checked, and the TrainJob on the job
framework as Kueue's TrainJob integration has it (pod sets of the runtime's JobSet with the
TrainJob's overrides, the admission in Kueue's runtime patch)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub.api.errors import ValidationError
from hub.api.jobkinds import ADAPTERS
from hub.api.jobkinds.framework import PodSetInfo, workload_for
from hub.api.jobkinds.trainjob import TRAINJOB
from hub.api.registry import parse_object, validate_update
from hub.api.trainjob_kind import TrainingRuntime, TrainJob, child_jobset_spec
from tests.hypothesis_budget import examples

SHAPED = Path(__file__).resolve().parents[2] / "e2e" / "kueue-shaped"


def docs(name: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((SHAPED / name).read_text()))


def parsed(m: dict[str, Any]) -> Any:
    return parse_object(copy.deepcopy(m), default_namespace="default")


def resolved(job: TrainJob, *runtimes: TrainingRuntime) -> TrainJob:
    by_key = {(r.kind, r.meta.namespace, r.meta.name): r for r in runtimes}
    out = TRAINJOB.resolve(job, lambda kind, ns, name: by_key.get((kind, ns, name)))
    assert out is not None
    return out


def test_kueues_docs_cluster_runtime_gives_one_pod_set_of_num_nodes_with_the_trainjobs_resources() -> None:
    runtime_m, job_m = docs("trainjob-cluster-runtime.yaml")
    runtime, job = parsed(runtime_m), parsed(job_m)
    assert isinstance(runtime, TrainingRuntime) and runtime.kind == "ClusterTrainingRuntime" and runtime.num_nodes == 1
    assert isinstance(job, TrainJob) and job.runtime_key == ("ClusterTrainingRuntime", "", "torch-distributed")
    assert TRAINJOB.pod_sets(job) == []  # the runtime is not known yet
    wl = workload_for(TRAINJOB, resolved(job, runtime))
    (ps,) = wl.pod_sets
    assert (ps.name, ps.count) == ("node", 2)
    container = ps.template["spec"]["containers"][0]
    assert container["resources"] == {"requests": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}}
    assert wl.meta.name.startswith("trainjob-pytorch-distributed-")


def test_a_namespaced_runtime_is_looked_up_in_the_trainjobs_namespace() -> None:
    runtime_m, job_m = docs("trainjob-namespaced-runtime.yaml")
    runtime, job = parsed(runtime_m), parsed(job_m)
    assert job.runtime_key == ("TrainingRuntime", "team-a", "torch-custom")
    assert TRAINJOB.resolve(job, lambda *key: None) is None
    (ps,) = TRAINJOB.pod_sets(resolved(job, runtime))
    # The Trainer's settings go to the container named "node"; this runtime's is "trainer".
    assert ps.count == 1 and ps.template["spec"]["containers"][0]["image"].startswith("pytorch/")


def test_num_nodes_falls_back_to_the_runtimes_ml_policy_and_other_steps_keep_their_own_count() -> None:
    runtime_m, job_m = docs("trainjob-cluster-runtime.yaml")
    runtime_m["spec"]["mlPolicy"]["numNodes"] = 3
    runtime_m["spec"]["template"]["spec"]["replicatedJobs"].insert(0, {"name": "dataset-initializer", "template": {
        "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"}},
        "spec": {"template": {"spec": {"containers": [{"name": "dataset-initializer", "image": "x"}]}}}}})
    del job_m["spec"]["trainer"]["numNodes"]
    pod_sets = TRAINJOB.pod_sets(resolved(parsed(job_m), parsed(runtime_m)))
    assert [(ps.name, ps.count) for ps in pod_sets] == [("dataset-initializer", 1), ("node", 3)]


def test_the_admission_goes_into_kueues_runtime_patch_and_a_restore_empties_it() -> None:
    runtime_m, job_m = docs("trainjob-cluster-runtime.yaml")
    job = resolved(parsed(job_m), parsed(runtime_m))
    m = TRAINJOB.manifest(job)
    TRAINJOB.suspend(m)
    toleration = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    TRAINJOB.run_with_pod_sets_info(m, [PodSetInfo("node", 2, {"pool": "gpu"}, [toleration])], TRAINJOB.pod_sets(job))
    assert m["spec"]["suspend"] is False
    (patch,) = m["spec"]["runtimePatches"]
    assert patch == {"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": "node", "template": {"spec": {"template": {"spec": {"nodeSelector": {"pool": "gpu"},
                                                                     "tolerations": [toleration]}}}}}]}}}}
    pod = child_jobset_spec(m["spec"], runtime_m["spec"])["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod["spec"]["nodeSelector"] == {"pool": "gpu"} and pod["spec"]["tolerations"] == [toleration]
    TRAINJOB.suspend(m)
    TRAINJOB.restore_pod_sets_info(m, TRAINJOB.pod_sets(job))
    assert m["spec"]["runtimePatches"] == [
        {"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": {"template": {"spec": {}}}}]


def test_pods_ready_counts_the_jobsets_replicas() -> None:
    runtime_m, job_m = docs("trainjob-cluster-runtime.yaml")
    job_m["status"] = {"jobsStatus": [{"name": "node", "ready": 0, "active": 1}]}
    assert not TRAINJOB.pods_ready(resolved(parsed(job_m), parsed(runtime_m)))
    job_m["status"] = {"jobsStatus": [{"name": "node", "ready": 1, "active": 1}]}
    assert TRAINJOB.pods_ready(resolved(parsed(job_m), parsed(runtime_m)))
    assert TRAINJOB.pods_ready(parsed(job_m))  # the same answer without the runtime at hand


@pytest.mark.parametrize("change, field, reason", [
    (lambda s: s.pop("runtimeRef"), "spec.runtimeRef", "Required value"),
    (lambda s: s["runtimeRef"].pop("name"), "spec.runtimeRef.name", "Required value"),
    (lambda s: s["runtimeRef"].update(kind="Runtime"), "spec.runtimeRef.kind", "supported values"),
    (lambda s: s["runtimeRef"].update(apiGroup="example.com"), "spec.runtimeRef.apiGroup", "supported values"),
    (lambda s: s["trainer"].update(numNodes=0), "spec.trainer.numNodes", "greater than or equal to 1"),
    (lambda s: s["trainer"]["resourcesPerNode"]["requests"].update(cpu="lots"), "spec.trainer.resourcesPerNode.requests",
     "cpu"),
    (lambda s: s.update(managedBy="example.com/other"), "spec.managedBy", "supported values"),
])
def test_a_bad_trainjob_is_refused_naming_the_field(change: Any, field: str, reason: str) -> None:
    _, job_m = docs("trainjob-cluster-runtime.yaml")
    change(job_m["spec"])
    with pytest.raises(ValidationError) as exc:
        parsed(job_m)
    text = str(exc.value)
    assert "TrainJob" in text and field in text and reason in text and "\n" not in text, text


def test_a_runtime_whose_template_is_no_jobset_is_refused_naming_the_field() -> None:
    runtime_m, _ = docs("trainjob-cluster-runtime.yaml")
    runtime_m["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = -1
    with pytest.raises(ValidationError, match=r"spec\.template\.spec\.replicatedJobs\[0\]\.replicas"):
        parsed(runtime_m)
    del runtime_m["spec"]["template"]
    with pytest.raises(ValidationError, match=r"spec\.template\.spec\.replicatedJobs: Required value"):
        parsed(runtime_m)


def test_managed_by_and_runtime_ref_are_immutable() -> None:
    _, job_m = docs("trainjob-cluster-runtime.yaml")
    other = copy.deepcopy(job_m)
    other["spec"]["runtimeRef"]["name"] = "other"
    with pytest.raises(ValidationError, match="spec.runtimeRef"):
        validate_update(parsed(job_m), parsed(other))
    other = copy.deepcopy(job_m)
    other["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    with pytest.raises(ValidationError, match="spec.managedBy"):
        validate_update(parsed(job_m), parsed(other))


def test_the_adapter_is_registered_under_kueues_framework_name() -> None:
    assert ADAPTERS["trainer.kubeflow.org/trainjob"] is TRAINJOB


_ANY = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3), st.just([]), st.just({}))


def _maybe(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(s, _ANY)


_SPECS = st.fixed_dictionaries({}, optional={
    "runtimeRef": _maybe(st.fixed_dictionaries({}, optional={"name": _maybe(st.just("rt")), "kind": _ANY,
                                                             "apiGroup": _ANY})),
    "trainer": _maybe(st.fixed_dictionaries({}, optional={"numNodes": _ANY, "image": _ANY, "env": _ANY,
                                                          "resourcesPerNode": _maybe(st.just({"requests": {"cpu": "1"}}))})),
    "suspend": _ANY, "managedBy": _ANY,
    "runtimePatches": _maybe(st.lists(_maybe(st.fixed_dictionaries({}, optional={"manager": _ANY})), max_size=2)),
})


@settings(max_examples=examples(300), derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=_maybe(_SPECS), status=_maybe(st.fixed_dictionaries({}, optional={"conditions": _ANY, "jobsStatus": _ANY})))
def test_generated_trainjobs_are_parsed_or_refused_with_a_field_path(spec: Any, status: Any) -> None:
    manifest = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                "metadata": {"name": "tj", "namespace": "team"}, "spec": spec, "status": status}
    try:
        parse_object(manifest)
    except ValidationError as exc:
        assert exc.errors and "\n" not in str(exc)
        for err in exc.errors:
            assert err.path.split(".")[0].split("[")[0] in ("spec", "status", "metadata"), err
