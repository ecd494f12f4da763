"""MPIJob (kubeflow.org/v2beta1): read with the MPI operator's defaults, refused as the operator
refuses it (one line per field), and on the job framework as Kueue's MPIJob integration is."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub.api.errors import ValidationError
from hub.api.jobkinds import ADAPTERS, adapter_for
from hub.api.jobkinds.framework import PodSetInfo, workload_for
from hub.api.jobkinds.mpijob import MPIJOB
from hub.api.mpijob_kind import MPIJob
from hub.api.registry import parse_object, validate_update
from tests.hypothesis_budget import examples

SAMPLE = Path(__file__).resolve().parents[2] / "e2e" / "kueue-examples" / "sample-mpijob.yaml"


def container(cpu: str = "1") -> dict[str, Any]:
    return {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}


def mpijob(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"mpiReplicaSpecs": {
        "Launcher": {"replicas": 1, "template": {"spec": {"containers": [container()]}}},
        "Worker": {"replicas": 2, "template": {"spec": {"containers": [container("2")]}}},
    }}
    base.update(spec)
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
            "metadata": {"name": "pi", "namespace": "team", "uid": "u1", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": base}


def parsed(m: dict[str, Any]) -> MPIJob:
    obj = parse_object(copy.deepcopy(m))
    assert isinstance(obj, MPIJob)
    return obj


def refusal(m: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as exc:
        parse_object(copy.deepcopy(m))
    text = str(exc.value)
    assert "\n" not in text and "Traceback" not in text
    return text


def test_kueues_sample_is_read_with_the_operators_defaults() -> None:
    job = parse_object(yaml.safe_load(SAMPLE.read_text()), default_namespace="default")
    assert isinstance(job, MPIJob)
    assert [(r.type, r.count, r.restart_policy) for r in job.replica_specs] == [
        ("Launcher", 1, "OnFailure"), ("Worker", 2, "Never")]
    assert (job.suspend, job.managed_by, job.slots_per_worker, job.clean_pod_policy) == (False, "", 1, "Running")
    assert (job.mpi_implementation, job.launcher_creation_policy, job.queue_name) == ("OpenMPI", "AtStartup", "user-queue")


def test_pod_sets_are_launcher_then_worker_lower_cased_as_kueue_names_them() -> None:
    # Written Worker first: Kueue's orderedReplicaTypes puts the Launcher first all the same.
    m = mpijob()
    m["spec"]["mpiReplicaSpecs"] = dict(reversed(list(m["spec"]["mpiReplicaSpecs"].items())))
    wl = workload_for(MPIJOB, parsed(m))
    assert [(ps.name, ps.count) for ps in wl.pod_sets] == [("launcher", 1), ("worker", 2)]
    assert wl.meta.name.startswith("mpijob-pi-")
    assert wl.meta.owner_references[0]["kind"] == "MPIJob"


def test_replicas_unset_count_one_pod_and_a_launcher_alone_is_one_pod_set() -> None:
    m = mpijob()
    del m["spec"]["mpiReplicaSpecs"]["Worker"]
    del m["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"]
    assert [(ps.name, ps.count) for ps in MPIJOB.pod_sets(parsed(m))] == [("launcher", 1)]


def test_priority_class_from_the_run_policy_then_launcher_then_worker() -> None:
    m = mpijob()
    m["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = "worker-pc"
    assert MPIJOB.pod_spec_priority_class(parsed(m)) == "worker-pc"
    m["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["priorityClassName"] = "launcher-pc"
    assert MPIJOB.pod_spec_priority_class(parsed(m)) == "launcher-pc"
    m["spec"]["runPolicy"] = {"schedulingPolicy": {"priorityClass": "policy-pc"}}
    assert MPIJOB.pod_spec_priority_class(parsed(m)) == "policy-pc"


def test_suspend_and_managed_by_live_in_the_run_policy() -> None:
    m = mpijob(runPolicy={"suspend": True, "managedBy": "kueue.x-k8s.io/multikueue"})
    job = parsed(m)
    assert MPIJOB.is_suspended(job) and MPIJOB.managed_by(job) == "kueue.x-k8s.io/multikueue"
    out = MPIJOB.manifest(job)
    MPIJOB.run_with_pod_sets_info(out, [PodSetInfo("launcher", 1, {"f": "a"}), PodSetInfo("worker", 2, {"f": "b"})],
                                  MPIJOB.pod_sets(job))
    assert out["spec"]["runPolicy"]["suspend"] is False
    specs = out["spec"]["mpiReplicaSpecs"]
    assert specs["Launcher"]["template"]["spec"]["nodeSelector"] == {"f": "a"}
    assert specs["Worker"]["template"]["spec"]["nodeSelector"] == {"f": "b"}
    copy_ = MPIJOB.worker_copy(out)
    assert "managedBy" not in copy_["spec"]["runPolicy"] and copy_["spec"]["runPolicy"]["suspend"] is False


def test_finished_and_pods_ready_follow_the_operators_conditions() -> None:
    m = mpijob()
    m["status"] = {"conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}]}
    job = parsed(m)
    assert MPIJOB.pods_ready(job) and MPIJOB.finished(job) is None
    m["status"]["conditions"].append({"type": "Failed", "status": "True", "message": "launcher failed"})
    assert MPIJOB.finished(parsed(m)) == ("failed", "launcher failed")


@pytest.mark.parametrize("change, field, reason", [
    (lambda s: s["mpiReplicaSpecs"]["Launcher"].update(replicas=2), "spec.mpiReplicaSpecs[Launcher].replicas", "must be 1"),
    (lambda s: s["mpiReplicaSpecs"]["Worker"].update(replicas=0), "spec.mpiReplicaSpecs[Worker].replicas",
     "greater than or equal to 1"),
    (lambda s: s["mpiReplicaSpecs"].pop("Launcher"), "spec.mpiReplicaSpecs[Launcher]", "must have Launcher replica spec"),
    (lambda s: s["mpiReplicaSpecs"].update(Driver={}), "spec.mpiReplicaSpecs[Driver]", "supported values"),
    (lambda s: s["mpiReplicaSpecs"]["Worker"].update(restartPolicy="Always"), "spec.mpiReplicaSpecs[Worker].restartPolicy",
     "supported values"),
    (lambda s: s["mpiReplicaSpecs"]["Worker"]["template"]["spec"].update(containers=[]),
     "spec.mpiReplicaSpecs[Worker].template.spec.containers", "at least one container"),
    (lambda s: s.update(runPolicy={"cleanPodPolicy": "Sometimes"}), "spec.runPolicy.cleanPodPolicy", "supported values"),
    (lambda s: s.update(runPolicy={"managedBy": "example.com/other"}), "spec.runPolicy.managedBy", "supported values"),
    (lambda s: s.update(slotsPerWorker=-1), "spec.slotsPerWorker", "greater than or equal to 0"),
    (lambda s: s.update(mpiImplementation="LAM"), "spec.mpiImplementation", "supported values"),
    (lambda s: s.pop("mpiReplicaSpecs"), "spec.mpiReplicaSpecs", "must have replica specs"),
])
def test_a_bad_mpijob_is_refused_naming_the_field(change: Any, field: str, reason: str) -> None:
    m = mpijob()
    change(m["spec"])
    text = refusal(m)
    assert "MPIJob" in text and field in text and reason in text, text


def test_a_name_too_long_for_its_worker_pods_is_refused() -> None:
    m = mpijob()
    m["metadata"]["name"] = "n" * 55  # n...-worker-1 is 64 characters
    assert 'metadata.name' in refusal(m) and "invalid DNS label" in refusal(m)


def test_managed_by_is_immutable() -> None:
    old = mpijob(runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"})
    with pytest.raises(ValidationError, match="spec.runPolicy.managedBy"):
        validate_update(parsed(old), parsed(mpijob()))


def test_the_adapter_is_registered_under_kueues_framework_name() -> None:
    assert ADAPTERS["kubeflow.org/mpijob"] is MPIJOB
    assert adapter_for("kubeflow.org/v2beta1", "MPIJob") is MPIJOB


_ANY = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3), st.just([]), st.just({}))


def _maybe(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(s, _ANY)


_REPLICA = st.fixed_dictionaries({}, optional={
    "replicas": _maybe(st.integers(-2, 2**31)), "restartPolicy": _maybe(st.sampled_from(["Never", "OnFailure", "Always"])),
    "template": _maybe(st.just({"spec": {"containers": [container()]}})),
})
_SPECS = st.fixed_dictionaries({}, optional={
    "mpiReplicaSpecs": _maybe(st.dictionaries(st.sampled_from(["Launcher", "Worker", "Other"]), _maybe(_REPLICA),
                                              max_size=3)),
    "slotsPerWorker": _ANY, "runLauncherAsWorker": _ANY, "sshAuthMountPath": _ANY, "mpiImplementation": _ANY,
    "launcherCreationPolicy": _maybe(st.just("WaitForWorkersReady")),
    "runPolicy": _maybe(st.fixed_dictionaries({}, optional={
        "suspend": _ANY, "managedBy": _maybe(st.just("kueue.x-k8s.io/multikueue")), "cleanPodPolicy": _ANY,
        "schedulingPolicy": _maybe(st.fixed_dictionaries({}, optional={"priorityClass": _ANY}))})),
})
_STATUS = _maybe(st.fixed_dictionaries({}, optional={
    "conditions": _ANY, "replicaStatuses": _maybe(st.dictionaries(st.sampled_from(["Launcher", "Worker"]),
                                                                  _maybe(st.fixed_dictionaries({}, optional={"active": _ANY})))),
}))


@settings(max_examples=examples(300), derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=_maybe(_SPECS), status=_STATUS)
def test_generated_mpijobs_are_parsed_or_refused_with_a_field_path(spec: Any, status: Any) -> None:
    manifest = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                "metadata": {"name": "pi", "namespace": "team"}, "spec": spec, "status": status}
    try:
        job = parse_object(manifest)
    except ValidationError as exc:
        assert exc.errors and "\n" not in str(exc)
        for err in exc.errors:
            assert err.path.split(".")[0].split("[")[0] in ("spec", "status", "metadata"), err
        return
    assert isinstance(job, MPIJob)
    assert [ps.name for ps in MPIJOB.pod_sets(job)] in (["launcher"], ["launcher", "worker"])


def test_kueues_sample_is_the_published_file() -> None:
    repo = Path("/work/.mirror/kubernetes-sigs+kueue/repo")
    if not repo.exists():
        pytest.skip("no Kueue mirror here")
    published = subprocess.run(["git", "-C", str(repo), "show", "HEAD:site/static/examples/jobs/sample-mpijob.yaml"],
                               capture_output=True, text=True, check=True).stdout
    assert SAMPLE.read_text() == published
