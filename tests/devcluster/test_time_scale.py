"""``mkhub dev-cluster --time-scale``: the controllers' clock, started at real time, runs FACTOR times as fast."""

from __future__ import annotations

import pytest

from hub.cli import parse_time_scale
from hub.devcluster.runtime import scaled_clock


def test_a_scaled_clock_starts_at_real_time_and_runs_faster() -> None:
    real = [1000.0]
    clock = scaled_clock(60, lambda: real[0])
    assert clock() == 1000.0
    real[0] = 1001.5
    assert clock() == 1090.0  # a second and a half of real time: 90 s of the controllers'


@pytest.mark.parametrize(("text", "scale"), [("1", 1.0), ("60", 60.0), ("0.5", 0.5), ("3600", 3600.0),
                                             ("fast", None), ("0", None), ("-1", None), ("nan", None),
                                             ("inf", None), ("3601", None), ("", None)])
def test_the_time_scale_is_a_bounded_factor(text: str, scale: float | None) -> None:
    assert parse_time_scale(text) == scale
