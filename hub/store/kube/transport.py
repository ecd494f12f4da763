"""Sending :class:`~.requests.Request` s over the official ``kubernetes`` client.

The client provides the configuration (kubeconfig or in-cluster service account,
TLS, client certificates, bearer tokens and their refresh) and its urllib3 pool;
we send prepared bodies and read plain bytes (``preload_content=False``), never
the generated model classes, and parse JSON ourselves.

:class:`Transport` is the seam: the store, the informers and the leader
election take one, so tests can point them at any server.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from hub.store.interface import StoreError

from . import gathered, jsonio
from .ratelimit import TokenBucket
from .requests import Request

CONNECT_TIMEOUT = 10.0
REQUEST_TIMEOUT = 30.0
GATHER_CONNECTIONS = 16  # connections a batch of send_many keeps busy (and open) per thread


class TransportError(StoreError):
    """The API server could not be reached, or the connection broke."""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes

    def json(self) -> Any:
        return jsonio.loads(self.body) if self.body else None

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


class Stream(Protocol):
    """A watch response: one JSON event per line."""

    status: int

    def lines(self) -> Iterator[bytes]:
        """Lines as they arrive; raises TransportError when the connection breaks or stays
        silent longer than the read timeout; ends when the server closes the stream."""
        ...

    def read_all(self) -> bytes: ...

    def close(self) -> None: ...


class Transport(Protocol):
    def send(self, req: Request, *, timeout: float = REQUEST_TIMEOUT) -> Response: ...

    def stream(self, req: Request, *, read_timeout: float) -> Stream: ...

    def close(self) -> None: ...


def load_configuration(kubeconfig: str | Path | None = None, context: str | None = None) -> k8s_client.Configuration:
    """The client's configuration from a kubeconfig file, or in-cluster (service account)
    when no file is given and KUBERNETES_SERVICE_HOST is set. Raises StoreError."""
    cfg = k8s_client.Configuration()
    try:
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        else:
            path = kubeconfig if kubeconfig is not None else os.environ.get("KUBECONFIG") or "~/.kube/config"
            path = os.path.expanduser(str(path))
            if not os.path.exists(path):
                raise StoreError(f"kubeconfig {path}: no such file")
            k8s_config.load_kube_config(config_file=path, context=context, client_configuration=cfg)  # type: ignore[no-untyped-call]
    except k8s_config.ConfigException as exc:
        raise StoreError(f"cannot load the Kubernetes client configuration: {exc}") from None
    return cfg


class _UrllibStream:
    def __init__(self, resp: urllib3.BaseHTTPResponse) -> None:
        self._resp = resp
        self.status = resp.status

    def lines(self) -> Iterator[bytes]:
        pending = b""
        try:
            for chunk in self._resp.stream(65536, decode_content=True):
                pending += chunk
                if b"\n" not in pending:
                    continue
                *complete, pending = pending.split(b"\n")
                for line in complete:
                    if line.strip():
                        yield line
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as exc:
            # AttributeError: urllib3 reading a response that close() (another thread) released.
            raise TransportError(f"watch connection broke: {exc}") from None
        if pending.strip():
            yield pending

    def read_all(self) -> bytes:
        try:
            return bytes(self._resp.read())
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(f"reading the response failed: {exc}") from None

    def close(self) -> None:
        # Shut the socket down: a reader blocked in lines() on another thread wakes up.
        try:
            conn = getattr(self._resp, "connection", None)
            sock = getattr(conn, "sock", None)
            if sock is not None:
                import socket

                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._resp.release_conn()
        self._resp.close()


class ApiClientTransport:
    """:class:`Transport` over ``kubernetes.client.ApiClient``'s configuration and pool,
    with a client-side rate limit (one token per request, watches included)."""

    def __init__(self, configuration: k8s_client.Configuration, *, qps: float = 0.0, burst: int = 1) -> None:
        # Watches hold a connection each, writes come from several threads: a pool big
        # enough that no connection is thrown away after use.
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, 64)
        self.configuration = configuration
        self.api = k8s_client.ApiClient(configuration)
        self.api.user_agent = "mkhub/0.1 (kubernetes-client/python)"
        self.limiter = TokenBucket(qps, max(burst, 1))
        self._host = configuration.host.rstrip("/")
        self._lock = threading.Lock()
        self._shares_client = False  # for_leases(): the owner closes the client
        # The hot path: the server's own connection pool, reached without the PoolManager's per-request
        # URL parsing and pool lookup (about 40% of urllib3's CPU per request, measured), with the
        # static headers and the timeouts built once. A proxy keeps the PoolManager (absolute URLs).
        manager = self.api.rest_client.pool_manager
        self._pool = manager.connection_from_url(self._host) if type(manager) is urllib3.PoolManager else None
        self._prefix = urlsplit(self._host).path  # a server behind a path (a proxy's /k8s/clusters/x)
        static = dict(self.api.default_headers)
        static["Accept"] = "application/json"
        self._static_headers = static
        self._timeouts: dict[float, urllib3.Timeout] = {}
        self._gatherer: gathered.Gatherer | None = None  # made at the first send_many

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: str | Path | None = None, *, context: str | None = None, qps: float = 0.0, burst: int = 1
    ) -> ApiClientTransport:
        return cls(load_configuration(kubeconfig, context), qps=qps, burst=burst)

    def _headers(self, req: Request) -> dict[str, str]:
        headers = dict(self._static_headers)
        if req.content_type:
            headers["Content-Type"] = req.content_type
        headers.update(req.headers)
        # The client's auth settings (bearer token, refreshed by its hook when it expires).
        settings: dict[str, Any] = dict(self.configuration.auth_settings())
        for setting in settings.values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[str(setting["key"])] = str(setting["value"])
        return headers

    def _timeout(self, read: float) -> urllib3.Timeout:
        timeout = self._timeouts.get(read)
        if timeout is None:
            if len(self._timeouts) > 64:  # lease-bounded reads vary: keep the map small
                self._timeouts.clear()
            timeout = self._timeouts[read] = urllib3.Timeout(connect=CONNECT_TIMEOUT, read=read)
        return timeout

    def _open(self, req: Request, timeout: urllib3.Timeout) -> urllib3.BaseHTTPResponse:
        self.limiter.acquire()
        try:
            if self._pool is not None:
                return self._pool.urlopen(
                    req.method,
                    self._prefix + req.url,
                    body=req.body,
                    headers=self._headers(req),
                    retries=False,
                    redirect=False,
                    assert_same_host=False,
                    timeout=timeout,
                    preload_content=False,
                    release_conn=False,
                )
            return self.api.rest_client.pool_manager.request(
                req.method,
                self._host + req.url,
                body=req.body,
                headers=self._headers(req),
                timeout=timeout,
                preload_content=False,
                retries=False,
            )
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(f"{req.method} {req.path}: {exc}") from None

    def for_leases(self) -> ApiClientTransport:
        """The same client and connection pool with a rate limit of its own: a burst of writes
        must never delay a Lease renewal past the renew deadline (client-go's leader election
        gets its own client too)."""
        return self._sibling(TokenBucket(0.0, 1))  # a renewal every retry period: no limit needed

    def for_records(self) -> ApiClientTransport:
        """The same client and pool with a token bucket of its own, of the same QPS and burst: Events
        (controller-runtime's event recorder gets a client of its own, and so its own limit)."""
        return self._sibling(TokenBucket(self.limiter.qps, self.limiter.burst))

    def _sibling(self, limiter: TokenBucket) -> ApiClientTransport:
        sibling = object.__new__(ApiClientTransport)
        sibling.__dict__.update(self.__dict__)
        sibling.limiter = limiter
        sibling._shares_client = True
        return sibling

    def send(self, req: Request, *, timeout: float = REQUEST_TIMEOUT) -> Response:
        req = _bounded(req, timeout)
        resp = self._open(req, self._timeout(timeout))
        try:
            data = resp.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(f"{req.method} {req.path}: {exc}") from None
        finally:
            resp.release_conn()
        return Response(resp.status, bytes(data))

    def send_many(self, reqs: list[Request], *, timeout: float = REQUEST_TIMEOUT) -> list[Response | TransportError]:
        """Independent requests all in flight at once (libcurl's multi interface, see
        :mod:`.gathered`); each answer, or the error sending it, in its place. A configuration the
        gatherer cannot mirror sends them one by one through :meth:`send`."""
        gatherer = self._gatherer_for()
        if gatherer is None:
            out: list[Response | TransportError] = []
            for req in reqs:
                try:
                    out.append(self.send(req, timeout=timeout))
                except TransportError as exc:
                    out.append(exc)
            return out
        items: list[gathered.Item] = []
        # Header lines once per batch and content type (the auth settings are read once a batch,
        # as a bearer token's refresh hook needs no more often): not a dict and its lines a request.
        lines: dict[str | None, list[str]] = {}
        for req in reqs:
            req = _bounded(req, timeout)
            headers = lines.get(req.content_type) if not req.headers else None
            if headers is None:
                headers = [f"{k}: {v}" for k, v in self._headers(req).items()]
                if not req.headers:
                    lines[req.content_type] = headers
            items.append(gathered.Item(req.method, self._host + req.url, req.body, headers, timeout))
        return [
            TransportError(str(got)) if isinstance(got, gathered.GatherError) else Response(got[0], got[1])
            for got in gatherer.send(items, pace=None if self.limiter.unlimited else self.limiter.reserve)
        ]

    def _gatherer_for(self) -> gathered.Gatherer | None:
        if self._pool is None or not gathered.usable(self.configuration):
            return None
        with self._lock:
            if self._gatherer is None:
                self._gatherer = gathered.Gatherer(self.configuration, limit=GATHER_CONNECTIONS, connect_timeout=CONNECT_TIMEOUT)
            return self._gatherer

    def stream(self, req: Request, *, read_timeout: float) -> Stream:
        """A streaming GET; a read that waits longer than ``read_timeout`` raises (a silent watch)."""
        return _UrllibStream(self._open(req, self._timeout(read_timeout)))

    def close(self) -> None:
        if not self._shares_client:
            if self._gatherer is not None:
                self._gatherer.close()
            self.api.close()  # type: ignore[no-untyped-call]


def _bounded(req: Request, timeout: float) -> Request:
    """A write bounded by less than the default timeout tells the API server too, so that a write
    it could not finish in time is abandoned there rather than committed after we gave up on it
    (kube-apiserver's ?timeout=)."""
    if req.method != "GET" and timeout < REQUEST_TIMEOUT:
        # Built directly (dataclasses.replace looks the fields up again each time): every write of a
        # leader is bounded by its lease.
        query = (*req.query, ("timeout", f"{max(1, int(timeout * 1000))}ms"))
        return Request(req.method, req.path, query, req.body, req.content_type, req.headers)
    return req
