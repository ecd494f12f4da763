"""Watches over a SQLite store served on the event loop (hub.kubeapi.watchfeed): many watches of one
kind each get every event in order, and a commit wakes the loop once, not once per watch; a client
that never reads holds nothing back but its own stream, which answers 410 once it fell out of the
change log; events whose stored JSON is the client's version go out without being decoded."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hub.store import SQLiteStore
from hub.store.sqlite_watch import _StoredEvent

from .conftest import Env, ServerThread, make_store

TIMEOUT = 60.0  # a bound for a loaded machine, never a measure
G = "kueue.x-k8s.io"


def _cm(name: str, data: str = "") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default", "name": name},
            "data": {"d": data}}


def _secret(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "default", "name": name}}


class _SmallWindow(http.client.HTTPConnection):
    """A client whose socket takes little before the server's writes block."""

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.settimeout(self.timeout)
        self.sock.connect((self.host, self.port))


def _watch(port: int, path: str, *, conn_type: type[http.client.HTTPConnection] = http.client.HTTPConnection
           ) -> http.client.HTTPResponse:
    conn = conn_type("127.0.0.1", port, timeout=TIMEOUT)
    conn.request("GET", path, headers={"Accept": "application/json"})
    response = conn.getresponse()
    assert response.status == 200
    return response


def _events(response: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    while line := response.readline():
        if line.strip():
            yield json.loads(line)


def _take(response: http.client.HTTPResponse, n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for event in _events(response):
        out.append(event)
        if len(out) == n:
            break
    return out


def _rv(store: SQLiteStore) -> int:
    return store.list("ConfigMap", "default")[1]


def _wait_streams(env: Env, n: int) -> None:
    done = threading.Event()

    def check() -> None:
        feed = env.server.api._feed
        if feed is not None and feed.streams >= n:
            done.set()
        elif not done.is_set():
            env.server.loop.call_later(0.02, check)

    env.server.loop.call_soon_threadsafe(check)
    assert done.wait(TIMEOUT), "the watches did not start following the store"


def test_many_watches_of_one_kind_get_every_event_in_order_and_a_commit_wakes_the_loop_once(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    start = _rv(env.store)
    watches = [_watch(env.server.port, f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={start}")
               for _ in range(10)]
    _wait_streams(env, 10)
    loop = env.server.loop
    wakes = [0]
    original = loop.call_soon_threadsafe

    def counted(*args: Any, **kw: Any) -> Any:
        wakes[0] += 1
        return original(*args, **kw)

    monkeypatch.setattr(loop, "call_soon_threadsafe", counted)
    for i in range(30):  # off the loop, as the dev-cluster's controllers commit
        env.store.create(_cm(f"cm-{i}"))
        env.store.create(_secret(f"s-{i}"))  # a kind nobody here watches: no wakeup at all
    with env.store.batch():
        for i in range(30, 40):
            env.store.create(_cm(f"cm-{i}"))
    threadsafe = wakes[0]
    monkeypatch.setattr(loop, "call_soon_threadsafe", original)
    env.server.api.inline_writes = True  # on the loop, as mkhub dev-cluster writes
    core = env.core()
    for i in range(40, 50):
        core.create_namespaced_config_map("default", _cm(f"cm-{i}"))
    assert threadsafe <= 31, f"{threadsafe} wakeups of the loop for 31 commits of the watched kind"
    names = [f"cm-{i}" for i in range(50)]
    for response in watches:
        events = _take(response, 50)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", n) for n in names]
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
        assert rvs == sorted(rvs) and len(set(rvs)) == 50
        response.close()


def test_a_watch_that_never_reads_stops_no_one_and_answers_410_once_out_of_the_log(tmp_path: Path) -> None:
    store = make_store(tmp_path / "small.db", log_retention=20, watch_cache=20)
    server = ServerThread(store)
    try:
        start = _rv(store)
        path = f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={start}&timeoutSeconds=60"
        stalled = _watch(server.port, path, conn_type=_SmallWindow)
        reader = _watch(server.port, path)
        got: list[dict[str, Any]] = []
        reading = threading.Thread(target=lambda: got.extend(_take(reader, 300)), daemon=True)
        reading.start()
        big = "x" * 65536  # 300 of them are far more than the sockets' buffers hold
        for i in range(300):
            store.create(_cm(f"cm-{i}", big))
        reading.join(TIMEOUT)
        assert [e["object"]["metadata"]["name"] for e in got] == [f"cm-{i}" for i in range(300)]
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=TIMEOUT)
        conn.request("GET", "/api/v1/namespaces/default/configmaps/cm-299")
        assert conn.getresponse().status == 200  # the loop was never held by the stalled stream
        conn.close()
        # Nothing was queued for the stalled one: its cursor stayed in the store's log, which moved on.
        events = list(_events(stalled))
        assert events and events[-1]["type"] == "ERROR", [e["type"] for e in events[-3:]]
        assert events[-1]["object"]["code"] == 410 and events[-1]["object"]["reason"] == "Expired"
        assert len(events) - 1 < 300
        assert [e["object"]["metadata"]["name"] for e in events[:-1]] == [f"cm-{i}" for i in range(len(events) - 1)]
        reader.close()
        stalled.close()
    finally:
        server.close()
        store.close()


def test_events_stored_in_the_clients_version_go_out_as_stored(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    decoded = [0]
    original = _StoredEvent.object

    def counting(event: _StoredEvent) -> Any:
        decoded[0] += 1
        return original.__get__(event)

    monkeypatch.setattr(_StoredEvent, "object", property(counting))
    start = _rv(env.store)
    base = f"/apis/{G}/{{}}/resourceflavors?watch=true&resourceVersion={start}"
    plain = _watch(env.server.port, base.format("v1beta2"))
    _wait_streams(env, 1)
    custom = env.custom()
    for name, tier in (("a", "gold"), ("b", "silver")):
        custom.create_cluster_custom_object(G, "v1beta2", "resourceflavors", {
            "apiVersion": f"{G}/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name, "labels": {"tier": tier}}})
    events = _take(plain, 2)
    assert [(e["type"], e["object"]["metadata"]["name"], e["object"]["apiVersion"]) for e in events] == [
        ("ADDED", "a", f"{G}/v1beta2"), ("ADDED", "b", f"{G}/v1beta2")]
    assert events[0]["object"]["metadata"]["labels"] == {"tier": "gold"}
    assert decoded[0] == 0
    # Another version, or a selector: decoded, converted, filtered.
    older = _watch(env.server.port, base.format("v1beta1"))
    selected = _watch(env.server.port, base.format("v1beta2") + "&labelSelector=tier%3Dsilver")
    assert [(e["object"]["metadata"]["name"], e["object"]["apiVersion"]) for e in _take(older, 2)] == [
        ("a", f"{G}/v1beta1"), ("b", f"{G}/v1beta1")]
    assert [e["object"]["metadata"]["name"] for e in _take(selected, 1)] == ["b"]
    assert decoded[0] > 0
    for response in (plain, older, selected):
        response.close()
