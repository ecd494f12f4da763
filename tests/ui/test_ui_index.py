"""The dashboard's workload index: states from Kueue's conditions, filters, sort and pages equal to a brute force."""

from __future__ import annotations

import random
from typing import Any

import pytest

from hub.ui.index import MAX_LIMIT, QueryError, WorkloadIndex, parse_query, row_of


def wl(name: str, ns: str = "a", queue: str = "lq", created: int = 0, priority: int = 0,
       conditions: dict[str, str] | None = None, worker: str = "", owner: str = "Job", rejected: str = "",
       active: bool = True) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": [{"type": t, "status": s, "message": f"{t} says {s}"}
                                             for t, s in (conditions or {}).items()]}
    if worker:
        status["clusterName"] = worker
    if rejected:
        status["admissionChecks"] = [{"name": "mk", "state": "Rejected", "message": rejected}]
    return {
        "kind": "Workload",
        "metadata": {"namespace": ns, "name": name, "creationTimestamp": f"2026-01-01T00:{created // 60:02d}:{created % 60:02d}Z",
                     "ownerReferences": [{"kind": owner, "name": name}] if owner else []},
        "spec": {"queueName": queue, "priority": priority, "active": active},
        "status": status,
    }


@pytest.mark.parametrize(("conditions", "worker", "active", "state"), [
    ({}, "", True, "pending"),
    ({"QuotaReserved": "False"}, "", True, "pending"),
    ({"QuotaReserved": "True"}, "", True, "reserved"),
    ({"QuotaReserved": "True", "Admitted": "True", "PodsReady": "False"}, "", True, "admitted"),
    ({"QuotaReserved": "True", "Admitted": "True"}, "", True, "running"),  # no waitForPodsReady
    ({"QuotaReserved": "True", "Admitted": "True", "PodsReady": "True"}, "", True, "running"),
    ({"QuotaReserved": "True", "Admitted": "True"}, "worker-1", True, "running"),
    ({"Finished": "True", "Admitted": "True"}, "", True, "finished"),
    ({"QuotaReserved": "False"}, "", False, "inactive"),
])
def test_state_follows_kueues_conditions(conditions: dict[str, str], worker: str, active: bool, state: str) -> None:
    assert row_of(wl("w", conditions=conditions, worker=worker, active=active)).state == state


def test_a_pending_row_carries_kueues_reason_and_a_rejected_check_marks_it_given_up() -> None:
    row = row_of(wl("w", conditions={"QuotaReserved": "False"}, rejected="no worker can hold it"))
    assert row.reason == "QuotaReserved says False"
    assert row.given_up == "no worker can hold it"
    assert row_of(wl("plain", owner="")).kind == "Workload"


def brute(objs: dict[str, dict[str, Any]], filters: dict[str, str], sort: str, desc: bool) -> list[str]:
    rows = [row_of(o) for o in objs.values()]
    rows = [r for r in rows if all(r.value(f) == v for f, v in filters.items())]
    rows.sort(key=lambda r: (r.sort_value(sort), r.key), reverse=desc)
    return [r.key for r in rows]


def test_pages_filters_and_sorts_match_a_brute_force_while_workloads_change() -> None:
    rnd = random.Random(7)
    index = WorkloadIndex()
    objs: dict[str, dict[str, Any]] = {}

    def random_wl(i: int) -> dict[str, Any]:
        cond = rnd.choice([{}, {"QuotaReserved": "True"}, {"QuotaReserved": "True", "Admitted": "True"}, {"Finished": "True"}])
        return wl(f"w{i}", ns="ab"[i % 2], queue=rnd.choice(["q1", "q2"]), created=rnd.randrange(100),
                  priority=rnd.randrange(3), conditions=cond, worker=rnd.choice(["", "worker-1", "worker-2"]),
                  owner=rnd.choice(["Job", "JobSet"]))

    for i in range(60):
        objs[f"w{i}"] = random_wl(i)
    index.load(objs.values())
    for step in range(200):
        i = rnd.randrange(80)
        if rnd.random() < 0.2 and f"w{i}" in objs:
            index.apply(objs.pop(f"w{i}"), deleted=True)
        elif rnd.random() < 0.3 and f"w{i}" in objs:  # a status write the hub hands over: the status alone, newer
            status = random_wl(i)["status"]
            objs[f"w{i}"] = {**objs[f"w{i}"], "status": status}
            index.apply_statuses([(f"a/w{i}" if i % 2 == 0 else f"b/w{i}", 1000 + step, status)])
        else:
            objs[f"w{i}"] = random_wl(i)
            index.apply(objs[f"w{i}"], deleted=False)
        filters = {f: v for f, v in (("namespace", rnd.choice("ab")), ("queue", rnd.choice(["q1", "q2"])),
                                     ("state", rnd.choice(["pending", "running", "finished"])),
                                     ("worker", rnd.choice(["", "worker-1"])), ("kind", "Job"))
                   if rnd.random() < 0.3}
        sort = rnd.choice(["created", "name", "priority", "state", "queue", "namespace"])
        desc = rnd.random() < 0.5
        offset, limit = rnd.randrange(0, 30), rnd.randrange(1, 20)
        params = {**filters, "sort": ("-" if desc else "") + sort, "offset": str(offset), "limit": str(limit)}
        page = index.page(parse_query(params))
        expected = brute(objs, filters, sort, desc)
        assert page.total == len(expected), (step, params)
        assert [r.key for r in page.rows] == expected[offset:offset + limit], (step, params)
    assert index.counts()["pending"] == sum(1 for o in objs.values() if row_of(o).state == "pending")


def test_an_unchanged_object_changes_nothing() -> None:
    index = WorkloadIndex()
    index.load([wl("w")])
    version = index.version
    assert index.apply(wl("w"), deleted=False) is None
    assert index.version == version
    assert index.apply(wl("gone"), deleted=True) is None


@pytest.mark.parametrize(("params", "message"), [
    ({"colour": "red"}, "colour: unknown parameter"),
    ({"state": "sleepy"}, "state: 'sleepy' is not one of"),
    ({"sort": "size"}, "sort: 'size' is not one of"),
    ({"limit": str(MAX_LIMIT + 1)}, f"limit: {MAX_LIMIT + 1} is out of range (1 to {MAX_LIMIT})"),
    ({"limit": "0"}, "limit: 0 is out of range"),
    ({"offset": "-1"}, "offset: -1 is out of range"),
    ({"offset": "ten"}, "offset: 'ten' is not an integer"),
])
def test_bad_queries_name_the_parameter(params: dict[str, str], message: str) -> None:
    with pytest.raises(QueryError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_query(params)
