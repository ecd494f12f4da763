from __future__ import annotations

from collections.abc import Iterator

import pytest

from hub.store import SQLiteStore


@pytest.fixture
def store() -> Iterator[SQLiteStore]:
    """A private in-memory SQLite store (the real back end, without a file)."""
    s = SQLiteStore(":memory:")
    yield s
    s.close()
