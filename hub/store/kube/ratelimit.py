"""Client-side rate limiting: a token bucket, as client-go's ``--kube-api-qps/--kube-api-burst``.

``qps`` tokens are added per second up to ``burst``; each request takes one and
waits when none is left. ``qps <= 0`` turns limiting off. The clock and the
sleep are injected so the arithmetic is tested without waiting.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class TokenBucket:
    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps > 0 and burst < 1:
            raise ValueError("burst must be at least 1 when qps is set")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._stamp = clock()
        self.waited = 0.0  # total seconds callers spent waiting (for benchmarks)

    @property
    def unlimited(self) -> bool:
        return self.qps <= 0

    def reserve(self) -> float:
        """Take one token; return how long the caller must wait before using it (0: now).

        Tokens may go negative: each waiter reserves its own future token, so waiters
        are served in arrival order and the rate holds under contention."""
        if self.unlimited:
            return 0.0
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.qps)
            self._stamp = now
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self.qps

    def acquire(self) -> None:
        """Wait for a token."""
        delay = self.reserve()
        if delay > 0:
            self.waited += delay
            self._sleep(delay)
