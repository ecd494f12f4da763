"""parse_object copies a manifest and checks its nesting depth in one walk (limits.copy_within_depth):
the copy is the general copy's, and the refusal is check_depth's, path included."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hub.api.conversion import json_copy
from hub.api.errors import ValidationError
from hub.api.limits import MAX_DEPTH, TooDeep, check_depth, copy_within_depth
from hub.api.registry import parse_object
from tests.hypothesis_budget import examples

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=20)


def nested(levels: int) -> dict[str, Any]:
    """A chain of ``levels`` containers: the deepest at depth ``levels - 1`` (the root at 0)."""
    doc: Any = {}
    for i in range(levels - 2):
        doc = {"a": doc} if i % 2 else [doc]
    return {"root": doc} if levels > 1 else doc


def containers(value: Any) -> list[int]:
    out: list[int] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict | list):
            out.append(id(node))
            stack.extend(node.values() if isinstance(node, dict) else node)
    return out


@settings(max_examples=examples(300), derandomize=True, database=None, deadline=None)
@given(st.dictionaries(st.text(max_size=3), JSON, max_size=4))
def test_the_copy_equals_the_general_copy_and_shares_no_container(doc: dict[str, Any]) -> None:
    copied = copy_within_depth(doc)
    assert copied == json_copy(doc)
    assert not set(containers(copied)) & set(containers(doc))


@pytest.mark.parametrize("levels", [1, 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 5])
def test_too_deep_exactly_where_check_depth_says(levels: int) -> None:
    doc = nested(levels)
    try:
        check_depth(doc)
        refused = False
    except TooDeep:
        refused = True
    assert (copy_within_depth(doc) is None) == refused
    assert refused == (levels > MAX_DEPTH)


def test_what_is_not_plain_json_is_left_to_the_general_path() -> None:
    assert copy_within_depth({"a": (1, 2)}) is None
    assert copy_within_depth({"a": [{"b": 1}]}) == {"a": [{"b": 1}]}


def test_a_too_deep_manifest_is_refused_in_one_line_naming_the_path() -> None:
    manifest: dict[str, Any] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                                "metadata": {"name": "w", "namespace": "ns"}, "spec": nested(MAX_DEPTH)}
    with pytest.raises(ValidationError) as err:
        parse_object(manifest)
    message = str(err.value)
    assert "\n" not in message and "spec.root" in message and f"nested deeper than {MAX_DEPTH}" in message


def test_the_parsed_object_shares_nothing_with_the_manifest() -> None:
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    manifest = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"},
                "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": template}]}}
    before = json_copy(manifest)
    wl: Any = parse_object(manifest)
    assert manifest == before  # converted to v1beta2 on its copy, not in place
    assert wl.pod_sets[0].template == template and wl.pod_sets[0].template["spec"] is not template["spec"]
