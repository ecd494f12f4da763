"""A TCP relay on loopback that can blackhole its traffic while keeping every connection open.

``blackhole()`` stops forwarding in both directions: bytes are still read (the
sender sees its writes succeed, as with packets lost in the network) and held;
new connections are accepted but not relayed. ``heal()`` delivers what was held,
as TCP's retransmissions would, and forwards again. This is the partition that
neither side can tell from a slow peer: no RST, no FIN.
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType

from loopback_relay import LoopbackRelay


class BlackholeProxy(LoopbackRelay):
    def __init__(self, target_port: int, *, host: str = "127.0.0.1") -> None:
        super().__init__("blackhole-proxy", host=host)
        self.target_port = target_port
        self._open = asyncio.Event()

    async def _start(self) -> None:
        self._open.set()
        await super()._start()

    def blackhole(self) -> None:
        self._loop.call_soon_threadsafe(self._open.clear)

    def heal(self) -> None:
        self._loop.call_soon_threadsafe(self._open.set)

    async def _relay(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self._writers.add(client_w)
        try:
            await self._open.wait()
            upstream_r, upstream_w = await asyncio.open_connection(self.host, self.target_port)
        except OSError:
            client_w.close()
            return
        await self._pipe((client_r, client_w), (upstream_r, upstream_w))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held: list[bytes] = []
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                held.append(data)
                if not self._open.is_set():
                    # Keep reading (the sender's writes succeed) but deliver nothing until heal().
                    waiter = asyncio.ensure_future(self._open.wait())
                    while not waiter.done():
                        more = asyncio.ensure_future(reader.read(65536))
                        done, _ = await asyncio.wait({waiter, more}, return_when=asyncio.FIRST_COMPLETED)
                        if more in done:
                            chunk = more.result()
                            if not chunk:
                                await waiter
                                break
                            held.append(chunk)
                        else:
                            more.cancel()
                for chunk in held:
                    writer.write(chunk)
                held = []
                await writer.drain()
        finally:
            with contextlib.suppress(Exception):
                writer.write_eof()

    def __enter__(self) -> BlackholeProxy:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
