"""A batch of writes (the hub's round) wakes the cache's watches once, when it ends, instead of
once per change; every change still reaches them, in order."""

from __future__ import annotations

from typing import Any

from hub.store.kube.cache import Cache


def wl(name: str, rv: int) -> dict[str, Any]:
    return {"kind": "Workload", "metadata": {"namespace": "ns", "name": name, "resourceVersion": str(rv)}}


class _Counting:
    """Stands in for the cache's condition's notify_all, counting the wakes."""

    def __init__(self, cache: Cache) -> None:
        self.wakes = 0
        self._real = cache._cond.notify_all

    def __call__(self) -> None:
        self.wakes += 1
        self._real()


def test_changes_inside_a_batch_wake_the_watches_once_when_it_ends() -> None:
    cache = Cache()
    watch = cache.watch(None, 0)
    wakes = _Counting(cache)
    cache._cond.notify_all = wakes  # type: ignore[method-assign]
    cache.apply("ADDED", wl("before", 1))
    assert wakes.wakes == 1  # outside a batch: at once
    cache.hold()
    cache.hold()  # two writers' batches at once (the round and the control API)
    for i, name in enumerate(("a", "b", "c"), start=2):
        cache.apply("ADDED", wl(name, i))
    cache.apply("DELETED", wl("a", 9))
    cache.release()
    assert wakes.wakes == 1  # another batch is still open
    cache.release()
    assert wakes.wakes == 2
    cache.hold()
    cache.release()
    assert wakes.wakes == 2  # nothing changed: nobody to wake
    seen = []
    while (event := watch.next(0)) is not None:
        seen.append((event.type.value, event.object["metadata"]["name"]))
    assert seen == [("ADDED", "before"), ("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c"), ("DELETED", "a")]
