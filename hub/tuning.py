"""Process-level tuning shared by the long-running commands and the benchmarks."""

from __future__ import annotations

import gc

# The engine keeps one small object graph per workload for as long as the workload
# lives; CPython's default thresholds (700, 10, 10) then spend most of a busy
# process's time re-scanning that long-lived heap. Collecting young objects less
# often and full collections rarely keeps pauses short and amortised.
GC_THRESHOLDS = (50_000, 20, 100)


def tune_gc(freeze: bool = True) -> None:
    """Apply the thresholds; with ``freeze`` also exempt what is alive now (loaded state)."""
    gc.collect()
    if freeze:
        gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
