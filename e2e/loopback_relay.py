"""The common part of the tests' loopback TCP relays: a listening socket served by an
asyncio loop on its own thread, connections relayed to an upstream port, all of them
closed on ``stop()``. Subclasses choose the upstream (:meth:`_relay`) and how bytes
are pumped (:meth:`_pump`)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Self

from hub.demo.processes import free_port


class LoopbackRelay:
    def __init__(self, name: str, *, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> Self:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._relay, self.host, self.port)

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for w in list(self._writers):
                w.close()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    async def _relay(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def _pipe(
        self,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    ) -> None:
        """Both directions until either ends; then both connections are closed."""
        (client_r, client_w), (upstream_r, upstream_w) = client, upstream
        self._writers.update((client_w, upstream_w))
        await asyncio.gather(
            self._pump(client_r, upstream_w), self._pump(upstream_r, client_w), return_exceptions=True
        )
        for w in (client_w, upstream_w):
            self._writers.discard(w)
            w.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError
