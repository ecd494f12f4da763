"""One simulated cluster: the real engine and controllers with an instant job runner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hub.api.config import Configuration
from hub.api.workload import Workload
from hub.controllers.cluster import ClusterController
from hub.engine.engine import Engine
from hub.store.interface import ObjectKey


@dataclass(frozen=True, slots=True)
class Report:
    key: str
    kind: str
    message: str = ""


class InstantRunner:
    """Pods never become ready on their own (scenarios say when); a stop takes effect at once."""

    def __init__(self) -> None:
        self._pending: list[Report] = []
        self.running: set[str] = set()

    def start(self, workload: Workload, now: float) -> None:
        self.running.add(workload.meta.key)

    def stop(self, key: str, now: float) -> None:
        self.running.discard(key)
        self._pending.append(Report(key, "stopped"))

    def poll(self, now: float) -> list[Report]:
        out, self._pending = self._pending, []
        return out


class SimCluster:
    def __init__(self, name: str, config: Configuration, now: float) -> None:
        self.name = name
        self.engine = Engine(config, now)
        self.runner = InstantRunner()
        self.controller = ClusterController(self.engine, self.runner)
        self.controller.on_status = self._stamp_uids
        self.rejected: dict[str, str] = {}
        self.evicted_since: list[str] = []
        self.preempted_since: list[str] = []
        # Another name table for ``resolve``: a worker resolves the manager's Job names to the
        # Workload name its MultiKueue copy carries.
        self.alias: Callable[[str], str | None] | None = None

    def _stamp_uids(self, changed: list[Workload]) -> None:
        """A Workload the controllers made (a Job's, a variant) gets its uid as an API server's create gives it."""
        for wl in changed:
            if not wl.meta.uid:
                wl.meta.uid = f"uid-{self.name}-workload-{wl.meta.namespace}-{wl.meta.name}"

    def resolve(self, name: str) -> str:
        """A workload key from ``ns/name``, which may name a Job instead."""
        if name in self.engine.workloads:
            return name
        wl_key = self.controller.jobs.workload_key(name)
        if wl_key is None:  # a single Pod's (a pod group's Workload is named as the group)
            namespace, _, short = name.rpartition("/")
            wl_key = self.controller.pods.workload_of.get(ObjectKey("Pod", namespace, short))
        if wl_key is None and self.alias is not None:
            wl_key = self.alias(name)
        return wl_key if wl_key is not None else name

    def collect_events(self) -> None:
        for ev in self.controller.event_log:
            if ev.type == "Evicted":
                self.evicted_since.append(ev.key)
            elif ev.type == "Preempted":
                self.preempted_since.append(ev.key)
        self.controller.event_log.clear()
