"""Runners of the agent: the Start gate, and simulated pods.

:class:`StartGate` wraps whatever runs pods in the worker cluster: a copy of a
hub workload is admitted locally long before the hub names a winner, and Kueue
only creates the Job on the winner, so the gate holds a copy's start until the
agent lets it through. Workloads that are not hub copies pass straight through.

:class:`SimPods` is the embedded-mode pod runner: pods become ready after a
short delay and succeed after the workload's ``mkhub.dev/sim-duration``.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Callable
from dataclasses import dataclass

from hub.api.workload import Workload
from hub.controllers.cluster import Runner, RunnerReport

log = logging.getLogger(__name__)

DEFAULT_DURATION = 1.0
DEFAULT_READY_DELAY = 0.1


@dataclass(slots=True)
class Report:
    key: str
    kind: str  # "ready", "unready", "succeeded", "failed", "stopped"
    message: str = ""


class StartGate:
    """A :class:`hub.controllers.cluster.Runner` that starts hub copies only once allowed."""

    def __init__(self, inner: Runner) -> None:
        self.inner = inner
        self.copies: set[str] = set()  # keys of hub copies
        self._allowed: set[str] = set()
        self._admitted: dict[str, Workload] = {}  # copies admitted locally, waiting for Start
        self.running: set[str] = set()
        self._stopped: list[RunnerReport] = []

    # --- Runner
    def start(self, workload: Workload, now: float) -> None:
        key = workload.meta.key
        if key in self.copies and key not in self._allowed:
            self._admitted[key] = workload
            return
        self.running.add(key)
        self.inner.start(workload, now)

    def stop(self, key: str, now: float) -> None:
        self._admitted.pop(key, None)
        if key in self.running:
            self.running.discard(key)
            self.inner.stop(key, now)
        else:
            self._stopped.append(Report(key, "stopped"))  # nothing ran: the stop is immediate

    def poll(self, now: float) -> list[RunnerReport]:
        out = self.inner.poll(now)
        if self._stopped:
            out = [*self._stopped, *out]
            self._stopped = []
        return out

    # --- the agent's controls
    def allow(self, key: str, now: float) -> bool:
        """Let a copy run: starts it now if it is admitted locally. True if it runs."""
        self._allowed.add(key)
        waiting = self._admitted.pop(key, None)
        if waiting is not None:
            self.running.add(key)
            self.inner.start(waiting, now)
        return key in self.running

    def resume(self, workload: Workload, now: float) -> None:
        """Run a copy that was running before the agent restarted."""
        key = workload.meta.key
        self.copies.add(key)
        self._allowed.add(key)
        self.running.add(key)
        self.inner.start(workload, now)

    def revoke(self, key: str) -> None:
        """A later local admission of this copy must not run it again."""
        self._allowed.discard(key)

    def forget(self, key: str, now: float) -> None:
        """The copy is gone: stop its pods without a report anyone waits for."""
        self.copies.discard(key)
        self._allowed.discard(key)
        self._admitted.pop(key, None)
        if key in self.running:
            self.running.discard(key)
            discard = getattr(self.inner, "discard", None)
            if callable(discard):
                discard(key)
            else:
                self.inner.stop(key, now)


class SimPods:
    """Simulated pods: ready after ``ready_delay``, succeeded after the workload's duration.

    A run starts when :meth:`start` is called, or at the time given to
    :meth:`resume_at` before it (an agent restoring its runs after a restart).
    """

    def __init__(
        self,
        duration_of: Callable[[Workload], float | None],
        *,
        default_duration: float = DEFAULT_DURATION,
        ready_delay: float = DEFAULT_READY_DELAY,
    ) -> None:
        self._duration_of = duration_of
        self.default_duration = default_duration
        self.ready_delay = ready_delay
        self._timers: list[tuple[float, int, str, str]] = []  # (due, run id, key, kind)
        self._runs: dict[str, int] = {}
        self.started_at: dict[str, float] = {}
        self._resume: dict[str, float] = {}
        self._order = 0
        self._stopped: list[RunnerReport] = []

    def resume_at(self, key: str, started: float) -> None:
        self._resume[key] = started

    def start(self, workload: Workload, now: float) -> None:
        key = workload.meta.key
        resumed = key in self._resume
        started = self._resume.pop(key, now)
        try:
            duration = self._duration_of(workload)
        except ValueError:
            duration = None
        run_for = self.default_duration if duration is None else duration
        # One line per run, like a cluster's pod events: what ran where, and when (e2e tests read them).
        log.debug("run %s %s at %.3f for %.3fs", "resumed" if resumed else "started", key, started, run_for)
        self._order += 1
        self._runs[key] = self._order
        self.started_at[key] = started
        heapq.heappush(self._timers, (started + min(self.ready_delay, run_for), self._order, key, "ready"))
        heapq.heappush(self._timers, (started + run_for, self._order, key, "succeeded"))

    def stop(self, key: str, now: float) -> None:
        self.discard(key)
        self._stopped.append(Report(key, "stopped"))

    def discard(self, key: str) -> None:
        if self._runs.pop(key, None) is not None:
            log.debug("run stopped %s", key)
        self.started_at.pop(key, None)

    def poll(self, now: float) -> list[RunnerReport]:
        out, self._stopped = self._stopped, []
        timers = self._timers
        while timers and timers[0][0] <= now:
            _, run, key, kind = heapq.heappop(timers)
            if self._runs.get(key) != run:
                continue
            if kind == "succeeded":
                self._runs.pop(key, None)
                self.started_at.pop(key, None)
                log.debug("run succeeded %s at %.3f", key, now)
                out.append(Report(key, kind, "Simulated run completed"))
            else:
                out.append(Report(key, kind))
        return out

    def next_due(self) -> float | None:
        timers = self._timers
        while timers and self._runs.get(timers[0][2]) != timers[0][1]:
            heapq.heappop(timers)
        if self._stopped:
            return float("-inf")
        return timers[0][0] if timers else None
