"""The dev-cluster keeps its HTTPS connections to webhooks, as kube-apiserver keeps its
webhook clients' connections alive (hub.kubeapi.webhooks.WebhookConnections)."""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hub.federation import tls
from hub.kubeapi.webhooks import WebhookConnections
from hub.service.webhook import server_context


class KeepAliveHook:
    """An HTTP/1.1 webhook that echoes the review's uid and counts the connections it accepted."""

    def __init__(self, certs: Path) -> None:
        self.connections: list[Any] = []

        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                owner.connections.append(self.connection)

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                body = json.dumps({"response": {"uid": review["request"]["uid"], "allowed": True}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        context: ssl.SSLContext = server_context(certs)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.ca = base64.b64encode((certs / "ca.crt").read_bytes()).decode()
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}/mutate"

    def drop_connections(self) -> None:
        """What a restarted webhook server does to the connections kept to it."""
        for conn in self.connections:
            conn.shutdown(2)


@pytest.fixture
def hook(tmp_path: Path) -> Iterator[KeepAliveHook]:
    tls.make_certs(tmp_path / "certs", [])
    server = KeepAliveHook(tmp_path / "certs")
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()


def review(uid: str) -> bytes:
    return json.dumps({"request": {"uid": uid}}).encode()


def test_calls_to_one_webhook_share_one_connection(hook: KeepAliveHook) -> None:
    pool = WebhookConnections()
    for i in range(5):
        assert pool.post(hook.url, hook.ca, review(f"u{i}"), 10)["response"]["uid"] == f"u{i}"
    assert len(hook.connections) == 1


def test_a_connection_the_webhook_closed_is_replaced_and_the_call_answered(hook: KeepAliveHook) -> None:
    pool = WebhookConnections()
    pool.post(hook.url, hook.ca, review("a"), 10)
    hook.drop_connections()
    assert pool.post(hook.url, hook.ca, review("b"), 10)["response"]["uid"] == "b"
    assert len(hook.connections) == 2


def test_the_server_is_still_checked_against_the_ca_bundle(hook: KeepAliveHook, tmp_path: Path) -> None:
    tls.make_certs(tmp_path / "other", [])
    other_ca = base64.b64encode((tmp_path / "other" / "ca.crt").read_bytes()).decode()
    pool = WebhookConnections()
    pool.post(hook.url, hook.ca, review("a"), 10)  # a kept connection under the right bundle
    with pytest.raises(OSError, match="CERTIFICATE_VERIFY_FAILED"):
        pool.post(hook.url, other_ca, review("b"), 10)
