"""Fixtures of the dev-cluster's component tests: a fake clock and a SQLite store that reads it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_devcluster import Clock, open_store

from hub.store import SQLiteStore


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> Iterator[SQLiteStore]:
    s = open_store(tmp_path, clock)
    yield s
    s.close()
