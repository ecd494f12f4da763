"""What a gathered write's answer costs the hub: decoded once, whichever of the answer and the
informer's echo of it is read first, and the result the same either way."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest

from hub.store import journal
from hub.store.interface import ObjectKey
from hub.store.kube import jsonio
from hub.store.kube import store as store_mod
from hub.store.kube.requests import Request
from hub.store.kube.store import KubeStore, KubeStoreOptions
from hub.store.kube.transport import REQUEST_TIMEOUT, Response

API = "kueue.x-k8s.io/v1beta2"
KEY = ObjectKey("Workload", "ns", "a")


def workload(rv: int, status: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "Workload",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u-a", "resourceVersion": str(rv), "generation": 1,
                         "managedFields": [{"manager": "mkhub", "operation": "Update"}]},
            "spec": {"queueName": "lq"}, "status": status}


class Server:
    """Answers a status merge patch with the object at the next version; ``echo_first``: the
    informer applies that version to the cache before the batch's answers are read (its watch
    event arrived while the batch was in flight, as it mostly does)."""

    def __init__(self, echo_first: bool) -> None:
        self.echo_first = echo_first
        self.store: KubeStore | None = None
        self.versions = itertools.count(11)

    def send_many(self, reqs: list[Request], *, timeout: float = REQUEST_TIMEOUT) -> list[Response]:
        out = []
        for req in reqs:
            patch = json.loads(req.body or b"{}")
            body = json.dumps(workload(next(self.versions), patch["status"]), separators=(",", ":")).encode()
            if self.echo_first:
                assert self.store is not None
                self.store.cache.apply("MODIFIED", json.loads(body))  # what Informer._handle does
            out.append(Response(200, body))
        return out

    def close(self) -> None:
        pass


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every answer the store decodes."""
    seen: list[bytes] = []
    real = jsonio.loads

    def loads(raw: bytes) -> Any:
        seen.append(raw)
        return real(raw)

    monkeypatch.setattr(store_mod.jsonio, "loads", loads)
    return seen


def written(echo_first: bool) -> Iterator[tuple[KubeStore, Any, list[int]]]:
    server = Server(echo_first)
    store = KubeStore(server, KubeStoreOptions(kinds=()))  # type: ignore[arg-type]
    server.store = store
    store.cache.follow_echoes("Workload")
    store.cache.apply("ADDED", workload(10, {}))
    status = {"conditions": [{"type": "QuotaReserved", "status": "True"}]}
    journal.begin()
    try:
        [out] = store.write_concurrently([(False, {"kind": "Workload", "metadata": {"namespace": "ns", "name": "a"},
                                                   "status": status})])
    finally:
        journal.end()
    yield store, out, journal.committed([int(out["metadata"]["resourceVersion"])])
    store.close()


@pytest.mark.parametrize("echo_first", [True, False], ids=["echo-first", "answer-first"])
def test_a_status_answer_is_decoded_once_whichever_comes_first_and_lands_the_same(
    decoded: list[bytes], echo_first: bool
) -> None:
    for store, out, committed in written(echo_first):
        entry = store.cache.entry(KEY)
        assert entry is not None and entry.srv == 11
        assert out == {"apiVersion": API, "kind": "Workload",
                       "metadata": {"name": "a", "namespace": "ns", "uid": "u-a", "resourceVersion": str(entry.seq),
                                    "generation": 1},
                       "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}]}}
        assert committed == [entry.seq]  # our own change: its watch event is skipped
        # The informer's decode was the one (echo first); else the answer's, and the echo to come
        # is known by its version alone.
        assert len(decoded) == (0 if echo_first else 1)
        assert store.cache.take_echo("Workload", 11) is not echo_first


def test_an_answer_behind_what_the_informer_already_brought_is_decoded_and_not_taken_for_the_cache() -> None:
    server = Server(echo_first=False)
    store = KubeStore(server, KubeStoreOptions(kinds=()))  # type: ignore[arg-type]
    try:
        store.cache.apply("ADDED", workload(10, {}))
        later = store.cache.apply("MODIFIED", workload(12, {"x": 1}))  # someone else's change, after ours
        assert later is not None
        resp = Response(200, json.dumps(workload(11, {"y": 1})).encode())
        journal.begin()
        try:
            out = store._landed_brief(resp, None, 10, KEY)
        finally:
            journal.end()
        assert out["metadata"]["resourceVersion"] == "0" and out["status"] == {"y": 1}  # not the cache's version
        entry = store.cache.entry(KEY)
        assert entry is not None and entry.srv == 12
    finally:
        store.close()


def test_a_status_write_that_removes_fields_is_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from .test_kev_requests import _NoJson

    server = Server(echo_first=False)
    store = KubeStore(server, KubeStoreOptions(kinds=()))  # type: ignore[arg-type]
    try:
        store.cache.apply("ADDED", workload(10, {"requeueState": {"count": 1}, "conditions": []}))
        monkeypatch.setattr(store_mod.rq, "_encoder", _NoJson())
        [out] = store.write_concurrently([(False, {"kind": "Workload", "metadata": {"namespace": "ns", "name": "a"},
                                                   "status": {"conditions": []}})])
        assert out["status"] == {"conditions": []}
    finally:
        store.close()


@pytest.mark.parametrize(("obj", "error"), [
    ({"kind": "Event", "metadata": {"namespace": "ns"}}, "Event has no metadata.name"),
    ({"metadata": {"name": "a", "namespace": "ns"}}, "object has no kind"),
    ({"kind": "Event", "metadata": {"name": "a", "namespace": 3}}, "Event a: metadata.namespace must be a string"),
    ({"kind": "Event", "metadata": "x"}, "Event has no metadata"),
    ({"kind": "Widget", "metadata": {"name": "a"}}, "Widget a: unknown kind"),
])
def test_a_create_that_cannot_be_sent_is_refused_in_its_place_with_what_is_wrong(obj: dict[str, Any], error: str) -> None:
    store = KubeStore(Server(echo_first=False), KubeStoreOptions(kinds=()))  # type: ignore[arg-type]
    try:
        [out] = store.write_concurrently([(True, obj)])
        assert isinstance(out, store_mod.InvalidObject) and str(out) == error
    finally:
        store.close()


def test_a_create_sends_the_callers_object_as_it_is_unless_it_names_a_version(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[Any] = []
    real = store_mod.rq.create
    monkeypatch.setattr(store_mod.rq, "create", lambda res, obj, **kw: sent.append(obj) or real(res, obj, **kw))
    store = KubeStore(Server(echo_first=False), KubeStoreOptions(kinds=()))  # type: ignore[arg-type]
    try:
        event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "ns"}}
        assert store._create_request(event)[0] == ObjectKey("Event", "ns", "e") and sent[-1] is event
        named = {**event, "metadata": {"generateName": "e-", "namespace": "ns", "resourceVersion": "3"}}
        key, req = store._create_request(named)
        assert key == ObjectKey("Event", "ns", "e-") and req.json()["metadata"] == {"generateName": "e-", "namespace": "ns"}
    finally:
        store.close()
