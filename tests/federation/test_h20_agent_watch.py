"""The Kubernetes-mode agent's watch of its worker delivers no Workload change but a deletion
(issue 26: the others are the echoes of the agent's own creates and status writes, two or three a
Job, each deep-copied, waking the agent's loop and a settle round for nothing); everything else it
follows (its queues, Jobs, Pods) still comes, in order."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from hub.store.interface import EventType
from hub.store.kube.cache import Cache
from worker_agent.kube.cluster import KubeCluster

pytestmark = pytest.mark.timeout(30)


def _obj(kind: str, name: str, rv: int, **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"namespace": "ns", "name": name, "resourceVersion": str(rv), "uid": f"u-{name}"}, **extra}


def test_the_cache_watch_drops_what_only_says_is_not_wanted_before_copying_it() -> None:
    cache = Cache()
    watch = cache.watch(["Workload", "Job"], since=0)
    watch.only(lambda type_, kind: kind != "Workload" or type_ == EventType.DELETED)
    cache.apply("ADDED", _obj("Workload", "a", 1))
    cache.apply("MODIFIED", _obj("Workload", "a", 2, status={"x": 1}))
    cache.apply("ADDED", _obj("Job", "j", 3))
    cache.apply("DELETED", _obj("Workload", "a", 4))
    got = []
    while (event := watch.next(timeout=0.05)) is not None:
        got.append((event.type, event.key.kind, event.object["metadata"]["name"]))
    assert got == [(EventType.ADDED, "Job", "j"), (EventType.DELETED, "Workload", "a")]
    assert watch.position == cache.seq  # the dropped ones are passed, not waited for


def test_the_agents_watch_thread_queues_workload_deletions_alone() -> None:
    cache = Cache()
    store = SimpleNamespace(watch=lambda kinds, since: cache.watch(kinds, since), close=lambda: None)
    woken: list[int] = []
    cluster = KubeCluster(store, SimpleNamespace(), partial_admission=False,  # type: ignore[arg-type]
                          wake=lambda: woken.append(1), apply=lambda key, state: None)
    cluster.start()
    try:
        cache.apply("ADDED", _obj("Workload", "a", 1))
        cache.apply("MODIFIED", _obj("Workload", "a", 2, status={"x": 1}))
        cache.apply("ADDED", _obj("Job", "j", 3))
        cache.apply("DELETED", _obj("Workload", "a", 4))
        deadline = time.monotonic() + 5
        while len(cluster._events) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        assert [(e.type, e.key.kind) for e in cluster._events] == [(EventType.ADDED, "Job"), (EventType.DELETED, "Workload")]
    finally:
        cluster.close()
