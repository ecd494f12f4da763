"""What a write costs the hub on the Kubernetes store: no copy or rebuild that the write does not need."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

from hub.store.interface import ObjectKey
from hub.store.kube import KubeStore, KubeStoreOptions
from hub.store.kube import requests as rq
from hub.store.kube.transport import Response


def test_a_merge_patch_shares_the_new_values_it_carries_instead_of_copying_them() -> None:
    conditions = [{"type": "QuotaReserved", "status": "True"}]
    admission: dict[str, Any] = {"clusterQueue": "cq", "podSetAssignments": [{"name": "main"}]}
    patch = rq.merge_diff({"conditions": [], "requeueState": {"count": 1}}, {"conditions": conditions, "admission": admission})
    assert patch == {"conditions": conditions, "admission": admission, "requeueState": None}
    assert patch["conditions"] is conditions and patch["admission"] is admission
    assert rq.merge_diff(None, admission) is admission


def test_a_kinds_resource_is_built_once_and_any_version_it_lacks_means_its_preferred_one() -> None:
    first = rq.resource_for("Workload")
    assert rq.resource_for("Workload") is first
    assert rq.resource_for("Workload", "kueue.x-k8s.io/v1beta1").version == "v1beta1"
    assert rq.resource_for("Workload", ["not", "a", "version"]) is first  # type: ignore[arg-type]
    assert rq.resource_for("Workload", "kueue.x-k8s.io/v9") == first


def test_a_writes_query_is_encoded_once_as_urlencode_would() -> None:
    req = rq.merge_patch(rq.resource_for("Workload"), "ns", "w", {"status": {}}, status=True, field_manager="a b&c")
    assert rq._WRITE_QUERIES[req.query] == "fieldManager=a+b%26c"
    assert req.url == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w/status?fieldManager=a+b%26c"


class _Stream:
    status = 200

    def __init__(self) -> None:
        self.closed = threading.Event()

    def lines(self) -> Iterator[bytes]:
        self.closed.wait()
        return iter(())

    def read_all(self) -> bytes:
        return b""

    def close(self) -> None:
        self.closed.set()


class _Gathering:
    """Answers a batch of status writes one at a time, noting what the store's cache held of the
    first object when each later answer was handed over."""

    answers_as_they_come = True

    def __init__(self) -> None:
        self.store: Any = None
        self.first_seen: list[int] = []

    def send(self, req: rq.Request, *, timeout: float = 30.0) -> Response:
        items = [_wl(f"w{i}", 5) for i in range(3)] if "workloads" in req.path else []
        return Response(200, json.dumps({"metadata": {"resourceVersion": "5"}, "items": items}).encode())

    def stream(self, req: rq.Request, *, read_timeout: float) -> _Stream:
        return _Stream()

    def send_many(self, reqs: list[rq.Request], *, timeout: float = 30.0,
                  on_answer: Callable[[int, Response], None] | None = None) -> list[Response]:
        out = []
        for j, req in enumerate(reqs):
            name = req.path.split("/")[-2]
            entry = self.store.cache.entry(ObjectKey("Workload", "ns", "w0"))
            self.first_seen.append(entry.srv)
            out.append(Response(200, json.dumps(_wl(name, 10 + j, status={"n": j})).encode()))
            assert on_answer is not None
            on_answer(j, out[-1])
        return out

    def close(self) -> None:
        pass


def _wl(name: str, rv: int, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"namespace": "ns", "name": name, "resourceVersion": str(rv), "uid": name}, **extra}


def test_a_batchs_answers_land_in_the_cache_as_they_come_ahead_of_their_echoes() -> None:
    transport = _Gathering()
    store = KubeStore(transport, KubeStoreOptions(kinds=("Workload",)))  # type: ignore[arg-type]
    transport.store = store
    try:
        objs, _ = store.list("Workload")
        writes = [(False, {**o, "status": {"n": i}, "metadata": {**o["metadata"], "resourceVersion": None}})
                  for i, o in enumerate(objs)]
        out = store.write_concurrently(writes)
        assert [o["status"] for o in out] == [{"n": 0}, {"n": 1}, {"n": 2}]  # type: ignore[index]
        assert transport.first_seen == [5, 10, 10]  # w0's answer was in the cache before w1 was answered
        assert store.cache.own_versions("Workload") == 3  # their echoes will be dropped undecoded
    finally:
        store.close()
