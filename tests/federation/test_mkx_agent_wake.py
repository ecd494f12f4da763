"""mkagent --kubeconfig: the worker's watch thread wakes the agent's loop once per burst of
events, not once per event (issue 26: each wake-up is a write to the loop's self-pipe and a
callback); an event queued after the wake-up ran wakes it again."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from worker_agent.main import AgentProcess


class Loop:
    def __init__(self) -> None:
        self.scheduled: list[Callable[[], None]] = []

    def call_soon_threadsafe(self, fn: Callable[[], None]) -> None:
        self.scheduled.append(fn)

    def run(self) -> None:
        ready, self.scheduled = self.scheduled, []
        for fn in ready:
            fn()


def _process(loop: Loop) -> Any:
    p = SimpleNamespace(loop=loop, wake=asyncio.Event(), _wake_queued=False)
    p._woken = lambda: AgentProcess._woken(p)  # type: ignore[arg-type]
    return p


def test_a_burst_of_watch_events_wakes_the_loop_once_and_a_later_one_again() -> None:
    loop = Loop()
    p = _process(loop)
    for _ in range(50):
        AgentProcess._wake_threadsafe(p)
    assert len(loop.scheduled) == 1 and not p.wake.is_set()
    loop.run()
    assert p.wake.is_set()
    p.wake.clear()
    AgentProcess._wake_threadsafe(p)  # after the wake-up ran: a new one
    assert len(loop.scheduled) == 1
    loop.run()
    assert p.wake.is_set()
