"""Annotations mkhub reads from the objects it is given."""

from __future__ import annotations

from .config import parse_duration

# How long a simulated workload runs (on the Workload, or on the Job it belongs to).
SIM_DURATION_ANNOTATION = "mkhub.dev/sim-duration"


def duration_annotation(annotations: dict[str, str]) -> float | None:
    """The run time an object asks for, or None. Raises ValueError when malformed."""
    raw = annotations.get(SIM_DURATION_ANNOTATION)
    if raw is None:
        return None
    value = parse_duration(raw)
    if value < 0:
        raise ValueError(f"{raw!r} is negative")
    return value
