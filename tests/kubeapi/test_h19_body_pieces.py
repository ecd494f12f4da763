"""A request body that arrives in pieces is read whole (hub.kubeapi.bodies.read_body takes what
came with the headers without awaiting, and awaits the rest only when there is more)."""

from __future__ import annotations

import json
import socket
import time

import pytest

from .conftest import Env


def _post_in_pieces(env: Env, path: str, body: bytes, *, chunked: bool) -> bytes:
    host, port = env.url.removeprefix("http://").split(":")
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
    head += "Transfer-Encoding: chunked\r\n\r\n" if chunked else f"Content-Length: {len(body)}\r\n\r\n"
    pieces = [body[: len(body) // 3], body[len(body) // 3 : 2 * len(body) // 3], body[2 * len(body) // 3 :]]
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head.encode())
        for piece in pieces:
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            time.sleep(0.15)  # the server has read what came so far
        if chunked:
            sock.sendall(b"0\r\n\r\n")
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    return reply


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_sent_in_pieces_is_read_whole(env: Env, chunked: bool) -> None:
    name = f"pieces-{int(chunked)}"
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
             "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"}, "reason": "R",
             "message": "m" * 3000, "type": "Normal"}
    reply = _post_in_pieces(env, "/api/v1/namespaces/default/events", json.dumps(event).encode(), chunked=chunked)
    assert reply.startswith(b"HTTP/1.1 201"), reply[:300]
    stored = env.store.get("Event", "default", name)
    assert stored is not None and stored["message"] == "m" * 3000
