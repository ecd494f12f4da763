"""A take-over parses thousands of Workloads that share a few quantities, instants and durations:
those parses are cached by text (issue 26's start-up), and whatever was refused is still refused,
every time, with the same error (a cache must not turn bad input into a crash or an answer)."""

from __future__ import annotations

import pytest

from hub.api import config, meta, quantity
from hub.api.config import parse_duration
from hub.api.meta import parse_time
from hub.api.quantity import QuantityError, resource_value


def test_repeated_texts_are_parsed_once() -> None:
    for cached in (quantity._text_value, meta._cached_time, config._duration_text):
        cached.cache_clear()
    for _ in range(3):
        assert resource_value("cpu", "1500m") == 1500
        assert parse_time("2026-11-27T02:19:24.405800Z") == pytest.approx(1795745964.4058)
        assert parse_duration("10h") == 36000.0
    for cached in (quantity._text_value, meta._cached_time, config._duration_text):
        info = cached.cache_info()
        assert (info.misses, info.hits) == (1, 2), cached


@pytest.mark.parametrize("bad", [True, False, [1], {"a": 1}, None, "1.5x", " 1", ""])
def test_bad_quantities_stay_refused_after_good_ones(bad: object) -> None:
    assert resource_value("cpu", 1) == 1000 and resource_value("cpu", "1") == 1000
    for _ in range(2):  # a refusal is never cached as an answer
        with pytest.raises(QuantityError):
            resource_value("cpu", bad)  # type: ignore[arg-type]


def test_bad_durations_and_times_stay_refused() -> None:
    assert parse_duration(1) == 1.0
    for _ in range(2):
        with pytest.raises(ValueError):
            parse_duration(True)
        with pytest.raises(ValueError):
            parse_duration("10 hours")
        with pytest.raises(ValueError):
            parse_time("yesterday")
