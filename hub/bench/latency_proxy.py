"""A loopback TCP proxy that adds a fixed round-trip time, for ``mkhub bench kube --rtt-ms``.

A real API server is a network hop away; the dev-cluster on loopback is not. Every
chunk read from one side is written to the other half the round trip later, in
order, without holding up the chunks behind it: a client that keeps several requests
in flight pays the delay once, a client that waits for each answer pays it per request,
as on a real link (bandwidth is not limited).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator

_CHUNK = 65536


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
    loop = asyncio.get_running_loop()

    async def deliver() -> None:
        while True:
            due, data = await queue.get()
            if not data:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            writer.write_eof()

    sender = asyncio.create_task(deliver())
    try:
        while True:
            data = await reader.read(_CHUNK)
            queue.put_nowait((loop.time() + delay, data))
            if not data:
                break
        await sender
    except (OSError, asyncio.IncompleteReadError):
        sender.cancel()
    finally:
        with contextlib.suppress(OSError):
            writer.close()


class LatencyProxy:
    """Listens on 127.0.0.1 (a free port) and forwards to ``upstream`` (host, port), each way
    delayed by half of ``rtt`` seconds. Runs its own event loop on a thread."""

    def __init__(self, upstream: tuple[str, int], rtt: float) -> None:
        self.upstream = upstream
        self.half = rtt / 2
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="latency-proxy", daemon=True)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer, self.half), _pipe(up_reader, writer, self.half))

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = int(server.sockets[0].getsockname()[1])
        self._ready.set()
        async with server:
            await self._stop.wait()
        # Connections still open: end their pipes quietly.
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _run(self) -> None:
        self._loop.run_until_complete(self._main())

    def start(self) -> LatencyProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the latency proxy did not start")
        return self

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(5)


@contextlib.contextmanager
def latency_proxy(upstream: tuple[str, int], rtt_ms: float) -> Iterator[LatencyProxy]:
    proxy = LatencyProxy(upstream, rtt_ms / 1000).start()
    try:
        yield proxy
    finally:
        proxy.stop()


def measured_rtt_ms(port: int, samples: int = 20) -> float:
    """The median time of an HTTP/1.1 request through the proxy on one kept-alive connection (a check)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    times: list[float] = []
    try:
        for _ in range(samples):
            start = time.perf_counter()
            conn.request("GET", "/version")
            conn.getresponse().read()
            times.append((time.perf_counter() - start) * 1000)
    finally:
        conn.close()
    times.sort()
    return times[len(times) // 2]
