"""The cache's change log holds each change's object as the server sent it, uncopied: a watch
copies what it delivers and shows the store's version there, and nothing a reader does to what
it got reaches the cache or another watch."""

from __future__ import annotations

from hub.store.interface import EventType, ObjectKey
from hub.store.kube.cache import Cache

from .test_cache import wl


def test_a_delivered_change_shows_the_stores_version_in_a_copy_of_its_own() -> None:
    c = Cache()
    first, second = c.watch(["Workload"], 0), c.watch(None, 0)
    c.apply("ADDED", wl("a", 500, v={"n": 1}))
    c.apply("MODIFIED", wl("a", 501, v={"n": 2}))
    got = [first.next(0), first.next(0)]
    assert [(e.type, e.resource_version, e.object["metadata"]["resourceVersion"], e.object["spec"]) for e in got if e] == [
        (EventType.ADDED, 1, "1", {"v": {"n": 1}}), (EventType.MODIFIED, 2, "2", {"v": {"n": 2}})]
    assert got[1] is not None
    got[1].object["spec"]["v"]["n"] = 99
    got[1].object["metadata"]["resourceVersion"] = "x"
    entry = c.entry(ObjectKey("Workload", "ns", "a"))
    assert entry is not None and entry.obj["spec"] == {"v": {"n": 2}}
    assert entry.obj["metadata"]["resourceVersion"] == "501"  # the cache keeps the server's version
    second.next(0)
    other = second.next(0)
    assert other is not None and other.object["spec"] == {"v": {"n": 2}} and other.object["metadata"]["resourceVersion"] == "2"
