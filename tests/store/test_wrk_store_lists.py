"""A label-selected list decodes only the objects that can match (hub.store.sqlite_lists)."""

from __future__ import annotations

from typing import Any

import pytest

from hub.api import fastjson
from hub.store import SQLiteStore
from tests.store.conftest import Manifest


def _count_decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real = fastjson.loads

    def counting(data: Any) -> Any:
        calls[0] += 1
        return real(data)

    monkeypatch.setattr(fastjson, "loads", counting)
    return calls


def test_equality_selector_decodes_only_candidates(store: SQLiteStore, mk: Manifest, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(50):
        store.create(mk(name=f"p{i}", labels={"controller-uid": f"uid-{i}", "app": "x"}))
    calls = _count_decodes(monkeypatch)
    items, _ = store.list("Workload", "default", "controller-uid=uid-7")
    assert [o["metadata"]["name"] for o in items] == ["p7"]
    assert calls[0] == 1  # not 50: the other bodies never left SQLite
    calls[0] = 0
    items, _ = store.list("Workload", None, "controller-uid in (uid-3,uid-30),app=x")
    assert [o["metadata"]["name"] for o in items] == ["p3", "p30"]
    assert calls[0] == 2


def test_narrowed_list_is_still_exact(store: SQLiteStore, mk: Manifest) -> None:
    # The value appears in the body, but not as this label's value: still not selected.
    store.create(mk(name="main", labels={"other": "main"}))
    store.create(mk(name="a", labels={"queue": "main", "tier": "gpu"}))
    store.create(mk(name="b", labels={"queue": "main.v2"}))
    store.create(mk(name="c", labels={"queue": ""}))

    def names(selector: Any) -> list[str]:
        return [o["metadata"]["name"] for o in store.list("Workload", label_selector=selector)[0]]

    assert names("queue=main") == ["a"]
    assert names("queue in (main,main.v2)") == ["a", "b"]
    assert names("queue=") == ["c"]
    assert names("queue!=main") == ["b", "c", "main"]
    assert names("queue,tier=gpu") == ["a"]
    assert names({"matchLabels": {"queue": "main.v2"}}) == ["b"]
