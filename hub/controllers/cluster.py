"""Drives one cluster's engine to quiescence: controllers react, the scheduler cycles.

The same driver serves the hub, the worker agent and ``mkhub simulate``; only
the runner (how workloads' pods run) and the plugins (e.g. the MultiKueue
admission check) differ.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from hub.api.dra import DRA_KINDS, DraObject
from hub.api.jobkinds import REFERENCED_KINDS, adapter_of_kind
from hub.api.jobkinds.pod import Pod
from hub.api.lws_kind import LeaderWorkerSet
from hub.api.passive import Passive
from hub.api.registry import ApiObject
from hub.api.tas_kinds import Node
from hub.api.workload import Workload
from hub.engine.engine import Engine, EngineEvent
from hub.engine.entry import CycleResult
from hub.obs.events import JobEvent
from hub.store.interface import ObjectKey

from .dra import DraAccounting
from .jobs import JobChange, JobIntegration, is_job_kind
from .lws import KIND as LWS_KIND
from .lws import LwsIntegration
from .pods import PodIntegration
from .tas_pods import same_for_scheduling

MAX_SETTLE_ROUNDS = 100_000


class RunnerReport(Protocol):
    key: str
    kind: str  # "ready", "unready", "succeeded", "failed", "stopped"
    message: str


class Runner(Protocol):
    """Runs admitted workloads' pods (simulated, Kubernetes Jobs, remote agents...)."""

    def start(self, workload: Workload, now: float) -> None: ...

    def stop(self, key: str, now: float) -> None: ...

    def poll(self, now: float) -> list[RunnerReport]: ...


class Plugin(Protocol):
    """An extra controller (admission check controllers, MultiKueue)."""

    def on_events(self, events: list[EngineEvent], now: float) -> None: ...

    def tick(self, now: float) -> bool: ...


class Observer(Protocol):
    """Metrics, traces, Events and logs of a cluster's decisions (:mod:`hub.obs.observer`)."""

    def cycle(self, engine: Engine, now: float) -> CycleResult:
        """Run ``engine.schedule(now)``, observed."""
        ...

    def on_events(self, engine: Engine, events: list[EngineEvent], now: float) -> None: ...

    def on_status(self, engine: Engine, workloads: list[Workload], now: float) -> None: ...

    def on_job_events(self, events: list[JobEvent], now: float) -> None:
        """Events Kueue records on the Jobs it manages (CreatedWorkload, Started, Stopped...)."""
        ...


class ClusterController:
    def __init__(self, engine: Engine, runner: Runner, jobs: JobIntegration | None = None) -> None:
        self.engine = engine
        self.runner = runner
        self.jobs = jobs or JobIntegration(engine)
        self.pods = PodIntegration(engine)  # Kueue's pod integration (hub.controllers.pods)
        self.lws = LwsIntegration(engine, self.pods)  # LeaderWorkerSets' group Workloads (hub.controllers.lws)
        self.dra = DraAccounting(engine)  # devices claimed through DRA, counted before the engine sees a Workload
        self.plugins: list[Plugin] = []
        self.event_log: list[EngineEvent] = []
        self.on_status: Callable[[list[Workload]], None] | None = None
        self.on_job_change: Callable[[list[JobChange]], None] | None = None
        self.observer: Observer | None = None
        self.cycles = 0
        self.unsettled = False  # the last settle() stopped early (``enough``): cycles are left to run

    # --- inputs ---------------------------------------------------------------------------

    def apply(self, obj: ApiObject, now: float) -> None:
        if isinstance(obj, Passive):
            return  # stored and listed only (hub.api.passive)
        if isinstance(obj, DraObject):  # a template arrived: the workloads waiting for it are queued
            for wl in self.dra.apply(obj):
                self.engine.apply(wl, now)
            return
        if obj.kind in REFERENCED_KINDS:  # a TrainJob's runtime: TrainJobs waiting for it get their Workloads
            for made in self.jobs.apply_reference(obj, now):
                self.engine.apply(self.dra.prepare(made), now)
            self._job_events(now)
            return
        if is_job_kind(obj):
            wl = self.jobs.apply(obj, now)
            if wl is not None:
                self.engine.apply(self.dra.prepare(wl), now)
                self._job_events(now)
            return
        if isinstance(obj, Pod):  # TAS: its usage of a node, its gate (hub.controllers.tas_pods)
            self.pods.tas.apply_pod(obj, now)
        if isinstance(obj, Pod | LeaderWorkerSet):
            for wl in self.pods.apply(obj, now) if isinstance(obj, Pod) else self.lws.apply(obj, now):
                self.engine.apply(self.dra.prepare(wl), now)
            self._job_events(now)
            return
        if isinstance(obj, Workload) and obj.meta.owner_references:
            self.jobs.link_owner(obj)  # made by an external framework's controller for its object
        if isinstance(obj, Node) and same_for_scheduling(self.engine.tas.nodes.get(obj.meta.name), obj):
            return  # a status heartbeat: Kueue's node controller skips it too (no tree rebuilt, no requeue)
        self.engine.apply(self.dra.prepare(obj) if isinstance(obj, Workload) else obj, now)

    def lists(self, kind: str) -> bool:
        """The hub lists and watches ``kind``: LeaderWorkerSets only with their integration (Pods always:
        TAS ungates them and counts the usage of those it did not place)."""
        return self.lws.enabled if kind == LWS_KIND else True

    def delete(self, kind: str, namespace: str, name: str, now: float) -> None:
        if kind in DRA_KINDS:
            self.dra.delete(kind, namespace, name)
            return
        if kind in REFERENCED_KINDS:
            self.jobs.delete_reference(ObjectKey(kind, namespace, name))
            return
        if adapter_of_kind(kind) is not None:
            wl_key = self.jobs.delete(ObjectKey(kind, namespace, name))
            if wl_key is not None:
                ns, _, wl_name = wl_key.partition("/")
                self.engine.delete("Workload", ns, wl_name, now)
            return
        if kind == LWS_KIND:
            self.lws.delete(ObjectKey(kind, namespace, name), now)
            return
        if kind == "Workload":
            self.jobs.unlink(f"{namespace}/{name}")
        if kind == "Pod":
            self.pods.tas.delete_pod(ObjectKey(kind, namespace, name), now)
            wl_key = self.pods.delete(ObjectKey(kind, namespace, name))
            if wl_key is not None:  # its last Pod gone: Kubernetes' garbage collector deletes the Workload
                wl_ns, _, wl_name = wl_key.partition("/")
                self.engine.delete("Workload", wl_ns, wl_name, now)
            return
        self.engine.delete(kind, namespace, name, now)

    # --- the loop -------------------------------------------------------------------------

    def react(self, now: float) -> bool:
        """Let controllers and the runner react until nothing new happens. True if anything did."""
        engine = self.engine
        anything = False
        for _ in range(MAX_SETTLE_ROUNDS):
            progressed = engine.tick(now)
            for plugin in self.plugins:
                progressed = plugin.tick(now) or progressed
            for report in self.runner.poll(now):
                progressed = True
                self._apply_report(report.key, report.kind, report.message, now)
            changed, events = engine.drain()
            if changed and self.observer is not None:
                self.observer.on_status(engine, changed, now)
            if changed and self.on_status is not None:
                self.on_status(changed)
            if changed:
                self.jobs.on_status(changed)
                self._job_events(now)
            if events:
                progressed = True
                self._dispatch(events, now)
            if not progressed:
                return anything
            anything = True
        raise RuntimeError("controllers did not settle")

    def _apply_report(self, key: str, kind: str, message: str, now: float) -> None:
        engine = self.engine
        if kind == "ready":
            engine.pods_ready(key, True, now)
        elif kind == "unready":
            engine.pods_ready(key, False, now)
        elif kind in ("succeeded", "failed"):
            engine.finish(key, kind == "succeeded", message, now)
        elif kind == "stopped":
            engine.workload_stopped(key, now)

    def _dispatch(self, events: list[EngineEvent], now: float) -> None:
        self.event_log.extend(events)
        if self.observer is not None:
            self.observer.on_events(self.engine, events, now)
        for ev in events:
            if ev.key in self.engine.ca.parent_of:
                continue  # a concurrent-admission variant: its parent's job runs, not it
            if ev.type == "Admitted":
                wl = self.engine.workloads.get(ev.key)
                if wl is not None and self._runs_locally(wl):
                    self.runner.start(wl, now)
            elif ev.type in ("Evicted",):
                self.runner.stop(ev.key, now)
        self.pods.on_events(events)
        changes = self.jobs.on_events(events)
        if changes and self.on_job_change is not None:
            self.on_job_change(changes)
        self._job_events(now)
        for plugin in self.plugins:
            plugin.on_events(events, now)

    def _job_events(self, now: float) -> None:
        if not self.jobs.events and not self.pods.events:
            return
        events = self.jobs.drain_events() + self.pods.drain_events()
        if self.observer is not None:
            self.observer.on_job_events(events, now)

    def _runs_locally(self, wl: Workload) -> bool:
        """A workload dispatched through MultiKueue runs on a worker, not here."""
        return wl.status.cluster_name is None

    def run_cycle(self, now: float) -> CycleResult:
        """One scheduling cycle of the engine (observed when an observer is set)."""
        if self.observer is not None:
            return self.observer.cycle(self.engine, now)
        return self.engine.schedule(now)

    def schedule_once(self, now: float) -> CycleResult:
        self.react(now)
        result = self.run_cycle(now)
        self.cycles += 1
        self.react(now)
        return result

    def settle(self, now: float, cycles: int | None = None, enough: Callable[[], bool] | None = None) -> int:
        """Run scheduling cycles until one changes nothing (or exactly ``cycles``).

        ``enough``: asked after each cycle; True stops early (the caller commits what is decided
        and settles on later; the cycles left are the same ones, run then)."""
        ran = 0
        self.unsettled = False
        self.react(now)
        while cycles is None or ran < cycles:
            result = self.run_cycle(now)
            ran += 1
            self.cycles += 1
            reacted = self.react(now)
            if cycles is None and not result.changed and not reacted:
                break
            if enough is not None and enough():
                self.unsettled = True
                return ran
            if ran >= MAX_SETTLE_ROUNDS:
                raise RuntimeError("scheduling did not settle")
        return ran
