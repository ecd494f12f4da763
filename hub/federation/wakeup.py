"""Waking a stream's writer task (shared by the gRPC hub server and agent link).

Data goes out at once. A bare acknowledgement waits up to ``ack_delay`` for
data to ride on, unless ``ack_every`` envelopes are already unacknowledged:
under one-way traffic that is one ack-only envelope per ``ack_every``
envelopes instead of one per envelope.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


def call_soon_on(loop: asyncio.AbstractEventLoop | None, fn: Callable[[], None]) -> None:
    """Run ``fn`` on ``loop``: now if already on it (or there is no loop yet), else thread-safely."""
    if loop is None:
        fn()
        return
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        fn()
    else:
        loop.call_soon_threadsafe(fn)


class Wakeup:
    def __init__(self, *, ack_delay: float, ack_every: int) -> None:
        self.ack_delay = ack_delay
        self.ack_every = ack_every
        self._event = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None

    def data(self) -> None:
        """Something other than a bare ack is waiting: write now."""
        self._event.set()

    def ack(self, due: int) -> None:
        """``due`` envelopes are received and not yet acknowledged."""
        if due >= self.ack_every or self.ack_delay <= 0:
            self._event.set()
        elif due > 0 and self._timer is None and not self._event.is_set():
            self._timer = asyncio.get_running_loop().call_later(self.ack_delay, self._event.set)

    def clear(self) -> None:
        """The writer is about to take everything waiting (acks included)."""
        self._event.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def wait(self) -> None:
        await self._event.wait()
