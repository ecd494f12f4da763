"""The in-process loopback transport: real encoding, replay, dedup, faults, determinism."""

from __future__ import annotations

import random

import pytest

from hub.federation.loopback import LoopbackNetwork
from hub.federation.session import AgentEndpoint, HubEndpoint, Rejected
from mkhub.v1 import federation_pb2 as pb

from .helpers import RecordingAgent, RecordingHub, dispatch, status


def make_net(
    *names: str, authorize=lambda _n: True
) -> tuple[LoopbackNetwork, RecordingHub, dict[str, RecordingAgent]]:  # type: ignore[no-untyped-def]
    hub_handler = RecordingHub()
    net = LoopbackNetwork(HubEndpoint(hub_handler, authorize=authorize))
    agents = {}
    for name in names:
        agents[name] = RecordingAgent(name)
        net.add_agent(name, AgentEndpoint(agents[name]))
    return net, hub_handler, agents


def test_connect_and_exchange() -> None:
    net, hub, agents = make_net("w1", "w2")
    net.connect_all()
    net.pump()
    assert sorted(hub.senders) == ["w1", "w2"]
    assert net.agent("w1").connected and net.hub.connected_clusters() == ["w1", "w2"]
    hub.senders["w1"].send([dispatch("a"), dispatch("b")])
    hub.senders["w2"].send([dispatch("c")])
    net.agent("w1").send([status("a")])
    net.pump()
    assert agents["w1"].uids() == ["a", "b"] and agents["w2"].uids() == ["c"]
    assert hub.uids("w1") == ["a"]
    # Quiescent: every envelope acknowledged on both sides.
    assert net.hub.unacked("w1") == 0 and net.agent("w1").channel.unacked == 0
    assert net.pump() == 0
    assert net.bytes_to_hub > 0 and net.bytes_to_agents > 0


def test_disconnect_drops_in_flight_and_reconnect_replays_without_duplicates() -> None:
    net, hub, agents = make_net("w1")
    net.connect("w1")
    net.pump()
    sender = hub.senders["w1"]
    sender.send([dispatch("a")])
    net.agent("w1").send([status("x")])
    net.pump()
    sender.send([dispatch("b")])
    net.agent("w1").send([status("y")])
    net.step(0)  # written onto the link...
    assert net.in_flight("w1") == 2
    net.disconnect("w1")  # ...and lost with it: still unacknowledged in the outboxes
    assert hub.events[-1] == ("disconnected", "w1") and not net.agent("w1").connected
    sender.send([dispatch("c")])
    net.reconnect("w1")
    net.pump()
    assert agents["w1"].uids() == ["a", "b", "c"]
    assert hub.uids("w1") == ["x", "y"]
    assert hub.resumed["w1"] and net.agent("w1").resumed
    assert hub.events == [("connected", "w1"), ("disconnected", "w1"), ("connected", "w1")]


def test_clean_disconnect_delivers_in_flight() -> None:
    net, hub, agents = make_net("w1")
    net.connect("w1")
    net.pump()
    net.agent("w1").send([status("x")])
    net.disconnect("w1", drop_in_flight=False)
    assert hub.uids("w1") == ["x"]


def test_random_faults_deliver_everything_once_and_in_order() -> None:
    total_lost = 0
    for seed in range(40):
        rng = random.Random(seed)
        net, hub, agents = make_net("w1", "w2")
        net.connect_all()
        sent_down: dict[str, list[str]] = {"w1": [], "w2": []}
        sent_up: dict[str, list[str]] = {"w1": [], "w2": []}
        lost_in_flight = 0
        for n in range(60):
            name = rng.choice(["w1", "w2"])
            action = rng.random()
            if action < 0.35 and name in hub.senders:
                uids = [f"d{n}-{i}" for i in range(rng.randint(1, 5))]
                hub.senders[name].send([dispatch(u) for u in uids])
                sent_down[name].extend(uids)
            elif action < 0.7:
                uids = [f"s{n}-{i}" for i in range(rng.randint(1, 3))]
                net.agent(name).send([status(u) for u in uids])
                sent_up[name].extend(uids)
            elif action < 0.8:
                lost_in_flight += net.in_flight(name)
                net.disconnect(name)
            elif action < 0.9:
                net.connect(name)
            else:
                net.pump()
            if rng.random() < 0.5:
                net.step(rng.randint(1, 4))  # partial delivery leaves envelopes in flight
        net.connect_all()
        net.pump()
        for name in ("w1", "w2"):
            assert agents[name].uids() == sent_down[name], f"seed {seed}"
            assert hub.uids(name) == sent_up[name], f"seed {seed}"
        total_lost += lost_in_flight
    assert total_lost > 20  # the faults did hit messages that were already written


def test_agent_restart_starts_a_new_session() -> None:
    net, hub, agents = make_net("w1")
    net.connect("w1")
    net.pump()
    hub.senders["w1"].send([dispatch("a")])
    net.disconnect("w1")  # never delivered
    agents["w1"].held = [pb.HeldWorkload(workload_uid="kept", dispatch_id="k1", state=pb.LOCAL_STATE_RUNNING)]
    net.replace_agent("w1", AgentEndpoint(agents["w1"]))
    net.connect("w1")
    net.pump()
    assert not hub.resumed["w1"]
    assert [h.workload_uid for h in hub.hellos["w1"].held] == ["kept"]
    assert agents["w1"].uids() == []  # the hub reconciles from Hello.held instead
    net.agent("w1").send([status("kept")])
    net.pump()
    assert hub.uids("w1") == ["kept"]


def test_hub_restart_agent_replays_to_new_hub() -> None:
    net, hub, agents = make_net("w1")
    net.connect("w1")
    net.pump()
    net.agent("w1").send([status("x")])
    new_hub = RecordingHub()
    net.replace_hub(HubEndpoint(new_hub))  # "x" was in flight and is lost with the old hub
    net.connect("w1")
    net.pump()
    assert new_hub.uids("w1") == ["x"]
    new_hub.senders["w1"].send([dispatch("a")])
    net.pump()
    assert agents["w1"].uids() == ["a"]


def test_unauthorized_and_mismatched_agents_are_refused() -> None:
    net, hub, _ = make_net("w1", authorize=lambda name: name == "w1")
    net.add_agent("intruder", AgentEndpoint(RecordingAgent("intruder")))
    net.add_agent("liar", AgentEndpoint(RecordingAgent("w1")), cert_cluster="liar")
    for name in ("intruder", "liar"):
        net.connect(name)
    net.pump()
    for name in ("intruder", "liar"):
        err = net.last_error(name)
        assert isinstance(err, Rejected) and err.code == "permission_denied"
        assert not net.is_linked(name) and not net.agent(name).connected
    assert hub.events == []


def test_insecure_mode_hello_names_the_cluster() -> None:
    hub_handler = RecordingHub()
    net = LoopbackNetwork(HubEndpoint(hub_handler))
    net.add_agent("a", AgentEndpoint(RecordingAgent("w7")), cert_cluster=None)
    net.connect("a")
    net.pump()
    assert hub_handler.events == [("connected", "w7")]


def test_second_link_for_same_cluster_replaces_first() -> None:
    net, hub, _ = make_net("w1")
    net.add_agent("w1-twin", AgentEndpoint(RecordingAgent("w1")), cert_cluster="w1")
    net.connect("w1")
    net.pump()
    net.connect("w1-twin")
    net.pump()
    assert hub.events == [("connected", "w1"), ("disconnected", "w1"), ("connected", "w1")]
    net.agent("w1").send([status("from-old")])
    net.pump()  # the old link's stream is stale: the link is closed
    assert not net.is_linked("w1") and net.is_linked("w1-twin")
    assert "from-old" not in hub.uids("w1")


def test_handler_exception_closes_link_and_replays() -> None:
    net, hub, _ = make_net("w1")
    net.connect("w1")
    net.pump()
    net.agent("w1").send([status("x")])
    hub.fail_next = True
    with pytest.raises(RuntimeError):
        net.pump()
    assert not net.is_linked("w1")
    net.connect("w1")
    net.pump()
    assert hub.uids("w1") == ["x"]


def test_heartbeats_update_liveness_deterministically() -> None:
    now = [0.0]
    hub_handler = RecordingHub()
    net = LoopbackNetwork(HubEndpoint(hub_handler, monotonic=lambda: now[0]))
    net.add_agent("w1", AgentEndpoint(RecordingAgent("w1")))
    net.connect("w1")
    net.pump()
    now[0] = 12.0
    assert net.hub.silent_for("w1") == 12.0
    net.heartbeat()
    net.pump()
    assert net.hub.last_heard("w1") == 12.0 and hub_handler.items == {}


def test_large_batches_are_split_and_reassembled_in_order() -> None:
    net, hub, agents = make_net("w1")
    net.hub.max_bytes = 64 * 1024
    net.connect("w1")
    net.pump()
    payload = "x" * 5000
    hub.senders["w1"].send(
        [pb.Dispatch(workload_uid=f"u{i}", dispatch_id="d", workload_json=payload) for i in range(100)]
    )
    net.pump()
    assert agents["w1"].uids() == [f"u{i}" for i in range(100)]
