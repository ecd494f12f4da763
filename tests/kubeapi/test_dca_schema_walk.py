"""hub.kubeapi.validate as the dev-cluster's writes use it: the schema walk of every object
written, without the unknown-field lines field validation reports on its own (hub.kubeapi.fields)."""

from __future__ import annotations

from typing import Any

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
