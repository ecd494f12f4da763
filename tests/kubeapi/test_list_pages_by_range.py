"""Paged lists over the embedded store read only their page (hub.store.sqlite_pages): the same
items, versions, tokens and 410s as the state rebuilt from the change log (hub.kubeapi.history),
for any mix of creates, changes and deletes between the pages."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from hub.kubeapi.history import TooOld, objects_at
from hub.kubeapi.reads import Target, list_page
from hub.kubeapi.resources import BY_KIND
from hub.store import SQLiteStore
from hub.store.sqlite_pages import TooOld as PageTooOld

from .conftest import make_store


def _cm(ns: str, name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": ns, "name": name, "labels": labels},
            "data": {"v": "0"}}


def _names(items: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(o["metadata"]["namespace"], o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in items]


@pytest.mark.parametrize("seed", range(8))
def test_a_page_at_an_older_version_is_the_state_the_change_log_gives(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    store = make_store(tmp_path / "s.db")
    try:
        live: set[tuple[str, str]] = set()
        versions: list[int] = []
        for step in range(160):
            ns, name = rnd.choice(["a", "b", "c"]), f"cm-{rnd.randrange(30):02d}"
            if (ns, name) in live and rnd.random() < 0.3:
                store.delete("ConfigMap", ns, name)
                live.discard((ns, name))
            elif (ns, name) in live:
                obj = store.get("ConfigMap", ns, name)
                assert obj is not None
                obj["data"] = {"v": str(step)}
                store.update(obj)
            else:
                store.create(_cm(ns, name, parity=str(step % 2)))
                live.add((ns, name))
            versions.append(store.list("ConfigMap", "\x00")[1])
        now = versions[-1]
        for at in rnd.sample(versions, 12) + [now]:
            for namespace in (None, "b"):
                want, _ = objects_at(store, "ConfigMap", namespace, at)
                for limit in (1, 4, 7, 0):
                    got: list[dict[str, Any]] = []
                    after: tuple[str, str] | None = None
                    while True:
                        chunk = store.list_chunk("ConfigMap", namespace, after=after, at=at, limit=limit)
                        assert chunk.resource_version == at
                        got += chunk.items
                        if chunk.more:
                            assert chunk.remaining == len(want) - len(got)
                        if not chunk.more:
                            break
                        last = chunk.items[-1]["metadata"]
                        after = (last["namespace"], last["name"])
                    assert _names(got) == _names(want)
                # A predicate picks before the limit, and the count is not given.
                odd = [o for o in want if o["metadata"]["labels"]["parity"] == "1"]
                chunk = store.list_chunk("ConfigMap", namespace, after=None, at=at, limit=2,
                                         keep=lambda o: o["metadata"]["labels"]["parity"] == "1")
                assert _names(chunk.items) == _names(odd[:2]) and chunk.more == (len(odd) > 2) and chunk.remaining is None
    finally:
        store.close()


def test_a_page_older_than_the_log_is_too_old_where_the_change_log_says_so(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s.db", log_retention=4, watch_cache=4)
    try:
        for i in range(3):
            store.create(_cm("a", f"cm-{i}"))
        at = store.list("ConfigMap", "\x00")[1]
        for i in range(3, 20):
            store.create(_cm("a", f"cm-{i}"))
        with pytest.raises(TooOld):
            objects_at(store, "ConfigMap", None, at)
        with pytest.raises(PageTooOld):
            store.list_chunk("ConfigMap", None, after=None, at=at, limit=2)
    finally:
        store.close()


class _Counting(SQLiteStore):
    whole_lists = 0

    def list(self, kind: str, namespace: str | None = None, label_selector: Any = None) -> Any:
        if namespace != "\x00":  # not the version probe
            self.whole_lists += 1
        return super().list(kind, namespace, label_selector)


def test_a_continue_page_does_not_read_the_whole_kind(tmp_path: Path) -> None:
    store = _Counting(tmp_path / "s.db")
    try:
        for i in range(30):
            store.create(_cm("a", f"cm-{i:02d}"))
        target = Target(BY_KIND["ConfigMap"], "v1", "a")
        first = list_page(store, target, {"limit": "10"})
        second = list_page(store, target, {"limit": "10", "continue": first.continue_token})
        assert [o["metadata"]["name"] for o in second.items] == [f"cm-{i:02d}" for i in range(10, 20)]
        assert second.remaining == 10 and second.resource_version == first.resource_version
        assert store.whole_lists == 0
    finally:
        store.close()
