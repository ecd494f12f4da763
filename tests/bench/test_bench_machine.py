"""The machine-speed probe the benchmarks run beside the service under test."""

from __future__ import annotations

import math
import time

from hub.bench.machine import MachineSpeed, machine_speed


def test_the_probe_samples_the_fixed_work_while_the_block_runs() -> None:
    with machine_speed(every=0.05) as speed:
        # The samples arrive when the block ends; under load the probe's Python takes a second or
        # more to start, so the block lasts far longer than the three 50 ms periods it needs.
        time.sleep(5.0)
    assert len(speed.samples) >= 3
    assert all(0 < s < 5.0 for s in speed.samples)  # CPU seconds of about 10 ms of work
    low, high = speed.spread
    assert low <= speed.median_ms <= high
    assert "median of" in speed.describe()


def test_a_block_too_short_for_a_sample_reports_no_figure() -> None:
    with machine_speed(every=30.0) as speed:
        pass
    assert speed.samples == []
    assert math.isnan(speed.median_ms)
    assert math.isnan(MachineSpeed().spread[0])
