"""A minimal in-memory MultiKueue hub on one asyncio loop: engine, ClusterController,
:class:`~hub.federation.multikueue.MultiKueueController` and a real
:class:`~hub.federation.server.FederationServer`.

For the component tests and ``mkhub bench dispatch``; ``mkhub serve`` wires the
same controller into its store-backed reconciler instead. Agent messages wake
the loop (``MultiKueueController.notify``); each wake settles the engine (so
one batch of agent messages is one round), and the controller flushes one
batch per agent per round.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import grpc

from hub.api.config import Configuration
from hub.api.registry import ApiObject
from hub.api.workload import Workload
from hub.controllers.cluster import ClusterController, RunnerReport
from hub.engine.engine import Engine

from .multikueue import MultiKueueController
from .pacing import cycles_for
from .server import FederationServer

MAX_IDLE = 1.0


class _Stopped:
    __slots__ = ("key", "kind", "message")

    def __init__(self, key: str) -> None:
        self.key, self.kind, self.message = key, "stopped", ""


class RemoteOnlyRunner:
    """The hub runs nothing itself: workloads run on workers; a stop takes effect at once."""

    def __init__(self) -> None:
        self._stopped: list[RunnerReport] = []

    def start(self, workload: Workload, now: float) -> None:
        pass

    def stop(self, key: str, now: float) -> None:
        self._stopped.append(_Stopped(key))

    def poll(self, now: float) -> list[RunnerReport]:
        out, self._stopped = self._stopped, []
        return out


class EmbeddedHub:
    def __init__(
        self,
        config: Configuration,
        *,
        address: str = "127.0.0.1:0",
        credentials: grpc.ServerCredentials | None = None,
        insecure: bool = False,
        clock: Callable[[], float] = time.time,
        heartbeat_interval: float = 5.0,
        server_options: dict[str, Any] | None = None,
        budget: float = 0.005,
    ) -> None:
        self.clock = clock
        self.budget = budget
        self.engine = Engine(config, clock())
        self.controller = ClusterController(self.engine, RemoteOnlyRunner())
        self.mk = MultiKueueController(self.engine, config, jobs=self.controller.jobs, pods=self.controller.pods)
        self.controller.plugins.append(self.mk)
        self.server = FederationServer(
            self.mk,
            address=address,
            credentials=credentials,
            insecure=insecure,
            authorize=self.mk.authorize,
            hub_version="embedded",
            heartbeat_interval=heartbeat_interval,
            worker_lost_timeout=config.multikueue.worker_lost_timeout,
            **(server_options or {}),
        )
        self.mk.silence = self.server.endpoint.silent_for
        self.rounds = 0
        self.after_round: Callable[[float], None] | None = None
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def port(self) -> int:
        assert self.server.port is not None
        return self.server.port

    def apply(self, obj: ApiObject) -> None:
        """Create or replace an object (loop thread); the next round acts on it."""
        self.controller.apply(obj, self.clock())
        self.poke()

    def delete(self, kind: str, namespace: str, name: str) -> None:
        self.controller.delete(kind, namespace, name, self.clock())
        self.poke()

    def poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def start(self) -> int:
        self._wake = asyncio.Event()
        self.mk.notify = self._wake.set  # handlers run on this loop
        port = await self.server.start()
        self.settle()
        self._task = asyncio.create_task(self._run(), name="embedded-hub")
        return port

    def settle(self) -> None:
        """Everything to quiescence at once (setup, tests)."""
        now = self.clock()
        self.controller.settle(now)
        self.rounds += 1
        if self.after_round is not None:
            self.after_round(now)

    def step(self) -> bool:
        more = cycles_for(self.controller, self.clock, self.budget)
        self.rounds += 1
        if self.after_round is not None:
            self.after_round(self.clock())
        return more

    async def _run(self) -> None:
        assert self._wake is not None
        wake = self._wake
        while not self._stopping:
            wake.clear()
            if self.step():
                await asyncio.sleep(0)  # let the transport write this cycle's batches
                continue
            due = [t for t in (self.mk.next_wakeup(), self.engine.next_wakeup()) if t is not None]
            timeout = MAX_IDLE if not due else min(MAX_IDLE, max(0.0, min(due) - self.clock()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout)

    async def stop(self) -> None:
        self._stopping = True
        self.poke()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.server.stop(0.5)
