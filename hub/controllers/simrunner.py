"""The standalone hub's runner: simulated pods that become ready, then finish.

A workload runs for ``mkhub.dev/sim-duration`` (on the Workload, or on the Job
it belongs to) or a default. The runner keeps no state of its own worth
saving: a run starts at the workload's ``Admitted`` condition time, which is
committed to the store in the same transaction as the admission. After a
restart the hub hands every admitted, unfinished workload back to
:meth:`SimRunner.start` and the run resumes with whatever time is left, so a
workload is never run twice and never cut short.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass

from hub.api.config import parse_duration
from hub.api.workload import ADMITTED, Workload

from .cluster import RunnerReport

SIM_DURATION_ANNOTATION = "mkhub.dev/sim-duration"
DEFAULT_DURATION = 5.0
DEFAULT_READY_DELAY = 0.1


@dataclass(slots=True)
class SimReport:
    key: str
    kind: str  # "ready", "succeeded", "stopped"
    message: str = ""


def duration_annotation(annotations: dict[str, str]) -> float | None:
    """The run time an object asks for, or None. Raises ValueError when malformed."""
    raw = annotations.get(SIM_DURATION_ANNOTATION)
    if raw is None:
        return None
    value = parse_duration(raw)
    if value < 0:
        raise ValueError(f"{raw!r} is negative")
    return value


class SimRunner:
    """Implements :class:`hub.controllers.cluster.Runner` with timers instead of pods."""

    def __init__(
        self,
        duration_of: Callable[[Workload], float | None] | None = None,
        *,
        default_duration: float = DEFAULT_DURATION,
        ready_delay: float = DEFAULT_READY_DELAY,
    ) -> None:
        self._duration_of = duration_of or (lambda wl: duration_annotation(wl.meta.annotations))
        self.default_duration = default_duration
        self.ready_delay = ready_delay
        # (due time, order, key, report kind); stale entries are skipped on pop.
        self._timers: list[tuple[float, int, str, str]] = []
        self._runs: dict[str, int] = {}  # key -> run id of its live run
        self._order = 0
        self._stopped: list[RunnerReport] = []

    # --- the Runner protocol

    def start(self, workload: Workload, now: float) -> None:
        key = workload.meta.key
        admitted = workload.status.condition(ADMITTED)
        # The committed admission time, not "now": that is what makes a resume exact.
        started = admitted.last_transition_time if admitted is not None and admitted.is_true else now
        try:
            duration = self._duration_of(workload)
        except ValueError:
            duration = None
        run_for = self.default_duration if duration is None else duration
        self._order += 1
        run = self._order
        self._runs[key] = run
        ready_at = started + min(self.ready_delay, run_for)
        heapq.heappush(self._timers, (ready_at, run, key, "ready"))
        heapq.heappush(self._timers, (started + run_for, run, key, "succeeded"))

    def stop(self, key: str, now: float) -> None:
        self._runs.pop(key, None)
        self._stopped.append(SimReport(key, "stopped"))

    def poll(self, now: float) -> list[RunnerReport]:
        out, self._stopped = self._stopped, []
        timers = self._timers
        while timers and timers[0][0] <= now:
            _, run, key, kind = heapq.heappop(timers)
            if self._runs.get(key) != run:
                continue  # stopped or restarted since
            if kind == "succeeded":
                del self._runs[key]
                out.append(SimReport(key, kind, "Simulated run completed"))
            else:
                out.append(SimReport(key, kind))
        return out

    # --- for the hub's loop

    def discard(self, key: str) -> None:
        """Forget a deleted workload without reporting anything."""
        self._runs.pop(key, None)

    def next_due(self) -> float | None:
        timers = self._timers
        while timers and self._runs.get(timers[0][2]) != timers[0][1]:
            heapq.heappop(timers)
        if self._stopped:
            return float("-inf")
        return timers[0][0] if timers else None

    @property
    def running(self) -> set[str]:
        return set(self._runs)
