"""Component tests: the MultiKueue hub on a real grpc.aio FederationServer (mTLS, 127.0.0.1) and
two agents on real HubLinks, each with its own engine."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from hub.api.config import parse_configuration
from hub.api.registry import parse_object
from hub.api.workload import FINISHED, PODS_READY
from hub.federation import tls
from hub.federation.embedded import EmbeddedHub
from worker_agent.main import AgentOptions, AgentProcess

from .helpers import poll_until
from .mk_harness import job, mk_objects, worker_objects

pytestmark = pytest.mark.timeout(120)

WORKERS = ("worker-1", "worker-2")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("certs")
    tls.make_certs(d, [*WORKERS, "intruder"])
    return d


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("other-ca")
    tls.make_certs(d, ["worker-1"])
    return d


class Federation:
    def __init__(self, hub: EmbeddedHub, agents: dict[str, AgentProcess], stop: asyncio.Event) -> None:
        self.hub = hub
        self.agents = agents
        self.stop = stop

    def submit(self, name: str, cpu: str = "1", duration: str = "10s") -> str:
        manifest = job(name, cpu)
        manifest["metadata"]["annotations"]["mkhub.dev/sim-duration"] = duration
        self.hub.apply(parse_object(manifest))
        key = self.hub.controller.jobs.workload_key(f"team/{name}")
        assert key is not None
        return key

    def state(self, key: str) -> str:
        wl = self.hub.engine.workloads[key]
        if wl.is_finished:
            return "finished"
        return "admitted" if wl.is_admitted else "reserved" if wl.is_quota_reserved else "pending"

    def running(self) -> dict[str, set[str]]:
        return {name: set(a.agent.gate.running) for name, a in self.agents.items()}


def agent_options(tmp: Path, certs: Path, port: int, name: str, cpu: str, cert_dir: Path | None = None) -> AgentOptions:
    objects = tmp / f"{name}.yaml"
    objects.write_text(yaml.safe_dump_all(worker_objects(cpu)))
    return AgentOptions(
        hub=f"127.0.0.1:{port}",
        cluster=name,
        objects=objects,
        tls_dir=cert_dir or certs,
        server_name="localhost",
        default_duration=10.0,
    )


async def with_federation(
    tmp: Path,
    certs: Path,
    worker_cpu: dict[str, str],
    body: Callable[[Federation], Awaitable[None]],
    multikueue: dict[str, Any] | None = None,
    configuration: dict[str, Any] | None = None,
) -> None:
    config = parse_configuration({"multiKueue": {"gcInterval": "1m", "workerLostTimeout": "5m", **(multikueue or {})},
                                  **(configuration or {})})
    hub = EmbeddedHub(config, credentials=tls.hub_server_credentials(certs), heartbeat_interval=1.0)
    for manifest in mk_objects(list(WORKERS)):
        hub.apply(parse_object(manifest))
    port = await hub.start()
    stop = asyncio.Event()
    agents = {
        name: AgentProcess(agent_options(tmp, certs, port, name, cpu), time.time()) for name, cpu in worker_cpu.items()
    }
    for a in agents.values():
        a.link.backoff_initial, a.link.backoff_max = 0.05, 0.5
    tasks = [asyncio.create_task(a.run(stop)) for a in agents.values()]
    try:
        await poll_until(lambda: set(hub.mk.connected_clusters()) == set(worker_cpu), what="agents connected")
        await body(Federation(hub, agents, stop))
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        await hub.stop()


def test_dispatch_winner_withdraw_and_status_flow(tmp_path: Path, certs: Path) -> None:
    async def body(fed: Federation) -> None:
        key = fed.submit("a", cpu="2", duration="400ms")
        await poll_until(lambda: fed.state(key) != "pending", what="reservation")
        # worker-1 (1 cpu) cannot admit it, worker-2 (4 cpu) can: it wins
        await poll_until(lambda: fed.state(key) in ("admitted", "finished"), what="admission")
        wl = fed.hub.engine.workloads[key]
        assert wl.status.cluster_name == "worker-2"
        await poll_until(lambda: not fed.agents["worker-1"].agent.copies, what="withdrawal from worker-1")
        await poll_until(lambda: fed.state(key) == "finished", what="finish")
        wl = fed.hub.engine.workloads[key]
        finished = wl.status.condition(FINISHED)
        assert finished is not None and finished.reason == "Succeeded"
        assert wl.status.condition(PODS_READY) is not None  # pods-ready came back before the end (waitForPodsReady)
        await poll_until(lambda: not fed.agents["worker-2"].agent.copies, what="finished copy removed")
        assert fed.agents["worker-2"].agent.stats.starts == 1
        assert fed.agents["worker-1"].agent.stats.starts == 0

    asyncio.run(with_federation(tmp_path, certs, {"worker-1": "1", "worker-2": "4"}, body,
                                configuration={"waitForPodsReady": {"enable": True}}))


def test_reconnects_replay_without_duplicates(tmp_path: Path, certs: Path) -> None:
    async def body(fed: Federation) -> None:
        keys = [fed.submit(f"j{i}", duration="1h") for i in range(8)]  # the hub has 8 cpu
        link = fed.agents["worker-1"].link
        # Break worker-1's stream while the dispatches flow, twice.
        for _ in range(2):
            before = link.attempts
            assert link.drop_stream()
            await poll_until(lambda b=before: link.connected and link.attempts > b, what="worker-1 reconnected")
        await poll_until(
            lambda: all(fed.state(k) == "admitted" for k in keys), timeout=60, what="all admitted"
        )
        await poll_until(lambda: sum(len(r) for r in fed.running().values()) == len(keys), what="all running")
        running = fed.running()
        assert running["worker-1"].isdisjoint(running["worker-2"])  # nothing runs twice
        for name, process in fed.agents.items():
            agent = process.agent
            assert agent.stats.starts == len(running[name])
            assert set(agent.copies) == running[name]  # the losers' copies are gone
        assert link.attempts >= 3

    asyncio.run(with_federation(tmp_path, certs, {"worker-1": "8", "worker-2": "8"}, body))


def test_agents_with_wrong_certificates_are_refused(tmp_path: Path, certs: Path, other_ca: Path) -> None:
    async def body(fed: Federation) -> None:
        port = fed.hub.port
        rogue: list[AgentProcess] = [
            # a worker-1 certificate from another CA
            AgentProcess(agent_options(tmp_path, certs, port, "worker-1", "4", cert_dir=other_ca), time.time()),
            # a valid certificate for a cluster the hub does not know
            AgentProcess(agent_options(tmp_path, certs, port, "intruder", "4"), time.time()),
        ]
        stop = asyncio.Event()
        tasks = [asyncio.create_task(r.run(stop)) for r in rogue]
        try:
            await poll_until(lambda: all(r.link.attempts >= 2 for r in rogue), what="refused attempts")
            assert not any(r.link.connected for r in rogue)
            assert "PERMISSION_DENIED" in (rogue[1].link.last_error or "")
            assert fed.hub.mk.connected_clusters() == ["worker-1", "worker-2"]
            key = fed.submit("a")
            await poll_until(lambda: fed.state(key) == "admitted", what="admission")
            assert not rogue[0].agent.copies and not rogue[1].agent.copies
        finally:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(with_federation(tmp_path, certs, {"worker-1": "4", "worker-2": "4"}, body))


def test_capacity_aware_nominee_moves_at_the_first_report_of_a_freed_worker(tmp_path: Path, certs: Path) -> None:
    """Both workers are full of work of the same priority (the copy could preempt nothing): the
    copy waits at its nominee, worker-1. worker-2's job finishes: the capacity report that says
    so moves the copy there at once, though the nomination timeout is an hour away."""
    multikueue = {"dispatcherName": "mkhub.dev/capacity-aware",
                  "capacityAwareDispatcherConfig": {"nominationTimeout": "1h"}}

    async def body(fed: Federation) -> None:
        mk = fed.hub.mk
        busy = fed.submit("busy", cpu="2", duration="1h")
        await poll_until(lambda: fed.hub.engine.workloads[busy].status.cluster_name == "worker-1", what="busy on worker-1")
        ending = fed.submit("ending", cpu="2", duration="3s")
        await poll_until(lambda: fed.hub.engine.workloads[ending].status.cluster_name == "worker-2", what="ending on worker-2")
        key = fed.submit("waiting", cpu="2", duration="1h")
        await poll_until(lambda: mk.nominated(key) == ["worker-1"] and key in fed.agents["worker-1"].agent.copies,
                         what="the copy waits at worker-1")
        generation = mk.capacity.reports["worker-2"].generation
        await poll_until(lambda: fed.state(ending) == "finished", what="worker-2 freed")
        await poll_until(lambda: fed.hub.engine.workloads[key].status.cluster_name == "worker-2", what="moved to worker-2")
        assert fed.state(key) == "admitted"
        assert mk.capacity.reports["worker-2"].generation > generation
        await poll_until(lambda: key not in fed.agents["worker-1"].agent.copies, what="withdrawn from worker-1")
        assert fed.agents["worker-1"].agent.stats.starts == 1  # busy only

    asyncio.run(with_federation(tmp_path, certs, {"worker-1": "2", "worker-2": "2"}, body, multikueue))


def test_fleet_counts_copies_that_arrive_at_a_full_worker_as_pending(tmp_path: Path, certs: Path) -> None:
    """Copies that only wait in a full worker's queue make no engine event there; the agent's
    capacity report (the fleet's pending count, the capacity-aware score) must still count them."""

    async def body(fed: Federation) -> None:
        first = [fed.submit(f"first-{i}", cpu="2", duration="1h") for i in range(2)]
        await poll_until(lambda: all(fed.state(k) == "admitted" for k in first), what="both workers full")

        def fleet(name: str) -> dict[str, int]:
            return dict((fed.hub.engine.mk_clusters[name].fleet or {}).get("workloads") or {})

        await poll_until(lambda: all(fleet(n).get("admitted") == 1 for n in WORKERS), what="reports of full workers")
        assert all(fleet(n)["pending"] == 0 for n in WORKERS)
        for i in range(2):
            fed.submit(f"later-{i}", cpu="2", duration="1h")  # AllAtOnce: a copy of each on both workers
        await poll_until(lambda: all(len(a.agent.copies) == 3 for a in fed.agents.values()), what="copies arrived")
        await poll_until(lambda: all(fleet(n).get("pending") == 2 for n in WORKERS), timeout=10, what="pending counted")
        queue = fed.hub.mk.capacity.reports["worker-1"].queues["cq"]
        assert queue.pending_workloads == 2 and queue.pending["cpu"] == 4000

    asyncio.run(with_federation(tmp_path, certs, {"worker-1": "2", "worker-2": "2"}, body))
