"""Many independent requests in flight at once, through libcurl's multi interface (pycurl).

The hub's round writes its Workload statuses, Events and queue statuses as batches of
independent requests: about three per admission. Sent from a pool of threads over urllib3,
each paid a thread hand-off, a future, and urllib3's and http.client's pure-Python request
building and header parsing: 350-490 µs of client CPU per request on loopback (measured,
2-core VM under load). aiohttp's client gathered on an event loop was tried first: 200-320 µs.
libcurl does the HTTP in C: 45-65 µs per request, batches of 1 to 64, with every request of a
batch on the wire at once (up to ``limit`` connections, kept open between batches), on the
caller's thread: no hand-off at all. libcurl is as well kept as HTTP clients come.

The official client keeps everything else (configuration, authentication, watches, single
requests). The TLS settings mirror its urllib3 pool (CA file, client certificate and key,
``verify_ssl``, ``assert_hostname=False``); a configuration this module cannot mirror exactly
(a proxy, a pinned ``assert_hostname``, ``tls_server_name``, CA data instead of a file, socket
options) is not gathered: :func:`usable` says so and the caller sends one by one.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

try:
    import pycurl  # type: ignore[import-untyped]
except ImportError:  # a platform without its wheel: the store sends one by one, as before
    pycurl = None

from hub.store.interface import StoreError


class GatherError(StoreError):
    """A request of a batch could not be sent or answered (the connection, a timeout, TLS)."""


def usable(configuration: Any) -> bool:
    """Whether :class:`Gatherer` reaches the server as the official client's pool would."""
    return pycurl is not None and not (
        configuration.proxy
        or isinstance(configuration.assert_hostname, str)
        or configuration.tls_server_name
        or configuration.socket_options
        or (configuration.ca_cert_data and not configuration.ssl_ca_cert)
    )


@dataclass(frozen=True, slots=True)
class Item:
    """One request of a batch: method, absolute URL, body, header lines, timeout (seconds)."""

    method: str
    url: str
    body: bytes | None
    headers: list[str]
    timeout: float


class _Sink:
    """A response body, as libcurl hands it over in pieces."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []


class Gatherer:
    """libcurl multi handles, one per calling thread (a multi handle is not thread-safe), each
    keeping up to ``limit`` connections to the server open between batches."""

    def __init__(self, configuration: Any, *, limit: int, connect_timeout: float) -> None:
        self._limit = max(1, limit)
        self._connect_ms = int(connect_timeout * 1000)
        self._tls: list[tuple[int, Any]] = []
        if str(configuration.host).startswith("https"):
            verify = bool(configuration.verify_ssl)
            self._tls += [(pycurl.SSL_VERIFYPEER, int(verify)),
                          (pycurl.SSL_VERIFYHOST, 2 if verify and configuration.assert_hostname is not False else 0)]
            if configuration.ssl_ca_cert:
                self._tls.append((pycurl.CAINFO, str(configuration.ssl_ca_cert)))
            if configuration.cert_file:
                self._tls.append((pycurl.SSLCERT, str(configuration.cert_file)))
            if configuration.key_file:
                self._tls.append((pycurl.SSLKEY, str(configuration.key_file)))
        self._local = threading.local()
        self._closed = False

    def _multi(self) -> tuple[Any, list[Any]]:
        """This thread's multi handle and its idle easy handles."""
        multi = getattr(self._local, "multi", None)
        if multi is None:
            multi = pycurl.CurlMulti()
            multi.setopt(pycurl.M_MAX_TOTAL_CONNECTIONS, self._limit)
            multi.setopt(pycurl.M_MAXCONNECTS, self._limit)
            self._local.multi, self._local.idle = multi, []
        return multi, self._local.idle

    def _new_handle(self) -> Any:
        """An easy handle with the options every request shares (kept across reuses)."""
        curl = pycurl.Curl()
        curl.setopt(pycurl.NOSIGNAL, 1)  # timeouts without SIGALRM: we are not the main thread
        curl.setopt(pycurl.PROXY, "")  # never the environment's proxy (the official client ignores it too)
        curl.setopt(pycurl.CONNECTTIMEOUT_MS, self._connect_ms)
        for option, value in self._tls:
            curl.setopt(option, value)
        return curl

    @staticmethod
    def _prepare(curl: Any, item: Item, sink: _Sink) -> None:
        """What differs between requests (every one of these is set each time, so nothing of
        the handle's previous request carries over)."""
        curl.setopt(pycurl.URL, item.url)
        curl.setopt(pycurl.TIMEOUT_MS, max(1, int(item.timeout * 1000)))
        if item.method == "GET":
            curl.setopt(pycurl.HTTPGET, 1)  # also drops the previous request's body
            curl.unsetopt(pycurl.CUSTOMREQUEST)
        else:
            curl.setopt(pycurl.CUSTOMREQUEST, item.method)
            curl.setopt(pycurl.POSTFIELDS, item.body or b"")
        # "Expect:" off: no 100-continue round trip before a body over 1 KB.
        curl.setopt(pycurl.HTTPHEADER, [*item.headers, "Expect:"])
        curl.setopt(pycurl.WRITEFUNCTION, sink.parts.append)

    def send(self, items: Sequence[Item]) -> list[tuple[int, bytes] | GatherError]:
        """Every request at once (up to ``limit`` on the wire); each answer or error in its place."""
        if self._closed:
            raise GatherError("the transport is closed")
        if not items:
            return []
        multi, idle = self._multi()
        handles: list[tuple[Any, _Sink]] = []
        failed: dict[int, str] = {}
        try:
            for item in items:
                curl = idle.pop() if idle else self._new_handle()
                sink = _Sink()
                self._prepare(curl, item, sink)
                multi.add_handle(curl)
                handles.append((curl, sink))
            running = len(handles)
            while running:
                while True:
                    code, running = multi.perform()
                    if code != pycurl.E_CALL_MULTI_PERFORM:
                        break
                while True:
                    left, _, errors = multi.info_read()
                    for curl, _errno, message in errors:
                        failed[id(curl)] = message
                    if not left:
                        break
                if running:
                    multi.select(0.5)
            out: list[tuple[int, bytes] | GatherError] = []
            for (curl, sink), item in zip(handles, items, strict=True):
                error = failed.get(id(curl))
                if error is not None:
                    out.append(GatherError(f"{item.method} {item.url}: {error}"))
                else:
                    out.append((int(curl.getinfo(pycurl.RESPONSE_CODE)), b"".join(sink.parts)))
            return out
        except pycurl.error as exc:
            raise GatherError(f"sending {len(items)} requests: {exc}") from None
        finally:
            for curl, _ in handles:
                multi.remove_handle(curl)
                idle.append(curl)

    def close(self) -> None:
        """No more batches. Each thread's connections close with its multi handle, when the
        thread or this object goes (closing another thread's handle while it sends would crash)."""
        self._closed = True
        multi = getattr(self._local, "multi", None)
        if multi is not None:
            self._local.multi = None
            multi.close()
