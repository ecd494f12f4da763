"""The API server without extra routes (mkhub dev-cluster) on aiohttp's low-level server
(hub.kubeapi.server.KubeAPI._server): each request goes straight to the catch-all, and an
``Expect: 100-continue`` is answered as the Application's router answered it."""

from __future__ import annotations

import json
import socket

from aiohttp import web

from .conftest import Env


def _exchange(env: Env, head: str, body: bytes, *, wait_continue: bool) -> bytes:
    with socket.create_connection(("127.0.0.1", env.server.port), timeout=5) as sock:
        sock.sendall(head.encode())
        got = b""
        if wait_continue:
            while b"\r\n\r\n" not in got:
                chunk = sock.recv(4096)
                if not chunk:
                    return got
                got += chunk
            if not got.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"):
                return got
        sock.sendall(body)
        while b"\r\n\r\n" not in got[got.find(b"HTTP/1.1 2"):] or not got.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


def _config_map(name: str) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}).encode()


def _head(body: bytes, expect: str) -> str:
    return (f"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nExpect: {expect}\r\nConnection: close\r\n\r\n")


def test_the_dev_cluster_api_runs_on_the_low_level_server(env: Env) -> None:
    assert isinstance(env.server.api._runner, web.ServerRunner)
    assert env.raw("GET", "/api/v1/namespaces/default/configmaps/none")[0] == 404


def test_a_client_that_expects_100_continue_gets_it_before_sending_its_body(env: Env) -> None:
    body = _config_map("a")
    answer = _exchange(env, _head(body, "100-continue"), body, wait_continue=True)
    assert answer.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n"), answer[:200]
    stored = env.store.get("ConfigMap", "default", "a")
    assert stored is not None and stored["data"] == {"k": "v"}


def test_an_unknown_expectation_is_refused(env: Env) -> None:
    body = _config_map("b")
    answer = _exchange(env, _head(body, "something-else"), b"", wait_continue=True)
    assert answer.startswith(b"HTTP/1.1 417 Expectation Failed"), answer[:200]
    assert env.store.get("ConfigMap", "default", "b") is None
