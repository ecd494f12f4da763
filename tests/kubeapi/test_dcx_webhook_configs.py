"""The admission webhooks' configurations are listed again only after one changed: every write asks
whether any is configured (twice: mutating and validating), and the lists were a twentieth of the
dev-cluster's CPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hub.kubeapi.webhooks import VALIDATING, WebhookCaller
from hub.store import SQLiteStore


def _config(name: str) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": VALIDATING, "metadata": {"name": name},
            "webhooks": []}


def test_configurations_are_listed_again_only_after_a_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    lists = [0]
    original = store.list

    def counted(kind: str, *args: Any, **kw: Any) -> Any:
        lists[0] += kind == VALIDATING
        return original(kind, *args, **kw)

    monkeypatch.setattr(store, "list", counted)
    try:
        caller = WebhookCaller(store, VALIDATING)
        assert not any(caller.configured() for _ in range(5))
        assert lists[0] == 1
        store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default", "name": "x"}})
        assert not caller.configured() and lists[0] == 1  # another kind's change
        store.create(_config("a"))
        assert all(caller.configured() for _ in range(3))
        assert lists[0] == 2
        with pytest.raises(RuntimeError), store.batch():  # the caller's own batch: its lists see its writes
            store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default", "name": "y"}})
            assert caller.configured() and lists[0] == 2  # as a write asks in its batch
            store.delete(VALIDATING, "", "a")
            assert not caller.configured()
            raise RuntimeError("rolled back")
        assert caller.configured()
        store.delete(VALIDATING, "", "a")
        assert not caller.configured()
    finally:
        store.close()
