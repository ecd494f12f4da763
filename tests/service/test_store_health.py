"""``mkhub serve`` turns readiness off when its store's cache stops following the API server."""

from __future__ import annotations

import asyncio
from typing import Any

from grpc_health.v1 import health_pb2

from hub.service.serve import _follow_store_health


class _Health:
    def __init__(self) -> None:
        self.states: list[int] = []

    async def set(self, service: str, status: int) -> None:
        if service == "":
            self.states.append(status)


class _Server:
    def __init__(self) -> None:
        self.health = _Health()


class _Probes:
    def __init__(self) -> None:
        self.ready: list[bool] = []

    async def set_ready(self, ready: bool) -> None:
        self.ready.append(ready)


class _Store:
    problem_text: str | None = None

    def problem(self) -> str | None:
        return self.problem_text


def test_a_dead_informer_turns_readiness_off_and_back_on() -> None:
    store, server, probes = _Store(), _Server(), _Probes()

    async def scenario() -> None:
        task = asyncio.create_task(_follow_store_health(store, server, probes))  # type: ignore[arg-type]
        store.problem_text = "the Workload informer stopped: KeyError('x')"
        while not probes.ready:
            await asyncio.sleep(0.05)
        store.problem_text = None
        while len(probes.ready) < 2:
            await asyncio.sleep(0.05)
        task.cancel()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert probes.ready == [False, True]
    serving: Any = health_pb2.HealthCheckResponse
    assert server.health.states == [serving.NOT_SERVING, serving.SERVING]
