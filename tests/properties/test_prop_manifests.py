"""Every generated manifest (valid, or mutated: wrong types, deep nesting, bad names, labels, sizes)
is either accepted and read back unchanged from the real store, or refused with one line naming
the object and a field path; never an exception. Bounded and seeded here; ``make fuzz`` runs long."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis_budget import examples
from manifest_fuzz import Harness, manifests


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    h = Harness()
    yield h
    h.close()


@settings(max_examples=examples(250), derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(manifest=manifests())
def test_every_manifest_is_accepted_and_round_trips_or_refused_with_a_field_path(harness: Harness, manifest: Any) -> None:
    assert harness.check(manifest) in ("accepted", "refused")
