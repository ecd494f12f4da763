"""Request bodies decoded by orjson, with the keys a text repeats still found as the standard
library's pair hook finds them (``fieldValidation``'s ``duplicate field``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.kubeapi import bodies


def _reference(raw: bytes) -> tuple[Any, list[str]]:
    """The decoder before orjson: the standard library with a hook noting repeated keys."""
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in items:
            if key in seen:
                repeated.append(key)
            seen.add(key)
        return dict(items)

    return json.loads(raw, object_pairs_hook=pairs), repeated


REPEATING = [
    b'{"a": 1, "a": 2}',
    b'{"metadata": {"name": "x"}, "spec": {}, "metadata": {"name": "y"}}',
    b'{"items": [{"k": "2026-11-27T11:18:26Z", "k": "t:1"}]}',  # colons in the strings
    b'{"a": "x:y", "b": {"c": 1, "c": 2}}',
    b'{"a": "q\\"uote:", "a": "back\\\\slash"}',  # escapes: counted outside strings
    b'{"a": "\\u003a", "a": "\\u003a"}',  # escaped colons decode to colons the text does not show
    b'{"a": "\\u003a\\u003a", "b": 1, "b": 2}',
    b'{"a" : 1 , "a" : 2}',
]


@pytest.mark.parametrize("raw", REPEATING)
def test_a_repeated_key_is_found_as_the_standard_library_finds_it(raw: bytes) -> None:
    assert bodies.decode_body(raw, "application/json") == _reference(raw)
    assert bodies.decode_body(raw, "application/json")[1]


def test_a_body_without_repeated_keys_is_decoded_without_the_standard_library(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook decoder was 5 % of the manager API server's CPU in `bench kube --workers 2`."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the standard library's decoder was used")

    raw = json.dumps({"metadata": {"name": "j", "resourceVersion": "5"}, "status": {"conditions": [
        {"type": "Admitted", "lastTransitionTime": "2026-11-27T11:18:26.606796Z", "message": 'got "w2": ok'}],
        "nominatedClusterNames": None}}).encode()
    monkeypatch.setattr(bodies.json, "loads", refuse)
    assert bodies.decode_body(raw, "application/merge-patch+json") == (json.JSONDecoder().decode(raw.decode()), [])


@pytest.mark.parametrize("raw", [b'{"a": 123456789012345678901234567890}', b'{"a": NaN}', b'{"a": "\\ud800"}', b'[1e400]'])
def test_what_orjson_reads_differently_is_decoded_as_before(raw: bytes) -> None:
    decoded, repeated = bodies.decode_body(raw, "application/json")
    assert json.dumps(decoded) == json.dumps(_reference(raw)[0]) and repeated == []


_keys = st.sampled_from(["a", "b", "c:", "d\"", "e\\", ":", "\u00e9"])
_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.sampled_from(["", ":", "a:b", "\\", "\"", "\u003a"])
_pairs = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.lists(st.tuples(_keys, inner), max_size=4),
    max_leaves=12,
)


def _text(value: Any, spaced: bool) -> str:
    """JSON text of nested (key, value) lists as objects (keys may repeat), lists as arrays."""
    colon = " : " if spaced else ":"
    if isinstance(value, list) and value and all(isinstance(p, tuple) for p in value):
        return "{" + ",".join(json.dumps(k) + colon + _text(v, spaced) for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_text(v, spaced) for v in value) + "]"
    return json.dumps(value, ensure_ascii=spaced)


@given(_pairs.filter(lambda v: isinstance(v, list) and all(isinstance(p, tuple) for p in v)), st.booleans())
def test_any_object_decodes_as_the_standard_library_decodes_it(value: Any, spaced: bool) -> None:
    raw = _text(value, spaced).encode()
    assert bodies.decode_body(raw, "application/json") == _reference(raw)
