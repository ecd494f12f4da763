"""AppWrapper (``workload.codeflare.dev/v1beta2``): reading, its webhook's checks, pod sets (declared
and inferred) and the update rule, with Kueue's published samples."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub.api.appwrapper_kind import AppWrapper, value_at
from hub.api.errors import ValidationError
from hub.api.jobkinds.appwrapper import APPWRAPPER
from hub.api.jobkinds.framework import workload_for
from hub.api.registry import parse_object, validate_update
from tests.hypothesis_budget import examples

EXAMPLES = Path(__file__).resolve().parents[2] / "e2e" / "kueue-examples" / "appwrapper"


def sample(name: str) -> dict[str, Any]:
    m = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    m["metadata"]["namespace"] = "default"
    return m  # type: ignore[no-any-return]


def parsed(m: dict[str, Any]) -> AppWrapper:
    obj = parse_object(copy.deepcopy(m))
    assert isinstance(obj, AppWrapper)
    return obj


def refusal(m: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as exc:
        parse_object(copy.deepcopy(m))
    assert "\n" not in str(exc.value)
    return str(exc.value)


def deployment() -> dict[str, Any]:
    return sample("deployment-sample")


def test_kueues_samples_are_one_workload_with_every_components_pod_sets() -> None:
    dep = workload_for(APPWRAPPER, parsed(deployment()))
    assert [(ps.name, ps.count) for ps in dep.pod_sets] == [("sample-appwrapper-deployment-0", 3)]
    assert dict(dep.pod_sets[0].spec.containers[0].requests) == {"cpu": 100}
    lws = workload_for(APPWRAPPER, parsed(sample("leaderworkerset-sample")))
    assert [(ps.name, ps.count) for ps in lws.pod_sets] == [("sample-appwrapper-lws-0", 2), ("sample-appwrapper-lws-1", 3)]
    assert [dict(ps.spec.containers[0].requests) for ps in lws.pod_sets] == [{"cpu": 100}, {"cpu": 200}]
    # No podSets declared: a PyTorchJob's are inferred (Master, then Worker), as the AppWrapper project does.
    torch = workload_for(APPWRAPPER, parsed(sample("pytorch-sample")))
    assert [(ps.name, ps.count) for ps in torch.pod_sets] == [("sample-appwrapper-pytorch-job-0", 1),
                                                              ("sample-appwrapper-pytorch-job-1", 1)]
    assert dep.queue_name == "user-queue"


def test_paths_resolve_as_the_appwrapper_project_reads_them() -> None:
    component = {"template": {"spec": {"items": [{"a": 1}, {"b": {"c": 2}}]}}}
    assert value_at(component, "template.spec.items[1].b.c") == (2, "")
    assert value_at(component, "spec.items")[1] == "first element of the path must be 'template'"
    assert value_at(component, "template.spec.nope")[1] == "at path position 'template.spec' missing field 'nope'"
    assert value_at(component, "template.spec.items[5]")[1] == "at path position 'template.spec.items' out of bounds index '5'"
    assert value_at(component, "template.spec[0]")[1] == "at path position 'template.spec' found non-array value"


@pytest.mark.parametrize(("change", "field", "reason"), [
    (lambda m: m["spec"]["components"][0]["podSets"][0].update(path="template.spec.nope"),
     "spec.components[0].podSets[0].path", "path does not refer to a v1.PodSpecTemplate"),
    (lambda m: m["spec"]["components"][0]["podSets"][0].update(path="template.metadata"),
     "spec.components[0].podSets[0].path", "does not contain a spec"),
    (lambda m: m["spec"]["components"][0]["podSets"][0].update(replicas=-1),
     "spec.components[0].podSets[0].replicas", "must be greater than or equal to 0"),
    (lambda m: m["spec"]["components"][0]["podSets"][0].update(replicas=2),
     "spec.components[0].podSets", "replica count 2 differs from inferred count 3"),
    (lambda m: m["spec"]["components"][0]["podSets"].append({"path": "template.spec.template"}),
     "spec.components[0].podSets", "multiple DeclaredPodSets with path 'template.spec.template'"),
    (lambda m: m["spec"].update(components=[]), "spec.components", "components contains no podspecs"),
    (lambda m: m["spec"].pop("components"), "spec.components", "Required value"),
    (lambda m: m["spec"]["components"][0].update(template="text"), "spec.components[0].template", "must be an object"),
    (lambda m: m["spec"]["components"][0]["template"]["metadata"].update(namespace="other"),
     "spec.components[0].template.metadata.namespace", "cannot create objects in other namespaces"),
    (lambda m: m["spec"]["components"][0]["template"].update(apiVersion="workload.codeflare.dev/v1beta2", kind="AppWrapper"),
     "spec.components[0].template", "Nested AppWrappers are forbidden"),
    (lambda m: m["spec"]["components"][0]["template"]["spec"]["template"]["spec"].update(containers=[]),
     "spec.components[0].template.spec.template.spec.containers", "Required value"),
    (lambda m: m["spec"]["components"].extend(copy.deepcopy(m["spec"]["components"]) * 8),
     "spec.components", "components contains 9 podspecs; at most 8 are allowed"),
])
def test_bad_appwrappers_are_refused_naming_the_field(change: Any, field: str, reason: str) -> None:
    m = deployment()
    change(m)
    message = refusal(m)
    assert f"{field}:" in message and reason in message and 'AppWrapper "default/sample-appwrapper-deployment"' in message


def test_declared_pod_sets_and_managed_by_are_immutable_but_templates_take_the_admission() -> None:
    old = deployment()
    new = copy.deepcopy(old)
    new["spec"]["components"][0]["podSets"][0]["replicas"] = 4
    with pytest.raises(ValidationError, match=r"spec.components\[0\].podSets\[0\].replicas: Forbidden"):
        validate_update(parsed(old), _unchecked(new))
    managed = copy.deepcopy(old)
    managed["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    with pytest.raises(ValidationError, match="spec.managedBy: Forbidden"):
        validate_update(parsed(old), parsed(managed))
    admitted = copy.deepcopy(old)
    admitted["spec"]["components"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "a"}
    validate_update(parsed(old), parsed(admitted))


def _unchecked(m: dict[str, Any]) -> AppWrapper:
    """An update the create-time checks would refuse (replicas no longer the Deployment's)."""
    m = copy.deepcopy(m)
    m["spec"]["components"][0]["template"]["spec"]["replicas"] = 4
    return parsed(m)


_ANY = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=3), st.booleans(), st.just([]), st.just({}))
_PATHS = st.sampled_from(["template.spec.template", "template", "template.spec", "template.spec.x[0]", "spec", "",
                          "template.spec.template.spec", "template.spec.template[", "template..a"])
_POD = st.fixed_dictionaries({}, optional={
    "metadata": st.one_of(_ANY, st.just({"labels": {"a": "b"}})),
    "spec": st.one_of(_ANY, st.just({"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]})),
})
_TEMPLATES = st.fixed_dictionaries({}, optional={
    "apiVersion": st.sampled_from(["apps/v1", "v1", "batch/v1", "workload.codeflare.dev/v1beta2", "x/v1"]),
    "kind": st.sampled_from(["Deployment", "Pod", "Job", "AppWrapper", "Thing"]),
    "metadata": st.one_of(_ANY, st.just({"namespace": "other"})),
    "spec": st.one_of(_ANY, st.fixed_dictionaries({}, optional={"template": st.one_of(_ANY, _POD), "replicas": _ANY,
                                                               "containers": _ANY})),
})
_COMPONENTS = st.fixed_dictionaries({}, optional={
    "template": st.one_of(_ANY, _TEMPLATES),
    "podSets": st.one_of(_ANY, st.lists(st.fixed_dictionaries({}, optional={"path": st.one_of(_ANY, _PATHS),
                                                                            "replicas": _ANY}), max_size=3)),
    "podSetInfos": _ANY,
})


@settings(max_examples=examples(300), derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(components=st.one_of(_ANY, st.lists(st.one_of(_ANY, _COMPONENTS), max_size=3)), suspend=_ANY,
       status=st.one_of(_ANY, st.fixed_dictionaries({}, optional={"phase": _ANY, "conditions": _ANY})))
def test_generated_appwrappers_are_parsed_or_refused_with_a_field_path(components: Any, suspend: Any, status: Any) -> None:
    manifest = {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
                "metadata": {"name": "aw", "namespace": "team"},
                "spec": {"components": components, "suspend": suspend}, "status": status}
    try:
        aw = parse_object(manifest)
    except ValidationError as exc:
        assert exc.errors and "\n" not in str(exc)
        for err in exc.errors:
            assert err.path.split(".")[0].split("[")[0] in ("spec", "status", "metadata"), err
        return
    assert isinstance(aw, AppWrapper)
    pod_sets = APPWRAPPER.pod_sets(aw)  # what is accepted has 1 to 8 runnable pod sets
    assert 1 <= len(pod_sets) <= 8 and all(ps.count >= 0 and ps.spec.containers for ps in pod_sets)
