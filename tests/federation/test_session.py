"""Unit tests of the pure session layer: seq, ack, outbox, replay, dedup, restarts."""

from __future__ import annotations

import pytest

from hub.federation.session import (
    AgentEndpoint,
    AgentStream,
    HubEndpoint,
    HubStream,
    ProtocolError,
    Rejected,
    SeqChannel,
    StaleStream,
    agent_item,
    hub_item,
)
from mkhub.v1 import federation_pb2 as pb

from .helpers import RecordingAgent, RecordingHub, dispatch, status


def items(n: int, prefix: str = "w") -> list[pb.HubItem]:
    return [hub_item(dispatch(f"{prefix}{i}")) for i in range(n)]


# ---------------------------------------------------------------- SeqChannel


def test_channel_numbers_batches_and_trims_on_ack() -> None:
    ch: SeqChannel[pb.HubItem] = SeqChannel()
    ch.push(items(2))
    ch.push(items(1, "x"))
    (b1,) = ch.take()  # everything pending packs into one batch
    assert b1[0] == 1 and len(b1[1]) == 3
    ch.push(items(1, "y"))
    (b2,) = ch.take()
    assert b2[0] == 2
    assert ch.take() == []
    assert ch.unacked == 2
    ch.on_peer_ack(1)
    assert ch.unacked == 1
    ch.on_peer_ack(1)  # repeated ack is harmless
    ch.on_peer_ack(0)  # and an older one too
    assert ch.unacked == 1 and ch.peer_acked == 1
    ch.on_peer_ack(2)
    assert ch.unacked == 0


def test_channel_rejects_ack_of_unsent_seq() -> None:
    ch: SeqChannel[pb.HubItem] = SeqChannel()
    with pytest.raises(ProtocolError):
        ch.on_peer_ack(1)


def test_channel_splits_by_count_and_bytes() -> None:
    ch: SeqChannel[pb.HubItem] = SeqChannel(max_items=3)
    ch.push(items(7))
    assert [len(b) for _, b in ch.take()] == [3, 3, 1]

    big = pb.HubItem(dispatch=pb.Dispatch(workload_uid="big", workload_json="x" * 600))
    ch2: SeqChannel[pb.HubItem] = SeqChannel(max_bytes=1000)
    ch2.push([big, big, big])
    assert [len(b) for _, b in ch2.take()] == [1, 1, 1]  # an oversized item still goes, alone


def test_channel_rewind_replays_unacked_in_order() -> None:
    ch: SeqChannel[pb.HubItem] = SeqChannel()
    for i in range(4):
        ch.push(items(1, f"b{i}-"))
        ch.take()
    ch.on_peer_ack(2)
    ch.push(items(1, "new"))  # queued while "disconnected"
    ch.rewind()
    assert [seq for seq, _ in ch.take()] == [3, 4, 5]
    assert ch.replayed == 2
    assert ch.take() == []


def test_channel_dedup_and_ack_bookkeeping() -> None:
    ch: SeqChannel[pb.HubItem] = SeqChannel()
    assert ch.is_new(1)
    ch.commit(1)
    ch.commit(2)
    assert not ch.is_new(2) and not ch.is_new(1) and ch.is_new(3)
    assert ch.ack_due == 2
    assert ch.stamp_ack() == 2 and ch.ack_due == 0
    ch.reset_inbound()
    assert ch.is_new(1) and ch.in_last == 0


def test_channel_reset_drops_outbox_but_keeps_numbering() -> None:
    ch: SeqChannel[pb.HubItem] = SeqChannel()
    ch.push(items(2))
    ch.take()
    ch.push(items(1))
    ch.reset()
    assert ch.unacked == 0 and not ch.has_unsent()
    ch.push(items(1))
    assert [seq for seq, _ in ch.take()] == [2]


# ---------------------------------------------------------------- endpoints, by hand


class Pair:
    """A hub endpoint and one agent endpoint, envelopes moved by hand through bytes."""

    def __init__(self, name: str = "worker-1") -> None:
        self.hub_handler = RecordingHub()
        self.hub = HubEndpoint(self.hub_handler, hub_version="h1", heartbeat_interval_ms=1000)
        self.agent_handler = RecordingAgent(name)
        self.agent = AgentEndpoint(self.agent_handler)
        self.name = name
        self.hs: HubStream | None = None
        self.ast: AgentStream | None = None

    def connect(self) -> None:
        self.ast = self.agent.open_stream()
        (hello,) = self.agent.take_outgoing(self.ast)
        self.hs = self.hub.open_stream(rt(hello), cert_cluster=self.name)
        self.deliver_to_agent([rt(e) for e in self.hub.take_outgoing(self.hs)])  # Welcome, replay

    def to_hub(self) -> list[pb.AgentMessage]:
        assert self.ast is not None
        return [rt(e) for e in self.agent.take_outgoing(self.ast)]

    def to_agent(self) -> list[pb.HubMessage]:
        assert self.hs is not None
        return [rt(e) for e in self.hub.take_outgoing(self.hs)]

    def deliver_to_hub(self, envs: list[pb.AgentMessage]) -> None:
        assert self.hs is not None
        for e in envs:
            self.hub.receive(self.hs, e)

    def deliver_to_agent(self, envs: list[pb.HubMessage]) -> None:
        assert self.ast is not None
        for e in envs:
            self.agent.receive(self.ast, e)

    def drop(self) -> None:
        assert self.hs is not None and self.ast is not None
        self.hub.close_stream(self.hs)
        self.agent.close_stream(self.ast)


def rt(env):  # type: ignore[no-untyped-def]
    """Round-trip through bytes, as a transport does."""
    return type(env).FromString(env.SerializeToString())


def test_handshake_hello_then_welcome() -> None:
    p = Pair()
    p.agent_handler.held = [pb.HeldWorkload(workload_uid="u", dispatch_id="d", state=pb.LOCAL_STATE_RUNNING)]
    p.connect()
    assert p.hub_handler.events == [("connected", "worker-1")]
    hello = p.hub_handler.hellos["worker-1"]
    assert hello.session_id == p.agent.session_id and hello.agent_version == "test"
    assert [h.workload_uid for h in hello.held] == ["u"]
    assert p.agent.connected and p.agent.welcome is not None
    assert p.agent.welcome.hub_version == "h1" and p.agent.heartbeat_interval == 1.0
    assert not p.agent.welcome.resumed and p.agent.hub_instance == p.hub.instance_id
    assert p.hub.is_connected("worker-1") and p.hub.last_heard("worker-1") is not None


def test_items_flow_both_ways_with_piggybacked_acks() -> None:
    p = Pair()
    p.connect()
    p.hub.sender("worker-1").send([dispatch("a"), dispatch("b")])
    (env,) = p.to_agent()
    assert env.seq == 1 and len(env.items) == 2
    p.deliver_to_agent([env])
    assert p.agent_handler.uids() == ["a", "b"]
    p.agent.send([status("a")])
    (up,) = p.to_hub()
    assert up.seq == 1 and up.ack == 1  # the ack rides on the data envelope
    p.deliver_to_hub([up])
    assert p.hub.unacked("worker-1") == 0
    assert p.hub_handler.uids("worker-1") == ["a"]
    (ack_only,) = p.to_agent()
    assert ack_only.seq == 0 and ack_only.ack == 1 and not ack_only.items
    p.deliver_to_agent([ack_only])
    assert p.agent.channel.unacked == 0
    assert p.to_agent() == [] and p.to_hub() == []


def test_duplicate_envelopes_are_dropped() -> None:
    p = Pair()
    p.connect()
    p.hub.sender("worker-1").send([dispatch("a")])
    (env,) = p.to_agent()
    p.deliver_to_agent([env, env, env])
    assert p.agent_handler.uids() == ["a"]
    assert p.agent.stats.duplicates == 2


def test_reconnect_replays_unacked_both_ways_without_duplicates() -> None:
    p = Pair()
    p.connect()
    sender = p.hub.sender("worker-1")
    sender.send([dispatch("a")])
    p.deliver_to_agent(p.to_agent())  # delivered, but the agent's ack never reaches the hub
    sender.send([dispatch("b")])
    p.to_agent()  # lost in flight
    p.agent.send([status("a")])
    p.to_hub()  # lost in flight
    p.drop()
    assert p.hub_handler.events[-1] == ("disconnected", "worker-1")
    sender.send([dispatch("c")])  # while disconnected
    p.agent.send([status("b")])

    p.connect()
    assert p.agent.resumed and p.hub_handler.resumed["worker-1"]
    p.deliver_to_agent(p.to_agent())
    p.deliver_to_hub(p.to_hub())
    p.deliver_to_agent(p.to_agent())
    p.deliver_to_hub(p.to_hub())
    assert p.agent_handler.uids() == ["a", "b", "c"]
    assert p.hub_handler.uids("worker-1") == ["a", "b"]
    # The Hello's and the Welcome's acks trimmed what had arrived: only what was lost is replayed.
    assert p.agent.stats.duplicates == 0 and p.hub.stats.duplicates == 0
    assert p.hub._peers["worker-1"].channel.replayed == 1 and p.agent.channel.replayed == 1
    assert p.hub.unacked("worker-1") == 0 and p.agent.channel.unacked == 0


def test_hello_ack_trims_hub_outbox_before_replay() -> None:
    p = Pair()
    p.connect()
    p.hub.sender("worker-1").send([dispatch("a")])
    p.deliver_to_agent(p.to_agent())
    p.drop()
    p.ast = p.agent.open_stream()
    (hello,) = p.agent.take_outgoing(p.ast)
    assert hello.ack == 1
    p.hs = p.hub.open_stream(rt(hello), cert_cluster="worker-1")
    assert p.hub.unacked("worker-1") == 0
    assert [e.seq for e in p.hub.take_outgoing(p.hs)] == [0]  # the Hello's ack: nothing to replay


def test_agent_restart_resets_hub_session() -> None:
    p = Pair()
    p.connect()
    p.agent.send([status("a"), status("b")])
    p.deliver_to_hub(p.to_hub())
    p.hub.sender("worker-1").send([dispatch("lost")])
    p.to_agent()  # never delivered; the agent process dies
    p.drop()

    p.agent = AgentEndpoint(p.agent_handler)  # new process, new session id, seqs from 1
    p.connect()
    assert not p.hub_handler.resumed["worker-1"] and not p.agent.resumed
    assert p.hub.unacked("worker-1") == 0  # discarded: the handler reconciles from Hello.held
    p.agent.send([status("c")])
    (up,) = p.to_hub()
    assert up.seq == 1
    p.deliver_to_hub([up])
    assert p.hub_handler.uids("worker-1") == ["a", "b", "c"]
    assert "lost" not in p.agent_handler.uids()


def test_hub_restart_agent_replays_everything_unacked() -> None:
    p = Pair()
    p.connect()
    p.hub.sender("worker-1").send([dispatch("a"), dispatch("b")])
    p.deliver_to_agent(p.to_agent())
    p.agent.send([status("a")])
    p.to_hub()  # lost
    p.drop()

    old_instance = p.hub.instance_id
    p.hub_handler = RecordingHub()
    p.hub = HubEndpoint(p.hub_handler)  # new process
    p.connect()
    assert p.agent.hub_instance != old_instance and not p.agent.resumed
    p.deliver_to_hub(p.to_hub())
    assert p.hub_handler.uids("worker-1") == ["a"]
    p.hub.sender("worker-1").send([dispatch("c")])
    (env,) = [e for e in p.to_agent() if e.seq]
    assert env.seq == 1  # the new hub numbers from 1 and the agent accepts it
    p.deliver_to_agent([env])
    assert p.agent_handler.uids() == ["a", "b", "c"]


def test_new_stream_replaces_old_one() -> None:
    p = Pair()
    p.connect()
    old = p.hs
    assert old is not None
    p.connect()
    assert p.hub_handler.events == [
        ("connected", "worker-1"),
        ("disconnected", "worker-1"),
        ("connected", "worker-1"),
    ]
    with pytest.raises(StaleStream):
        p.hub.receive(old, pb.AgentMessage())
    assert p.hub.take_outgoing(old) == []
    p.hub.close_stream(old)  # stale: ignored
    assert p.hub.is_connected("worker-1")


def test_handler_failure_leaves_envelope_for_replay() -> None:
    p = Pair()
    p.connect()
    p.agent.send([status("a")])
    (up,) = p.to_hub()
    p.hub_handler.fail_next = True
    with pytest.raises(RuntimeError):
        p.deliver_to_hub([up])
    p.drop()
    p.connect()
    p.deliver_to_hub(p.to_hub())
    assert p.hub_handler.uids("worker-1") == ["a"]


def test_heartbeat_ping_and_liveness() -> None:
    now = [100.0]
    handler = RecordingHub()
    hub = HubEndpoint(handler, monotonic=lambda: now[0])
    agent = AgentEndpoint(RecordingAgent("w"), now_ms=lambda: 42)
    ast = agent.open_stream()
    hs = hub.open_stream(rt(agent.take_outgoing(ast)[0]), cert_cluster=None)
    agent.receive(ast, hub.take_outgoing(hs)[0])
    assert hub.last_heard("w") == 100.0
    now[0] = 107.5
    assert hub.silent_for("w") == 7.5
    assert agent.heartbeat()
    (hb,) = agent.take_outgoing(ast)
    assert hb.seq == 0 and hb.items[0].heartbeat.time == 42
    hub.receive(hs, rt(hb))
    assert hub.last_heard("w") == 107.5 and handler.items == {}
    assert hub.ping("w")
    (ping,) = hub.take_outgoing(hs)
    agent.receive(ast, rt(ping))
    (reply,) = agent.take_outgoing(ast)
    assert reply.items[0].WhichOneof("kind") == "heartbeat"
    hub.close_stream(hs)
    assert not hub.ping("w") and hub.last_heard("w") == 107.5


@pytest.mark.parametrize(
    ("first", "cert", "code"),
    [
        (pb.AgentMessage(items=[agent_item(status("a"))]), "w", "invalid_argument"),
        (
            pb.AgentMessage(seq=1, items=[pb.AgentItem(hello=pb.Hello(cluster_name="w", session_id="s"))]),
            "w",
            "invalid_argument",
        ),
        (pb.AgentMessage(items=[pb.AgentItem(hello=pb.Hello(cluster_name="w"))]), "w", "invalid_argument"),
        (
            pb.AgentMessage(items=[pb.AgentItem(hello=pb.Hello(cluster_name="other", session_id="s"))]),
            "w",
            "permission_denied",
        ),
        (
            pb.AgentMessage(items=[pb.AgentItem(hello=pb.Hello(cluster_name="unknown", session_id="s"))]),
            None,
            "permission_denied",
        ),
    ],
)
def test_open_stream_rejections(first: pb.AgentMessage, cert: str | None, code: str) -> None:
    handler = RecordingHub()
    hub = HubEndpoint(handler, authorize=lambda name: name in ("w", "other"))
    with pytest.raises(Rejected) as err:
        hub.open_stream(first, cert_cluster=cert)
    assert err.value.code == code
    assert handler.events == []


def test_protocol_violations() -> None:
    p = Pair()
    p.connect()
    assert p.hs is not None
    with pytest.raises(ProtocolError):  # a second Hello
        p.hub.receive(p.hs, pb.AgentMessage(seq=0, items=[pb.AgentItem(hello=pb.Hello())]))
    with pytest.raises(ProtocolError):  # work in a control envelope
        p.hub.receive(p.hs, pb.AgentMessage(seq=0, items=[agent_item(status("a"))]))
    with pytest.raises(ProtocolError):  # ack of something never sent
        p.hub.receive(p.hs, pb.AgentMessage(seq=0, ack=99))
    ast = p.agent.open_stream()
    p.agent.take_outgoing(ast)
    with pytest.raises(ProtocolError):  # first hub envelope is not a Welcome
        p.agent.receive(ast, pb.HubMessage(seq=1, items=items(1)))


def test_item_wrapping() -> None:
    assert hub_item(pb.Start(workload_uid="u")).WhichOneof("kind") == "start"
    assert hub_item(pb.Withdraw()).WhichOneof("kind") == "withdraw"
    assert agent_item(pb.Reserved()).WhichOneof("kind") == "reserved"
    with pytest.raises(TypeError):
        hub_item(pb.Status())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        agent_item(pb.Dispatch())  # type: ignore[arg-type]


def test_sender_marshals_through_call_soon() -> None:
    queued: list = []
    handler = RecordingHub()
    hub = HubEndpoint(handler, call_soon=queued.append)
    agent = AgentEndpoint(RecordingAgent("w"))
    ast = agent.open_stream()
    hs = hub.open_stream(agent.take_outgoing(ast)[0], cert_cluster="w")
    woken: list[HubStream] = []
    hub.on_outgoing = woken.append
    hub.sender("w").send([dispatch("a")])
    assert hub.take_outgoing(hs)[1:] == [] and len(queued) == 1  # nothing pushed until the hook runs
    queued.pop()()
    assert woken == [hs]
    assert [e.seq for e in hub.take_outgoing(hs)] == [1]


# ---------------------------------------------------------------- heartbeat echoes (dead links, fencing)


def test_the_hub_echoes_heartbeats_and_the_agent_counts_from_the_echo() -> None:
    clock = [100.0]
    p = Pair()
    p.hub.fencing_margin_ms = 2500
    p.agent.monotonic = lambda: clock[0]
    p.connect()
    welcome = p.agent.welcome
    assert welcome is not None and welcome.echoes_heartbeats and welcome.fencing_margin_ms == 2500
    assert p.agent.heard_by_hub == 100.0  # the Hello was sent then, and the hub welcomed it
    clock[0] = 105.0
    assert p.agent.heartbeat()
    beat = p.to_hub()
    clock[0] = 109.0  # the echo arrives later; the agent counts from when it sent the beat
    p.deliver_to_hub(beat)
    (echo,) = p.to_agent()
    assert [i.WhichOneof("kind") for i in echo.items] == ["heartbeat_echo"]
    p.deliver_to_agent([echo])
    assert p.agent.heard_by_hub == 105.0
    assert p.agent_handler.uids() == []  # echoes are not work items


def test_an_agent_that_does_not_ask_gets_no_echo() -> None:
    """Older agents refuse unknown HubItems: the hub echoes only to agents whose Hello asks."""
    p = Pair()
    ast = p.agent.open_stream()
    (hello,) = p.agent.take_outgoing(ast)
    hello.items[0].hello.echo_heartbeats = False
    hs = p.hub.open_stream(rt(hello), cert_cluster="worker-1")
    (welcome,) = p.hub.take_outgoing(hs)
    assert not welcome.items[0].welcome.echoes_heartbeats
    p.hub.receive(hs, pb.AgentMessage(items=[pb.AgentItem(heartbeat=pb.Heartbeat(time=1))]))
    assert p.hub.take_outgoing(hs) == []
