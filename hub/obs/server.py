"""``/metrics`` over HTTP for ``--metrics-listen HOST:PORT`` (hub and agent).

Off unless asked for: a hub and its agents often share a machine (demo,
tests), and a fixed default port would make the second process fail. Give a
loopback address (``127.0.0.1:9090``) unless a scraper on another host must
reach it; port 0 picks a free port (logged, and readable as :attr:`port`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the HTTP server's modules load when a server starts: parse_listen stays light
    from wsgiref.simple_server import WSGIServer

    from prometheus_client import CollectorRegistry


def parse_listen(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> (host, port); a clear error otherwise."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not host:
        raise ValueError(f"--metrics-listen {address!r}: expected HOST:PORT, e.g. 127.0.0.1:9090")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"--metrics-listen {address!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"--metrics-listen {address!r}: port {port} is out of range")
    return host.strip("[]"), port


class MetricsServer:
    """Serves one registry's ``/metrics`` on a background thread."""

    def __init__(self, registry: CollectorRegistry, address: str) -> None:
        self.registry = registry
        self.host, self._port = parse_listen(address)
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.server_port if self._server is not None else self._port

    def start(self) -> int:
        from prometheus_client import start_http_server

        self._server, self._thread = start_http_server(self._port, addr=self.host, registry=self.registry)
        return self.port

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
