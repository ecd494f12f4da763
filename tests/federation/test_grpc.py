"""Component tests: a real grpc.aio hub server on 127.0.0.1 and real agents, over mTLS."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hub.federation import tls
from hub.federation.server import FederationServer
from hub.federation.session import agent_item
from mkhub.v1 import federation_pb2 as pb
from mkhub.v1 import federation_pb2_grpc as pb_grpc
from worker_agent.link import HubLink

from .helpers import RecordingAgent, RecordingHub, dispatch, poll_until, status

pytestmark = pytest.mark.timeout(60)

CLUSTERS = {"worker-1", "worker-2"}


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coro)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("certs")
    tls.make_certs(d, ["worker-1", "worker-2", "intruder"])
    return d


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("other-ca")
    tls.make_certs(d, ["worker-1"])
    return d


def hub_server(certs: Path, handler: RecordingHub, **kwargs: Any) -> FederationServer:
    kwargs.setdefault("heartbeat_interval", 1.0)
    return FederationServer(
        handler,
        address="127.0.0.1:0",
        credentials=tls.hub_server_credentials(certs),
        authorize=lambda name: name in CLUSTERS,
        hub_version="test-hub",
        **kwargs,
    )


def agent_link(certs: Path, port: int, cert_name: str, handler: RecordingAgent, **kwargs: Any) -> HubLink:
    kwargs.setdefault("backoff_initial", 0.05)
    kwargs.setdefault("backoff_max", 0.5)
    return HubLink(
        f"127.0.0.1:{port}",
        handler,
        credentials=tls.agent_channel_credentials(certs, cert_name),
        server_name="localhost",
        **kwargs,
    )


async def with_hub(
    certs: Path, body: Callable[[FederationServer, RecordingHub], Awaitable[None]], **kwargs: Any
) -> None:
    hub = RecordingHub()
    server = hub_server(certs, hub, **kwargs)
    await server.start()
    try:
        await body(server, hub)
    finally:
        await server.stop(grace=0.5)


def test_mtls_happy_path(certs: Path) -> None:
    async def body(server: FederationServer, hub: RecordingHub) -> None:
        assert server.port
        agent = RecordingAgent("worker-1")
        agent.held = [pb.HeldWorkload(workload_uid="u0", dispatch_id="d0", state=pb.LOCAL_STATE_RESERVED)]
        link = agent_link(certs, server.port, "worker-1", agent)
        await link.start()
        welcome = await link.wait_connected(20)
        assert welcome.hub_version == "test-hub" and welcome.heartbeat_interval_ms == 1000
        await hub.notifier.wait_for(lambda: ("connected", "worker-1") in hub.events)
        assert [h.workload_uid for h in hub.hellos["worker-1"].held] == ["u0"]
        assert hub.hellos["worker-1"].session_id == link.session_id

        hub.senders["worker-1"].send([dispatch("a"), pb.Start(workload_uid="a", dispatch_id="a-d1")])
        link.send(
            [pb.Reserved(workload_uid="a", dispatch_id="a-d1", cluster_queue="cq", admitted=True, time=1)]
        )
        await agent.notifier.wait_for(lambda: len(agent.items) == 2, what="hub items")
        await hub.notifier.wait_for(lambda: len(hub.items.get("worker-1", [])) == 1, what="agent items")
        assert [i.WhichOneof("kind") for i in agent.items] == ["dispatch", "start"]
        assert hub.items["worker-1"][0].reserved.cluster_queue == "cq"
        await poll_until(
            lambda: server.endpoint.unacked("worker-1") == 0 and link.endpoint.channel.unacked == 0
        )
        assert server.last_heard("worker-1") is not None
        assert server.connected_clusters() == ["worker-1"]

        # Health checking on the same port, over the same mTLS.
        async with grpc.aio.secure_channel(
            f"127.0.0.1:{server.port}",
            tls.agent_channel_credentials(certs, "worker-2"),
            options=[("grpc.ssl_target_name_override", "localhost")],
        ) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            for service in ("", "mkhub.v1.Federation"):
                reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
                assert reply.status == health_pb2.HealthCheckResponse.SERVING

        await link.stop()  # a clean goodbye is reported
        await hub.notifier.wait_for(lambda: hub.events[-1] == ("disconnected", "worker-1"), what="disconnect")
        assert hub.events == [("connected", "worker-1"), ("disconnected", "worker-1")]
        assert link.attempts == 1

    run(with_hub(certs, body))


async def expect_refused(
    certs: Path, cert_dir: Path, cert_name: str, hello_name: str, code: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def body(server: FederationServer, hub: RecordingHub) -> None:
        assert server.port
        link = agent_link(cert_dir, server.port, cert_name, RecordingAgent(hello_name))
        await link.start()
        # Refused again and again (with backoff), never connected.
        await poll_until(lambda: link.attempts >= 3, what="retries")
        assert not link.connected and hub.events == []
        # The hub refuses an unknown certificate before reading the Hello; a retry whose
        # Hello is still being written then sees gRPC's generic INTERNAL instead, so the
        # reason is asserted on the attempts' logged errors, not only the last one.
        reasons = [r.getMessage() for r in caplog.records if r.name == "worker_agent.link"]
        assert any(code in reason for reason in reasons), reasons
        await link.stop()

    await with_hub(certs, body)


def test_agent_with_cert_from_another_ca_is_refused(
    certs: Path, other_ca: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The TLS handshake fails: the RPC never reaches the hub's handler.
    run(expect_refused(certs, other_ca, "worker-1", "worker-1", "UNAVAILABLE", caplog))


def test_agent_whose_cert_names_unknown_cluster_is_refused(
    certs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run(expect_refused(certs, certs, "intruder", "intruder", "PERMISSION_DENIED", caplog))


def test_hello_naming_another_cluster_than_the_cert_is_refused(
    certs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run(expect_refused(certs, certs, "worker-1", "worker-2", "PERMISSION_DENIED", caplog))


def test_client_without_certificate_is_refused(certs: Path) -> None:
    async def body(server: FederationServer, hub: RecordingHub) -> None:
        creds = grpc.ssl_channel_credentials(root_certificates=(certs / "ca.crt").read_bytes())
        async with grpc.aio.secure_channel(
            f"127.0.0.1:{server.port}", creds, options=[("grpc.ssl_target_name_override", "localhost")]
        ) as channel:
            call = pb_grpc.FederationStub(channel).Connect()
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await call.read()
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        assert hub.events == []

    run(with_hub(certs, body))


def test_reconnect_after_stream_killed_replays_without_duplicates(certs: Path) -> None:
    n = 3000

    async def body(server: FederationServer, hub: RecordingHub) -> None:
        assert server.port
        agent = RecordingAgent("worker-1")
        link = agent_link(certs, server.port, "worker-1", agent)
        killed = {"agent": False, "hub": False}

        def kill_from_agent(items: object) -> None:
            # Cancel the call (a broken connection): what is in flight both ways is lost.
            if not killed["agent"] and len(agent.items) >= n // 3:
                killed["agent"] = link.drop_stream()

        def kill_from_hub(cluster: str, items: object) -> None:
            # Then, on the next stream, the hub ends it with UNAVAILABLE.
            if (
                killed["agent"]
                and not killed["hub"]
                and link.endpoint.sessions >= 2
                and len(hub.items[cluster]) >= 2 * n // 3
            ):
                killed["hub"] = server.drop_stream(cluster, "test kill")

        agent.on_items = kill_from_agent
        hub.on_items = kill_from_hub
        await link.start()
        await link.wait_connected(20)
        await hub.notifier.wait_for(lambda: "worker-1" in hub.senders)
        sender = hub.senders["worker-1"]
        for i in range(0, n, 10):
            if i == 2 * n // 3:  # the last third after the agent's kill (seen arriving before it at load 28): the hub's kill falls in it
                await poll_until(lambda: killed["agent"] and link.endpoint.sessions >= 2, what="the agent's kill")
            sender.send([dispatch(f"d{j}") for j in range(i, i + 10)])
            link.send([status(f"s{j}") for j in range(i, i + 10)])
            await asyncio.sleep(0)  # let envelopes go out in between: many are in flight at the kill
        await agent.notifier.wait_for(lambda: len(agent.items) >= n, what="all dispatches")
        await hub.notifier.wait_for(lambda: len(hub.items.get("worker-1", [])) >= n, what="all statuses")
        await poll_until(
            lambda: server.endpoint.unacked("worker-1") == 0 and link.endpoint.channel.unacked == 0
        )
        assert killed == {"agent": True, "hub": True}
        assert agent.uids() == [f"d{j}" for j in range(n)]  # exactly once, in order
        assert hub.uids("worker-1") == [f"s{j}" for j in range(n)]
        assert link.endpoint.sessions >= 3 and hub.resumed["worker-1"]
        assert hub.events.count(("connected", "worker-1")) == link.endpoint.sessions
        # Something written before a kill was lost and sent again.
        hub_replayed = server.endpoint._peers["worker-1"].channel.replayed
        assert hub_replayed + link.endpoint.channel.replayed > 0
        await link.stop()

    run(with_hub(certs, body))


def test_handler_failure_drops_stream_and_replays(certs: Path) -> None:
    async def body(server: FederationServer, hub: RecordingHub) -> None:
        assert server.port
        link = agent_link(certs, server.port, "worker-1", RecordingAgent("worker-1"))
        await link.start()
        await link.wait_connected(20)
        hub.fail_next = True
        link.send([status("x")])
        await hub.notifier.wait_for(lambda: hub.uids("worker-1") == ["x"], what="replayed status")
        assert link.endpoint.sessions == 2 and "INTERNAL" in (link.last_error or "")
        await link.stop()

    run(with_hub(certs, body))


def test_send_from_other_threads(certs: Path) -> None:
    async def body(server: FederationServer, hub: RecordingHub) -> None:
        assert server.port
        agent = RecordingAgent("worker-1")
        link = agent_link(certs, server.port, "worker-1", agent)
        await link.start()
        await link.wait_connected(20)
        await hub.notifier.wait_for(lambda: "worker-1" in hub.senders)
        sender = hub.senders["worker-1"]

        def work(prefix: str) -> None:
            for i in range(100):
                sender.send([dispatch(f"{prefix}{i}")])
                link.send([status(f"{prefix}{i}")])

        threads = [threading.Thread(target=work, args=(p,)) for p in ("a", "b")]
        for t in threads:
            t.start()
        await asyncio.to_thread(lambda: [t.join() for t in threads])
        await agent.notifier.wait_for(lambda: len(agent.items) == 200, what="dispatches")
        await hub.notifier.wait_for(lambda: len(hub.items.get("worker-1", [])) == 200, what="statuses")
        for prefix in ("a", "b"):  # per-thread order is kept
            assert [u for u in agent.uids() if u[0] == prefix] == [f"{prefix}{i}" for i in range(100)]
            assert [u for u in hub.uids("worker-1") if u[0] == prefix] == [f"{prefix}{i}" for i in range(100)]
        await link.stop()

    run(with_hub(certs, body))


def test_agent_waits_for_unreachable_hub_with_backoff(certs: Path) -> None:
    async def main() -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        agent = RecordingAgent("worker-1")
        link = agent_link(certs, port, "worker-1", agent)
        link.send([status("queued-while-down")])
        await link.start()
        await poll_until(lambda: link.attempts >= 3, what="retries")
        assert not link.connected
        hub = RecordingHub()
        server = FederationServer(
            hub,
            address=f"127.0.0.1:{port}",
            credentials=tls.hub_server_credentials(certs),
            authorize=lambda name: name in CLUSTERS,
        )
        await server.start()
        try:
            await link.wait_connected(20)
            await hub.notifier.wait_for(lambda: hub.uids("worker-1") == ["queued-while-down"])
            await link.stop()
        finally:
            await server.stop(0.5)

    run(main())


def test_hub_restart_agent_replays_to_new_hub(certs: Path) -> None:
    async def main() -> None:
        hub1 = RecordingHub()
        server1 = hub_server(certs, hub1)
        port = await server1.start()
        agent = RecordingAgent("worker-1")
        link = agent_link(certs, port, "worker-1", agent)
        await link.start()
        await link.wait_connected(20)
        first_instance = link.endpoint.hub_instance
        await server1.stop(0)
        link.send([status("while-hub-down")])
        hub2 = RecordingHub()
        server2 = FederationServer(
            hub2, address=f"127.0.0.1:{port}", credentials=tls.hub_server_credentials(certs)
        )
        await server2.start()
        try:
            await hub2.notifier.wait_for(lambda: hub2.uids("worker-1") == ["while-hub-down"])
            assert link.endpoint.hub_instance != first_instance and not link.endpoint.resumed
            hub2.senders["worker-1"].send([dispatch("a")])
            await agent.notifier.wait_for(lambda: agent.uids() == ["a"])
            await link.stop()
        finally:
            await server2.stop(0.5)

    run(main())


def test_heartbeats_at_the_welcome_interval_keep_liveness_fresh(certs: Path) -> None:
    async def body(server: FederationServer, hub: RecordingHub) -> None:
        assert server.port
        link = agent_link(certs, server.port, "worker-1", RecordingAgent("worker-1"))
        await link.start()
        await link.wait_connected(20)
        assert link.endpoint.heartbeat_interval == 0.1
        first = server.last_heard("worker-1")
        assert first is not None
        # No data flows; only heartbeats can move last_heard forward.
        await poll_until(lambda: (server.last_heard("worker-1") or 0) > first + 0.25, what="heartbeats")
        assert server.endpoint.stats.items_in == 0 and hub.items == {}
        await link.stop()

    run(with_hub(certs, body, heartbeat_interval=0.1))


def test_keepalive_pings_every_second_are_not_refused(certs: Path) -> None:
    """Agents ping every 1 s on a stream carrying no data (no heartbeats) for 6 s.
    The hub's server options accept that; a server with gRPC's default ping
    policy (the control) answers GOAWAY too_many_pings, proving pings flowed."""

    async def watch(options: list[tuple[str, Any]] | None) -> tuple[RecordingHub, HubLink]:
        hub = RecordingHub()
        kwargs: dict[str, Any] = {"heartbeat_interval": 0}  # no application heartbeats: only pings
        if options is not None:
            kwargs["options"] = options
        server = hub_server(certs, hub, **kwargs)
        port = await server.start()
        link = agent_link(
            certs, port, "worker-1", RecordingAgent("worker-1"), keepalive_time=1.0, keepalive_timeout=5.0
        )
        try:
            await link.start()
            await link.wait_connected(20)
            await asyncio.sleep(6.5)  # the property under test is the passage of time
            return hub, link
        finally:
            await link.stop()
            await server.stop(0.5)

    async def main() -> None:
        (good_hub, good_link), (control_hub, control_link) = await asyncio.gather(watch(None), watch([]))
        assert good_link.attempts == 1 and good_link.endpoint.sessions == 1
        assert good_hub.events[:1] == [("connected", "worker-1")]
        assert ("disconnected", "worker-1") not in good_hub.events[:-1]  # only the final stop
        assert control_link.endpoint.sessions >= 2, "control server did not refuse frequent pings"
        assert (
            "ping" in (control_link.last_error or "").lower()
            or control_hub.events.count(("disconnected", "worker-1")) >= 2
        )

    run(main())


def test_insecure_mode_is_loopback_only_and_hello_names_cluster() -> None:
    with pytest.raises(ValueError):
        FederationServer(RecordingHub(), address="0.0.0.0:0", insecure=True)
    with pytest.raises(ValueError):
        FederationServer(RecordingHub(), address="127.0.0.1:0")  # no credentials, no insecure flag
    with pytest.raises(ValueError):
        HubLink("127.0.0.1:1", RecordingAgent("w"))

    async def main() -> None:
        hub = RecordingHub()
        server = FederationServer(hub, address="127.0.0.1:0", insecure=True, authorize=lambda n: n == "w7")
        port = await server.start()
        link = HubLink(f"127.0.0.1:{port}", RecordingAgent("w7"), insecure=True)
        try:
            await link.start()
            await link.wait_connected(20)
            await hub.notifier.wait_for(lambda: hub.events == [("connected", "w7")])
            await link.stop()
        finally:
            await server.stop(0.5)

    run(main())


def test_raw_protocol_violations_and_stream_replacement() -> None:
    async def main() -> None:
        hub = RecordingHub()
        server = FederationServer(hub, address="127.0.0.1:0", insecure=True)
        port = await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = pb_grpc.FederationStub(channel)

                bad = stub.Connect()
                await bad.write(pb.AgentMessage(seq=1, items=[agent_item(status("x"))]))
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await bad.read()
                assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT

                async def open_stream() -> Any:
                    call = stub.Connect()
                    hello = pb.Hello(cluster_name="w", session_id="s1")
                    await call.write(pb.AgentMessage(items=[pb.AgentItem(hello=hello)]))
                    first = await call.read()
                    assert first.items[0].WhichOneof("kind") == "welcome"
                    return call

                old = await open_stream()
                new = await open_stream()
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await old.read()
                assert err.value.code() == grpc.StatusCode.ABORTED
                assert hub.events == [("connected", "w"), ("disconnected", "w"), ("connected", "w")]
                await new.done_writing()
                assert await new.read() is grpc.aio.EOF
                await hub.notifier.wait_for(lambda: hub.events[-1] == ("disconnected", "w"))
        finally:
            await server.stop(0.5)

    run(main())


def test_extra_servicer_on_same_server(certs: Path) -> None:
    """The lead's control service will be added the same way."""

    async def main() -> None:
        server = FederationServer(RecordingHub(), address="127.0.0.1:0", insecure=True)
        registered: list[object] = []
        server.add_servicer(registered.append)
        port = await server.start()
        try:
            assert len(registered) == 1 and port
            with pytest.raises(RuntimeError):
                server.add_servicer(registered.append)
        finally:
            await server.stop(0.5)

    run(main())
