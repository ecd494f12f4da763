"""Many independent requests in flight at once, on one event loop (aiohttp's client).

The hub's round writes its statuses and Events as a batch of independent requests. Sent from
a pool of threads over urllib3, each one paid a thread hand-off, a future, and urllib3's and
http.client's pure-Python request building and header parsing (230-280 µs of client CPU per
request on loopback). Gathered on one event loop, aiohttp (C-accelerated HTTP parser, one
hand-off per batch) costs about 170 µs per request, and every request of the batch is on the
wire at once (bounded by the connector's limit), which is what a network hop away wants.

The TLS settings mirror the official client's urllib3 pool (CA, client certificate and key,
``verify_ssl``). Configurations this module cannot mirror exactly (a proxy, a pinned
``assert_hostname``, ``tls_server_name``) are not gathered: :func:`usable` says so and the
caller keeps its threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from collections.abc import Sequence
from typing import Any

import aiohttp

from hub.store.interface import StoreError


class GatherError(StoreError):
    """A request of a batch could not be sent or answered (the connection, a timeout)."""


def usable(configuration: Any) -> bool:
    """Whether :class:`Gatherer` reaches the server as the official client's pool would."""
    return not (
        configuration.proxy
        or isinstance(configuration.assert_hostname, str)
        or configuration.tls_server_name
        or configuration.socket_options
    )


def ssl_context(configuration: Any) -> ssl.SSLContext | None:
    """The client's TLS settings as an SSLContext (None for plain HTTP)."""
    if not str(configuration.host).startswith("https"):
        return None
    ctx = ssl.create_default_context(cafile=configuration.ssl_ca_cert, cadata=configuration.ca_cert_data)
    if not configuration.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif configuration.assert_hostname is False:
        ctx.check_hostname = False
    if configuration.cert_file:
        ctx.load_cert_chain(configuration.cert_file, configuration.key_file)
    return ctx


# One request of a batch: method, absolute URL, body, headers, read timeout (seconds).
Item = tuple[str, str, "bytes | None", dict[str, str], float]


class Gatherer:
    """An event loop on a daemon thread with one aiohttp session (``limit`` connections)."""

    def __init__(self, ssl_ctx: ssl.SSLContext | None, *, limit: int, connect_timeout: float) -> None:
        self._ssl: ssl.SSLContext | bool = ssl_ctx if ssl_ctx is not None else False
        self._limit = max(1, limit)
        self._connect_timeout = connect_timeout
        self._loop = asyncio.new_event_loop()
        self._session: aiohttp.ClientSession | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="mkhub-kube-writes", daemon=True)
        self._thread.start()

    async def _one(self, item: Item) -> tuple[int, bytes] | GatherError:
        method, url, body, headers, read_timeout = item
        if self._session is None:  # made on the loop, as aiohttp wants
            connector = aiohttp.TCPConnector(limit=self._limit, ssl=self._ssl)
            self._session = aiohttp.ClientSession(connector=connector, skip_auto_headers=("User-Agent",))
        # total: a lease-bounded write must not outlive the lease, whatever the wait for a connection
        timeout = aiohttp.ClientTimeout(total=read_timeout, connect=self._connect_timeout)
        try:
            async with self._session.request(
                method, url, data=body, headers=headers, timeout=timeout, allow_redirects=False, compress=None
            ) as resp:
                return resp.status, await resp.read()
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            return GatherError(f"{method} {url}: {exc or type(exc).__name__}")

    async def _all(self, items: Sequence[Item]) -> list[tuple[int, bytes] | GatherError]:
        return list(await asyncio.gather(*(self._one(item) for item in items)))

    def send(self, items: Sequence[Item]) -> list[tuple[int, bytes] | GatherError]:
        """Every request at once (up to ``limit`` on the wire); each answer or error in its place."""
        if not items:
            return []
        if self._loop.is_closed():
            raise GatherError("the transport is closed")
        return asyncio.run_coroutine_threadsafe(self._all(items), self._loop).result()

    def close(self) -> None:
        if self._loop.is_closed():
            return

        async def shut() -> None:
            if self._session is not None:
                await self._session.close()

        with contextlib.suppress(Exception):  # closing: nothing left to tell anyone
            asyncio.run_coroutine_threadsafe(shut(), self._loop).result(timeout=5.0)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5.0)
        if not self._thread.is_alive():
            self._loop.close()
