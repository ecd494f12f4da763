"""SparkApplication (``sparkoperator.k8s.io/v1beta2``) as Kueue's integration reads it: Kueue's sample's
pod sets (templates built as the Spark operator builds the pods), its webhook's checks, the gate."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from hub.api.config import parse_configuration
from hub.api.errors import ValidationError
from hub.api.jobkinds.framework import workload_for
from hub.api.jobkinds.spark import SPARK_APPLICATION
from hub.api.registry import parse_object
from hub.api.spark_kind import SparkApplication, java_memory

SAMPLE = Path(__file__).resolve().parents[2] / "e2e" / "kueue-examples" / "sample-sparkapplication.yaml"


def sample() -> dict[str, Any]:
    m = yaml.safe_load(SAMPLE.read_text())
    m["metadata"]["namespace"] = "default"
    return m  # type: ignore[no-any-return]


def parsed(m: dict[str, Any]) -> SparkApplication:
    obj = parse_object(copy.deepcopy(m))
    assert isinstance(obj, SparkApplication)
    return obj


def test_kueues_sample_is_a_driver_and_its_executors() -> None:
    wl = workload_for(SPARK_APPLICATION, parsed(sample()))
    assert [(ps.name, ps.count) for ps in wl.pod_sets] == [("driver", 1), ("executor", 2)]
    for ps, container in zip(wl.pod_sets, ("spark-kubernetes-driver", "executor"), strict=True):
        assert ps.template["spec"]["containers"] == [{"name": container,
                                                      "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]
        assert dict(ps.spec.containers[0].requests) == {"cpu": 1000, "memory": 2**30}
    assert wl.queue_name == "user-queue" and wl.meta.name.startswith("sparkapplication-spark-pi-")


def test_the_roles_fields_make_the_pod_templates() -> None:
    m = sample()
    m["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}, {"name": "unused", "emptyDir": {}}]
    m["spec"]["executor"].update(
        coreLimit="2", memoryLimit="2g", gpu={"name": "nvidia.com/gpu", "quantity": 1}, priorityClassName="high",
        nodeSelector={"pool": "spark"}, tolerations=[{"key": "k", "operator": "Exists"}], labels={"role": "x"},
        annotations={"a": "b"}, volumeMounts=[{"name": "data", "mountPath": "/d"}, {"name": "spark-local-dir-1", "mountPath": "/t"}],
        sidecars=[{"name": "side", "image": "busybox"}], template={"metadata": {"labels": {"from": "template"}}})
    (_, executor) = SPARK_APPLICATION.pod_sets(parsed(m))
    assert executor.template == {
        "metadata": {"labels": {"from": "template", "role": "x"}, "annotations": {"a": "b"}},
        "spec": {"containers": [{"name": "executor", "volumeMounts": [{"name": "data", "mountPath": "/d"}],
                                 "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                               "limits": {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": 1}}},
                                {"name": "side", "image": "busybox"}],
                 "volumes": [{"name": "data", "emptyDir": {}}], "priorityClassName": "high",
                 "nodeSelector": {"pool": "spark"}, "tolerations": [{"key": "k", "operator": "Exists"}]}}
    assert java_memory("512m") == "512Mi" and java_memory("2G") == "2Gi" and java_memory("100") == "100"


def test_a_global_node_selector_moves_into_both_roles_on_admission() -> None:
    m = sample()
    m["spec"]["nodeSelector"] = {"zone": "z"}
    original = SPARK_APPLICATION.pod_sets(parsed(m))
    from hub.api.jobkinds.framework import PodSetInfo

    SPARK_APPLICATION.run_with_pod_sets_info(m, [PodSetInfo("driver", 1, {"f": "1"}), PodSetInfo("executor", 2, {"f": "1"})],
                                             original)
    assert "nodeSelector" not in m["spec"]
    assert m["spec"]["driver"]["nodeSelector"] == m["spec"]["executor"]["nodeSelector"] == {"zone": "z", "f": "1"}


@pytest.mark.parametrize(("change", "expected"), [
    (lambda m: m["spec"].update(mode="client"),
     'spec.mode: Invalid value: "client": only Cluster mode is supported for a kueue managed job'),
    (lambda m: m["spec"].update(dynamicAllocation={"enabled": True}),
     "spec.dynamicAllocation.enabled: Invalid value: True: a kueue managed job can use dynamicAllocation only when"),
    (lambda m: m["spec"]["driver"].update(coreRequest="lots"), 'spec.driver.coreRequest: Invalid value: "lots"'),
    (lambda m: m["spec"]["executor"].update(memory="1x"), 'spec.executor.memory: Invalid value: "1x"'),
    (lambda m: m["spec"]["executor"].update(instances=-1), "spec.executor.instances: Invalid value: -1"),
    (lambda m: m["spec"].pop("sparkVersion"), "spec.sparkVersion: Required value"),
    (lambda m: m["spec"].update(mode="batch"), 'spec.mode: Invalid value: "batch": supported values'),
])
def test_bad_spark_applications_are_refused_naming_the_field(change: Any, expected: str) -> None:
    m = sample()
    change(m)
    with pytest.raises(ValidationError) as exc:
        parse_object(m)
    assert expected in str(exc.value) and str(exc.value).startswith('SparkApplication "default/spark-pi" is invalid')


def test_client_mode_is_kueues_concern_only_for_a_queued_one() -> None:
    m = sample()
    m["spec"]["mode"] = "client"
    del m["metadata"]["labels"]
    assert parsed(m).mode == "client"


def test_the_framework_needs_its_alpha_gate_as_in_kueue() -> None:
    integrations = {"frameworks": ["batch/job", "sparkoperator.k8s.io/sparkapplication"]}
    with pytest.raises(ValidationError, match="please enable SparkApplicationIntegration featuregate"):
        parse_configuration({"integrations": integrations})
    config = parse_configuration({"integrations": integrations, "featureGates": {"SparkApplicationIntegration": True}})
    assert "sparkoperator.k8s.io/sparkapplication" in config.frameworks
