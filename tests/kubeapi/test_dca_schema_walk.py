"""hub.kubeapi.validate as the dev-cluster's writes use it: the schema walk of every object
written, without the unknown-field lines field validation reports on its own (hub.kubeapi.fields)."""

from __future__ import annotations

from typing import Any

import pytest

from hub.kubeapi import fields, validate
from hub.kubeapi.fields import unknown_fields
from hub.kubeapi.openapi import openapi_v3_document
from hub.kubeapi.validate import kind_schema, problems


def _job_schema() -> dict[str, Any]:
    doc = openapi_v3_document("batch", "v1")
    assert doc is not None
    found = kind_schema(doc, "batch", "v1", "Job")
    assert found is not None
    return found


def test_types_are_checked_without_listing_unknown_fields() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"parallelism": True, "completions": 1.5, "suspend": 1, "bogus": 3,
                    "template": {"spec": {"containers": [{"name": "c", "image": "i", "extra": {}}]}}}}
    everything = problems(_job_schema(), job)
    assert any(p.endswith("field not declared in schema") for p in everything)
    typed = problems(_job_schema(), job, undeclared=False)
    assert typed == [p for p in everything if not p.endswith("field not declared in schema")]
    assert typed == [
        "spec.parallelism: Invalid value: true: must be of type integer",
        "spec.completions: Invalid value: 1.5: must be of type integer",
        "spec.suspend: Invalid value: 1: must be of type boolean",
    ]


def _job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "labels": {"a": "b"}},
            "spec": {"parallelism": 1, "suspend": True, "completionMode": "NonIndexed", **spec,
                     "template": {"spec": {"restartPolicy": "Never", "containers": [
                         {"name": "c", "image": "i", "command": ["sleep", "1"], "ports": [{"containerPort": 80}]}]}}}}


def _count_walks(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[str]:
    """The paths the module's recursive walk is entered with (it calls itself through the module)."""
    seen: list[str] = []
    real = module._walk

    def counting(*args: Any) -> None:
        seen.append(next(a for a in args if isinstance(a, str)))
        real(*args)

    monkeypatch.setattr(module, "_walk", counting)
    return seen


def test_the_walks_enter_maps_and_lists_not_every_scalar(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every write of a built-in kind is walked twice (unknown fields, then types): a scalar that
    passes is checked in place, without a call and a path of its own; a bad one is still named."""
    schema = _job_schema()
    seen = _count_walks(monkeypatch, validate)
    assert problems(schema, _job(), undeclared=False) == []
    assert "spec.parallelism" not in seen and "spec.template.spec.containers[0].name" not in seen
    assert "spec.template.spec.containers[0]" in seen
    assert problems(schema, _job(parallelism="two"), undeclared=False) == [
        'spec.parallelism: Invalid value: "two": must be of type integer'
    ]

    seen = _count_walks(monkeypatch, fields)
    job = _job(bogus=1)
    assert unknown_fields("Job", job, schema, drop=True) == ["spec.bogus"]
    assert "bogus" not in job["spec"]
    assert not any(p.endswith((".parallelism", ".name", ".image", ".containerPort")) for p in seen)
    assert ".spec.template.spec.containers[0]" in seen or "spec.template.spec.containers[0]" in seen
