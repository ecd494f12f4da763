"""hub.api.fastjson: orjson's text wherever it equals json's. A ``null`` in orjson's output sends the
value to json only when a float in it is NaN or infinite (orjson writes those as null too)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.api import fastjson

POD_STATUS = {"conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-11-28T00:00:00Z"}],
              "phase": "Running", "ratio": 0.5}


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def test_a_null_is_written_by_orjson_and_equals_json(monkeypatch: pytest.MonkeyPatch) -> None:
    fell_back: list[object] = []
    monkeypatch.setattr(fastjson, "_COMPACT", _Spy(fastjson._COMPACT, fell_back))
    assert fastjson.dumps(POD_STATUS) == _compact(POD_STATUS)
    assert fell_back == []  # no NaN: orjson's own text
    assert fastjson.utf8_size(POD_STATUS) == len(_compact(POD_STATUS).encode())


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_nan_or_infinity_anywhere_is_refused_as_json_refuses_it(bad: float) -> None:
    deep = {"a": [None, {"b": [1, 2.5, {"c": bad}]}]}
    with pytest.raises(ValueError):
        fastjson.dumps(deep)
    with pytest.raises(ValueError):
        fastjson.dumps_sorted(deep)
    assert fastjson.utf8_size(deep) is None  # the caller measures json's text instead
    assert fastjson.utf8_size((None, bad)) is None


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


@given(_json)
def test_dumps_is_json_dumps_or_raises_as_it_does(value: object) -> None:
    try:
        expected = _compact(value)
    except ValueError:
        with pytest.raises(ValueError):
            fastjson.dumps(value)
        return
    assert json.loads(fastjson.dumps(value)) == json.loads(expected)


class _Spy:
    def __init__(self, encoder: json.JSONEncoder, calls: list[object]) -> None:
        self.encoder, self.calls = encoder, calls

    def encode(self, value: object) -> str:
        self.calls.append(value)
        return self.encoder.encode(value)
