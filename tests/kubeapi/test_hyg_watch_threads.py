"""A watch ends with its client: over a SQLite store it is served on the event loop (no thread) and
leaves the store's commit feed; over any other store its pulling thread ends when the client goes
away, when the store closes, when the event loop is gone. One that outlived its server once spun at
full CPU (a closed store's watch answers at once) and stalled every later test of its pytest worker."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path
from typing import Any

from hub.kubeapi.watch import _Pump
from hub.store import SQLiteStore

from .conftest import Env, ServerThread, make_store

GRACE = 10.0  # the thread looks every hub.kubeapi.watch.POLL seconds; this only absorbs a loaded machine


def _watch_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "kubeapi-watch-ResourceFlavor" and t.is_alive()}


def _open_watch(port: int) -> socket.socket:
    """A raw watch of ResourceFlavors (no bookmarks, no timeout: nothing would ever wake it), its headers read."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=GRACE)
    sock.sendall(b"GET /apis/kueue.x-k8s.io/v1beta1/resourceflavors?watch=true HTTP/1.1\r\n"
                 b"Host: localhost\r\nAccept: application/json\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, "the server closed the watch before answering"
        head += chunk
    assert head.startswith(b"HTTP/1.1 200"), head
    return sock


class _NotSQLite:
    """A store the API server does not know as SQLite (a remote one, say): its watches get a thread each."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _streams(env: Env) -> int:
    feed = env.server.api._feed
    return 0 if feed is None else feed.streams


def test_a_watch_on_the_loop_starts_no_thread_and_ends_when_its_client_leaves(env: Env) -> None:
    before = _watch_threads()
    sock = _open_watch(env.server.port)
    deadline = time.monotonic() + GRACE  # the headers go out before the stream follows the store
    while _streams(env) == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _streams(env) == 1 and _watch_threads() == before
    sock.close()
    deadline = time.monotonic() + GRACE  # it looks every hub.kubeapi.watch.GONE_CHECK seconds
    while _streams(env) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _streams(env) == 0, "the watch of a client that went away kept following the store"


def test_a_watch_whose_client_left_ends_its_thread_while_the_server_runs(tmp_path: Path) -> None:
    store = make_store(tmp_path / "hub.db")
    server = ServerThread(_NotSQLite(store))  # type: ignore[arg-type]
    try:
        before = _watch_threads()
        sock = _open_watch(server.port)
        deadline = time.monotonic() + GRACE  # the headers go out before the thread starts
        while not (started := _watch_threads() - before) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(started) == 1
        sock.close()
        (thread,) = started
        thread.join(GRACE)
        assert not thread.is_alive(), "the watch of a client that went away kept its thread"
    finally:
        server.close()
        store.close()


def test_the_pump_ends_when_its_store_closes(tmp_path: Path) -> None:
    store = make_store(tmp_path / "hub.db")
    loop = asyncio.new_event_loop()
    try:
        _, rv = store.list("ResourceFlavor", "")
        pump = _Pump(store, "ResourceFlavor", rv, loop)
        store.close()
        pump._thread.join(GRACE)
        assert not pump._thread.is_alive(), "the pump kept polling a closed store"
    finally:
        loop.close()


def test_the_pump_ends_when_its_event_loop_is_closed(tmp_path: Path) -> None:
    store = make_store(tmp_path / "hub.db")
    loop = asyncio.new_event_loop()
    try:
        _, rv = store.list("ResourceFlavor", "")
        pump = _Pump(store, "ResourceFlavor", rv, loop)
        loop.close()
        pump._thread.join(GRACE)
        assert not pump._thread.is_alive(), "the pump outlived the loop it hands events to"
    finally:
        store.close()
