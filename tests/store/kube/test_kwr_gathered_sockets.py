"""The gatherer drives libcurl by its sockets' readiness: batches over kept-alive and over closed
connections all answer, and no socket stays watched between batches."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from hub.store.kube import gathered

from .harness import serving


class _Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    close_each = False

    def do_PATCH(self) -> None:  # noqa: N802 - http.server's naming
        sent = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", str(len(sent)))
        if self.close_each:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(sent)
        if self.close_each:
            self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(params=[False, True], ids=["kept-alive", "closed-after-each"])
def url(request: pytest.FixtureRequest) -> Iterator[str]:
    handler = type("Handler", (_Echo,), {"close_each": request.param})
    with serving(handler) as base:
        yield base


class _Config:
    host = "http://127.0.0.1"
    proxy = None
    assert_hostname = None
    tls_server_name = None
    socket_options = None
    ca_cert_data = None
    ssl_ca_cert = None
    verify_ssl = True
    cert_file = None
    key_file = None


def test_batches_answer_in_place_and_leave_no_socket_watched(url: str) -> None:
    gatherer = gathered.Gatherer(_Config(), limit=4, connect_timeout=5.0)
    try:
        for batch in range(3):
            items = [gathered.Item("PATCH", f"{url}/t{i}", b"%d-%d" % (batch, i), ["Content-Type: application/json"], 10.0)
                     for i in range(10)]
            assert gatherer.send(items) == [(200, b"%d-%d" % (batch, i)) for i in range(10)]
            driver = gatherer._driver()
            assert driver._watched == {}  # every transfer done: libcurl asked to forget each socket
    finally:
        gatherer.close()
