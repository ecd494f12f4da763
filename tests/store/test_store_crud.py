from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from hub.store import (
    AlreadyExists,
    Conflict,
    EventType,
    InvalidObject,
    NotFound,
    SQLiteStore,
    Store,
)

Manifest = Callable[..., dict[str, Any]]


def drain(store: SQLiteStore, since: int = 0) -> list[tuple[str, str, int]]:
    w = store.watch(since=since)
    out = []
    while (ev := w.next(0)) is not None:
        out.append((ev.type.value, ev.object["metadata"]["name"], ev.resource_version))
    w.close()
    return out


def test_satisfies_protocol(store: SQLiteStore) -> None:
    assert isinstance(store, Store)


# ------------------------------------------------------------------ create / get


def test_create_sets_server_fields(store: SQLiteStore, mk: Manifest) -> None:
    created = store.create(mk())
    meta = created["metadata"]
    assert meta["resourceVersion"] == "1"
    assert meta["generation"] == 1
    assert meta["creationTimestamp"] == "2025-01-01T00:00:00Z"
    assert len(meta["uid"]) == 36
    assert store.get("Workload", "default", "w1") == created


def test_create_keeps_given_uid_and_timestamp(store: SQLiteStore, mk: Manifest) -> None:
    obj = mk()
    obj["metadata"].update(uid="u-1", creationTimestamp="2020-02-02T00:00:00Z", resourceVersion="99")
    created = store.create(obj)
    assert created["metadata"]["uid"] == "u-1"
    assert created["metadata"]["creationTimestamp"] == "2020-02-02T00:00:00Z"
    assert created["metadata"]["resourceVersion"] == "1"  # always assigned by the store


def test_create_does_not_mutate_input(store: SQLiteStore, mk: Manifest) -> None:
    obj = mk()
    store.create(obj)
    assert obj == mk()


def test_create_duplicate(store: SQLiteStore, mk: Manifest) -> None:
    store.create(mk())
    with pytest.raises(AlreadyExists, match="Workload default/w1"):
        store.create(mk())
    # Same name in another namespace or another kind is a different key.
    store.create(mk(namespace="other"))
    store.create(mk(kind="Job"))
    assert store.list("Workload")[1] == 3


def test_create_generates_name(store: SQLiteStore, mk: Manifest) -> None:
    obj = mk(name="")
    obj["metadata"] = {"generateName": "sample-job-", "namespace": "default"}
    names = {store.create(obj)["metadata"]["name"] for _ in range(20)}
    assert len(names) == 20
    for name in names:
        assert name.startswith("sample-job-") and len(name) == len("sample-job-") + 5
        assert set(name[len("sample-job-") :]) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert "generateName" in store.get("Workload", "default", names.pop())["metadata"]


def test_generate_name_leaves_room_for_the_suffix(store: SQLiteStore, mk: Manifest) -> None:
    obj = mk()
    obj["metadata"] = {"generateName": "x" * 80, "namespace": "default"}
    assert len(store.create(obj)["metadata"]["name"]) == 63


def test_generate_name_retries_a_collision(
    store: SQLiteStore, mk: Manifest, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hub.store import interface

    taken = mk(name="job-bbbbb")
    store.create(taken)
    picks = iter("bbbbb" + "ccccc")
    monkeypatch.setattr(interface.secrets, "choice", lambda _alphabet: next(picks))
    obj = mk()
    obj["metadata"] = {"generateName": "job-", "namespace": "default"}
    assert store.create(obj)["metadata"]["name"] == "job-ccccc"


def test_explicit_name_wins_over_generate_name(store: SQLiteStore, mk: Manifest) -> None:
    obj = mk(name="fixed")
    obj["metadata"]["generateName"] = "gen-"
    assert store.create(obj)["metadata"]["name"] == "fixed"


def test_cluster_scoped(store: SQLiteStore, mk: Manifest) -> None:
    store.create(mk(kind="ClusterQueue", name="cq", namespace=None))
    assert store.get("ClusterQueue", "", "cq") is not None
    with pytest.raises(AlreadyExists, match=r"ClusterQueue cq: already exists"):
        store.create(mk(kind="ClusterQueue", name="cq", namespace=""))


def test_results_are_private_copies(store: SQLiteStore, mk: Manifest) -> None:
    created = store.create(mk(spec={"podSets": [{"count": 1}]}))
    created["spec"]["podSets"][0]["count"] = 99
    got = store.get("Workload", "default", "w1")
    assert got is not None
    assert got["spec"]["podSets"][0]["count"] == 1
    got["spec"]["podSets"].clear()
    items, _ = store.list("Workload")
    assert items[0]["spec"]["podSets"] == [{"count": 1}]


def test_get_missing(store: SQLiteStore) -> None:
    assert store.get("Workload", "default", "nope") is None


@pytest.mark.parametrize(
    "bad",
    [
        {"metadata": {"name": "x"}},
        {"kind": "Workload", "metadata": {}},
        {"kind": "Workload"},
        {"kind": "Workload", "metadata": {"name": "x"}, "spec": {"s": {1, 2}}},
        {"kind": "Workload", "metadata": {"name": "x"}, "spec": {"f": math.nan}},
        {"kind": "Workload", "metadata": {"name": "x", "namespace": 3}},
    ],
)
def test_invalid_objects(store: SQLiteStore, bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidObject):
        store.create(bad)
    assert store.list("Workload") == ([], 0)


# ------------------------------------------------------------------ update


def test_spec_change_bumps_generation(store: SQLiteStore, mk: Manifest) -> None:
    obj = store.create(mk())
    obj["spec"]["queueName"] = "other"
    updated = store.update(obj)
    assert updated["metadata"]["generation"] == 2
    assert updated["metadata"]["resourceVersion"] == "2"
    assert store.get("Workload", "default", "w1") == updated


def test_metadata_change_keeps_generation(store: SQLiteStore, mk: Manifest) -> None:
    obj = store.create(mk())
    obj["metadata"]["labels"] = {"a": "b"}
    obj["metadata"]["annotations"] = {"note": "x"}
    updated = store.update(obj)
    assert updated["metadata"]["generation"] == 1
    assert updated["metadata"]["resourceVersion"] == "2"
    assert updated["metadata"]["labels"] == {"a": "b"}


def test_update_keeps_stored_status(store: SQLiteStore, mk: Manifest) -> None:
    store.create(mk(status={"phase": "stored"}))
    obj = mk(status={"phase": "ignored"}, spec={"queueName": "q2"})
    updated = store.update(obj)
    assert updated["status"] == {"phase": "stored"}
    assert updated["spec"] == {"queueName": "q2"}


def test_update_cannot_change_server_fields(store: SQLiteStore, mk: Manifest) -> None:
    created = store.create(mk())
    obj = mk()
    obj["metadata"].update(uid="forged", generation=7, creationTimestamp="1999-01-01T00:00:00Z")
    obj["metadata"]["labels"] = {"x": "y"}
    updated = store.update(obj)
    for field in ("uid", "generation", "creationTimestamp"):
        assert updated["metadata"][field] == created["metadata"][field]


def test_noop_update_writes_nothing(store: SQLiteStore, mk: Manifest) -> None:
    created = store.create(mk(status={"a": 1}))
    assert store.update(created) == created
    assert store.update_status(created) == created
    assert store.list("Workload")[1] == 1
    assert drain(store) == [("ADDED", "w1", 1)]


def test_update_conflict_and_last_write_wins(store: SQLiteStore, mk: Manifest) -> None:
    first = store.create(mk())
    second = store.update({**first, "spec": {"queueName": "b"}})
    with pytest.raises(Conflict, match="Workload default/w1"):
        store.update({**first, "spec": {"queueName": "c"}})
    with pytest.raises(Conflict):
        store.update({**second, "metadata": {**second["metadata"], "resourceVersion": "bogus"}})
    # Without a resourceVersion the write is unconditional.
    blind = mk(spec={"queueName": "d"})
    assert store.update(blind)["spec"] == {"queueName": "d"}


def test_update_missing(store: SQLiteStore, mk: Manifest) -> None:
    with pytest.raises(NotFound, match="Workload default/w1: not found"):
        store.update(mk())
    with pytest.raises(NotFound):
        store.update_status(mk())


# ------------------------------------------------------------------ update_status


def test_update_status_only_touches_status(store: SQLiteStore, mk: Manifest) -> None:
    created = store.create(mk(labels={"a": "b"}))
    obj = mk(spec={"queueName": "ignored"}, labels={"c": "d"}, status={"admitted": True})
    obj["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    updated = store.update_status(obj)
    assert updated["status"] == {"admitted": True}
    assert updated["spec"] == created["spec"]
    assert updated["metadata"]["labels"] == {"a": "b"}
    assert updated["metadata"]["generation"] == 1
    assert updated["metadata"]["resourceVersion"] == "2"
    with pytest.raises(Conflict):
        store.update_status(obj)  # its resourceVersion is now stale


def test_update_status_without_status_clears_it(store: SQLiteStore, mk: Manifest) -> None:
    store.create(mk(status={"a": 1}))
    assert "status" not in store.update_status(mk())


# ------------------------------------------------------------------ delete


def test_delete(store: SQLiteStore, mk: Manifest) -> None:
    store.create(mk())
    deleted = store.delete("Workload", "default", "w1")
    assert deleted["metadata"]["resourceVersion"] == "2"
    assert deleted["spec"] == {"queueName": "q"}
    assert store.get("Workload", "default", "w1") is None
    with pytest.raises(NotFound, match="Workload default/w1"):
        store.delete("Workload", "default", "w1")
    assert drain(store) == [("ADDED", "w1", 1), ("DELETED", "w1", 2)]


def test_delete_with_resource_version(store: SQLiteStore, mk: Manifest) -> None:
    store.create(mk())
    with pytest.raises(Conflict):
        store.delete("Workload", "default", "w1", resource_version="7")
    store.delete("Workload", "default", "w1", resource_version=1)
    assert store.get("Workload", "default", "w1") is None


def test_delete_waits_for_finalizers(store: SQLiteStore, mk: Manifest) -> None:
    obj = mk()
    obj["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    store.create(obj)
    marked = store.delete("Workload", "default", "w1")
    assert marked["metadata"]["deletionTimestamp"] == "2025-01-01T00:00:00Z"
    assert marked["metadata"]["generation"] == 2
    assert store.get("Workload", "default", "w1") == marked
    assert store.delete("Workload", "default", "w1") == marked  # already terminating: no-op
    # An update cannot clear the deletion mark.
    obj["spec"] = {"queueName": "q2"}
    assert store.update(obj)["metadata"]["deletionTimestamp"] == "2025-01-01T00:00:00Z"
    released = store.update(mk())  # finalizers dropped -> deleted
    assert store.get("Workload", "default", "w1") is None
    assert released["metadata"]["resourceVersion"] == "4"
    assert drain(store) == [
        ("ADDED", "w1", 1),
        ("MODIFIED", "w1", 2),
        ("MODIFIED", "w1", 3),
        ("DELETED", "w1", 4),
    ]


# ------------------------------------------------------------------ list and resourceVersions


def test_list_sorted_and_filtered(store: SQLiteStore, mk: Manifest) -> None:
    for ns, name in [("b", "y"), ("a", "z"), ("b", "x"), ("a", "a")]:
        store.create(mk(name=name, namespace=ns))
    store.create(mk(kind="LocalQueue", name="lq", namespace="a"))
    items, rv = store.list("Workload")
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in items] == [
        ("a", "a"),
        ("a", "z"),
        ("b", "x"),
        ("b", "y"),
    ]
    assert rv == 5
    assert [o["metadata"]["name"] for o in store.list("Workload", namespace="b")[0]] == ["x", "y"]
    assert store.list("Workload", namespace="")[0] == []
    assert store.list("Nothing") == ([], 5)


def test_list_with_label_selector(store: SQLiteStore, mk: Manifest) -> None:
    store.create(mk(name="a", labels={"queue": "main", "tier": "gpu"}))
    store.create(mk(name="b", labels={"queue": "main"}))
    store.create(mk(name="c"))

    def names(selector: Any) -> list[str]:
        return [o["metadata"]["name"] for o in store.list("Workload", label_selector=selector)[0]]

    assert names("queue=main") == ["a", "b"]
    assert names("queue=main,!tier") == ["b"]
    assert names("queue!=main") == ["c"]
    assert names({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}) == ["a"]
    assert names("") == ["a", "b", "c"]


def test_resource_version_is_global(store: SQLiteStore, mk: Manifest) -> None:
    rvs = [
        store.create(mk(kind="Namespace", name="ns", namespace=None)),
        store.create(mk(kind="ClusterQueue", name="cq", namespace=None)),
        store.create(mk(kind="Workload")),
    ]
    assert [int(o["metadata"]["resourceVersion"]) for o in rvs] == [1, 2, 3]
    assert store.delete("ClusterQueue", "", "cq")["metadata"]["resourceVersion"] == "4"
    assert store.list("Namespace")[1] == 4


def test_event_types(store: SQLiteStore, mk: Manifest) -> None:
    created = store.create(mk())
    store.update_status({**created, "status": {"x": 1}})
    store.delete("Workload", "default", "w1")
    w = store.watch()
    assert [w.next(0).type for _ in range(3)] == [  # type: ignore[union-attr]
        EventType.ADDED,
        EventType.MODIFIED,
        EventType.DELETED,
    ]


def test_closed_store_refuses_work(mk: Manifest) -> None:
    store = SQLiteStore(":memory:")
    store.close()
    store.close()  # idempotent
    with pytest.raises(Exception, match="closed"):
        store.create(mk())
    with pytest.raises(Exception, match="closed"):
        store.get("Workload", "default", "w1")
