"""Hypothesis profiles for every property test under tests/.

``MKHUB_HYPOTHESIS_PROFILE`` selects one (default ``quick``):

* ``quick`` -- what ``make test`` runs: a fifth of each property's nominal examples,
  derandomized so a run is repeatable;
* ``default`` -- each property's nominal number of examples;
* ``deep`` -- ``make fuzz``: ten times the nominal number, random seeds.

Properties state their nominal count through :func:`tests_examples` (tests/hypothesis_budget.py),
which scales it by the active profile; ``tests/properties/test_prop_mutations.py`` proves the
quick profile still catches a broken invariant.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

# max_examples is the scale in percent of each property's nominal count (see hypothesis_budget.examples).
settings.register_profile("quick", max_examples=20, derandomize=True, database=None, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("default", max_examples=100, deadline=None)
settings.register_profile("deep", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("MKHUB_HYPOTHESIS_PROFILE", "quick"))


# Threads of hub.kubeapi (its servers, watch pumps, CRD follower) a test module leaves behind: a watch
# pump that outlived its server once spun at full CPU and stalled every later test of its worker.
_LEAK_PREFIXES = ("kubeapi-",)
_LEAK_GRACE = 5.0  # a stopped pump notices within hub.kubeapi.watch.POLL; this only absorbs a loaded machine


@pytest.fixture(autouse=True, scope="module")
def _no_kubeapi_thread_outlives_its_module() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    left = [t for t in threading.enumerate() if t not in before and t.name.startswith(_LEAK_PREFIXES) and t.is_alive()]
    for thread in left:
        thread.join(_LEAK_GRACE)
    alive = sorted(t.name for t in left if t.is_alive())
    assert not alive, f"threads left running by this module's tests or fixtures: {alive}"
