"""Kubeflow Training v1 jobs (hub.api.kubeflow_kind and the adapter hub.api.jobkinds.kubeflow): Kueue's
samples parse to Kueue's pod sets, the training operator's webhook refuses bad shapes with a field
path, and generated manifests are parsed or refused, never a traceback."""

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
from hub.api.jobkinds import ADAPTERS
from hub.api.jobkinds.framework import PodSetInfo, workload_for
from hub.api.kubeflow_kind import FAMILY, KubeflowJob
from hub.api.registry import parse_object, validate_update
from tests.hypothesis_budget import examples

EXAMPLES = Path(__file__).resolve().parents[2] / "e2e" / "kueue-examples"
SAMPLES = {"PyTorchJob": "sample-pytorchjob.yaml", "TFJob": "sample-tfjob.yaml", "XGBoostJob": "sample-xgboostjob.yaml",
           "PaddleJob": "sample-paddlejob.yaml", "JAXJob": "sample-jaxjob.yaml"}


def sample(kind: str) -> dict[str, Any]:
    return yaml.safe_load((EXAMPLES / SAMPLES[kind]).read_text())  # type: ignore[no-any-return]


def parsed(m: dict[str, Any]) -> KubeflowJob:
    obj = parse_object(copy.deepcopy(m))
    assert isinstance(obj, KubeflowJob)
    return obj


def refusal(m: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as exc:
        parse_object(copy.deepcopy(m))
    assert "\n" not in str(exc.value)
    return str(exc.value)


@pytest.mark.parametrize(("kind", "pod_sets"), [
    ("PyTorchJob", [("master", 1), ("worker", 1)]),
    ("TFJob", [("ps", 1), ("worker", 2)]),
    ("XGBoostJob", [("master", 1), ("worker", 2)]),
    ("PaddleJob", [("worker", 2)]),
    ("JAXJob", [("worker", 2)]),
])
def test_kueues_samples_are_kueues_pod_sets(kind: str, pod_sets: list[tuple[str, int]]) -> None:
    job = parsed(sample(kind))
    adapter = ADAPTERS[FAMILY[kind].framework]
    wl = workload_for(adapter, job)
    assert [(ps.name, ps.count) for ps in wl.pod_sets] == pod_sets
    assert wl.queue_name == "user-queue" and not job.suspend and job.managed_by == ""
    assert all(ps.spec.containers and dict(ps.spec.per_pod_requests)["cpu"] for ps in wl.pod_sets)


def test_pod_sets_follow_kueues_replica_order_not_the_manifests() -> None:
    m = sample("TFJob")
    specs = m["spec"]["tfReplicaSpecs"]
    m["spec"]["tfReplicaSpecs"] = {"Evaluator": copy.deepcopy(specs["PS"]), "Worker": specs["Worker"],
                                   "PS": specs["PS"], "Chief": copy.deepcopy(specs["PS"])}
    adapter = ADAPTERS["kubeflow.org/tfjob"]
    assert [ps.name for ps in adapter.pod_sets(parsed(m))] == ["chief", "ps", "worker", "evaluator"]
    # The admission goes to the template of the same replica type, whatever the manifest's order.
    infos = [PodSetInfo(name, 1, {"flavor": name}) for name in ("chief", "ps", "worker", "evaluator")]
    adapter.run_with_pod_sets_info(m, infos, adapter.pod_sets(parsed(m)))
    for type_, rs in m["spec"]["tfReplicaSpecs"].items():
        assert rs["template"]["spec"]["nodeSelector"] == {"flavor": type_.lower()}
    assert m["spec"]["runPolicy"] == {"suspend": False}


def test_run_policy_priority_class_comes_first() -> None:
    m = sample("PyTorchJob")
    m["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = "worker-pc"
    adapter = ADAPTERS["kubeflow.org/pytorchjob"]
    assert adapter.pod_spec_priority_class(parsed(m)) == "worker-pc"
    m["spec"]["runPolicy"] = {"schedulingPolicy": {"priorityClass": "run-pc"}}
    assert adapter.pod_spec_priority_class(parsed(m)) == "run-pc"


@pytest.mark.parametrize(("kind", "change", "expected"), [
    ("PyTorchJob", lambda s: s.pop("pytorchReplicaSpecs"), "spec.pytorchReplicaSpecs: Required value"),
    ("PyTorchJob", lambda s: s.update(pytorchReplicaSpecs={}), "spec.pytorchReplicaSpecs: Required value"),
    ("PyTorchJob", lambda s: s["pytorchReplicaSpecs"].update(Launcher=s["pytorchReplicaSpecs"]["Worker"]),
     'spec.pytorchReplicaSpecs[Launcher]: Unsupported value: "Launcher": supported values: "Master", "Worker"'),
    ("PyTorchJob", lambda s: s["pytorchReplicaSpecs"]["Worker"].update(replicas=-1),
     "spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: -1"),
    ("PyTorchJob", lambda s: s["pytorchReplicaSpecs"]["Master"].update(replicas=2),
     "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"),
    ("PyTorchJob", lambda s: s["pytorchReplicaSpecs"]["Worker"].pop("template"),
     "spec.pytorchReplicaSpecs[Worker].template.spec.containers: Required value: must be specified"),
    ("PyTorchJob", lambda s: s["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(name="x"),
     "spec.pytorchReplicaSpecs[Worker].template.spec.containers: Required value: must have at least one container "
     "with name pytorch"),
    ("JAXJob", lambda s: s["jaxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].pop("image"),
     "spec.jaxReplicaSpecs[Worker].template.spec.containers[0].image: Required value"),
    ("JAXJob", lambda s: s["jaxReplicaSpecs"].update(Worker="w"), "spec.jaxReplicaSpecs[Worker]: Invalid value"),
    ("XGBoostJob", lambda s: s["xgbReplicaSpecs"].pop("Master"), "spec.xgbReplicaSpecs[Master]: Required value"),
    ("TFJob", lambda s: s["tfReplicaSpecs"].update(Chief=s["tfReplicaSpecs"]["PS"], Master=s["tfReplicaSpecs"]["PS"]),
     "spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"),
    ("PaddleJob", lambda s: s["paddleReplicaSpecs"]["Worker"].update(restartPolicy="Sometimes"),
     "spec.paddleReplicaSpecs[Worker].restartPolicy: Invalid value"),
    ("PaddleJob", lambda s: s.update(runPolicy={"managedBy": "example.com/other"}),
     'spec.runPolicy.managedBy: Unsupported value: "example.com/other"'),
    ("PaddleJob", lambda s: s.update(runPolicy={"suspend": "yes"}), "spec.runPolicy.suspend: Invalid value"),
    ("PyTorchJob", lambda s: s["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"]
     .update(requests={"cpu": "lots"}), "spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].resources"),
])
def test_bad_shapes_are_refused_naming_the_field(kind: str, change: Any, expected: str) -> None:
    m = sample(kind)
    change(m["spec"])
    message = refusal(m)
    assert message.startswith(f'{kind} "default/') and expected in message, message


def test_the_name_must_be_a_dns_1035_label() -> None:
    m = sample("PyTorchJob")
    m["metadata"]["name"] = "1-pytorch"
    assert 'metadata.name: Invalid value: "1-pytorch": should match: a DNS-1035 label' in refusal(m)


def test_managed_by_is_immutable_and_multikueues_is_accepted() -> None:
    old = sample("PyTorchJob")
    new = copy.deepcopy(old)
    new["spec"]["runPolicy"] = {"managedBy": "kueue.x-k8s.io/multikueue"}
    assert parsed(new).managed_by == "kueue.x-k8s.io/multikueue"
    with pytest.raises(ValidationError, match=r"spec.runPolicy.managedBy: Invalid value: .*field is immutable"):
        validate_update(parsed(old), parsed(new))
    validate_update(parsed(new), parsed(new))


def test_status_conditions_say_finished_and_ready() -> None:
    m = sample("XGBoostJob")
    adapter = ADAPTERS["kubeflow.org/xgboostjob"]
    m["status"] = {"conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}],
                   "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 2}}}
    assert adapter.pods_ready(parsed(m)) and adapter.finished(parsed(m)) is None
    m["status"]["conditions"] = [{"type": "Running", "status": "False"},
                                 {"type": "Failed", "status": "True", "message": "Master failed"}]
    assert adapter.finished(parsed(m)) == ("failed", "Master failed") and not adapter.pods_ready(parsed(m))


_ANY = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3), st.just({}), st.just([]))
_TYPES = st.sampled_from(["Master", "Worker", "PS", "Chief", "Evaluator", "Launcher", "worker", ""])


def _maybe(s: Any) -> Any:
    return st.one_of(s, _ANY)


_CONTAINER = st.fixed_dictionaries({}, optional={
    "name": _maybe(st.sampled_from(["pytorch", "tensorflow", "xgboost", "paddle", "jax", "other"])),
    "image": _maybe(st.just("img")),
    "resources": _maybe(st.fixed_dictionaries({}, optional={"requests": _maybe(st.fixed_dictionaries(
        {}, optional={"cpu": _maybe(st.sampled_from(["1", "500m", "x", "-1"]))}))})),
})
_REPLICA = st.fixed_dictionaries({}, optional={
    "replicas": _maybe(st.integers(-2, 2**31)),
    "restartPolicy": _maybe(st.sampled_from(["Never", "OnFailure", "ExitCode", "Always", "Later"])),
    "template": _maybe(st.fixed_dictionaries({}, optional={
        "metadata": _maybe(st.fixed_dictionaries({}, optional={"labels": _ANY, "annotations": _ANY})),
        "spec": _maybe(st.fixed_dictionaries({}, optional={"containers": _maybe(st.lists(_maybe(_CONTAINER), max_size=2)),
                                                           "priorityClassName": _ANY}))})),
})


@settings(max_examples=examples(300), derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(FAMILY)), replicas=_maybe(st.dictionaries(_TYPES, _maybe(_REPLICA), max_size=3)),
       run_policy=_maybe(st.fixed_dictionaries({}, optional={
           "suspend": _ANY, "managedBy": _maybe(st.sampled_from(["kueue.x-k8s.io/multikueue", "x/y"])),
           "schedulingPolicy": _maybe(st.fixed_dictionaries({}, optional={"priorityClass": _ANY}))})),
       status=_maybe(st.fixed_dictionaries({}, optional={"conditions": _ANY, "replicaStatuses": _maybe(
           st.dictionaries(_TYPES, _maybe(st.fixed_dictionaries({}, optional={"active": _ANY}))))})))
def test_generated_manifests_are_parsed_or_refused_with_a_field_path(kind: str, replicas: Any, run_policy: Any,
                                                                   status: Any) -> None:
    family = FAMILY[kind]
    manifest = {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": "job", "namespace": "team"},
                "spec": {family.replica_field: replicas, "runPolicy": run_policy}, "status": status}
    try:
        job = parse_object(manifest)
    except ValidationError as exc:
        assert exc.errors and "\n" not in str(exc)
        for err in exc.errors:
            assert err.path.split(".")[0].split("[")[0] in ("spec", "status", "metadata"), err
        return
    assert isinstance(job, KubeflowJob)
    pod_sets = ADAPTERS[family.framework].pod_sets(job)
    assert [ps.name for ps in pod_sets] == [t.lower() for t in family.replica_types if t in replicas]
    assert all(ps.count >= 0 and ps.spec.containers for ps in pod_sets)


def test_the_samples_are_kueues_unchanged() -> None:
    mirror = Path("/work/.mirror/kubernetes-sigs+kueue/repo")
    if not mirror.exists():
        pytest.skip("no Kueue mirror here")
    for name in SAMPLES.values():
        theirs = subprocess.run(["git", "-C", str(mirror), "show", f"HEAD:site/static/examples/jobs/{name}"],
                                capture_output=True, text=True, check=True).stdout
        assert (EXAMPLES / name).read_text() == theirs, name
