"""Recording handlers shared by the federation tests."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

from hub.federation.session import AgentSender
from mkhub.v1 import federation_pb2 as pb


class RecordingHub:
    """A HubHandler that records every call."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.items: dict[str, list[pb.AgentItem]] = {}
        self.hellos: dict[str, pb.Hello] = {}
        self.senders: dict[str, AgentSender] = {}
        self.resumed: dict[str, bool] = {}
        self.fail_next = False
        self.notifier = Notifier()
        self.on_items: Callable[[str, Sequence[pb.AgentItem]], None] | None = None

    def on_agent_connected(self, cluster_name: str, hello: pb.Hello, sender: AgentSender) -> None:
        self.events.append(("connected", cluster_name))
        self.hellos[cluster_name] = hello
        self.senders[cluster_name] = sender
        self.resumed[cluster_name] = bool(getattr(sender, "resumed", False))
        self.notifier.notify()

    def on_agent_items(self, cluster_name: str, items: Sequence[pb.AgentItem]) -> None:
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("handler failure (test)")
        self.items.setdefault(cluster_name, []).extend(items)
        if self.on_items is not None:
            self.on_items(cluster_name, items)
        self.notifier.notify()

    def on_agent_disconnected(self, cluster_name: str) -> None:
        self.events.append(("disconnected", cluster_name))
        self.notifier.notify()

    def uids(self, cluster_name: str) -> list[str]:
        out = []
        for item in self.items.get(cluster_name, []):
            kind = item.WhichOneof("kind")
            assert kind in ("reserved", "status")
            out.append(getattr(item, kind).workload_uid)
        return out


class RecordingAgent:
    """An AgentHandler that records every item and reports what it holds."""

    def __init__(self, cluster_name: str, version: str = "test") -> None:
        self.cluster_name = cluster_name
        self.version = version
        self.items: list[pb.HubItem] = []
        self.held: list[pb.HeldWorkload] = []
        self.hellos = 0
        self.notifier = Notifier()
        self.on_items: Callable[[Sequence[pb.HubItem]], None] | None = None

    def build_hello(self) -> pb.Hello:
        self.hellos += 1
        return pb.Hello(cluster_name=self.cluster_name, agent_version=self.version, held=self.held)

    def on_hub_items(self, items: Sequence[pb.HubItem]) -> None:
        self.items.extend(items)
        if self.on_items is not None:
            self.on_items(items)
        self.notifier.notify()

    def uids(self) -> list[str]:
        out = []
        for item in self.items:
            kind = item.WhichOneof("kind")
            assert kind in ("dispatch", "start", "withdraw")
            out.append(getattr(item, kind).workload_uid)
        return out


def dispatch(uid: str) -> pb.Dispatch:
    return pb.Dispatch(workload_uid=uid, dispatch_id=f"{uid}-d1", namespace="ns", name=uid)


def status(uid: str, phase: int = pb.PHASE_RUNNING) -> pb.Status:
    return pb.Status(workload_uid=uid, dispatch_id=f"{uid}-d1", phase=phase)  # type: ignore[arg-type]


class Notifier:
    """Lets a test await a condition that handler callbacks (on the same loop) make true."""

    def __init__(self) -> None:
        self._waiters: list[asyncio.Event] = []

    def notify(self) -> None:
        for event in self._waiters:
            event.set()

    async def wait_for(
        self, predicate: Callable[[], bool], timeout: float = 20.0, what: str = "condition"
    ) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        event = asyncio.Event()
        self._waiters.append(event)
        try:
            while not predicate():
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), remaining)
                event.clear()
        finally:
            self._waiters.remove(event)


async def poll_until(predicate: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    """For state no callback announces (e.g. acknowledgements): poll every 10 ms."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)
