"""The collector's tuning at start-up: a take-over does not pay a full collection before serving."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from hub.tuning import GC_THRESHOLDS, tune_gc


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """Generations of the collections started while the test runs; the collector's state restored."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(int(info["generation"]))

    thresholds = gc.get_threshold()
    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def test_without_collect_the_state_is_frozen_with_no_collection(collections: list[int]) -> None:
    gc.disable()  # no automatic collection may start while the test counts
    try:
        tune_gc(collect=False)
        assert collections == []
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == GC_THRESHOLDS
    finally:
        gc.enable()


def test_by_default_a_full_collection_comes_first(collections: list[int]) -> None:
    gc.disable()
    try:
        tune_gc()
        assert collections == [2]
    finally:
        gc.enable()
