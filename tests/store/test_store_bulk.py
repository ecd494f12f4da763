"""SQLiteStore's bulk writes (BulkWrites) are exactly the same writes made one by one: the
same objects, the same refusals in the same places, the same change log in the same order."""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub.store import BulkWrites, Conflict, InvalidObject, NotFound, SQLiteStore, StoreError, WatchEvent


def fixed_clock() -> datetime:
    return datetime(2025, 1, 1, tzinfo=UTC)


def manifest(name: str, namespace: str = "default", status: Any = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"queueName": "q"},
    }
    if status is not None:
        obj["status"] = status
    return obj


NAMES = ["a", "b", "c", "d"]

# One write: (operation, name, variant). Variants make refusals and odd cases: a stale
# resourceVersion, no status at all (a status write then removes it), an object that cannot be
# stored (also with a stale resourceVersion: which refusal comes first), another namespace.
writes = st.lists(
    st.tuples(
        st.sampled_from(["create", "update_status"]),
        st.sampled_from(NAMES),
        st.sampled_from(["plain", "stale", "no-status", "invalid", "stale-invalid", "other-ns", "same"]),
        st.integers(0, 3),
    ),
    max_size=12,
)


def _body(op: str, name: str, variant: str, n: int) -> dict[str, Any]:
    obj = manifest(name=name, namespace="other" if variant == "other-ns" else "default", status={"n": n})
    if variant in ("stale", "stale-invalid"):
        obj["metadata"]["resourceVersion"] = "1"
    elif variant == "no-status":
        del obj["status"]
    if variant in ("invalid", "stale-invalid"):
        obj["status"] = {"bad": float("nan")} if op == "update_status" else {"bad": {1, 2}}
    elif variant == "same":
        obj["status"] = {"n": 0}
    return obj


def _comparable(result: object) -> object:
    if isinstance(result, StoreError):
        return (type(result).__name__, str(result))
    assert isinstance(result, dict)
    out = copy.deepcopy(result)
    out["metadata"].pop("uid", None)
    return out


def _log(store: SQLiteStore) -> list[tuple[str, int, object]]:
    watch = store.watch(since=0)
    events: list[WatchEvent] = []
    while (ev := watch.next(0.05)) is not None:
        events.append(ev)
    watch.close()
    return [(ev.type.value, ev.resource_version, _comparable(ev.object)) for ev in events]


def _seeded(path: Path) -> SQLiteStore:
    store = SQLiteStore(path, now=fixed_clock)
    for name in ("a", "b"):
        store.create(manifest(name=name, status={"n": 0}))
    return store


def _brief(result: object) -> object:
    """What a brief status write's result holds (update_status_many(brief=True))."""
    if not isinstance(result, dict):
        return result
    meta = result["metadata"]
    return (result["kind"], meta["name"], meta.get("namespace"), meta["resourceVersion"], result.get("status"))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=writes, brief=st.booleans())
def test_bulk_writes_are_the_writes_one_by_one(
    tmp_path_factory: pytest.TempPathFactory, batch: list[tuple[str, str, str, int]], brief: bool
) -> None:
    """Also with ``brief``, where a body an earlier bulk status write stored is spliced, not decoded:
    the stored objects and the change log are the same; the results hold what brief promises."""
    base = tmp_path_factory.mktemp("bulk")
    one, bulk = _seeded(base / "one.db"), _seeded(base / "bulk.db")
    try:
        expected: list[object] = []
        with one.batch():
            for op, name, variant, n in batch:
                write = one.create if op == "create" else one.update_status
                try:
                    out = _comparable(write(_body(op, name, variant, n)))
                    expected.append(_brief(out) if brief and op == "update_status" else out)
                except StoreError as e:
                    expected.append(_comparable(e))
        got: list[object] = []
        with bulk.batch():
            # consecutive writes of one kind go in one bulk call, as the hub's round does
            i = 0
            while i < len(batch):
                j = i
                while j < len(batch) and batch[j][0] == batch[i][0]:
                    j += 1
                bodies = [_body(*w) for w in batch[i:j]]
                if batch[i][0] == "create":
                    got.extend(_comparable(r) for r in bulk.create_many(bodies))
                else:
                    out = bulk.update_status_many(bodies, brief=brief)
                    got.extend(_brief(_comparable(r)) if brief else _comparable(r) for r in out)
                i = j
        assert got == expected
        assert _log(bulk) == _log(one)
        assert [_comparable(o) for o in bulk.list("Workload")[0]] == [
            _comparable(o) for o in one.list("Workload")[0]
        ]
    finally:
        one.close()
        bulk.close()


def test_refusals_come_back_in_place_and_the_rest_lands(tmp_path: Path) -> None:
    store = _seeded(tmp_path / "s.db")
    assert isinstance(store, BulkWrites)
    out = store.update_status_many(
        [
            {**manifest(name="a"), "status": {"n": 1}},
            {**manifest(name="missing"), "status": {"n": 1}},
            {"kind": "Workload", "metadata": {"namespace": "default"}, "status": {}},
            {
                **manifest(name="b"),
                "metadata": {"name": "b", "namespace": "default", "resourceVersion": "1"},
                "status": {"n": 2},
            },
        ]
    )
    assert out[0]["status"] == {"n": 1} and out[0]["metadata"]["resourceVersion"] == "3"
    assert isinstance(out[1], NotFound) and "Workload default/missing" in str(out[1])
    assert isinstance(out[2], InvalidObject) and "metadata.name" in str(out[2])
    assert isinstance(out[3], Conflict)
    assert (store.get("Workload", "default", "a") or {})["status"] == {"n": 1}
    assert (store.get("Workload", "default", "b") or {})["status"] == {"n": 0}
    store.close()


def test_an_error_that_is_no_refusal_undoes_the_whole_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _seeded(tmp_path / "s.db")
    real = store._record_all

    def broken(changes: Any) -> None:
        real(changes)
        raise OSError("disk full")

    monkeypatch.setattr(store, "_record_all", broken)
    with pytest.raises(OSError):
        store.update_status_many([{**manifest(name="a"), "status": {"n": 9}}])
    monkeypatch.undo()
    assert (store.get("Workload", "default", "a") or {})["status"] == {"n": 0}
    assert (
        store.update_status_many([{**manifest(name="a"), "status": {"n": 9}}])[0]["metadata"][
            "resourceVersion"
        ]
        == "3"
    )
    store.close()


def test_many_keys_span_several_selects(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db", now=fixed_clock)
    made = store.create_many([manifest(name=f"w{i}", status={"n": 0}) for i in range(1234)])
    assert all(isinstance(m, dict) for m in made)
    out = store.update_status_many([{**manifest(name=f"w{i}"), "status": {"n": i + 1}} for i in range(1234)])
    assert [o["status"]["n"] for o in out if isinstance(o, dict)] == list(range(1, 1235))
    assert (store.get("Workload", "default", "w1233") or {})["metadata"]["resourceVersion"] == str(2 * 1234)
    store.close()


def test_a_rolled_back_status_write_leaves_nothing_behind_at_its_resource_version(tmp_path: Path) -> None:
    """The store keeps the bodies it wrote lately by resourceVersion; a rollback gives those
    versions back, so a later write that gets the same number must not meet the undone body."""
    store = _seeded(tmp_path / "s.db")
    with pytest.raises(RuntimeError), store.batch():
        undone = store.update_status_many([{**manifest(name="a"), "status": {"n": 5}}])[0]
        raise RuntimeError("the round fails after its status write")
    assert isinstance(undone, dict)
    again = store.update({**manifest(name="a"), "spec": {"queueName": "other"}})
    assert again["metadata"]["resourceVersion"] == undone["metadata"]["resourceVersion"]  # the number is reused
    store.update_status_many([{**manifest(name="a"), "status": {"n": 7}}])
    stored = store.get("Workload", "default", "a") or {}
    assert (stored["spec"], stored["status"]) == ({"queueName": "other"}, {"n": 7})
    store.close()


def test_bulk_creates_give_each_object_its_own_version_4_uid(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db", now=fixed_clock)
    made = store.create_many([manifest(name=f"u{i}") for i in range(300)])
    uids = [m["metadata"]["uid"] for m in made if isinstance(m, dict)]
    assert len(set(uids)) == 300
    for text in uids:
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant, str(parsed)) == (4, uuid.RFC_4122, text)
    store.close()
