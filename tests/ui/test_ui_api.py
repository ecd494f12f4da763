"""The dashboard's API over a real reconciler and store: authentication, 4xx answers, the numbers of
`mkhub top` and `describe`, positions of pending workloads, a standby's 503, live messages aggregated."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from controllers.hub_objects import is_true, seed, setup_objects, workload

from hub.api.config import Configuration
from hub.controllers.hub_runtime import HubRuntime
from hub.service import views
from hub.service.uihook import UIContext
from hub.store import SQLiteStore
from hub.ui.auth import new_token
from hub.ui.index import WorkloadIndex
from hub.ui.live import Broadcaster
from hub.ui.server import UI

pytestmark = pytest.mark.timeout(60)


def eventually(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


@contextmanager
def hub(tmp_path: Path) -> Iterator[tuple[SQLiteStore, HubRuntime, str]]:
    store = SQLiteStore(":memory:")
    seed(store, setup_objects(cpu=2))
    seed(store, [workload(f"w{i}", duration="1h", created=f"2026-01-01T00:00:0{i}Z") for i in range(4)])
    runtime = HubRuntime(store, Configuration(), default_duration=3600.0)
    runtime.start()
    assert runtime.ready.wait(20)
    eventually(lambda: sum(is_true(o, "QuotaReserved") for o in store.list("Workload")[0]) == 2, "two admissions")
    token = new_token(tmp_path / "ui-tokens")
    try:
        yield store, runtime, token
    finally:
        runtime.stop()
        store.close()


@asynccontextmanager
async def client(store: SQLiteStore, runtime: HubRuntime, tmp_path: Path, **ctx: Any) -> AsyncIterator[tuple[TestClient[Any, Any], UI]]:
    context = UIContext("127.0.0.1:0", tmp_path / "ui-tokens", None, False, "mkhub-admin", store=store, runtime=runtime, **ctx)
    ui = UI(context, asyncio.get_running_loop())
    ui.attach()
    assert await asyncio.to_thread(ui.follower.synced.wait, 10)  # type: ignore[union-attr]
    async with TestClient(TestServer(ui.app())) as c:
        try:
            yield c, ui
        finally:
            await ui.stop()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_no_token_a_wrong_token_and_bad_queries_get_4xx_json(tmp_path: Path) -> None:
    async def check(store: SQLiteStore, runtime: HubRuntime, token: str) -> None:
        async with client(store, runtime, tmp_path) as (c, ui):
            for headers, status, message in [
                ({}, 401, "no credentials"),
                ({"Authorization": "Bearer mkui_wrong"}, 401, "not valid"),
                ({"Authorization": "Basic abc"}, 401, "expected 'Bearer <token>'"),
            ]:
                r = await c.get("/api/v1/overview", headers=headers)
                assert r.status == status
                assert message in (await r.json())["error"]
            assert ui.refused == 3
            auth = {"Authorization": f"Bearer {token}"}
            for path, status, message in [
                ("/api/v1/workloads?colour=red", 400, "colour: unknown parameter"),
                ("/api/v1/workloads?limit=1000000", 400, "limit: 1000000 is out of range"),
                ("/api/v1/workloads?state=sleepy", 400, "state: 'sleepy'"),
                ("/api/v1/nothing", 404, "no such API path"),
                ("/api/v1/workloads/team/nope", 404, 'workloads "nope" not found'),
                ("/api/v1/positions?workloads=w0", 400, "expected NAMESPACE/NAME"),
                ("/api/v1/positions?workloads=" + ",".join(f"a/w{i}" for i in range(501)), 400, "at most 500"),
                ("/api/v1/positions?keys=a/b", 400, "keys: unknown parameter"),
            ]:
                r = await c.get(path, headers=auth)
                assert r.status == status, path
                assert message in (await r.json())["error"], path
            r = await c.post("/api/v1/overview", headers=auth)
            assert r.status == 405 and "read-only" in (await r.json())["error"]
            r = await c.get("/", headers={})
            assert r.status == 200 and "<html" in (await r.text()).lower()  # the page itself holds no data

    with hub(tmp_path) as (store, runtime, token):
        run(check(store, runtime, token))


def test_numbers_are_those_of_mkhub_top_and_describe(tmp_path: Path) -> None:
    async def check(store: SQLiteStore, runtime: HubRuntime, token: str) -> None:
        auth = {"Authorization": f"Bearer {token}"}
        async with client(store, runtime, tmp_path) as (c, _ui):
            overview = await (await c.get("/api/v1/overview", headers=auth)).json()
            snap = runtime.call(lambda rec: views.top(rec, time.time())).result(timeout=10)
            (cq,) = overview["clusterQueues"]
            assert (cq["name"], cq["admitted"], cq["pending"]) == ("cq", snap.cluster_queues[0].admitted, 2)
            assert cq["resources"][0]["usage"] == "2" and cq["resources"][0]["nominal"] == "2"
            assert overview["workloads"]["pending"] == snap.workloads_pending == 2
            assert overview["states"]["pending"] == 2
            assert len(overview["activity"]["admitted"]) == 60

            page = await (await c.get("/api/v1/workloads?state=pending&sort=name", headers=auth)).json()
            assert page["total"] == 2 and [r["name"] for r in page["items"]] == ["w2", "w3"]
            assert "insufficient unused quota" in page["items"][0]["reason"]
            where = await (await c.get("/api/v1/positions?workloads=team/w2,team/w3,team/w0", headers=auth)).json()
            assert where["positions"] == {"team/w2": {"clusterQueue": 0, "localQueue": 0},
                                          "team/w3": {"clusterQueue": 1, "localQueue": 1}}  # w0 runs: no position

            detail = await (await c.get("/api/v1/workloads/team/w3", headers=auth)).json()
            assert detail["positionInClusterQueue"] == 1 and detail["aheadCount"] == 1
            assert [a["metadata"]["name"] for a in detail["ahead"]] == ["w2"]
            assert "insufficient unused quota" in detail["explanation"]
            running = await (await c.get("/api/v1/workloads/team/w0", headers=auth)).json()
            assert running["clusterQueue"] == "cq" and running["podSets"][0]["flavors"] == {"cpu": "default"}
            r = await c.get("/api/v1/workloads/team/w0/logs", headers=auth)
            assert r.status == 409 and "no worker agents" in (await r.json())["error"]

            fleet = await (await c.get("/api/v1/fleet", headers=auth)).json()
            assert fleet["workers"] == [] and fleet["givenUp"] == []

    with hub(tmp_path) as (store, runtime, token):
        run(check(store, runtime, token))


def test_a_standby_says_it_is_not_the_leader_and_names_it(tmp_path: Path) -> None:
    async def check(store: SQLiteStore, runtime: HubRuntime, token: str) -> None:
        async with client(store, runtime, tmp_path, leader=lambda: "hub-0_123") as (c, _ui):
            r = await c.get("/api/v1/overview", headers={"Authorization": f"Bearer {token}"})
            body = await r.json()
            assert r.status == 503 and body["leader"] == "hub-0_123" and "not the leader" in body["error"]

    with hub(tmp_path) as (store, runtime, token):
        run(check(store, runtime, token))


def test_a_burst_of_changes_is_one_message_with_every_changed_row() -> None:
    async def check() -> None:
        index = WorkloadIndex()
        live = Broadcaster(index, asyncio.get_running_loop(), debounce=0.05)
        queue = live.subscribe()
        for i in range(50):
            index.apply(workload(f"w{i}"), deleted=False)
            live.changed({f"team/w{i}"})
        message = await asyncio.wait_for(queue.get(), 10)
        assert len(message["rows"]) == 50 and message["counts"]["pending"] == 50 and not message["reload"]
        assert queue.empty() and live.messages == 1

    run(check())


def test_the_live_stream_sends_a_change_without_a_reload(tmp_path: Path) -> None:
    async def check(store: SQLiteStore, runtime: HubRuntime, token: str) -> None:
        async with client(store, runtime, tmp_path) as (c, _ui):
            auth = {"Authorization": f"Bearer {token}"}
            r = await c.get("/api/v1/events", headers=auth)
            assert r.status == 200 and r.headers["Content-Type"] == "text/event-stream"
            hello = json.loads((await r.content.readline()).decode().removeprefix("data: "))
            assert hello["hello"] and hello["counts"]["pending"] == 2
            await asyncio.to_thread(store.delete, "Workload", "team", "w0")  # w2 gets its quota
            seen: dict[str, str] = {}
            while not (seen.get("team/w2") in ("admitted", "running") and seen.get("team/w0") == "removed"):
                line = (await asyncio.wait_for(r.content.readline(), 20)).decode()
                if line.startswith("data: "):
                    message = json.loads(line.removeprefix("data: "))
                    if message["reload"]:  # a change merged with the first load: the page reads the table again
                        page = await (await c.get("/api/v1/workloads", headers=auth)).json()
                        seen = {f"{row['namespace']}/{row['name']}": row["state"] for row in page["items"]}
                        seen.setdefault("team/w0", "removed")
                    seen.update({f"{row['namespace']}/{row['name']}": row["state"] for row in message["rows"]})
                    seen.update({key: "removed" for key in message["removed"]})
            r.close()

    with hub(tmp_path) as (store, runtime, token):
        run(check(store, runtime, token))


def test_activity_counts_admissions_per_minute_from_the_start_of_the_process() -> None:
    from hub.ui.live import Activity

    readings = iter([(3.0, 0.0), (5.0, 1.0), (9.0, 1.0)])
    activity = Activity(lambda: next(readings))
    for now in (600.0, 630.0, 665.0):  # minutes 10, 10 and 11
        activity.sample(now)
    series = activity.series(665.0)
    assert series["admitted"][-2:] == [5, 4] and series["evicted"][-2:] == [1, 0]
    assert len(series["admitted"]) == 60 and sum(series["admitted"]) == 9


def test_a_stopped_reconciler_is_a_503_not_a_crash(tmp_path: Path) -> None:
    async def check(store: SQLiteStore, runtime: HubRuntime, token: str) -> None:
        async with client(store, runtime, tmp_path) as (c, _ui):
            await asyncio.to_thread(runtime.stop)
            r = await c.get("/api/v1/overview", headers={"Authorization": f"Bearer {token}"})
            assert r.status == 503 and "stopped" in (await r.json())["error"]

    with hub(tmp_path) as (store, runtime, token):
        run(check(store, runtime, token))


def test_queue_positions_follow_the_live_stream_not_a_timer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hub.ui import reads

    sorts: list[list[str]] = []
    ordered = reads.positions
    monkeypatch.setattr(reads, "positions", lambda rec, cqs: sorts.append(cqs) or ordered(rec, cqs))

    async def check(store: SQLiteStore, runtime: HubRuntime, token: str) -> None:
        auth = {"Authorization": f"Bearer {token}"}
        url = "/api/v1/positions?workloads=team/w2,team/w3"
        async with client(store, runtime, tmp_path) as (c, ui):
            first = (await (await c.get(url, headers=auth)).json())["positions"]
            assert [first[k]["clusterQueue"] for k in ("team/w2", "team/w3")] == [0, 1]
            again = (await (await c.get(url, headers=auth)).json())["positions"]
            assert again == first and len(sorts) == 1  # nothing happened to the queue: not sorted again
            # A workload of a higher priority joins the queue: once the dashboard saw the hub's pending
            # status for it (so the engine holds it), the next read puts it ahead, at once.
            await asyncio.to_thread(store.create, workload("w9", duration="1h", priority=100))
            await asyncio.to_thread(eventually, lambda: (ui.index.rows.get("team/w9") is not None
                                                         and bool(ui.index.rows["team/w9"].reason)), "w9's pending reason")
            moved = (await (await c.get(url, headers=auth)).json())["positions"]
            assert [moved[k]["clusterQueue"] for k in ("team/w2", "team/w3")] == [1, 2] and len(sorts) == 2

    with hub(tmp_path) as (store, runtime, token):
        run(check(store, runtime, token))


def test_a_flood_of_bad_requests_is_answered_late_past_a_burst(tmp_path: Path) -> None:
    async def check(store: SQLiteStore, runtime: HubRuntime, token: str) -> None:
        async with client(store, runtime, tmp_path) as (c, ui):
            auth = {"Authorization": f"Bearer {token}"}
            for i in range(25):
                r = await c.get("/api/v1/workloads?limit=100000" if i % 2 else "/api/v1/overview", headers=auth if i % 2 else {})
                assert r.status == (400 if i % 2 else 401)
            assert ui.refusals.delayed >= 1  # the ones past the burst waited (a timer, no work)
            assert (await c.get("/api/v1/overview", headers=auth)).status == 200  # good requests are never held

    with hub(tmp_path) as (store, runtime, token):
        run(check(store, runtime, token))
