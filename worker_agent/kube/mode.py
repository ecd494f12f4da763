"""Wiring of ``mkagent --kubeconfig`` (see :mod:`worker_agent.kube`): the store, the runner,
the copy mirror, logs and the garbage collector around one :class:`worker_agent.agent.Agent`."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hub.api.jobkinds import external_kinds
from hub.controllers.cluster import ClusterController
from hub.controllers.simrunner import SimRunner
from hub.engine.engine import Engine
from hub.store.interface import AlreadyExists, NotFound, StoreError
from hub.store.kube.store import CREATE

from ..agent import Agent
from .cluster import OPTIONAL_KINDS, STORE_KINDS, KubeCluster
from .jobs import JobGone, JobWanted, KubeJobs
from .logs import LogReader
from .mirror import Mirror, Wanted
from .pods import PREBUILT_WORKLOAD_LABEL
from .tas import PodFail, PodUngate, WorkerTas, apply_pod_write

log = logging.getLogger(__name__)

FIELD_MANAGER = "mkagent"
RECONNECT_GC_DELAY = 2.0  # after a new session, let the hub's reconciliation land first


@dataclass(frozen=True, slots=True)
class KubeConnection:
    kubeconfig: Path | None  # None: in-cluster
    context: str | None = None
    qps: float = 500.0
    burst: int = 1000


class KubeMode:
    def __init__(self, conn: KubeConnection, engine: Engine, sim: SimRunner, *, origin: str, partial_admission: bool,
                 gc_interval: float, wake: Callable[[], None]) -> None:
        from hub.store.kube import ApiClientTransport, KubeStore, KubeStoreOptions

        self.transport = ApiClientTransport.from_kubeconfig(conn.kubeconfig, context=conn.context, qps=conn.qps, burst=conn.burst)
        self.store = KubeStore(self.transport, KubeStoreOptions(
            kinds=(*STORE_KINDS, *external_kinds()), optional_kinds=(*OPTIONAL_KINDS, *external_kinds()), field_manager=FIELD_MANAGER))
        self.origin = origin
        self.gc_interval = gc_interval
        self.agent: Agent | None = None
        self.cluster = KubeCluster(self.store, ClusterController(engine, sim), partial_admission=partial_admission,
                                   wake=wake, apply=self._apply, apply_many=self._apply_many)
        self.runner = KubeJobs(
            origin=origin, job_of=self._job_of, flavor=lambda name: self.store.get("ResourceFlavor", "", name),
            current_job=self._current_job, desire=self.cluster.writer.desire, sim=sim, dispatch_of=self._dispatch_of,
        )
        self.controller = self.cluster.controller
        self.controller.runner = self.runner
        self.controller.plugins.append(self.cluster)  # before the agent's: objects first
        self.tas = WorkerTas(self.controller, self.cluster.writer.desire)
        self.cluster.on_pod = self.tas.on_pod
        self.logs: LogReader | None = None
        self.mirror: Mirror | None = None
        self._gc_at: float | None = None
        self._sessions = 0

    def load(self, now: float) -> int:
        return self.cluster.load(now)

    def attach(self, agent: Agent, send_control: Callable[[list[Any]], None], now: float) -> int:
        """Hook the agent in; restore the copies left in the worker. Returns how many."""
        self.agent = agent
        agent.job_status_of = self._job_status
        agent.serves_logs = True
        self.runner.on_status = lambda key, _status: agent.mark(key)
        self.mirror = mirror = Mirror(self.store, agent, self.runner, self.cluster.writer)
        agent.on_change = mirror.mark
        self.cluster.on_job = lambda obj: None if self.runner.observe(obj) else None
        self.cluster.on_workload = lambda event: mirror.on_workload(event, time.time())
        self.logs = LogReader(self.transport, send_control)
        restored = mirror.restore(now)
        self.cluster.start()
        self._gc_at = time.monotonic() + RECONNECT_GC_DELAY
        return restored

    # ------------------------------------------------------------------ runner hooks

    def _job_of(self, key: str) -> dict[str, Any] | None:
        c = self.agent.copies.get(key) if self.agent is not None else None
        return c.job if c is not None else None

    def _dispatch_of(self, key: str) -> str:
        c = self.agent.copies.get(key) if self.agent is not None else None
        return c.did if c is not None else ""

    def _current_job(self, ref: str) -> dict[str, Any] | None:
        kind, _, job_key = ref.partition(":")
        ns, _, name = job_key.partition("/")
        return self.store.get(kind, ns, name)

    def _job_status(self, key: str) -> tuple[str, str]:
        run = self.runner.runs.get(key)
        return (run.job_key, self.runner.status_json(key)) if run is not None else ("", "")

    def _apply(self, key: str, state: object) -> None:
        """Writer thread: reconcile one object of the worker (see :class:`worker_agent.kube.cluster.Writer`)."""
        kind, _, name = key.partition(":")
        if kind == "Workload":
            assert self.mirror is not None
            assert state is None or isinstance(state, Wanted)
            self.mirror.apply(name, state)
        elif isinstance(state, PodUngate | PodFail):
            apply_pod_write(self.store, name, state)
        elif isinstance(state, JobWanted):
            self._create_job(state.manifest)
        elif isinstance(state, JobGone):
            self._delete_job(kind, name, state.keep_logs)

    def _apply_many(self, items: list[tuple[str, object]]) -> list[BaseException | None]:
        """Writer thread: reconcile several objects, their requests gathered (one batch of
        :meth:`hub.store.kube.KubeStore.write_gathered`, every request in flight at once, instead
        of a round trip each through urllib3): the copies' Workload creates, status writes and
        deletes and the runs' Job creates. The rest (Pods, Job deletes) goes one by one."""
        errors: list[BaseException | None] = [None] * len(items)
        writes: list[tuple[str, dict[str, Any]]] = []
        planned: list[tuple[int, str]] = []  # (item, the write's op)
        for i, (key, state) in enumerate(items):
            kind, _, name = key.partition(":")
            try:
                if kind == "Workload":
                    assert self.mirror is not None
                    assert state is None or isinstance(state, Wanted)
                    write = self.mirror.plan(name, state)
                elif isinstance(state, JobWanted):
                    write = (CREATE, state.manifest)
                else:
                    self._apply(key, state)
                    write = None
            except Exception as exc:
                errors[i] = exc
                continue
            if write is not None:
                writes.append(write)
                planned.append((i, write[0]))
        if not writes:
            return errors
        try:
            results = self.store.write_gathered(writes)
        except StoreError as exc:  # refused as a whole (closed)
            for i, _ in planned:
                errors[i] = exc
            return errors
        assert self.mirror is not None
        for (i, op), got in zip(planned, results, strict=True):
            key, state = items[i]
            kind, _, name = key.partition(":")
            try:
                if kind == "Workload":
                    assert state is None or isinstance(state, Wanted)
                    errors[i] = self.mirror.landed(name, state, op, got)
                elif isinstance(got, AlreadyExists):
                    assert isinstance(state, JobWanted)
                    self._job_exists(state.manifest)
                elif isinstance(got, StoreError):
                    errors[i] = got
            except Exception as exc:
                errors[i] = exc
        return errors

    def _create_job(self, manifest: dict[str, Any]) -> None:
        try:
            self.store.create(manifest)
        except AlreadyExists:
            self._job_exists(manifest)

    def _job_exists(self, manifest: dict[str, Any]) -> None:
        """A create of the run's object refused as existing: this copy's (a previous process
        made it), or a name clash to report."""
        meta, kind = manifest["metadata"], manifest["kind"]
        current = self.store.get(kind, meta["namespace"], meta["name"])
        labels = (current or {}).get("metadata", {}).get("labels") or {}
        if labels.get(PREBUILT_WORKLOAD_LABEL) != meta["labels"][PREBUILT_WORKLOAD_LABEL]:
            log.error("cannot create %s %s/%s in the worker: one of that name that is not this copy's exists",
                      kind, meta["namespace"], meta["name"])

    def _delete_job(self, kind: str, job_key: str, keep_logs: bool) -> None:
        ns, _, name = job_key.partition("/")
        if keep_logs and self.logs is not None and kind == "Job":  # mkhub logs reads a Job's pods
            self.logs.archive(job_key)
        with contextlib.suppress(NotFound):
            self.store.delete(kind, ns, name)

    # ------------------------------------------------------------------ loop

    def after_flush(self, sessions: int, now_mono: float) -> None:
        """After each batch: write the copies' changes; collect garbage when due."""
        if self.mirror is None:
            return
        self.tas.flush()
        self.mirror.sync()
        if sessions != self._sessions:
            self._sessions = sessions
            self._gc_at = now_mono + RECONNECT_GC_DELAY
        if self._gc_at is not None and now_mono >= self._gc_at:
            self.mirror.collect()
            self._gc_at = now_mono + self.gc_interval

    def due(self) -> float | None:
        """The ``monotonic`` time of the next garbage collection."""
        return self._gc_at

    def close(self) -> None:
        if self.logs is not None:
            self.logs.close()
        self.cluster.close()
