"""KubeRay's RayCluster, RayJob and RayService: read, checked and turned into pod sets as Kueue does."""

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
from hub.api.jobkinds.framework import PodSetInfo
from hub.api.registry import parse_object, validate_update
from tests.hypothesis_budget import examples

EXAMPLES = Path(__file__).resolve().parents[2] / "e2e" / "kueue-examples"


def example(name: str) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((EXAMPLES / name).read_text()) if d]
    manifest: dict[str, Any] = docs[0]
    manifest["metadata"].setdefault("namespace", "default")
    return manifest


def refusal(manifest: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as exc:
        parse_object(manifest)
    assert "\n" not in str(exc.value)
    return str(exc.value)


def test_kueues_rayjob_sample_asks_for_head_workers_and_submitter() -> None:
    job = parse_object(example("ray-job-sample.yaml"))
    pod_sets = ADAPTERS["ray.io/rayjob"].pod_sets(job)
    assert [(ps.name, ps.count) for ps in pod_sets] == [("head", 1), ("small-group", 1), ("submitter", 1)]
    assert pod_sets[0].spec.containers[0].requests == (("cpu", 1000),)
    # KubeRay's default submitter pod: the head's image, 500m CPU and 200Mi requested.
    submitter = pod_sets[2].template["spec"]["containers"][0]
    assert submitter["image"] == "rayproject/ray:2.9.0" and submitter["resources"]["requests"]["cpu"] == "500m"


def test_submission_modes_count_the_submitter_as_kueue_does() -> None:
    http = example("ray-job-sample.yaml")
    http["spec"]["submissionMode"] = "HTTPMode"
    assert [ps.name for ps in ADAPTERS["ray.io/rayjob"].pod_sets(parse_object(http))] == ["head", "small-group"]
    sidecar = example("ray-job-sample.yaml")
    sidecar["spec"]["submissionMode"] = "SidecarMode"
    head = ADAPTERS["ray.io/rayjob"].pod_sets(parse_object(sidecar))[0]
    assert [c.name for c in head.spec.containers] == ["ray-head", "ray-job-submitter"]


def test_raycluster_and_rayservice_samples_are_head_and_workers_and_never_finish() -> None:
    for name, framework in (("ray-cluster-sample.yaml", "ray.io/raycluster"),
                            ("ray-service-sample.yaml", "ray.io/rayservice")):
        obj = parse_object(example(name))
        adapter = ADAPTERS[framework]
        assert [(ps.name, ps.count) for ps in adapter.pod_sets(obj)] == [("head", 1), ("small-group", 1)]
        assert adapter.finished(obj) is None and not getattr(adapter, "finishes", True)


def test_worker_count_is_replicas_times_hosts() -> None:
    m = example("ray-cluster-sample.yaml")
    m["spec"]["workerGroupSpecs"][0].update(replicas=3, numOfHosts=4, maxReplicas=10)
    assert ADAPTERS["ray.io/raycluster"].pod_sets(parse_object(m))[1].count == 12


def test_a_rayservice_is_suspended_and_admitted_through_its_cluster_config() -> None:
    adapter = ADAPTERS["ray.io/rayservice"]
    m = example("ray-service-sample.yaml")
    adapter.suspend(m)
    assert m["spec"]["rayClusterConfig"]["suspend"] is True and adapter.is_suspended(parse_object(m))
    pod_sets = adapter.pod_sets(parse_object(m))
    adapter.run_with_pod_sets_info(m, [PodSetInfo(ps.name, ps.count, {"flavor": "f"}) for ps in pod_sets], pod_sets)
    assert not adapter.is_suspended(parse_object(m))
    head = m["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
    assert head["nodeSelector"] == {"flavor": "f"}


def test_a_rayjob_without_a_submitter_template_gets_kueues_after_admission() -> None:
    adapter = ADAPTERS["ray.io/rayjob"]
    m = example("ray-job-sample.yaml")
    pod_sets = adapter.pod_sets(parse_object(m))
    infos = [PodSetInfo(ps.name, ps.count, {"flavor": ps.name}) for ps in pod_sets]
    adapter.run_with_pod_sets_info(m, infos, pod_sets)
    assert m["spec"]["submitterPodTemplate"]["spec"]["nodeSelector"] == {"flavor": "submitter"}
    assert m["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"] == {
        "flavor": "small-group"}


def _cluster(m: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = m["spec"]
    return spec.get("rayClusterSpec") or spec.get("rayClusterConfig") or spec


CASES: dict[str, tuple[str, Any, str]] = {
    # name: (sample, change, expected text)
    "no head group": ("ray-cluster-sample.yaml", lambda m: _cluster(m).pop("headGroupSpec"),
                      "spec.headGroupSpec: Required value"),
    "head without containers": ("ray-cluster-sample.yaml",
                                lambda m: _cluster(m)["headGroupSpec"]["template"]["spec"].update(containers=[]),
                                "headGroupSpec should have at least one container"),
    "worker group without template": ("ray-job-sample.yaml",
                                      lambda m: _cluster(m)["workerGroupSpecs"][0].pop("template"),
                                      "spec.rayClusterSpec.workerGroupSpecs[0].template: Required value"),
    "min over max": ("ray-service-sample.yaml",
                     lambda m: _cluster(m)["workerGroupSpecs"][0].update(minReplicas=6, maxReplicas=5),
                     "spec.rayClusterConfig.workerGroupSpecs[0].minReplicas: Invalid value: 6: minReplicas (6) cannot "
                     "be greater than maxReplicas (5)"),
    "negative replicas": ("ray-cluster-sample.yaml", lambda m: _cluster(m)["workerGroupSpecs"][0].update(replicas=-1),
                          "spec.workerGroupSpecs[0].replicas: Invalid value: -1: must be greater than or equal to 0"),
    "group named head": ("ray-cluster-sample.yaml",
                         lambda m: _cluster(m)["workerGroupSpecs"][0].update(groupName="head"),
                         'spec.workerGroupSpecs[0].groupName: Forbidden: "head" is reserved for the head group'),
    "duplicate group": ("ray-cluster-sample.yaml",
                        lambda m: _cluster(m)["workerGroupSpecs"].append(copy.deepcopy(_cluster(m)["workerGroupSpecs"][0])),
                        'spec.workerGroupSpecs[1].groupName: Duplicate value: "small-group"'),
    "keeps its cluster": ("ray-job-sample.yaml", lambda m: m["spec"].update(shutdownAfterJobFinishes=False),
                          "a kueue managed job should delete the cluster after finishing"),
    "existing cluster": ("ray-job-sample.yaml", lambda m: m["spec"].update(clusterSelector={"ray.io/cluster": "c"}),
                         "spec.clusterSelector: Invalid value"),
    "no cluster": ("ray-job-sample.yaml", lambda m: m["spec"].pop("rayClusterSpec"),
                   "rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector"),
    "bad submission mode": ("ray-job-sample.yaml", lambda m: m["spec"].update(submissionMode="Fax"),
                            "spec.submissionMode: Invalid value"),
    "autoscaling": ("ray-job-autoscaling-sample.yaml", lambda m: None,
                    "spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_ray_object_is_refused_naming_the_field(case: str) -> None:
    sample, change, expected = CASES[case]
    m = example(sample)
    change(m)
    assert expected in refusal(m)


def test_kueues_rules_apply_only_to_queued_objects() -> None:
    m = example("ray-job-sample.yaml")
    del m["metadata"]["labels"]
    m["spec"]["shutdownAfterJobFinishes"] = False
    parse_object(m)  # KubeRay keeps the cluster; Kueue does not look at an object it does not queue


def test_managed_by_is_immutable() -> None:
    old = example("ray-cluster-sample.yaml")
    new = copy.deepcopy(old)
    new["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    with pytest.raises(ValidationError, match="spec.managedBy: Invalid value"):
        validate_update(parse_object(old), parse_object(new))


_GROUP = st.fixed_dictionaries({}, optional={
    "groupName": st.one_of(st.text(max_size=5), st.integers()),
    "replicas": st.one_of(st.integers(-3, 3), st.text(max_size=2)),
    "minReplicas": st.integers(-1, 4), "maxReplicas": st.integers(-1, 4), "numOfHosts": st.integers(-1, 3),
    "template": st.one_of(st.none(), st.just({}), st.just({"spec": {"containers": [{"name": "w"}]}}), st.integers()),
})
_CLUSTER = st.fixed_dictionaries({}, optional={
    "headGroupSpec": st.one_of(st.none(), st.just({}), st.just({"template": {"spec": {"containers": []}}}),
                               st.just({"template": {"spec": {"containers": [{"name": "h"}]}}}), st.text(max_size=2)),
    "workerGroupSpecs": st.one_of(st.lists(_GROUP, max_size=3), st.integers()),
    "enableInTreeAutoscaling": st.one_of(st.booleans(), st.text(max_size=2)),
    "suspend": st.one_of(st.booleans(), st.integers()),
})


@settings(max_examples=examples(300), derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["RayCluster", "RayJob", "RayService"]), cluster=_CLUSTER, queued=st.booleans(),
       extra=st.fixed_dictionaries({}, optional={"submissionMode": st.text(max_size=4),
                                                 "shutdownAfterJobFinishes": st.booleans(),
                                                 "clusterSelector": st.dictionaries(st.text(max_size=2), st.text(max_size=2)),
                                                 "submitterPodTemplate": st.one_of(st.integers(), st.just({}))}),
       status=st.one_of(st.none(), st.integers(), st.fixed_dictionaries({}, optional={
           "state": st.text(max_size=3), "jobDeploymentStatus": st.sampled_from(["Complete", "Failed", 3]),
           "conditions": st.one_of(st.integers(), st.just([{"type": "Ready", "status": "True"}]))})))
def test_generated_ray_objects_are_parsed_or_refused_with_a_field_path(
        kind: str, cluster: Any, queued: bool, extra: Any, status: Any) -> None:
    spec = {"RayCluster": dict(cluster), "RayJob": {"rayClusterSpec": cluster, **extra},
            "RayService": {"rayClusterConfig": cluster}}[kind]
    labels = {"kueue.x-k8s.io/queue-name": "q"} if queued else {}
    manifest = {"apiVersion": "ray.io/v1", "kind": kind, "metadata": {"name": "r", "namespace": "team", "labels": labels},
                "spec": spec, "status": status}
    try:
        obj = parse_object(manifest)
    except ValidationError as exc:
        assert exc.errors and "\n" not in str(exc)
        for err in exc.errors:
            assert err.path.split(".")[0].split("[")[0] in ("spec", "status", "metadata"), err
        return
    adapter = next(a for a in ADAPTERS.values() if a.kind == kind)
    for ps in adapter.pod_sets(obj):  # what parses makes pod sets
        assert ps.count >= 0 and ps.name
