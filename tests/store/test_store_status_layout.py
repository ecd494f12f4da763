"""The bulk status write's body layout (hub.store.sqlite_status): a status spliced into a stored
body is exactly the text the layout gives for the decoded object with that status, and the store
then never decodes the body."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hub.api import fastjson
from hub.store import SQLiteStore
from hub.store import sqlite as sqlite_backend
from hub.store.sqlite_status import encode_status_layout, splice_status, stored_status

# JSON values whose strings may hold quotes, braces and the layout's own markers.
MARKERS = st.sampled_from(['"metadata":{"resourceVersion":"', ',"status":', "}", '"', "\\", "ü", "\u2028"])
texts = st.one_of(st.text(max_size=8), MARKERS, st.lists(MARKERS, max_size=3).map("".join))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), texts),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
    max_leaves=12,
)


def _object(rv: int, status: Any, extra: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    obj: dict[str, Any] = {"kind": "Workload", "apiVersion": "kueue.x-k8s.io/v1beta2", "spec": extra}
    obj["metadata"] = {"name": "w", "namespace": "ns", "labels": labels, "resourceVersion": str(rv)}
    obj["status"] = status
    return obj


@settings(max_examples=300, deadline=None)
@given(
    extra=st.dictionaries(texts, json_values, max_size=4),
    labels=st.dictionaries(texts, texts, max_size=3),
    first=json_values,
    second=json_values,
    rvs=st.tuples(st.integers(1, 10**12), st.integers(1, 10**12)),
)
def test_a_spliced_status_is_the_layout_of_the_new_object(
    extra: dict[str, Any], labels: dict[str, str], first: Any, second: Any, rvs: tuple[int, int]
) -> None:
    body, at = encode_status_layout(_object(rvs[0], first, extra, labels), fastjson.dumps)
    assert at is not None
    assert json.loads(body) == _object(rvs[0], first, extra, labels)
    assert stored_status(body, at) == fastjson.dumps(first)
    spliced = splice_status(body, at, rvs[0], rvs[1], fastjson.dumps(second))
    assert spliced == encode_status_layout(_object(rvs[1], second, extra, labels), fastjson.dumps)


def test_a_body_not_in_the_layout_is_not_spliced() -> None:
    plain = fastjson.dumps({"kind": "Workload", "metadata": {"name": "w", "resourceVersion": "5"}, "status": {}})
    assert splice_status(plain, 0, 5, 6, "{}") is None
    assert splice_status(plain, -3, 5, 6, "{}") is None
    body, at = encode_status_layout(_object(5, {"a": 1}, {}, {}), fastjson.dumps)
    assert at is not None
    assert splice_status(body, at, 4, 6, "{}") is None  # another resourceVersion than the stored one
    assert encode_status_layout({"kind": "Workload", "metadata": {"name": "w"}}, fastjson.dumps)[1] is None


def _raw(path: Path) -> tuple[str, int | None]:
    conn = sqlite3.connect(path)
    try:
        row = conn.execute("SELECT body, status_at FROM objects WHERE kind = 'Workload'").fetchone()
    finally:
        conn.close()
    return row[0], row[1]


def test_a_second_brief_status_write_decodes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "hub.db"
    with SQLiteStore(path) as store:
        created = store.create(_object(1, {"phase": "new"}, {"queueName": "q"}, {"team": "a"}))
        store.update_status_many([{**created, "status": {"phase": "pending"}}], brief=True)
    # A reopened store has no recent bodies: without the layout it would have to decode.
    with SQLiteStore(path) as store:
        def no_decoding(text: str, parse_constant: Any = None) -> Any:
            raise AssertionError("the stored body was decoded")

        monkeypatch.setattr(sqlite_backend.fastjson, "loads", no_decoding)
        ref = {"kind": "Workload", "metadata": {"name": "w", "namespace": "ns"}}
        out = store.update_status_many([{**ref, "status": {"phase": "admitted"}}], brief=True)[0]
        again = store.update_status_many([{**ref, "status": {"phase": "admitted"}}], brief=True)[0]
        monkeypatch.undo()
        assert isinstance(out, dict) and isinstance(again, dict)
        assert again["metadata"]["resourceVersion"] == out["metadata"]["resourceVersion"]  # unchanged: no write
        stored = store.get("Workload", "ns", "w")
        assert stored is not None
        assert stored["status"] == {"phase": "admitted"}
        assert stored["metadata"]["resourceVersion"] == out["metadata"]["resourceVersion"]
        assert stored["spec"] == {"queueName": "q"} and stored["metadata"]["labels"] == {"team": "a"}
        body, at = _raw(path)
        assert (body, at) == encode_status_layout(stored, fastjson.dumps)


def test_any_other_write_leaves_a_body_that_is_decoded_again(tmp_path: Path) -> None:
    path = tmp_path / "hub.db"
    with SQLiteStore(path) as store:
        created = store.create(_object(1, {"phase": "new"}, {"queueName": "q"}, {}))
        store.update_status_many([{**created, "status": {"phase": "pending"}}], brief=True)
        assert _raw(path)[1] is not None
        current = store.get("Workload", "ns", "w")
        assert current is not None
        current["metadata"]["labels"] = {"team": "b"}
        store.update(current)
        assert _raw(path)[1] is None
        ref = {"kind": "Workload", "metadata": {"name": "w", "namespace": "ns"}}
        store.update_status_many([{**ref, "status": {"phase": "admitted"}}], brief=True)
        stored = store.get("Workload", "ns", "w")
        assert stored is not None
        assert stored["metadata"]["labels"] == {"team": "b"} and stored["status"] == {"phase": "admitted"}


def test_a_version_1_file_is_upgraded_and_its_bodies_decoded_once(tmp_path: Path) -> None:
    path = tmp_path / "hub.db"
    conn = sqlite3.connect(path, isolation_level=None)
    from hub.store.sqlite_schema import MIGRATIONS

    MIGRATIONS[0](conn)  # the schema of version 1, as an older mkhub left it
    obj = _object(1, {"phase": "new"}, {"queueName": "q"}, {})
    conn.execute(
        "INSERT INTO objects (kind, namespace, name, uid, resource_version, body) VALUES (?, ?, ?, ?, ?, ?)",
        ("Workload", "ns", "w", "u1", 1, json.dumps(obj)),
    )
    conn.execute("UPDATE meta SET value = 1 WHERE key = 'resource_version'")
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    with SQLiteStore(path) as store:
        ref = {"kind": "Workload", "metadata": {"name": "w", "namespace": "ns"}}
        for phase in ("pending", "admitted"):
            store.update_status_many([{**ref, "status": {"phase": phase}}], brief=True)
        stored = store.get("Workload", "ns", "w")
        assert stored is not None and stored["status"] == {"phase": "admitted"}
        assert stored["metadata"]["resourceVersion"] == "3"
    assert _raw(path)[1] is not None
