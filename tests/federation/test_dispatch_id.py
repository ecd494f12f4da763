"""A dispatch id is the same before and after the workload's status went through the store.

A restarted hub recomputes each reservation's dispatch id from the stored Workload and compares
it with the ids its agents report; an id that changes in the round trip makes the hub withdraw
its own winner and lose that workload's completion.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from hub.api.conversion import V1BETA2
from hub.api.meta import CONDITION_TRUE, Condition, meta_to_dict
from hub.api.registry import parse_object
from hub.api.workload import (
    QUOTA_RESERVED,
    EvictionStat,
    Workload,
    workload_spec_to_dict,
    workload_status_to_dict,
)
from hub.federation.mkwire import dispatch_id
from hub.store import SQLiteStore
from tests.hypothesis_budget import examples

# 2025-11-26T11:42:43.4434998Z: the millisecond id of old rounded this up after a round trip
# (in memory ...443, stored as 43.443500, read back as 43.44350000001, ...444).
HALF_MILLISECOND_BOUNDARY = 1764157363.4434998


def workload(name: str) -> Workload:
    wl = parse_object(
        {
            "apiVersion": V1BETA2,
            "kind": "Workload",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]},
        }
    )
    assert isinstance(wl, Workload)
    return wl


def stored_then_read(store: SQLiteStore, wl: Workload, status: dict[str, Any]) -> Workload:
    """Write the Workload as the hub does (create, then a bulk status write), then read it back."""
    meta = meta_to_dict(wl.meta)
    store.create({"apiVersion": V1BETA2, "kind": "Workload", "metadata": meta, "spec": workload_spec_to_dict(wl)})
    body = {"kind": "Workload", "metadata": {"namespace": wl.meta.namespace, "name": wl.meta.name}, "status": status}
    for _ in range(2):  # the second write splices into the body the first one stored
        (out,) = store.update_status_many([body], brief=True)
        assert not isinstance(out, BaseException), out
    stored = store.get("Workload", wl.meta.namespace, wl.meta.name)
    assert stored is not None
    back = parse_object(stored)
    assert isinstance(back, Workload)
    return back


@settings(max_examples=examples(300), deadline=None)
@given(
    reserved_at=st.floats(min_value=0.0, max_value=4_102_444_800.0, allow_nan=False, allow_infinity=False),
    evictions=st.integers(min_value=0, max_value=5),
)
@example(reserved_at=HALF_MILLISECOND_BOUNDARY, evictions=0)
def test_dispatch_id_survives_a_round_trip_through_the_store(tmp_path_factory: Any, reserved_at: float, evictions: int) -> None:
    wl = workload("w")
    wl.status.conditions.append(Condition(QUOTA_RESERVED, CONDITION_TRUE, "QuotaReserved", "", reserved_at))
    if evictions:
        wl.status.evictions.append(EvictionStat("Preempted", "", evictions))
    before = dispatch_id(wl)
    path: Path = tmp_path_factory.mktemp("store") / "hub.db"
    store = SQLiteStore(path)
    try:
        after = dispatch_id(stored_then_read(store, wl, workload_status_to_dict(wl.status)))
    finally:
        store.close()
    assert after == before
