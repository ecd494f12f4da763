"""The transport's hot path: requests go straight to the server's connection pool (not through
urllib3's PoolManager per request), keep a path prefix in the server's address, and a proxy
configuration still goes through the proxy manager."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
import urllib3
from kubernetes import client as k8s_client

from hub.store.kube.requests import Request
from hub.store.kube.transport import ApiClientTransport

from .harness import serving


class _Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        sent = self.rfile.read(length) if length else b""
        body = b'{"path":"%s","type":"%s","sent":%d}' % (
            self.path.encode(), (self.headers.get("Content-Type") or "").encode(), len(sent))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PATCH = do_PUT = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    with serving(_Echo) as url:
        yield url


def _transport(host: str, proxy: str | None = None) -> ApiClientTransport:
    cfg = k8s_client.Configuration()
    cfg.host = host
    cfg.proxy = proxy
    return ApiClientTransport(cfg)


def test_writes_skip_the_pool_manager_and_reuse_one_connection(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    transport = _transport(server)

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("PoolManager.urlopen on the hot path")

    monkeypatch.setattr(urllib3.PoolManager, "urlopen", refused)
    req = Request("PATCH", "/apis/x/v1/things/a/status", (("fieldManager", "mkhub"),), b'{"status":{}}',
                  "application/merge-patch+json")
    for _ in range(3):
        resp = transport.send(req)
        assert resp.ok
        assert resp.json() == {"path": "/apis/x/v1/things/a/status?fieldManager=mkhub",
                               "type": "application/merge-patch+json", "sent": 13}
    pool = transport._pool
    assert pool is not None and pool.num_connections == 1  # kept alive, returned to the pool
    transport.close()


def test_a_path_in_the_server_address_prefixes_every_request(server: str) -> None:
    transport = _transport(server + "/k8s/clusters/c-1")
    resp = transport.send(Request("GET", "/api/v1/namespaces"))
    assert resp.json()["path"] == "/k8s/clusters/c-1/api/v1/namespaces"
    stream = transport.stream(Request("GET", "/api/v1/pods", (("watch", "1"),)), read_timeout=5)
    assert b"/k8s/clusters/c-1/api/v1/pods?watch=1" in stream.read_all()
    stream.close()
    transport.close()


def test_a_proxy_keeps_the_proxy_manager(server: str) -> None:
    # The echo server stands in for the proxy: it is sent the absolute URL.
    transport = _transport("http://kube.invalid:6443", proxy=server)
    assert transport._pool is None
    resp = transport.send(Request("GET", "/api/v1/namespaces"))
    assert resp.json()["path"] == "http://kube.invalid:6443/api/v1/namespaces"
    transport.close()
