"""A Kubernetes Service in front of a Deployment's replicas, on loopback, for the tests.

The hub Deployment's Services reach only the ready replica (the Lease holder): a standby
does not listen on its gRPC or webhook port until it leads. This relay does what
kube-proxy does for such a Service: each new connection goes to the first endpoint that
accepts it; a connection to a replica that dies breaks, and the client's reconnect lands
on whichever replica serves by then.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

from hub.demo.processes import free_port


class ServiceRelay:
    def __init__(self, endpoints: list[int], *, host: str = "127.0.0.1") -> None:
        self.host = host
        self.endpoints = endpoints
        self.port = free_port()
        self.routed: dict[int, int] = {port: 0 for port in endpoints}  # endpoint -> connections relayed
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, name="service-relay", daemon=True)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> ServiceRelay:
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

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        for port in self.endpoints:
            try:
                pair = await asyncio.open_connection(self.host, port)
            except OSError:
                continue  # not listening: not a ready endpoint
            self.routed[port] += 1
            return pair
        return None

    async def _relay(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        upstream = await self._connect()
        if upstream is None:
            client_w.close()  # no ready endpoint: the client sees the connection end and retries
            return
        upstream_r, upstream_w = upstream
        self._writers.update((client_w, upstream_w))
        await asyncio.gather(self._pump(client_r, upstream_w), self._pump(upstream_r, client_w), return_exceptions=True)
        for w in (client_w, upstream_w):
            self._writers.discard(w)
            w.close()

    @staticmethod
    async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            with contextlib.suppress(Exception):
                writer.close()  # one side gone: end the other too, as a reset would
