"""Kueue's MultiKueue external frameworks (``multiKueue.externalFrameworks``): the configuration's
rules, and the generic adapter (hub.api.jobkinds.external) that dispatches a kind mkhub has no
adapter of its own for."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.api.config import Configuration, parse_configuration
from hub.api.errors import ValidationError
from hub.api.gvk import default_plural, parse_gvk
from hub.api.jobkinds import adapter_of_kind, is_external, register_external_frameworks
from hub.api.jobkinds.external import generic_outcome
from hub.api.registry import KINDS, parse_object, serve_external_frameworks
from hub.configfile import load_configuration_file
from hub.federation.mkwire import job_manifest, managed_by_rejection


@pytest.fixture(autouse=True)
def _forget_registered() -> Iterator[None]:
    yield
    register_external_frameworks(Configuration())  # the registry is per process: leave it as found


def _config(*names: str, frameworks: tuple[str, ...] | None = None) -> Configuration:
    data: dict[str, Any] = {"multiKueue": {"externalFrameworks": [{"name": n} for n in names]}}
    if frameworks is not None:
        data["integrations"] = {"frameworks": list(frameworks)}
    return parse_configuration(data)


def test_a_gvk_is_kind_version_group_split_at_the_first_two_dots() -> None:
    assert parse_gvk("PipelineRun.v1.tekton.dev") == ("PipelineRun", "tekton.dev/v1")
    assert parse_gvk("Workflow.v1alpha1.argoproj.io") == ("Workflow", "argoproj.io/v1alpha1")
    for bad in ("PipelineRun", "PipelineRun.tekton", "PipelineRun..tekton.dev", ".v1.tekton.dev", "A.v1.tekton..dev"):
        with pytest.raises(ValueError, match="kind.version.group"):
            parse_gvk(bad)


def test_the_plural_is_the_crd_generators() -> None:
    assert [default_plural(k) for k in ("PipelineRun", "Workflow", "Policy", "Gateway", "Mesh", "Box")] == [
        "pipelineruns", "workflows", "policies", "gateways", "meshes", "boxes"]


def test_the_configuration_refuses_a_malformed_or_repeated_entry_naming_it() -> None:
    with pytest.raises(ValidationError) as info:
        _config("PipelineRun.v1.tekton.dev", "bad", "PipelineRun.v1.tekton.dev")
    text = str(info.value)
    assert 'multiKueue.externalFrameworks[1].name: Invalid value: "bad": must be in \'kind.version.group\' format' in text
    assert 'multiKueue.externalFrameworks[2].name: Duplicate value: "PipelineRun.v1.tekton.dev"' in text
    with pytest.raises(ValidationError, match=r"externalFrameworks\[0\]\.name: Required value"):
        parse_configuration({"multiKueue": {"externalFrameworks": [{}]}})


def test_an_entry_for_a_kind_with_a_built_in_adapter_is_refused() -> None:
    with pytest.raises(ValueError, match="conflicts with a built-in MultiKueue adapter"):
        register_external_frameworks(_config("Job.v1.batch"))
    assert not is_external(adapter_of_kind("Job"))


def test_a_config_file_with_a_conflicting_entry_says_which_file_and_entry(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
                    "multiKueue:\n  externalFrameworks:\n  - name: JobSet.v1alpha2.jobset.x-k8s.io\n"
                    "integrations:\n  frameworks: [batch/job, jobset.x-k8s.io/jobset]\n")
    with pytest.raises(ValueError, match=r"config .*config.yaml: multiKueue.externalFrameworks\[0\].name"):
        load_configuration_file(path)


def test_a_registered_kind_is_served_spec_whole_and_has_the_generic_adapter() -> None:
    serve_external_frameworks(_config("WidgetJob.v1beta1.example.com"))
    assert KINDS["WidgetJob"].plural == "widgetjobs" and KINDS["WidgetJob"].api_versions == ("example.com/v1beta1",)
    obj = parse_object({"apiVersion": "example.com/v1beta1", "kind": "WidgetJob",
                        "metadata": {"name": "j", "namespace": "ns", "labels": {"a": "b"}, "uid": "u1",
                                     "resourceVersion": "7"},
                        "spec": {"managedBy": "kueue.x-k8s.io/multikueue", "steps": [1, 2]}, "status": {"x": 1}})
    adapter = adapter_of_kind("WidgetJob")
    assert adapter is not None and is_external(adapter)
    # What goes to the worker: identity, labels and spec; no server fields, no status.
    manifest = job_manifest(obj)
    assert manifest == {"apiVersion": "example.com/v1beta1", "kind": "WidgetJob",
                        "metadata": {"name": "j", "namespace": "ns", "labels": {"a": "b"}},
                        "spec": {"managedBy": "kueue.x-k8s.io/multikueue", "steps": [1, 2]}}
    assert adapter.worker_copy(manifest)["spec"] == {"steps": [1, 2]}


def test_an_already_served_kind_keeps_its_reader() -> None:
    before = KINDS["PipelineRun"]
    serve_external_frameworks(_config("PipelineRun.v1.tekton.dev"))
    assert KINDS["PipelineRun"] == before
    assert is_external(adapter_of_kind("PipelineRun"))
    register_external_frameworks(Configuration())
    assert adapter_of_kind("PipelineRun") is None


def test_only_multikueues_managed_by_lets_an_external_object_go() -> None:
    serve_external_frameworks(_config("WidgetJob.v1beta1.example.com"))  # served, not only registered: parse_object needs the kind

    def obj(spec: dict[str, Any]) -> Any:
        return parse_object({"apiVersion": "example.com/v1beta1", "kind": "WidgetJob",
                             "metadata": {"name": "j", "namespace": "ns"}, "spec": spec})

    assert managed_by_rejection(obj({"managedBy": "kueue.x-k8s.io/multikueue"})) == ""
    assert managed_by_rejection(obj({})) == (
        'The owner is not managed by Kueue: Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not ""')
    assert "not \"someone/else\"" in managed_by_rejection(obj({"managedBy": "someone/else"}))


@pytest.mark.parametrize(("status", "outcome"), [
    ({"conditions": [{"type": "Succeeded", "status": "True", "reason": "Succeeded", "message": "all done"}]},
     ("succeeded", "all done")),
    ({"conditions": [{"type": "Succeeded", "status": "False", "reason": "Failed", "message": "Tasks Completed: 1 (Failed: 1"}]},
     ("failed", "Tasks Completed: 1 (Failed: 1")),
    ({"conditions": [{"type": "Succeeded", "status": "Unknown", "reason": "Running"}]}, None),
    ({"conditions": [{"type": "Complete", "status": "True"}]}, ("succeeded", "Complete")),
    ({"conditions": [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]},
     ("failed", "BackoffLimitExceeded")),
    ({"phase": "Succeeded"}, ("succeeded", "")),
    ({"phase": "Error", "message": "child failed"}, ("failed", "child failed")),
    ({"phase": "Running"}, None),
    ({}, None),
])
def test_a_worker_copy_is_done_by_the_common_status_conventions(status: dict[str, Any], outcome: Any) -> None:
    assert generic_outcome(status) == outcome


@given(st.dictionaries(st.sampled_from(["conditions", "phase", "message"]),
                       st.one_of(st.none(), st.text(max_size=8), st.lists(st.dictionaries(
                           st.sampled_from(["type", "status", "reason", "message"]),
                           st.one_of(st.none(), st.text(max_size=8), st.integers())), max_size=3),
                                 st.integers())))
def test_any_status_shape_is_read_without_an_error(status: dict[str, Any]) -> None:
    out = generic_outcome(status)
    assert out is None or out[0] in ("succeeded", "failed")
