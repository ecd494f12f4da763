"""Benchmark of the hub <-> agent transport: one hub server and N agents on
loopback over mutual TLS, in one process and one event loop (so the figures
include both ends' Python work on one core).

Phases:
  down       hub -> agents: Dispatch items, ``--batch`` items per envelope
  up         agents -> hub: Status items, ``--batch`` items per envelope
  unbatched  hub -> agents: one item per envelope
  echo       one agent sends Reserved, the hub's handler answers Start at once;
             one round trip outstanding at a time; p50/p99 of the round trip

Throughput phases keep a window of unacknowledged items per agent (closed
loop) for ``--seconds`` and count what the receivers got.

Usage: python -m hub.bench.transport_bench [--agents 2] [--batch 100] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hub.federation import tls
from hub.federation.server import FederationServer
from hub.federation.session import AgentSender, hub_item
from mkhub.v1 import federation_pb2 as pb
from worker_agent.link import HubLink

WORKLOAD_JSON = json.dumps(
    {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "job-sample-0000", "namespace": "default"},
        "spec": {
            "queueName": "user-queue",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
                    },
                }
            ],
        },
    }
)


@dataclass
class Counter:
    items: int = 0
    event: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, n: int) -> None:
        self.items += n
        self.event.set()


class BenchHub:
    """Hub handler: counts items per cluster; answers an echo Reserved with Start."""

    def __init__(self) -> None:
        self.senders: dict[str, AgentSender] = {}
        self.counters: dict[str, Counter] = {}
        self.connected = asyncio.Event()
        self.expected = 0

    def on_agent_connected(self, cluster_name: str, hello: pb.Hello, sender: AgentSender) -> None:
        self.senders[cluster_name] = sender
        self.counters.setdefault(cluster_name, Counter())
        if len(self.senders) >= self.expected:
            self.connected.set()

    def on_agent_items(self, cluster_name: str, items: Sequence[pb.AgentItem]) -> None:
        first = items[0]
        if first.WhichOneof("kind") == "reserved" and first.reserved.cluster_queue == "echo":
            r = first.reserved
            self.senders[cluster_name].send(
                [pb.Start(workload_uid=r.workload_uid, dispatch_id=r.dispatch_id)]
            )
            return
        self.counters[cluster_name].add(len(items))

    def on_agent_disconnected(self, cluster_name: str) -> None:
        pass


class BenchAgent:
    def __init__(self, name: str) -> None:
        self.name = name
        self.counter = Counter()
        self.echo: asyncio.Future[None] | None = None

    def build_hello(self) -> pb.Hello:
        return pb.Hello(cluster_name=self.name, agent_version="bench")

    def on_hub_items(self, items: Sequence[pb.HubItem]) -> None:
        if items[0].WhichOneof("kind") == "start" and self.echo is not None and not self.echo.done():
            self.echo.set_result(None)
            return
        self.counter.add(len(items))


SendFn = Callable[[list[Any]], None]


async def _pump(send: SendFn, counter: Counter, batch: list[Any], window_items: int, seconds: float) -> int:
    """Keep ``window_items`` in flight for ``seconds``; return the number of items sent."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    sent = 0
    while loop.time() < deadline:
        while sent - counter.items < window_items:
            send(batch)
            sent += len(batch)
        counter.event.clear()
        await counter.event.wait()
    return sent


async def _throughput(
    pairs: Sequence[tuple[SendFn, Counter]], batch: list[Any], window_items: int, seconds: float
) -> tuple[float, int]:
    start_counts = [c.items for _, c in pairs]
    # Counters count from the phase start.
    for (_, c), base in zip(pairs, start_counts):
        c.items -= base
    t0 = time.perf_counter()
    sent = await asyncio.gather(*(_pump(send, c, batch, window_items, seconds) for send, c in pairs))
    for (_, c), n in zip(pairs, sent):
        while c.items < n:  # drain what is still in flight
            c.event.clear()
            await c.event.wait()
    elapsed = time.perf_counter() - t0
    return elapsed, sum(sent)


async def run(args: argparse.Namespace) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="mkhub-bench-certs-") as certs:
        return await _run(args, certs)


async def _run(args: argparse.Namespace, certs: str) -> dict[str, object]:
    names = [f"worker-{i + 1}" for i in range(args.agents)]
    tls.make_certs(certs, names)
    hub = BenchHub()
    hub.expected = len(names)
    server = FederationServer(
        hub,
        address="127.0.0.1:0",
        credentials=tls.hub_server_credentials(certs),
        authorize=lambda n: n in names,
        heartbeat_interval=5.0,
    )
    port = await server.start()
    agents = [BenchAgent(n) for n in names]
    links = [
        HubLink(
            f"127.0.0.1:{port}",
            a,
            credentials=tls.agent_channel_credentials(certs, a.name),
            server_name="localhost",
        )
        for a in agents
    ]
    result: dict[str, object] = {
        "agents": args.agents,
        "batch": args.batch,
        "seconds": args.seconds,
        "tls": "mTLS",
    }
    try:
        for link in links:
            await link.start()
        await asyncio.wait_for(hub.connected.wait(), 30)
        for link in links:
            link.endpoint.configure_batching(max_items=args.batch)
        server.endpoint.configure_batching(max_items=args.batch)
        window = args.window * args.batch

        down_batch = [
            hub_item(
                pb.Dispatch(
                    workload_uid=f"uid-{i}",
                    dispatch_id=f"d-{i}",
                    namespace="default",
                    name=f"job-{i}",
                    workload_json=WORKLOAD_JSON,
                )
            )
            for i in range(args.batch)
        ]
        pairs = [(hub.senders[a.name].send, a.counter) for a in agents]
        elapsed, items = await _throughput(pairs, down_batch, window, args.seconds)
        result["down_items_per_s"] = round(items / elapsed)
        result["down_envelopes_per_s"] = round(items / args.batch / elapsed)

        up_batch = [
            pb.AgentItem(
                status=pb.Status(workload_uid=f"uid-{i}", dispatch_id=f"d-{i}", phase=pb.PHASE_RUNNING)
            )
            for i in range(args.batch)
        ]
        pairs = [(link.send, hub.counters[a.name]) for link, a in zip(links, agents)]
        elapsed, items = await _throughput(pairs, up_batch, window, args.seconds)
        result["up_items_per_s"] = round(items / elapsed)
        result["up_envelopes_per_s"] = round(items / args.batch / elapsed)

        server.endpoint.configure_batching(max_items=1)
        pairs = [(hub.senders[a.name].send, a.counter) for a in agents]
        elapsed, items = await _throughput(pairs, down_batch[:1], args.window, args.seconds)
        result["unbatched_envelopes_per_s"] = round(items / elapsed)
        server.endpoint.configure_batching(max_items=args.batch)

        agent, link = agents[0], links[0]
        rtts: list[float] = []
        loop = asyncio.get_running_loop()
        for i in range(args.echo):
            agent.echo = loop.create_future()
            t0 = time.perf_counter()
            link.send([pb.Reserved(workload_uid=f"echo-{i}", dispatch_id="e", cluster_queue="echo")])
            await asyncio.wait_for(agent.echo, 30)
            rtts.append((time.perf_counter() - t0) * 1000)
        q = statistics.quantiles(rtts, n=100)
        result["echo_rtt_p50_ms"] = round(statistics.median(rtts), 3)
        result["echo_rtt_p99_ms"] = round(q[98], 3)
        result["echo_round_trips"] = len(rtts)
    finally:
        for link in links:
            await link.stop()
        await server.stop(0.5)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hub.bench.transport_bench", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--agents", type=int, default=2, help="number of agents (default 2)")
    parser.add_argument("--batch", type=int, default=100, help="items per envelope (default 100)")
    parser.add_argument("--window", type=int, default=32, help="envelopes in flight per agent (default 32)")
    parser.add_argument(
        "--seconds", type=float, default=2.0, help="duration of each throughput phase (default 2)"
    )
    parser.add_argument("--echo", type=int, default=2000, help="echo round trips (default 2000)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if args.agents < 1 or args.batch < 1 or args.window < 1 or args.echo < 2:
        parser.error("--agents, --batch, --window must be >= 1 and --echo >= 2")
    logging.basicConfig(level=logging.WARNING)
    result = asyncio.run(run(args))
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(f"transport benchmark: {args.agents} agent(s), mTLS on 127.0.0.1, one process")
        print(
            f"  down (hub->agents), {args.batch}/envelope: {result['down_items_per_s']:>9,} items/s  {result['down_envelopes_per_s']:>7,} envelopes/s"
        )
        print(
            f"  up (agents->hub),   {args.batch}/envelope: {result['up_items_per_s']:>9,} items/s  {result['up_envelopes_per_s']:>7,} envelopes/s"
        )
        print(f"  unbatched (hub->agents), 1/envelope: {result['unbatched_envelopes_per_s']:>7,} envelopes/s")
        print(
            f"  echo round trip: p50 {result['echo_rtt_p50_ms']} ms, p99 {result['echo_rtt_p99_ms']} ms ({result['echo_round_trips']} round trips)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
