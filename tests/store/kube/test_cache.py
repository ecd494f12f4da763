"""The informers' cache: server resourceVersions order changes, the store's own counter numbers them."""

from __future__ import annotations

from typing import Any

import pytest

from hub.store.interface import EventType, Gone, StoreError
from hub.store.kube.cache import Cache


def wl(name: str, rv: int, **spec: Any) -> dict[str, Any]:
    return {"kind": "Workload", "metadata": {"namespace": "ns", "name": name, "resourceVersion": str(rv)}, "spec": spec}


def test_changes_get_the_stores_own_increasing_numbers() -> None:
    c = Cache()
    c.apply("ADDED", wl("a", 500))
    c.apply("ADDED", {"kind": "ClusterQueue", "metadata": {"name": "cq", "resourceVersion": "90"}})
    objs, seq = c.list("Workload")
    assert seq == 2
    assert objs[0]["metadata"]["resourceVersion"] == "1"
    assert c.get(c_key("cq"))["metadata"]["resourceVersion"] == "2"  # type: ignore[index]


def c_key(name: str) -> Any:
    from hub.store.interface import ObjectKey

    return ObjectKey("ClusterQueue", "", name)


def test_late_and_duplicate_events_never_roll_an_object_back() -> None:
    c = Cache()
    c.apply("ADDED", wl("a", 10, v=1))
    assert c.apply("MODIFIED", wl("a", 12, v=3)) is not None  # our write's answer, applied at once
    assert c.apply("MODIFIED", wl("a", 11, v=2)) is None  # the stream lags behind it
    assert c.apply("MODIFIED", wl("a", 12, v=3)) is None  # the stream catches up: already known
    assert c.list("Workload")[0][0]["spec"] == {"v": 3}
    assert c.seq == 2


def test_deletion_leaves_a_tombstone_until_the_stream_passes_it() -> None:
    c = Cache()
    c.apply("ADDED", wl("a", 10))
    c.apply("DELETED", wl("a", 10))  # our delete's answer: the last version
    assert c.apply("MODIFIED", wl("a", 10)) is None  # a late event cannot resurrect it
    assert c.list("Workload")[0] == []
    assert c.apply("ADDED", wl("a", 20)) is not None  # re-created later: a new object
    c.forget_tombstones("Workload", 30)


def test_replace_deletes_what_the_list_lacks_but_keeps_newer_writes() -> None:
    c = Cache()
    c.apply("ADDED", wl("gone", 5))
    c.apply("ADDED", wl("kept", 6))
    c.apply("ADDED", wl("mine", 40))  # written by us after the list below was taken
    with c.watch(None, c.seq) as w:
        c.replace("Workload", [wl("kept", 6), wl("new", 7)], list_srv=30)
        events = [w.next(0) for _ in range(2)]
    names = [(e.type, e.object["metadata"]["name"]) for e in events if e is not None]
    assert names == [(EventType.ADDED, "new"), (EventType.DELETED, "gone")]
    assert [o["metadata"]["name"] for o in c.list("Workload")[0]] == ["kept", "mine", "new"]


def test_watch_continues_exactly_after_a_list_and_filters_kinds() -> None:
    c = Cache()
    c.apply("ADDED", wl("a", 1))
    _, seq = c.list("Workload")
    c.apply("ADDED", {"kind": "ClusterQueue", "metadata": {"name": "cq", "resourceVersion": "2"}})
    c.apply("MODIFIED", wl("a", 3))
    w = c.watch(["Workload"], seq)
    ev = w.next(0)
    assert ev is not None and (ev.type, ev.resource_version) == (EventType.MODIFIED, 3)
    assert w.next(0) is None


def test_watch_from_outside_the_log_is_gone() -> None:
    c = Cache(log_retention=2)
    for i in range(5):
        c.apply("ADDED", wl(f"w{i}", i + 1))
    with pytest.raises(Gone):
        c.watch(None, 1)
    with pytest.raises(Gone):
        c.watch(None, 99)
    assert c.watch(None, 3).next(0) is not None


def test_non_integer_resource_versions_are_refused() -> None:
    with pytest.raises(StoreError, match="not an integer"):
        Cache().apply("ADDED", {"kind": "Workload", "metadata": {"namespace": "n", "name": "a", "resourceVersion": "abc"}})


def _with_uid(obj: dict[str, Any], uid: str) -> dict[str, Any]:
    obj["metadata"]["uid"] = uid
    return obj


@pytest.mark.parametrize("how", ["watch", "relist"])
def test_a_new_uid_under_the_same_name_is_a_new_object(how: str) -> None:
    # Deleted and created again while nobody watched: the server's next word is the new
    # object under the old name. It must reach the hub as the old one's end and a new start.
    c = Cache()
    c.apply("ADDED", _with_uid(wl("a", 10, admitted=True), "old"))
    _, since = c.list("Workload")
    watch = c.watch(["Workload"], since)
    if how == "watch":
        c.apply("MODIFIED", _with_uid(wl("a", 20), "new"))
    else:
        c.replace("Workload", [_with_uid(wl("a", 20), "new")], 20)
    deleted, added = watch.next(0), watch.next(0)
    assert deleted is not None and added is not None and watch.next(0) is None
    assert (deleted.type, deleted.object["metadata"]["uid"], deleted.object["spec"]) == (EventType.DELETED, "old", {"admitted": True})
    assert (added.type, added.object["metadata"]["uid"], added.object["spec"]) == (EventType.ADDED, "new", {})
    c.apply("MODIFIED", _with_uid(wl("a", 21, v=1), "new"))  # the same object again: a modification
    modified = watch.next(0)
    assert modified is not None and modified.type == EventType.MODIFIED


def test_a_shared_list_shows_the_stores_numbers_and_leaves_the_cache_as_it_was() -> None:
    c = Cache()
    c.apply("ADDED", wl("a", 500, podSets=[{"name": "main"}]))
    copied, seq = c.list("Workload")
    shared, shared_seq = c.list("Workload", shared=True)
    assert shared == copied and shared_seq == seq
    assert shared[0]["metadata"]["resourceVersion"] == "1"  # the store's number, not the server's 500
    assert shared[0]["spec"] is c.list("Workload", shared=True)[0][0]["spec"]  # no deep copy
    assert copied[0]["spec"] is not shared[0]["spec"]
    from hub.store.interface import ObjectKey

    entry = c.entry(ObjectKey("Workload", "ns", "a"))
    assert entry is not None and entry.obj["metadata"]["resourceVersion"] == "500"  # its metadata was copied
