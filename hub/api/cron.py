"""Standard cron schedules as Kubernetes' CronJobs read them (the robfig/cron ParseStandard
syntax): five fields (minute, hour, day of month, month, day of week) with ``*``, ``?``,
lists, ranges, steps and month/day names, or a descriptor (``@yearly``, ``@annually``,
``@monthly``, ``@weekly``, ``@daily``, ``@midnight``, ``@hourly``, ``@every <duration>``).
Parse errors carry the parser's words, which kube-apiserver returns for ``spec.schedule``.
Pure: times are POSIX seconds, the zone is given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                       "dec"), start=1)}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_BOUNDS: tuple[tuple[int, int, dict[str, int]], ...] = ((0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, _MONTHS), (0, 6, _DAYS))
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


class CronError(ValueError):
    """A schedule that does not parse; the message is the parser's."""


def _number(text: str, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not text.isdigit():
        raise CronError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


def _field(expr: str, low: int, high: int, names: dict[str, int]) -> frozenset[int]:
    out: set[int] = set()
    for part in expr.split(","):
        range_step = part.split("/")
        if len(range_step) > 2:
            raise CronError(f"too many slashes: {part}")
        bounds = range_step[0].split("-")
        if bounds[0] in ("*", "?"):
            start, end = low, high
            if len(bounds) > 1:
                raise CronError(f"too many hyphens: {part}")
        else:
            if len(bounds) > 2:
                raise CronError(f"too many hyphens: {part}")
            start = _number(bounds[0], names)
            end = _number(bounds[1], names) if len(bounds) == 2 else start
        step = 1
        if len(range_step) == 2:
            step = _number(range_step[1], {})
            if len(bounds) == 1 and bounds[0] not in ("*", "?"):
                end = high  # "N/step" runs from N to the end
        if start < low:
            raise CronError(f"beginning of range ({start}) below minimum ({low}): {part}")
        if end > high:
            raise CronError(f"end of range ({end}) above maximum ({high}): {part}")
        if start > end:
            raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {part}")
        if step == 0:
            raise CronError(f"step of range should be a positive number: {part}")
        out.update(range(start, end + 1, step))
    return frozenset(out)


@dataclass(frozen=True, slots=True)
class Schedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    day_star: bool  # cron's rule: with both day fields restricted, either may match
    weekday_star: bool
    every: float = 0.0  # @every: a fixed interval instead of the fields

    def _day_matches(self, t: datetime) -> bool:
        in_month, in_week = t.day in self.days, (t.isoweekday() % 7) in self.weekdays
        if self.day_star or self.weekday_star:
            return in_month and in_week
        return in_month or in_week

    def next_after(self, after: float, zone: tzinfo = UTC) -> float:
        """The first scheduled time strictly after ``after`` (whole minutes, in ``zone``)."""
        if self.every:
            return after + self.every
        t = datetime.fromtimestamp(after, tz=zone).replace(second=0, microsecond=0) + timedelta(minutes=1)
        limit = t + timedelta(days=366 * 5)
        while t < limit:
            if t.month not in self.months:
                t = (t.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(day=1)
                continue
            if not self._day_matches(t):
                t = t.replace(hour=0, minute=0) + timedelta(days=1)
                continue
            if t.hour not in self.hours:
                t = t.replace(minute=0) + timedelta(hours=1)
                continue
            if t.minute not in self.minutes:
                t += timedelta(minutes=1)
                continue
            return t.timestamp()
        raise CronError("no time matches the schedule")


def parse(schedule: str) -> Schedule:
    """A standard schedule, or :class:`CronError` with robfig/cron's message."""
    text = schedule.strip()
    if text.startswith("TZ=") or text.startswith("CRON_TZ="):
        _, _, text = text.partition(" ")
        text = text.strip()
    if text.startswith("@every "):
        rest = text.removeprefix("@every ").strip()
        parts = _DURATION.findall(rest)
        if not parts or "".join(n + u for n, u in parts) != rest:
            raise CronError(f"failed to parse duration {text}: time: invalid duration \"{rest}\"")
        seconds = sum(float(n) * _UNIT[u] for n, u in parts)
        return Schedule(frozenset(), frozenset(), frozenset(), frozenset(), frozenset(), True, True, max(seconds, 1.0))
    if text.startswith("@"):
        if text not in _DESCRIPTORS:
            raise CronError(f"unrecognized descriptor: {text}")
        text = _DESCRIPTORS[text]
    fields = text.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    sets = [_field(f, low, high, names) for f, (low, high, names) in zip(fields, _BOUNDS, strict=True)]
    return Schedule(sets[0], sets[1], sets[2], sets[3], sets[4],
                    fields[2] in ("*", "?"), fields[4] in ("*", "?"))


def time_zone(name: str) -> ZoneInfo | None:
    """The zone of a CronJob's ``timeZone`` (IANA names), or None when unknown."""
    if not name or name.startswith("/") or ".." in name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None
