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


def test_a_create_of_an_object_naming_its_version_and_kind_serializes_the_callers_object(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []
    real = rq._body
    monkeypatch.setattr(rq, "_body", lambda obj, nulls=0: seen.append(obj) or real(obj, nulls))
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "a.1", "namespace": "ns"}, "reason": "Admitted"}
    req = rq.create(rq.resource_for("Event", "v1"), event)
    assert seen[-1] is event and req.json() == event
    assert req.path == "/api/v1/namespaces/ns/events"
    older = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"}}
    req = rq.create(RES, older)  # another version than the resource's: the resource's is written
    assert seen[-1] is not older and req.json()["apiVersion"] == RES.api_version and older["apiVersion"].endswith("v1beta1")
    assert list(req.json()) == ["apiVersion", "kind", "metadata"]


def test_a_collections_path_is_made_once_per_namespace() -> None:
    res = rq.resource_for("Event", "v1")
    first = res.collection("team-a")
    assert first == "/api/v1/namespaces/team-a/events" and res.collection("team-a") is first
    assert res.collection(None) == "/api/v1/events" and res.collection("") == "/api/v1/events"
    again = rq.Resource("Event", "", "v1", "events", False)  # the same path, another scope: not the cached one
    assert again.collection("team-a") == "/api/v1/events"
    with pytest.raises(ValueError, match="not a valid name"):
        res.collection("a/b")


def test_a_write_bounded_by_the_lease_reads_its_url_without_encoding_the_query_again(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    from urllib.parse import urlencode

    from hub.store.kube.transport import _bounded

    plain = rq.merge_patch(RES, "ns", "a", {"status": {}}, status=True)
    bare = rq.Request("DELETE", "/api/v1/namespaces/ns/events/e", rq._write_query(None))
    expected = [urlencode((*r.query, ("timeout", "12345ms"))) for r in (plain, bare)]
    monkeypatch.setattr(rq, "urlencode", lambda q: pytest.fail(f"encoded {q!r} again"))
    bounded = [_bounded(r, 12.345) for r in (plain, bare)]
    assert [b.url.partition("?")[2] for b in bounded] == expected == ["fieldManager=mkhub&timeout=12345ms", "timeout=12345ms"]
    assert bounded[0].body == plain.body and bounded[0].content_type == plain.content_type
    assert _bounded(plain, 30.0) is plain


def test_a_timeout_that_needs_quoting_is_encoded_as_urlencode_would() -> None:
    req = rq.Request("PATCH", "/x", (("fieldManager", "mkhub"), ("timeout", "1 s")))
    assert req.url == "/x?fieldManager=mkhub&timeout=1+s"
