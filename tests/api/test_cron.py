"""hub/api/cron.py: standard cron schedules as robfig/cron (Kubernetes' CronJob parser) reads them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hub.api import cron


def _at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(("schedule", "after", "expected"), [
    ("*/5 * * * *", "2025-06-15T15:06:40+00:00", "2025-06-15T15:10:00Z"),
    ("0 9 * * mon-fri", "2025-06-14T10:00:00+00:00", "2025-06-16T09:00:00Z"),  # Saturday -> Monday
    ("30 2 1,15 * *", "2025-06-15T02:30:00+00:00", "2025-07-01T02:30:00Z"),  # strictly after
    ("0 0 13 * fri", "2025-06-01T00:00:00+00:00", "2025-06-06T00:00:00Z"),  # day fields ORed: a Friday
    ("0 0 29 feb *", "2025-03-01T00:00:00+00:00", "2028-02-29T00:00:00Z"),
    ("@hourly", "2025-06-15T15:06:40+00:00", "2025-06-15T16:00:00Z"),
    ("0 0 * * 0", "2025-06-15T00:00:00+00:00", "2025-06-22T00:00:00Z"),  # Sunday is 0
])
def test_next_time(schedule: str, after: str, expected: str) -> None:
    assert _iso(cron.parse(schedule).next_after(_at(after))) == expected


def test_time_zone_and_every() -> None:
    paris = cron.time_zone("Europe/Paris")
    assert paris is not None and cron.time_zone("Mars/Olympus") is None and cron.time_zone("../etc") is None
    # 09:00 in Paris is 07:00 UTC in summer
    assert _iso(cron.parse("0 9 * * *").next_after(_at("2025-06-15T08:00:00+00:00"), paris)) == "2025-06-16T07:00:00Z"
    assert cron.parse("@every 1m30s").next_after(100.0) == 190.0


@pytest.mark.parametrize(("schedule", "message"), [
    ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
    ("61 * * * *", "end of range (61) above maximum (59): 61"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("@every soon", 'failed to parse duration @every soon: time: invalid duration "soon"'),
])
def test_errors_carry_the_parsers_words(schedule: str, message: str) -> None:
    with pytest.raises(cron.CronError) as exc:
        cron.parse(schedule)
    assert str(exc.value) == message
