"""The token bucket's arithmetic with an injected clock and sleep."""

from __future__ import annotations

import pytest

from hub.store.kube.ratelimit import TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_burst_then_qps() -> None:
    clock = Clock()
    bucket = TokenBucket(10, 3, clock=clock, sleep=clock.sleep)
    for _ in range(3):
        bucket.acquire()
    assert clock.slept == []
    bucket.acquire()  # the fourth waits one token's time
    assert clock.slept == [pytest.approx(0.1)]


def test_waiters_queue_up_behind_each_other() -> None:
    clock = Clock()
    bucket = TokenBucket(4, 1, clock=clock)
    assert bucket.reserve() == 0.0
    assert bucket.reserve() == pytest.approx(0.25)
    assert bucket.reserve() == pytest.approx(0.5)  # reserved behind the previous waiter


def test_refill_is_capped_at_burst() -> None:
    clock = Clock()
    bucket = TokenBucket(100, 2, clock=clock)
    bucket.reserve()
    bucket.reserve()
    clock.now += 60.0  # a long idle time gives back at most `burst` tokens
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, pytest.approx(0.01)]


def test_zero_qps_is_unlimited() -> None:
    clock = Clock()
    bucket = TokenBucket(0, 0, clock=clock, sleep=clock.sleep)
    for _ in range(1000):
        bucket.acquire()
    assert clock.slept == []


def test_burst_must_be_positive() -> None:
    with pytest.raises(ValueError):
        TokenBucket(5, 0)
