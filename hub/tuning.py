"""Process-level tuning shared by the long-running commands and the benchmarks."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

# The engine keeps one small object graph per workload for as long as the workload
# lives; CPython's default thresholds (700, 10, 10) then spend most of a busy
# process's time re-scanning that long-lived heap. Collecting young objects less
# often and full collections rarely keeps pauses short and amortised.
GC_THRESHOLDS = (50_000, 20, 100)


def tune_gc(freeze: bool = True, collect: bool = True) -> None:
    """Apply the thresholds; with ``freeze`` also exempt what is alive now (loaded state), after a
    full collection unless ``collect`` is False (the pacer's next full collection, at most
    ``GcPacer.full_every`` later, then reclaims any cyclic garbage frozen with it)."""
    if collect:
        gc.collect()
    if freeze:
        gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


class GcPacer:
    """Keeps garbage collection proportional to new work, not to the size of the state.

    After each round of a long-running loop, what survived is frozen (moved out of
    the collector's generations), so automatic collections only ever look at objects
    allocated since: a backlog of 100,000 workloads costs the collector nothing per
    admission. Our state has few reference cycles (dropping a workload frees it by
    reference counting); the rare cyclic garbage that gets frozen is reclaimed by a
    full collection every ``full_every`` seconds.
    """

    def __init__(self, full_every: float = 600.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.full_every = full_every
        self.clock = clock
        self._last_full = clock()

    def after_round(self) -> None:
        now = self.clock()
        if now - self._last_full >= self.full_every:
            self._last_full = now
            gc.unfreeze()
            gc.collect()
        gc.freeze()
