"""The webhook's HTTPS server: HTTP/1.1 on an asyncio protocol, no web framework.

An API server calls a webhook with one POST per admission, over connections it keeps open
(kube-apiserver's client reuses them), each a small JSON body with a Content-Length. aiohttp's
request and response objects, routing and header maps were about half of the hub's CPU per call
(its TLS records and the review itself the rest), for a server that has one method and a handful
of fixed paths. This serves exactly that: persistent connections, pipelined requests, bodies by
Content-Length or chunked, ``Expect: 100-continue``; any path not served answers 404, another
method on a served path 405, a malformed request 400 and the connection closes.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable

MAX_HEAD = 64 * 1024
# An AdmissionReview holds the object and, on update, the old one: kube-apiserver's objects are up
# to 3 MiB each (its etcd request limit), in JSON with the review around them.
MAX_BODY = 8 * 1024 * 1024
IDLE_SECONDS = 75.0  # aiohttp's keep-alive timeout, as before; kube-apiserver's own idle one is 90 s
SWEEP_SECONDS = 25.0  # how often idle connections are looked for

# a POST's body -> (status, JSON body)
Answer = Callable[[bytes], tuple[int, bytes]]
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            413: "Request Entity Too Large", 431: "Request Header Fields Too Large", 501: "Not Implemented"}


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Connection(asyncio.Protocol):
    """One client connection: requests parsed from the buffer as they complete, answered in order."""

    def __init__(self, server: WebhookServer) -> None:
        self.server = server
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.last = time.monotonic()
        self.continued = False  # the 100 Continue of the request being read went out

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.last = time.monotonic()
        self.buf += data
        try:
            while self.transport is not None and self._one():
                pass
        except BadRequest as exc:
            self._reply(exc.status, b"text/plain; charset=utf-8", f"{exc.status}: {exc}".encode(), close=True)

    def eof_received(self) -> bool | None:
        return None  # close: a half-closed client sends no more requests

    def _one(self) -> bool:
        """Answer the request at the head of the buffer if it is whole; whether one was."""
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buf) > MAX_HEAD:
                raise BadRequest(431, "request head too large")
            return False
        if end > MAX_HEAD:
            raise BadRequest(431, "request head too large")
        method, target, version, headers = _head(bytes(self.buf[:end]))
        start = end + 4
        if "transfer-encoding" in headers:
            if headers["transfer-encoding"].lower() != "chunked":
                raise BadRequest(501, f"transfer-encoding {headers['transfer-encoding']!r} is not supported")
            got = _chunked(self.buf, start)
            if got is None:
                self._continue(headers, version)
                return False
            body, start = got
        else:
            length_text = headers.get("content-length", "0")
            if not length_text.isdigit():
                raise BadRequest(400, "invalid Content-Length")
            length = int(length_text)
            if length > MAX_BODY:
                raise BadRequest(413, f"a body of {length} bytes; at most {MAX_BODY}")
            if len(self.buf) < start + length:
                self._continue(headers, version)
                return False
            body, start = bytes(self.buf[start:start + length]), start + length
        del self.buf[:start]
        self.continued = False
        connection = headers.get("connection", "").lower()
        close = connection == "close" or (version == "HTTP/1.0" and connection != "keep-alive")
        path = target.partition("?")[0]
        answer = self.server.routes.get(path)
        if answer is None:
            self._reply(404, b"text/plain; charset=utf-8", b"404: Not Found", close=close)
        elif method != "POST":
            self._reply(405, b"text/plain; charset=utf-8", b"405: Method Not Allowed", close=close, extra=b"Allow: POST\r\n")
        else:
            status, payload = answer(body)
            self._reply(status, b"application/json", payload, close=close)
        return not close

    def _continue(self, headers: dict[str, str], version: str) -> None:
        if not self.continued and version == "HTTP/1.1" and headers.get("expect", "").lower() == "100-continue":
            self.continued = True
            assert self.transport is not None
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def _reply(self, status: int, content_type: bytes, payload: bytes, *, close: bool, extra: bytes = b"") -> None:
        transport = self.transport
        if transport is None:
            return
        head = (b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s%s\r\n"
                % (status, _REASONS.get(status, "Error").encode(), content_type, len(payload), extra,
                   b"Connection: close\r\n" if close else b""))
        transport.write(head + payload)  # one TLS record write, one send
        if close:
            transport.close()
            self.transport = None


def _head(raw: bytes) -> tuple[str, str, str, dict[str, str]]:
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0") or not parts[1].startswith("/"):
        raise BadRequest(400, "malformed request line")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise BadRequest(400, "malformed header line")
        key = name.lower()
        value = value.strip()
        if key in ("content-length", "transfer-encoding") and key in headers and headers[key] != value:
            raise BadRequest(400, f"conflicting {name} headers")
        headers[key] = f"{headers[key]}, {value}" if key in headers and key not in ("content-length", "transfer-encoding") else value
    if "transfer-encoding" in headers and "content-length" in headers:
        raise BadRequest(400, "both Content-Length and Transfer-Encoding")  # RFC 9112 6.3: a smuggling risk
    return parts[0], parts[1], parts[2], headers


def _chunked(buf: bytearray, start: int) -> tuple[bytes, int] | None:
    """A chunked body from ``start``: (the body, the offset after it), or None while incomplete."""
    chunks: list[bytes] = []
    size_total = 0
    at = start
    while True:
        eol = buf.find(b"\r\n", at)
        if eol < 0:
            if len(buf) - at > 1024:
                raise BadRequest(400, "malformed chunk size line")
            return None
        size_text = bytes(buf[at:eol]).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise BadRequest(400, "malformed chunk size") from None
        if size < 0:
            raise BadRequest(400, "malformed chunk size")
        if size == 0:
            end = buf.find(b"\r\n\r\n", eol)  # the trailers, if any, end with an empty line
            if end < 0:
                return None
            return b"".join(chunks), end + 4
        size_total += size
        if size_total > MAX_BODY:
            raise BadRequest(413, f"a body of more than {MAX_BODY} bytes")
        if len(buf) < eol + 2 + size + 2:
            return None
        chunks.append(bytes(buf[eol + 2:eol + 2 + size]))
        if buf[eol + 2 + size:eol + 4 + size] != b"\r\n":
            raise BadRequest(400, "malformed chunk")
        at = eol + 4 + size


class WebhookServer:
    """The listening socket, its connections, and the closing of idle ones."""

    def __init__(self, routes: dict[str, Answer]) -> None:
        self.routes = routes
        self.connections: set[_Connection] = set()
        self.server: asyncio.Server | None = None
        self._sweep: asyncio.TimerHandle | None = None

    async def start(self, host: str, port: int, context: ssl.SSLContext | None) -> int:
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(lambda: _Connection(self), host, port, ssl=context)
        self._sweep = loop.call_later(SWEEP_SECONDS, self._close_idle)
        sockets = self.server.sockets or []
        return int(sockets[0].getsockname()[1]) if sockets else port

    def _close_idle(self) -> None:
        cutoff = time.monotonic() - IDLE_SECONDS
        for conn in [c for c in self.connections if c.last < cutoff and c.transport is not None]:
            assert conn.transport is not None
            conn.transport.close()
        self._sweep = asyncio.get_running_loop().call_later(SWEEP_SECONDS, self._close_idle)

    async def stop(self) -> None:
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        if self.server is not None:
            self.server.close()
            for conn in list(self.connections):
                if conn.transport is not None:
                    conn.transport.close()
            await self.server.wait_closed()
            self.server = None
