"""mkhub dev-cluster's inline writes of one event-loop turn share one SQLite transaction
(hub.kubeapi.server.KubeAPI._group_commit): each is answered only once that commits, a refused
write undoes only itself, and a commit that fails fails every write of the group."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from hub.kubeapi.errors import ApiError
from hub.kubeapi.reads import Target
from hub.kubeapi.resources import BY_KIND
from hub.kubeapi.writes import Options, Written
from hub.store import StoreError

from .conftest import Env


def _event(name: str, count: Any = 1) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"}, "reason": "R", "message": "m",
            "type": "Normal", "count": count}


def _writes(env: Env, bodies: list[dict[str, Any]], tasks: list[asyncio.Future[Any]] | None = None) -> list[Written | BaseException]:
    """The bodies created at once (one loop turn), as concurrent requests are; each one's outcome."""
    api = env.server.api
    api.inline_writes = True
    target = Target(BY_KIND["Event"], "v1", "default", "")

    async def all_at_once() -> list[Written | BaseException]:
        started = [asyncio.ensure_future(api._write(api.writer.create, target, body, Options.of({}, "test")))
                   for body in bodies]
        if tasks is not None:
            tasks.extend(started)
        return list(await asyncio.gather(*started, return_exceptions=True))

    return asyncio.run_coroutine_threadsafe(all_at_once(), env.server.loop).result(10)


def test_one_commit_for_a_turn_and_answers_after_it(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    store = env.store
    commits: list[tuple[Any, ...]] = []
    tasks: list[asyncio.Future[Any]] = []
    real_close = store.close_batch

    def close_batch() -> None:
        # Before the COMMIT: another thread does not see the writes yet.
        seen: list[Any] = []
        reader = threading.Thread(target=lambda: seen.append(store.get("Event", "default", "e0")))
        reader.start()
        reader.join(5)
        commits.append((*seen, [t.done() for t in tasks]))
        real_close()

    monkeypatch.setattr(store, "close_batch", close_batch)
    outcomes = _writes(env, [_event("e0"), _event("e1"), _event("bad", count="many"), _event("e2")], tasks)
    # One transaction; before it committed, nobody else saw the writes and none was answered but the refused one.
    assert commits == [(None, [False, False, True, False])]
    assert isinstance(outcomes[2], ApiError) and outcomes[2].code == 422  # refused alone
    for i, name in ((0, "e0"), (1, "e1"), (3, "e2")):
        written = outcomes[i]
        assert isinstance(written, Written), written
        stored = store.get("Event", "default", name)
        assert stored is not None and stored["metadata"]["resourceVersion"] == written.obj["metadata"]["resourceVersion"]
    assert store.get("Event", "default", "bad") is None
    rvs = [int(o.obj["metadata"]["resourceVersion"]) for o in outcomes if isinstance(o, Written)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3  # no version of the refused write left behind


def test_a_failed_commit_fails_every_write_of_the_group(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    store = env.store

    def failing_commit() -> None:
        store._abort()
        raise StoreError("disk I/O error")

    monkeypatch.setattr(store, "_commit", failing_commit)
    outcomes = _writes(env, [_event("f0"), _event("f1")])
    assert all(isinstance(o, StoreError) for o in outcomes), outcomes
    monkeypatch.undo()
    assert store.get("Event", "default", "f0") is None and store.get("Event", "default", "f1") is None
    # The store's lock was given back: a write from another thread goes through.
    written = store.create(_event("after"))
    assert written["metadata"]["name"] == "after"
    outcomes = _writes(env, [_event("f0")])
    assert isinstance(outcomes[0], Written)


def test_the_http_answer_of_a_grouped_write(env: Env) -> None:
    env.server.api.inline_writes = True
    status, _, body = env.raw("POST", "/api/v1/namespaces/default/events", _event("h0"))
    assert status == 201 and body["metadata"]["resourceVersion"]
    assert env.store.get("Event", "default", "h0") is not None
    status, _, body = env.raw("POST", "/api/v1/namespaces/default/events", _event("h0"))
    assert status == 409 and body["reason"] == "AlreadyExists"


def test_a_create_sees_its_namespace_terminate_after_it_was_read(env: Env) -> None:
    """The API keeps Namespace reads between Namespace changes (hub.store.sqlite_reads): a create right
    after its namespace was deleted is refused, and one after it is gone too."""
    env.server.api.inline_writes = True
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t1"}}
    assert env.raw("POST", "/api/v1/namespaces", ns)[0] == 201
    assert env.raw("POST", "/api/v1/namespaces/t1/events", _event("x0") | {"metadata": {"name": "x0"}})[0] == 201
    ns_obj = env.store.get("Namespace", "", "t1")
    assert ns_obj is not None
    env.store.update({**ns_obj, "metadata": {**ns_obj["metadata"], "finalizers": ["test/hold"]}})
    assert env.raw("DELETE", "/api/v1/namespaces/t1")[0] == 200
    status, _, body = env.raw("POST", "/api/v1/namespaces/t1/events", _event("x1") | {"metadata": {"name": "x1"}})
    assert status == 403 and "is being terminated" in body["message"], body
    held = env.store.get("Namespace", "", "t1")
    assert held is not None and held["metadata"].get("deletionTimestamp")
    env.store.update({**held, "metadata": {**held["metadata"], "finalizers": []}})  # its finalizer done: gone
    assert env.store.get("Namespace", "", "t1") is None
    status, _, body = env.raw("POST", "/api/v1/namespaces/t1/events", _event("x2") | {"metadata": {"name": "x2"}})
    assert status != 201 and "not found" in body["message"], body
