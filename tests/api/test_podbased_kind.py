"""The pod-based frameworks' kinds as the embedded hub stores them (hub.api.podbased_kind): every bad
shape refused with one line naming the field, never a traceback."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.api.errors import ValidationError
from hub.api.registry import parse_object

API = {"Task": "tekton.dev/v1", "Pipeline": "tekton.dev/v1", "PipelineRun": "tekton.dev/v1",
       "TaskRun": "tekton.dev/v1", "Workflow": "argoproj.io/v1alpha1", "Sandbox": "agents.x-k8s.io/v1alpha1",
       "MiniCluster": "flux-framework.org/v1alpha1"}


def obj(kind: str, spec: Any) -> dict[str, Any]:
    return {"apiVersion": API[kind], "kind": kind, "metadata": {"name": "x", "namespace": "team"}, "spec": spec}


@pytest.mark.parametrize(("kind", "spec", "field"), [
    ("Task", "x", "spec"),
    ("Task", {"steps": "x"}, "spec.steps"),
    ("Task", {"steps": [{"name": "a"}]}, "spec.steps[0].image"),
    ("Pipeline", {"tasks": [{"name": "a", "runAfter": ["zz"]}]}, "spec.tasks[0].runAfter"),
    ("Pipeline", {"tasks": [{"name": "a", "runAfter": "zz"}]}, "spec.tasks[0].runAfter"),
    ("PipelineRun", {}, "spec.pipelineRef.name"),
    ("TaskRun", {"taskRef": {"name": 3}}, "spec.taskRef.name"),
    ("Workflow", {"entrypoint": "x", "templates": [{"name": "y"}]}, "spec.entrypoint"),
    ("Workflow", {"entrypoint": ["x"], "templates": [{"name": "y"}]}, "spec.entrypoint"),
    ("Sandbox", {"podTemplate": "x"}, "spec.podTemplate.spec.containers"),
    ("MiniCluster", {"size": "3", "containers": [{}]}, "spec.size"),
])
def test_a_bad_shape_is_one_line_naming_the_field(kind: str, spec: Any, field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        parse_object(obj(kind, spec))
    line = str(refused.value)
    assert "\n" not in line and f'{kind} "team/x" is invalid: {field}' in line


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=4),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3), max_leaves=8)
_keys = st.sampled_from(["steps", "tasks", "runAfter", "entrypoint", "templates", "podTemplate", "size", "containers",
                         "pipelineRef", "taskRef", "name", "image", "spec"])


@given(st.sampled_from(sorted(API)), st.dictionaries(_keys, _json, max_size=4))
def test_generated_specs_are_parsed_or_refused_with_a_field_path(kind: str, spec: dict[str, Any]) -> None:
    try:
        parse_object(obj(kind, spec))
    except ValidationError as exc:
        assert f'{kind} "team/x" is invalid: spec' in str(exc)
