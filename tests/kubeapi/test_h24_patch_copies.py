"""The patches' copies are JSON copies (hub.api.conversion.json_copy, not copy.deepcopy): a patched
object shares nothing the caller may change afterwards with the patch or the original, and a value
YAML decodes to something other than JSON (a timestamp) is still copied as it was."""

from __future__ import annotations

import datetime
from typing import Any

from hub.kubeapi import jobrules
from hub.kubeapi.patch import json_patch, merge_patch, strategic_merge_patch


def _original() -> dict[str, Any]:
    return {"metadata": {"name": "a", "labels": {"x": "1"}},
            "spec": {"list": [{"name": "c", "args": ["a"]}], "map": {"k": ["v"]}}}


def test_a_merge_patch_shares_no_list_or_map_with_its_patch() -> None:
    patch: dict[str, Any] = {"spec": {"list": [{"name": "d", "args": ["b"]}], "when": datetime.date(2026, 11, 27)}}
    out = merge_patch(_original(), patch)
    assert out["spec"]["list"] == [{"name": "d", "args": ["b"]}] and out["spec"]["when"] == datetime.date(2026, 11, 27)
    assert out["spec"]["map"] == {"k": ["v"]}
    patch["spec"]["list"][0]["args"].append("c")
    assert out["spec"]["list"] == [{"name": "d", "args": ["b"]}]


def test_a_json_patch_copies_the_document_and_its_values() -> None:
    original = _original()
    value = {"name": "e", "args": []}
    out = json_patch(original, [{"op": "add", "path": "/spec/list/-", "value": value},
                                {"op": "copy", "from": "/spec/map", "path": "/spec/again"}])
    value["args"].append("x")
    out["spec"]["again"]["k"].append("w")
    assert out["spec"]["list"][-1] == {"name": "e", "args": []}
    assert original == _original() and out["spec"]["map"] == {"k": ["v"]}


def test_a_strategic_merge_patch_leaves_the_original_alone() -> None:
    original = _original()
    out = strategic_merge_patch(original, {"metadata": {"labels": {"y": "2"}}})
    out["spec"]["list"][0]["args"].append("b")
    out["metadata"]["labels"]["z"] = "3"
    assert original == _original()


def test_the_job_template_compare_copies_the_stored_template() -> None:
    old = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}], "nodeSelector": {"x": "y"}}}
    new = {"metadata": {"labels": {"a": "c"}}, "spec": {"containers": [{"name": "c"}], "tolerations": [{"key": "t"}]}}
    out = jobrules._with_directives_of(old, new)
    assert out == {"metadata": {"labels": {"a": "c"}}, "spec": {"containers": [{"name": "c"}], "tolerations": [{"key": "t"}]}}
    out["spec"]["containers"][0]["image"] = "i"
    out["spec"]["tolerations"].append({"key": "u"})
    assert old["spec"] == {"containers": [{"name": "c"}], "nodeSelector": {"x": "y"}}
    assert new["spec"]["tolerations"] == [{"key": "t"}]
