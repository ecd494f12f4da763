from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hub.store import SQLiteStore

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def fixed_clock() -> datetime:
    return T0


def manifest(
    kind: str = "Workload",
    name: str = "w1",
    namespace: str | None = "default",
    *,
    labels: dict[str, str] | None = None,
    spec: Any = None,
    status: Any = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels is not None:
        meta["labels"] = labels
    obj: dict[str, Any] = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": kind, "metadata": meta}
    obj["spec"] = spec if spec is not None else {"queueName": "q"}
    if status is not None:
        obj["status"] = status
    return obj


Manifest = Callable[..., dict[str, Any]]


@pytest.fixture
def mk() -> Manifest:
    """The manifest builder, as a fixture so test modules need not import conftest."""
    return manifest


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SQLiteStore]:
    """Every behaviour test runs against both the shared-connection and the pooled-reader modes."""
    path = ":memory:" if request.param == "memory" else tmp_path / "mkhub.db"
    s = SQLiteStore(path, now=fixed_clock)
    yield s
    s.close()


@pytest.fixture
def file_store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "mkhub.db", now=fixed_clock)
    yield s
    s.close()
