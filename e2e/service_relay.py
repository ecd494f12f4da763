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

from loopback_relay import LoopbackRelay


class ServiceRelay(LoopbackRelay):
    def __init__(self, endpoints: list[int], *, host: str = "127.0.0.1") -> None:
        super().__init__("service-relay", host=host)
        self.endpoints = endpoints
        self.routed: dict[int, int] = {port: 0 for port in endpoints}  # endpoint -> connections relayed

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
        await self._pipe((client_r, client_w), upstream)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            with contextlib.suppress(Exception):
                writer.close()  # one side gone: end the other too, as a reset would
