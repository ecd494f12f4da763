"""The transport-independent session layer of the hub <-> agent protocol.

Everything here is pure and synchronous: no I/O, no threads, no asyncio, the
clock passed in. A transport (hub/federation/server.py and
worker_agent/link.py over gRPC, hub/federation/loopback.py in process) moves
envelopes between a :class:`HubEndpoint` and the :class:`AgentEndpoint` s and
calls, for every stream::

    handle = endpoint.open_stream(...)        # per connection
    endpoint.take_outgoing(handle)            # -> envelopes to write, in order
    endpoint.receive(handle, envelope)        # for every envelope read
    endpoint.close_stream(handle)             # when the connection ends

The reliability rules (seq, ack, replay, deduplication, what a restart of
either side means) are documented at the top of proto/mkhub/v1/federation.proto.
In short: numbered envelopes are kept in an outbox until the peer acknowledges
them and are replayed on the next stream of the same logical session; the
receiver accepts a numbered envelope only if its seq is above the highest it
accepted; control envelopes (seq 0: Hello, Welcome, Heartbeat, Ping, pure
acks) are neither kept nor deduplicated.

An envelope is accepted (its seq committed) only after the handler returned, so
a handler that raises leaves the envelope to be replayed on the next stream.

Threading: endpoints are not thread-safe; a transport calls them from one
thread (its event loop). The only entry points meant for other threads are
:meth:`ClusterSender.send` and :meth:`AgentEndpoint.send`, and only when the
transport installed a ``call_soon`` hook that marshals the call onto its loop
(the gRPC transports do; the loopback transport has no threads and does not).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from mkhub.v1 import federation_pb2 as pb

from .channel import (
    DEFAULT_MAX_BYTES_PER_ENVELOPE,
    DEFAULT_MAX_ITEMS_PER_ENVELOPE,
    AgentItemLike,
    CallSoon,
    HubItemLike,
    InT,
    ItemT,
    ProtocolError,
    Rejected,
    SeqChannel,
    StaleStream,
    Stats,
    agent_item,
    hub_item,
    wall_ms,
)

log = logging.getLogger(__name__)

# ------------------------------------------------------------------ interfaces


class AgentSender(Protocol):
    """What the hub's MultiKueue logic uses to push items to one agent."""

    @property
    def cluster_name(self) -> str: ...

    def send(self, items: Iterable[HubItemLike]) -> None:
        """Queue items for reliable, ordered delivery. Items queued before the
        transport next writes share envelopes (up to max_items / max_bytes each)."""
        ...


class HubHandler(Protocol):
    """Implemented by the hub's MultiKueue logic. Called on the transport's thread/loop; must not block."""

    def on_agent_connected(self, cluster_name: str, hello: pb.Hello, sender: AgentSender) -> None:
        """A stream was accepted. ``hello.held`` lists what the agent holds. When
        ``sender.resumed`` is False the agent (or the hub) restarted: anything sent
        to its previous process that it did not acknowledge was discarded, so
        reconcile from ``hello.held``. May be called again after
        on_agent_disconnected; connected/disconnected calls always alternate."""
        ...

    def on_agent_items(self, cluster_name: str, items: Sequence[pb.AgentItem]) -> None:
        """Reserved/Status items of one envelope, in order. Raising closes the
        stream; the envelope is then replayed on the next one."""
        ...

    def on_agent_disconnected(self, cluster_name: str) -> None:
        """The stream ended (clean close, error, or replaced by a newer stream)."""
        ...


class AgentHandler(Protocol):
    """Implemented by the agent. Called on the transport's thread/loop; must not block."""

    def build_hello(self) -> pb.Hello:
        """cluster_name, agent_version and held (session_id is filled in by the endpoint)."""
        ...

    def on_hub_items(self, items: Sequence[pb.HubItem]) -> None:
        """Dispatch/Start/Withdraw items of one envelope, in order. Raising closes
        the stream; the envelope is then replayed on the next one."""
        ...


# ------------------------------------------------------------------ hub side


@dataclass(frozen=True)
class HubStream:
    """Handle of one accepted agent stream."""

    cluster_name: str
    generation: int


class ClusterSender:
    """The hub's :class:`AgentSender` for one cluster; stable across reconnects.

    ``send`` may be called from any thread when the transport installed a
    ``call_soon`` hook (the gRPC server does); otherwise only from the thread
    driving the endpoint. Items sent while the agent is disconnected are queued
    and delivered if the same agent process comes back; they are discarded if
    a new agent process connects (see HubHandler.on_agent_connected).
    Do not mutate an item after sending it.
    """

    def __init__(self, endpoint: HubEndpoint, cluster_name: str) -> None:
        self._endpoint = endpoint
        self._cluster_name = cluster_name

    @property
    def cluster_name(self) -> str:
        return self._cluster_name

    @property
    def resumed(self) -> bool:
        """Whether the latest accepted stream continued the previous logical session."""
        return self._endpoint._peers[self._cluster_name].resumed

    @property
    def connected(self) -> bool:
        return self._endpoint.is_connected(self._cluster_name)

    def send(self, items: Iterable[HubItemLike]) -> None:
        batch = [hub_item(i) for i in items]
        if not batch:
            return
        call_soon = self._endpoint.call_soon
        if call_soon is None:
            self._endpoint._push(self._cluster_name, batch)
        else:
            call_soon(lambda: self._endpoint._push(self._cluster_name, batch))


class _Peer:
    def __init__(self, endpoint: HubEndpoint, name: str) -> None:
        self.name = name
        self.channel: SeqChannel[pb.HubItem] = SeqChannel(
            max_items=endpoint.max_items, max_bytes=endpoint.max_bytes
        )
        self.control: list[pb.HubItem] = []
        self.session_id: str | None = None
        self.stream: HubStream | None = None
        self.generation = 0
        self.hello: pb.Hello | None = None
        self.resumed = False
        self.last_heard: float | None = None
        self.sender = ClusterSender(endpoint, name)


def _accept(
    channel: SeqChannel[ItemT], stats: Stats, seq: int, items: list[InT], deliver: Callable[[list[InT]], None], kinds: str
) -> None:
    """Deliver a received envelope's work items once: control envelopes (seq 0) carry none,
    replays of already committed envelopes are dropped; committed only after delivery."""
    if seq == 0:
        if items:
            raise ProtocolError(f"{kinds} items must travel in numbered envelopes")
        return
    if not channel.is_new(seq):
        stats.duplicates += 1
        return
    if items:
        stats.items_in += len(items)
        deliver(items)
    channel.commit(seq)


class HubEndpoint:
    """The hub's side of every agent session.

    ``authorize(cluster_name)`` decides whether a cluster may connect (e.g. "a
    MultiKueueCluster of that name exists"). ``monotonic`` is the clock of
    :meth:`last_heard`. ``on_outgoing(handle)`` is set by the transport: it is
    called when a live stream has something to write.
    """

    def __init__(
        self,
        handler: HubHandler,
        *,
        authorize: Callable[[str], bool] = lambda _cluster: True,
        hub_version: str = "",
        heartbeat_interval_ms: int = 5_000,
        worker_lost_timeout_ms: int = 30_000,
        fencing_margin_ms: int = 0,
        instance_id: str | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        max_items: int = DEFAULT_MAX_ITEMS_PER_ENVELOPE,
        max_bytes: int = DEFAULT_MAX_BYTES_PER_ENVELOPE,
        call_soon: CallSoon | None = None,
    ) -> None:
        self.handler = handler
        self.authorize = authorize
        self.hub_version = hub_version
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.worker_lost_timeout_ms = worker_lost_timeout_ms
        self.fencing_margin_ms = fencing_margin_ms
        self.instance_id = instance_id or uuid.uuid4().hex
        self.monotonic = monotonic
        self.max_items = max_items
        self.max_bytes = max_bytes
        self.call_soon = call_soon
        self.on_outgoing: Callable[[HubStream], None] | None = None
        # Pod log lines an agent sends for a LogsRequest (control items: they bypass the handler).
        self.on_log_chunk: Callable[[str, pb.LogChunk], None] | None = None
        self.stats = Stats()
        self._peers: dict[str, _Peer] = {}

    def configure_batching(self, *, max_items: int | None = None, max_bytes: int | None = None) -> None:
        """Change the envelope size limits, for every cluster (benchmarks, tuning)."""
        self.max_items = max_items or self.max_items
        self.max_bytes = max_bytes or self.max_bytes
        for peer in self._peers.values():
            peer.channel.max_items, peer.channel.max_bytes = self.max_items, self.max_bytes

    # --- queries
    def clusters(self) -> list[str]:
        """Every cluster that ever connected to this hub process, sorted."""
        return sorted(self._peers)

    def connected_clusters(self) -> list[str]:
        return sorted(name for name, peer in self._peers.items() if peer.stream is not None)

    def is_connected(self, cluster_name: str) -> bool:
        peer = self._peers.get(cluster_name)
        return peer is not None and peer.stream is not None

    def last_heard(self, cluster_name: str) -> float | None:
        """The ``monotonic`` time anything was last received from the cluster (None: never)."""
        peer = self._peers.get(cluster_name)
        return None if peer is None else peer.last_heard

    def silent_for(self, cluster_name: str) -> float | None:
        """Seconds since the cluster was last heard from (None: never heard)."""
        heard = self.last_heard(cluster_name)
        return None if heard is None else self.monotonic() - heard

    def hello(self, cluster_name: str) -> pb.Hello | None:
        peer = self._peers.get(cluster_name)
        return None if peer is None else peer.hello

    def sender(self, cluster_name: str) -> ClusterSender:
        """The sender of a cluster that has connected at least once (KeyError otherwise)."""
        return self._peers[cluster_name].sender

    def current_stream(self, cluster_name: str) -> HubStream | None:
        peer = self._peers.get(cluster_name)
        return None if peer is None else peer.stream

    def unacked(self, cluster_name: str) -> int:
        """Envelopes queued for or sent to the cluster and not yet acknowledged."""
        return self._peers[cluster_name].channel.unacked

    # --- stream lifecycle
    def open_stream(self, first: pb.AgentMessage, *, cert_cluster: str | None) -> HubStream:
        """Accept a stream whose first envelope is ``first``.

        ``cert_cluster`` is the cluster named by the client certificate, or None
        on an insecure transport (then the Hello names the cluster). Raises
        :class:`Rejected`. A live stream of the same cluster is replaced: it is
        reported disconnected and its handle becomes stale; the transport must
        close it. The transport must call :meth:`take_outgoing` next.
        """
        hello = _only_hello(first)
        name = hello.cluster_name
        if not name:
            raise Rejected("invalid_argument", "Hello.cluster_name is empty")
        if not hello.session_id:
            raise Rejected("invalid_argument", "Hello.session_id is empty")
        if cert_cluster is not None and name != cert_cluster:
            raise Rejected(
                "permission_denied",
                f"Hello names cluster {name!r} but the client certificate names {cert_cluster!r}",
            )
        if not self.authorize(name):
            raise Rejected("permission_denied", f"cluster {name!r} is not allowed to connect")

        peer = self._peers.get(name)
        if peer is None:
            peer = self._peers[name] = _Peer(self, name)
        if peer.stream is not None:
            log.info("cluster %s: new stream replaces the live one", name)
            self.close_stream(peer.stream)

        resumed = peer.session_id == hello.session_id
        if resumed:
            try:
                peer.channel.on_peer_ack(first.ack)
            except ProtocolError as err:
                raise Rejected("invalid_argument", str(err)) from None
        else:
            # A new agent process (or a hub process that never saw this one):
            # the agent's seqs start over and what its predecessor did not
            # acknowledge is reconciled from Hello.held by the handler.
            peer.channel.reset()
            peer.session_id = hello.session_id
        peer.channel.rewind()
        peer.generation += 1
        handle = HubStream(name, peer.generation)
        peer.stream = handle
        peer.hello = hello
        peer.resumed = resumed
        peer.last_heard = self.monotonic()
        peer.control = [
            pb.HubItem(
                welcome=pb.Welcome(
                    hub_version=self.hub_version,
                    heartbeat_interval_ms=self.heartbeat_interval_ms,
                    worker_lost_timeout_ms=self.worker_lost_timeout_ms,
                    hub_instance=self.instance_id,
                    resumed=resumed,
                    fencing_margin_ms=self.fencing_margin_ms,
                    echoes_heartbeats=hello.echo_heartbeats,
                )
            )
        ]
        self.stats.envelopes_in += 1
        log.info(
            "cluster %s connected (session %s, %s, %d held)",
            name,
            hello.session_id,
            "resumed" if resumed else "new session",
            len(hello.held),
        )
        try:
            self.handler.on_agent_connected(name, hello, peer.sender)
        except BaseException:
            peer.stream = None
            peer.control = []
            raise
        return handle

    def close_stream(self, handle: HubStream) -> None:
        """The stream ended; a stale handle is ignored."""
        peer = self._peers.get(handle.cluster_name)
        if peer is None or peer.stream != handle:
            return
        peer.stream = None
        peer.control = []
        log.info("cluster %s disconnected", handle.cluster_name)
        self.handler.on_agent_disconnected(handle.cluster_name)

    def _live(self, handle: HubStream) -> _Peer:
        peer = self._peers.get(handle.cluster_name)
        if peer is None or peer.stream != handle:
            raise StaleStream(f"stream {handle} is not current")
        return peer

    def receive(self, handle: HubStream, env: pb.AgentMessage) -> None:
        """Process one envelope read from the stream. Raises ProtocolError or StaleStream."""
        peer = self._live(handle)
        peer.last_heard = self.monotonic()
        self.stats.envelopes_in += 1
        peer.channel.on_peer_ack(env.ack)
        items: list[pb.AgentItem] = []
        for item in env.items:
            kind = item.WhichOneof("kind")
            if kind == "heartbeat":
                if peer.hello is not None and peer.hello.echo_heartbeats:
                    # The agent counts its link (and its fencing deadline) from these answers.
                    peer.control.append(pb.HubItem(heartbeat_echo=pb.HeartbeatEcho(time=item.heartbeat.time)))
                continue
            if kind == "log_chunk":
                if self.on_log_chunk is not None:
                    self.on_log_chunk(handle.cluster_name, item.log_chunk)
                continue
            if kind == "hello":
                raise ProtocolError("Hello is only allowed as the first envelope of a stream")
            if kind is None:
                raise ProtocolError("empty AgentItem")
            items.append(item)
        cluster = handle.cluster_name
        _accept(peer.channel, self.stats, env.seq, items, lambda batch: self.handler.on_agent_items(cluster, batch),
                "Reserved/Status")

    def has_outgoing(self, handle: HubStream) -> bool:
        peer = self._peers.get(handle.cluster_name)
        if peer is None or peer.stream != handle:
            return False
        return bool(peer.control) or peer.channel.has_unsent() or peer.channel.ack_due > 0

    def has_data(self, handle: HubStream) -> bool:
        """Something other than a bare acknowledgement is waiting to be written."""
        peer = self._peers.get(handle.cluster_name)
        if peer is None or peer.stream != handle:
            return False
        return bool(peer.control) or peer.channel.has_unsent()

    def ack_due(self, handle: HubStream) -> int:
        peer = self._peers.get(handle.cluster_name)
        return 0 if peer is None or peer.stream != handle else peer.channel.ack_due

    def take_outgoing(self, handle: HubStream) -> list[pb.HubMessage]:
        """Envelopes to write, in order: control first, then replayed and new batches;
        a bare ack when there is nothing else and something to acknowledge."""
        peer = self._peers.get(handle.cluster_name)
        if peer is None or peer.stream != handle:
            return []
        channel = peer.channel
        out: list[pb.HubMessage] = []
        if peer.control:
            out.append(pb.HubMessage(seq=0, ack=channel.stamp_ack(), items=peer.control))
            peer.control = []
        for seq, items in channel.take():
            out.append(pb.HubMessage(seq=seq, ack=channel.stamp_ack(), items=items))
            self.stats.items_out += len(items)
        if not out and channel.ack_due > 0:
            out.append(pb.HubMessage(seq=0, ack=channel.stamp_ack()))
        self.stats.envelopes_out += len(out)
        return out

    def ping(self, cluster_name: str) -> bool:
        """Ask the agent for an immediate Heartbeat; False when it is not connected."""
        peer = self._peers.get(cluster_name)
        if peer is None or peer.stream is None:
            return False
        peer.control.append(pb.HubItem(ping=pb.Ping()))
        self._wake(peer)
        return True

    def send_control(self, cluster_name: str, items: list[pb.HubItem]) -> bool:
        """Queue control items (LogsRequest, LogsCancel) on the cluster's live stream: not numbered,
        never replayed. False when the agent is not connected. Transport loop only."""
        peer = self._peers.get(cluster_name)
        if peer is None or peer.stream is None:
            return False
        peer.control.extend(items)
        self._wake(peer)
        return True

    def _push(self, cluster_name: str, items: list[pb.HubItem]) -> None:
        peer = self._peers[cluster_name]
        peer.channel.push(items)
        self._wake(peer)

    def _wake(self, peer: _Peer) -> None:
        if peer.stream is not None and self.on_outgoing is not None:
            self.on_outgoing(peer.stream)


def _only_hello(first: pb.AgentMessage) -> pb.Hello:
    if first.seq != 0 or len(first.items) != 1 or first.items[0].WhichOneof("kind") != "hello":
        raise Rejected("invalid_argument", "the first envelope of a stream must hold exactly one Hello")
    return first.items[0].hello


# ------------------------------------------------------------------ agent side


@dataclass(frozen=True)
class AgentStream:
    """Handle of one stream of the agent."""

    generation: int


class AgentEndpoint:
    """The agent's side of its session with the hub.

    ``session_id`` is random per agent process; pass one only to simulate a
    process that kept its session. ``on_outgoing(handle)`` is set by the
    transport and called when the live stream has something to write.
    """

    def __init__(
        self,
        handler: AgentHandler,
        *,
        session_id: str | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        now_ms: Callable[[], int] = wall_ms,
        max_items: int = DEFAULT_MAX_ITEMS_PER_ENVELOPE,
        max_bytes: int = DEFAULT_MAX_BYTES_PER_ENVELOPE,
        call_soon: CallSoon | None = None,
    ) -> None:
        self.handler = handler
        self.session_id = session_id or uuid.uuid4().hex
        self.monotonic = monotonic
        self.now_ms = now_ms
        self.call_soon = call_soon
        self.on_outgoing: Callable[[AgentStream], None] | None = None
        # LogsRequest / LogsCancel items from the hub (control items: they bypass the handler).
        self.on_logs: Callable[[pb.HubItem], None] | None = None
        self.channel: SeqChannel[pb.AgentItem] = SeqChannel(max_items=max_items, max_bytes=max_bytes)
        self.stats = Stats()
        self.hub_instance: str | None = None
        self.welcome: pb.Welcome | None = None  # of the current stream, once welcomed
        self.last_heard: float | None = None
        # When (``monotonic``) the hub last proved it heard this agent: its Welcome, or the
        # HeartbeatEcho of a Heartbeat sent then. Kept across streams: fencing counts from it.
        self.heard_by_hub: float | None = None
        self._beats: dict[int, float] = {}  # Heartbeat.time -> when it was sent
        self._hello_sent_at: float | None = None
        self.sessions = 0  # streams welcomed so far
        self._stream: AgentStream | None = None
        self._generation = 0
        self._welcomed = False
        self._control: list[pb.AgentItem] = []
        self._hello_sent = False

    def configure_batching(self, *, max_items: int | None = None, max_bytes: int | None = None) -> None:
        """Change the envelope size limits (benchmarks, tuning)."""
        self.channel.max_items = max_items or self.channel.max_items
        self.channel.max_bytes = max_bytes or self.channel.max_bytes

    @property
    def connected(self) -> bool:
        """A stream is open and the hub welcomed it."""
        return self._stream is not None and self._welcomed

    @property
    def resumed(self) -> bool:
        return self.welcome is not None and self.welcome.resumed

    @property
    def heartbeat_interval(self) -> float | None:
        """Seconds between heartbeats, as the Welcome says (None before it)."""
        if self.welcome is None or self.welcome.heartbeat_interval_ms <= 0:
            return None
        return self.welcome.heartbeat_interval_ms / 1000.0

    # --- stream lifecycle
    def open_stream(self) -> AgentStream:
        """Start a new stream (closing any current one); its first envelope is the Hello."""
        if self._stream is not None:
            self.close_stream(self._stream)
        self._generation += 1
        self._stream = AgentStream(self._generation)
        self._welcomed = False
        self._hello_sent = False
        self._control = []
        self.welcome = None
        return self._stream

    def close_stream(self, handle: AgentStream) -> None:
        if self._stream != handle:
            return
        self._stream = None
        self._welcomed = False
        self._control = []

    def _live(self, handle: AgentStream) -> None:
        if self._stream != handle:
            raise StaleStream(f"stream {handle} is not current")

    def receive(self, handle: AgentStream, env: pb.HubMessage) -> None:
        """Process one envelope read from the stream. Raises ProtocolError or StaleStream."""
        self._live(handle)
        self.last_heard = self.monotonic()
        self.stats.envelopes_in += 1
        if not self._welcomed:
            self._on_welcome(env)
            return
        self.channel.on_peer_ack(env.ack)
        items: list[pb.HubItem] = []
        for item in env.items:
            kind = item.WhichOneof("kind")
            if kind == "ping":
                self._control.append(self._heartbeat_item())
                self._wake()
                continue
            if kind == "heartbeat_echo":
                sent = self._beats.pop(item.heartbeat_echo.time, None)
                if sent is not None:
                    self.heard_by_hub = max(self.heard_by_hub or sent, sent)
                    for t in [t for t in self._beats if t < item.heartbeat_echo.time]:
                        del self._beats[t]  # older ones lost their answer with a dropped stream
                continue
            if kind in ("logs_request", "logs_cancel"):
                if self.on_logs is not None:
                    self.on_logs(item)
                continue
            if kind == "welcome":
                raise ProtocolError("Welcome is only allowed as the first envelope of a stream")
            if kind is None:
                raise ProtocolError("empty HubItem")
            items.append(item)
        _accept(self.channel, self.stats, env.seq, items, self.handler.on_hub_items, "Dispatch/Start/Withdraw")

    def _on_welcome(self, env: pb.HubMessage) -> None:
        if env.seq != 0 or len(env.items) != 1 or env.items[0].WhichOneof("kind") != "welcome":
            raise ProtocolError("the first envelope from the hub must hold exactly one Welcome")
        welcome = env.items[0].welcome
        if welcome.hub_instance != self.hub_instance:
            # A hub process we have not talked to: its seqs start at 1.
            if self.hub_instance is not None:
                log.info("hub restarted (instance %s -> %s)", self.hub_instance, welcome.hub_instance)
            self.channel.reset_inbound()
            self.hub_instance = welcome.hub_instance
        self.channel.on_peer_ack(env.ack)
        self.channel.rewind()
        self.welcome = welcome
        self._welcomed = True
        self.sessions += 1
        self.heard_by_hub = self._hello_sent_at  # the hub accepted the Hello sent then
        self._beats.clear()

    def has_outgoing(self, handle: AgentStream) -> bool:
        if self._stream != handle:
            return False
        if not self._welcomed:
            return not self._hello_sent
        return bool(self._control) or self.channel.has_unsent() or self.channel.ack_due > 0

    def has_data(self, handle: AgentStream) -> bool:
        if self._stream != handle:
            return False
        if not self._welcomed:
            return not self._hello_sent
        return bool(self._control) or self.channel.has_unsent()

    def ack_due(self, handle: AgentStream) -> int:
        return self.channel.ack_due if self._stream == handle and self._welcomed else 0

    def take_outgoing(self, handle: AgentStream) -> list[pb.AgentMessage]:
        """Envelopes to write, in order. Before the Welcome that is only the Hello."""
        if self._stream != handle:
            return []
        channel = self.channel
        out: list[pb.AgentMessage] = []
        if not self._welcomed:
            if not self._hello_sent:
                hello = pb.Hello()
                hello.CopyFrom(self.handler.build_hello())
                hello.session_id = self.session_id
                hello.echo_heartbeats = True
                self._hello_sent_at = self.monotonic()
                out.append(pb.AgentMessage(seq=0, ack=channel.stamp_ack(), items=[pb.AgentItem(hello=hello)]))
                self._hello_sent = True
        else:
            if self._control:
                out.append(pb.AgentMessage(seq=0, ack=channel.stamp_ack(), items=self._control))
                self._control = []
            for seq, items in channel.take():
                out.append(pb.AgentMessage(seq=seq, ack=channel.stamp_ack(), items=items))
                self.stats.items_out += len(items)
            if not out and channel.ack_due > 0:
                out.append(pb.AgentMessage(seq=0, ack=channel.stamp_ack()))
        self.stats.envelopes_out += len(out)
        return out

    def heartbeat(self) -> bool:
        """Queue a Heartbeat on the live stream; False when not connected."""
        if not self.connected:
            return False
        self._control.append(self._heartbeat_item())
        self._wake()
        return True

    def _heartbeat_item(self) -> pb.AgentItem:
        beat = self.now_ms()
        self._beats[beat] = self.monotonic()
        if len(self._beats) > 64:  # never answered (an old hub, or a dead link): keep the newest
            del self._beats[min(self._beats)]
        return pb.AgentItem(heartbeat=pb.Heartbeat(time=beat))

    def send(self, items: Iterable[AgentItemLike]) -> None:
        """Queue Reserved/Status items for reliable, ordered delivery to the hub.

        Kept while disconnected and delivered on the next stream (to this hub
        process or, after a hub restart, to the new one). Thread-safe only
        when a ``call_soon`` hook was installed. Do not mutate an item after
        sending it.
        """
        batch = [agent_item(i) for i in items]
        if not batch:
            return
        if self.call_soon is None:
            self._push(batch)
        else:
            self.call_soon(lambda: self._push(batch))

    def send_control(self, items: list[pb.AgentItem]) -> None:
        """Queue control items (LogChunk) for the live stream: not numbered, never replayed,
        dropped when no stream is up. Thread-safe as :meth:`send`."""

        def push() -> None:
            if self.connected:
                self._control.extend(items)
                self._wake()

        if self.call_soon is None:
            push()
        else:
            self.call_soon(push)

    def _push(self, batch: list[pb.AgentItem]) -> None:
        self.channel.push(batch)
        self._wake()

    def _wake(self) -> None:
        if self._stream is not None and self._welcomed and self.on_outgoing is not None:
            self.on_outgoing(self._stream)
