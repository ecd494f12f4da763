"""A write's request body costs one orjson encoding, also when the patch removes fields; what
orjson would write differently from ``json`` (NaN as null) still goes to ``json``, which refuses it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hub.store.kube import requests as rq

RES = rq.resource_for("Workload")


class _NoJson:
    def encode(self, obj: Any) -> str:
        raise AssertionError(f"encoded twice: {obj!r}")


def test_a_status_patch_that_removes_fields_is_written_once_by_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    old = {"conditions": [{"type": "QuotaReserved", "status": "False"}], "requeueState": {"count": 1},
           "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 2}]}}
    new = {"conditions": [{"type": "QuotaReserved", "status": "True"}], "admission": {"clusterQueue": "cq"}}
    patch, nulls = rq.merge_diff_counted(old, new)
    assert nulls == 2 and patch == rq.merge_diff(old, new)
    monkeypatch.setattr(rq, "_encoder", _NoJson())
    req = rq.merge_patch(RES, "ns", "a", {"status": patch}, status=True, nulls=nulls)
    assert req.json() == {"status": {"conditions": [{"type": "QuotaReserved", "status": "True"}], "requeueState": None,
                                     "admission": {"podSetAssignments": None}}}


@pytest.mark.parametrize("status", [
    {"gone": None, "ratio": float("nan")},  # a NaN where a removal's null was expected
    {"gone": None, "kept": {"inner": None}},  # a null the diff did not write (new's own)
])
def test_a_null_the_diff_did_not_write_sends_the_body_through_json(status: dict[str, Any]) -> None:
    if any(isinstance(v, float) for v in status.values()):
        with pytest.raises(ValueError, match="Out of range float"):
            rq.merge_patch(RES, "ns", "a", {"status": status}, status=True, nulls=1)
        return
    req = rq.merge_patch(RES, "ns", "a", {"status": status}, status=True, nulls=1)
    assert req.body == json.dumps({"status": status}, separators=(",", ":")).encode()


def test_a_message_saying_null_is_written_as_json_would() -> None:
    status = {"gone": None, "message": "no nulls here: null"}
    req = rq.merge_patch(RES, "ns", "a", {"status": status}, status=True, nulls=1)
    assert req.json() == {"status": status}
