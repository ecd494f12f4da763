"""The webhook's own HTTP/1.1 server (hub.service.webhook_http) over real TLS sockets: what an API
server's client may send (kept connections, pipelined requests, chunked bodies, Expect:
100-continue) and the answers to what it must not."""

from __future__ import annotations

import base64
import copy
import json
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hub.federation import tls
from hub.service import webhook_http
from hub.service.webhook import review

from .test_webhook import FIXTURES, Served, lookup


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Served, Path]]:
    tls.make_certs(tmp_path / "certs", [])
    server = Served(tmp_path / "certs", lookup)
    try:
        yield server, tmp_path / "certs"
    finally:
        server.close()


def connect(served: tuple[Served, Path]) -> ssl.SSLSocket:
    server, certs = served
    ctx = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    ctx.check_hostname = False
    sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", server.port), timeout=10))
    return sock


def review_body(uid: str = "u1") -> bytes:
    request = json.loads((FIXTURES / "create-queued-job.json").read_text())
    request["request"]["uid"] = uid
    return json.dumps(request).encode()


def post(body: bytes, path: str = "/mutate-batch-v1-job?timeout=10s", extra: str = "") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: hub\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{extra}\r\n").encode() + body


class Reader:
    """Responses read off a socket one at a time: (status, headers, body)."""

    def __init__(self, sock: ssl.SSLSocket) -> None:
        self.sock, self.buf = sock, b""

    def _fill(self) -> bool:
        data = self.sock.recv(65536)
        self.buf += data
        return bool(data)

    def response(self) -> tuple[int, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.buf:
            assert self._fill(), "connection closed before a response"
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(self.buf) < length:
            assert self._fill()
        body, self.buf = self.buf[:length], self.buf[length:]
        return int(lines[0].split(" ")[1]), headers, body

    def closed(self) -> bool:
        try:
            return not self._fill() and not self.buf
        except (ssl.SSLError, OSError):
            return True


def reviewed(body: bytes, uid: str) -> list[dict[str, Any]]:
    answer = json.loads(body)
    assert answer["kind"] == "AdmissionReview" and answer["response"]["uid"] == uid and answer["response"]["allowed"]
    assert answer["response"]["patchType"] == "JSONPatch"
    return json.loads(base64.b64decode(answer["response"]["patch"]))  # type: ignore[no-any-return]


def test_pipelined_requests_on_a_kept_connection_are_answered_in_order(served: tuple[Served, Path]) -> None:
    sock = connect(served)
    sock.sendall(post(review_body("a")) + post(review_body("b")))
    reader = Reader(sock)
    for uid in ("a", "b"):
        status, headers, body = reader.response()
        assert status == 200 and headers["content-type"] == "application/json" and "connection" not in headers
        assert {"op": "add", "path": "/spec/suspend", "value": True} in reviewed(body, uid)
    sock.sendall(post(review_body("c")))  # still open
    assert reader.response()[0] == 200
    sock.close()


def test_a_body_sent_in_pieces_and_a_chunked_body_are_read_whole(served: tuple[Served, Path]) -> None:
    sock = connect(served)
    reader = Reader(sock)
    whole = post(review_body("p"))
    for i in range(0, len(whole), 700):
        sock.sendall(whole[i:i + 700])
        time.sleep(0.01)
    assert reader.response()[0] == 200
    body = review_body("ch")
    chunks = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(body[i:i + 999]), body[i:i + 999]) for i in range(0, len(body), 999))
    sock.sendall(b"POST /mutate-batch-v1-job HTTP/1.1\r\nHost: hub\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n")
    status, _, out = reader.response()
    assert status == 200 and reviewed(out, "ch")
    sock.close()


def test_expect_100_continue_is_answered_before_the_body(served: tuple[Served, Path]) -> None:
    sock = connect(served)
    reader = Reader(sock)
    body = review_body("e")
    request = post(body, extra="Expect: 100-continue\r\n")
    sock.sendall(request[: len(request) - len(body)])
    assert reader.response()[0] == 100
    sock.sendall(body)
    status, _, out = reader.response()
    assert status == 200 and reviewed(out, "e")
    sock.close()


def test_what_is_no_review_is_refused(served: tuple[Served, Path]) -> None:
    sock = connect(served)
    reader = Reader(sock)
    sock.sendall(post(b"{not json"))
    status, _, body = reader.response()
    assert (status, json.loads(body)) == (400, {"error": "the body is not JSON"})
    sock.sendall(post(b'{"kind": "Pod"}'))
    status, _, body = reader.response()
    assert status == 400 and "AdmissionReview" in json.loads(body)["error"]
    sock.sendall(post(review_body(), path="/mutate-nothing"))
    assert reader.response()[0] == 404
    sock.sendall(b"GET /mutate-batch-v1-job HTTP/1.1\r\nHost: hub\r\n\r\n")
    status, headers, _ = reader.response()
    assert (status, headers["allow"]) == (405, "POST")
    sock.sendall(post(review_body("after")))  # each of those left the connection usable
    assert reader.response()[0] == 200
    sock.close()


@pytest.mark.parametrize("request_bytes", [
    b"POST /mutate-batch-v1-job\r\n\r\n",
    b"POST /mutate-batch-v1-job HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"POST /mutate-batch-v1-job HTTP/1.1\r\nContent-Length: x\r\n\r\n",
    b"POST /mutate-batch-v1-job HTTP/1.1\r\nno colon\r\n\r\n",
])
def test_a_malformed_request_is_answered_400_and_the_connection_closed(
    served: tuple[Served, Path], request_bytes: bytes
) -> None:
    sock = connect(served)
    reader = Reader(sock)
    sock.sendall(request_bytes)
    status, headers, _ = reader.response()
    assert (status, headers["connection"]) == (400, "close")
    assert reader.closed()
    sock.close()


def test_a_body_over_the_limit_is_refused_unread(served: tuple[Served, Path]) -> None:
    sock = connect(served)
    reader = Reader(sock)
    sock.sendall(b"POST /mutate-batch-v1-job HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (webhook_http.MAX_BODY + 1))
    assert reader.response()[0] == 413
    assert reader.closed()
    sock.close()


def test_connection_close_closes_after_the_answer(served: tuple[Served, Path]) -> None:
    sock = connect(served)
    reader = Reader(sock)
    sock.sendall(post(review_body("last"), extra="Connection: close\r\n"))
    status, headers, body = reader.response()
    assert (status, headers["connection"]) == (200, "close") and reviewed(body, "last")
    assert reader.closed()
    sock.close()


def test_an_idle_connection_is_closed(served: tuple[Served, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    server, _ = served
    sock = connect(served)
    reader = Reader(sock)
    sock.sendall(post(review_body("i")))
    assert reader.response()[0] == 200
    monkeypatch.setattr(webhook_http, "IDLE_SECONDS", 0.0)
    hook = server.hook.server
    assert hook is not None
    server.loop.call_soon_threadsafe(hook._close_idle)
    assert reader.closed()
    sock.close()


def test_the_review_leaves_the_request_object_as_sent() -> None:
    """The patch is computed on maps copied along the paths it sets, the rest shared with the request."""
    request = json.loads((FIXTURES / "create-queued-job.json").read_text())
    request["request"]["object"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "mk-queue"
    sent = copy.deepcopy(request)
    out = review(request, lookup)
    patch = json.loads(base64.b64decode(out["response"]["patch"]))
    assert {"op": "add", "path": "/spec/managedBy", "value": "kueue.x-k8s.io/multikueue"} in patch
    assert request == sent
