"""The standalone hub's runner: simulated pods that become ready, then finish.

A workload runs for ``mkhub.dev/sim-duration`` (on the Workload, or on the Job
it belongs to) or a default. The runner keeps no state of its own worth
saving: a run starts at the workload's ``Admitted`` condition time, which is
committed to the store in the same transaction as the admission. After a
restart the hub hands every admitted, unfinished workload back to
:meth:`SimRunner.start` and the run resumes with whatever time is left, so a
workload is never run twice and never cut short. A workload of a kind that never finishes (a
RayCluster, a RayService) becomes ready and runs until it is stopped.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

from hub.api.annotations import duration_annotation
from hub.api.jobkinds import adapter_for
from hub.api.workload import ADMITTED, Workload

from .cluster import RunnerReport

log = logging.getLogger(__name__)

DEFAULT_DURATION = 5.0
DEFAULT_READY_DELAY = 0.1


@dataclass(slots=True)
class SimReport:
    key: str
    kind: str  # "ready", "succeeded", "stopped"
    message: str = ""


def _runs_until_deleted(workload: Workload) -> bool:
    """A Workload of a kind that never finishes (a RayCluster, a RayService: Kueue's Finished is
    always false for them) holds its quota until its object goes, whatever the run time."""
    for ref in workload.meta.owner_references:
        adapter = adapter_for(str(ref.get("apiVersion")), str(ref.get("kind")))
        if adapter is not None and not getattr(adapter, "finishes", True):
            return True
    return False


class SimRunner:
    """Implements :class:`hub.controllers.cluster.Runner` with timers instead of pods.

    Used by the standalone hub and by the agent. ``start_at_admission``: a run
    begins at the workload's committed ``Admitted`` time (the hub: that is what
    makes a resume after restart exact); otherwise when :meth:`start` is called
    (the agent: a copy starts when the hub names it the winner), or at the time
    given to :meth:`resume_at` beforehand (an agent restoring its runs).
    """

    def __init__(
        self,
        duration_of: Callable[[Workload], float | None] | None = None,
        *,
        default_duration: float = DEFAULT_DURATION,
        ready_delay: float = DEFAULT_READY_DELAY,
        start_at_admission: bool = True,
    ) -> None:
        self._duration_of = duration_of or (lambda wl: duration_annotation(wl.meta.annotations))
        self.default_duration = default_duration
        self.ready_delay = ready_delay
        self.start_at_admission = start_at_admission
        # (due time, run id, key, report kind); stale entries are skipped on pop.
        self._timers: list[tuple[float, int, str, str]] = []
        self._runs: dict[str, int] = {}  # key -> run id of its live run
        self.started_at: dict[str, float] = {}
        self._resume: dict[str, float] = {}
        self._order = 0
        self._stopped: list[RunnerReport] = []

    # --- the Runner protocol

    def resume_at(self, key: str, started: float) -> None:
        """The next :meth:`start` of ``key`` continues a run that began at ``started``."""
        self._resume[key] = started

    def start(self, workload: Workload, now: float) -> None:
        key = workload.meta.key
        resumed = key in self._resume
        started = self._resume.pop(key, now)
        if not resumed and self.start_at_admission:
            admitted = workload.status.condition(ADMITTED)
            if admitted is not None and admitted.is_true:
                started = admitted.last_transition_time
        try:
            duration = self._duration_of(workload)
        except ValueError:
            duration = None
        run_for = self.default_duration if duration is None else duration
        # One line per run, like a cluster's pod events: what ran where, and when (e2e tests read them).
        log.debug("run %s %s at %.3f for %.3fs", "resumed" if resumed else "started", key, started, run_for)
        self._order += 1
        run = self._order
        self._runs[key] = run
        self.started_at[key] = started
        heapq.heappush(self._timers, (started + min(self.ready_delay, run_for), run, key, "ready"))
        if run_for != math.inf and not _runs_until_deleted(workload):  # serving Pods; a RayCluster
            heapq.heappush(self._timers, (started + run_for, run, key, "succeeded"))

    def stop(self, key: str, now: float) -> None:
        self.discard(key)
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
                self.started_at.pop(key, None)
                log.debug("run succeeded %s at %.3f", key, now)
                out.append(SimReport(key, kind, "Simulated run completed"))
            else:
                out.append(SimReport(key, kind))
        return out

    # --- for the driving loop

    def discard(self, key: str) -> None:
        """Forget a run without reporting anything (deleted, or withdrawn)."""
        if self._runs.pop(key, None) is not None:
            log.debug("run stopped %s", key)
        self.started_at.pop(key, None)

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
