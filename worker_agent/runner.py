"""Runners of the agent: the Start gate, and simulated pods.

:class:`StartGate` wraps whatever runs pods in the worker cluster: a copy of a
hub workload is admitted locally long before the hub names a winner, and Kueue
only creates the Job on the winner, so the gate holds a copy's start until the
agent lets it through. Workloads that are not hub copies pass straight through.

In embedded mode the pods are simulated by :class:`hub.controllers.simrunner.SimRunner`
with ``start_at_admission=False`` (see :func:`sim_pods`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from hub.api.workload import Workload
from hub.controllers.cluster import Runner, RunnerReport
from hub.controllers.simrunner import DEFAULT_READY_DELAY, SimRunner

log = logging.getLogger(__name__)

DEFAULT_DURATION = 1.0


def sim_pods(
    duration_of: Callable[[Workload], float | None],
    *,
    default_duration: float = DEFAULT_DURATION,
    ready_delay: float = DEFAULT_READY_DELAY,
) -> SimRunner:
    """The agent's simulated pods: a run starts when the hub's Start lets it through the gate."""
    return SimRunner(duration_of, default_duration=default_duration, ready_delay=ready_delay, start_at_admission=False)


@dataclass(slots=True)
class Report:
    key: str
    kind: str  # "ready", "unready", "succeeded", "failed", "stopped"
    message: str = ""


class StartGate:
    """A :class:`hub.controllers.cluster.Runner` that starts hub copies only once allowed."""

    def __init__(self, inner: Runner) -> None:
        self.inner = inner
        # Called with (workload key, "start" | "end", why) whenever a run starts or ends (run records).
        self.record: Callable[[str, str, str], None] | None = None
        self._open_runs: set[str] = set()
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
        self._run(workload, now)

    def _run(self, workload: Workload, now: float) -> None:
        self.running.add(workload.meta.key)
        self._note(workload.meta.key, "start", "")
        self.inner.start(workload, now)

    def _note(self, key: str, event: str, why: str) -> None:
        if event == "start":
            self._open_runs.add(key)
        elif key in self._open_runs:
            self._open_runs.discard(key)
        else:
            return  # an end without a start this process saw
        if self.record is not None:
            self.record(key, event, why)

    def stop(self, key: str, now: float) -> None:
        self._admitted.pop(key, None)
        if key in self.running:
            self.running.discard(key)
            self._note(key, "end", "stopped")
            self.inner.stop(key, now)
        else:
            self._stopped.append(Report(key, "stopped"))  # nothing ran: the stop is immediate

    def poll(self, now: float) -> list[RunnerReport]:
        out = self.inner.poll(now)
        if self._open_runs:
            for report in out:
                if report.kind in ("succeeded", "failed"):
                    self._note(report.key, "end", report.kind)
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
            self._run(waiting, now)
        return key in self.running

    def resume(self, workload: Workload, now: float) -> None:
        """Run a copy that was running before the agent restarted."""
        key = workload.meta.key
        self.copies.add(key)
        self._allowed.add(key)
        self._run(workload, now)

    def revoke(self, key: str) -> None:
        """A later local admission of this copy must not run it again."""
        self._allowed.discard(key)

    def forget(self, key: str, now: float, why: str = "withdrawn") -> None:
        """The copy is gone: stop its pods without a report anyone waits for."""
        self.copies.discard(key)
        self._allowed.discard(key)
        self._admitted.pop(key, None)
        if key in self.running:
            self.running.discard(key)
            self._note(key, "end", why)
            discard = getattr(self.inner, "discard", None)
            if callable(discard):
                discard(key)
            else:
                self.inner.stop(key, now)
