"""In-process transport: a hub endpoint and agent endpoints wired through byte queues.

It drives the same :mod:`hub.federation.session` endpoints as the gRPC
transport and serialises every envelope to bytes and back, so a simulation
exercises the real encoding, sequencing, replay and deduplication. There are
no threads, no asyncio and no timers: nothing moves until :meth:`pump` is
called, and ``pump`` delivers in a fixed order (clusters by name, agent->hub
before hub->agent) until no message is left, so runs are deterministic.

Faults: :meth:`disconnect` drops the link and whatever was in flight on it (as
a broken TCP connection would), :meth:`reconnect` opens a new stream (Hello,
Welcome, replay), :meth:`replace_agent` / :meth:`replace_hub` stand for a
process restart.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field

from mkhub.v1 import federation_pb2 as pb

from .session import AgentEndpoint, AgentStream, HubEndpoint, HubStream, ProtocolError, Rejected, StaleStream

log = logging.getLogger(__name__)


@dataclass
class _Link:
    agent_stream: AgentStream
    hub_stream: HubStream | None = None
    to_hub: deque[bytes] = field(default_factory=deque)
    to_agent: deque[bytes] = field(default_factory=deque)


@dataclass
class _Agent:
    endpoint: AgentEndpoint
    # The identity its certificate would carry; None models the insecure mode.
    cert_cluster: str | None
    link: _Link | None = None
    last_error: Exception | None = None


class LoopbackNetwork:
    """One hub and any number of agents, connected in process."""

    def __init__(self, hub: HubEndpoint) -> None:
        self.hub = hub
        self._agents: dict[str, _Agent] = {}
        self.bytes_to_hub = 0
        self.bytes_to_agents = 0

    # --- topology
    def add_agent(self, name: str, endpoint: AgentEndpoint, *, cert_cluster: str | None = "") -> None:
        """Register an agent under ``name`` (not connected yet).

        ``cert_cluster`` is the cluster its client certificate names; by default
        ``name``; None models the insecure transport where the Hello alone
        names the cluster.
        """
        if name in self._agents:
            raise ValueError(f"agent {name!r} already added")
        self._agents[name] = _Agent(endpoint, name if cert_cluster == "" else cert_cluster)

    def agent(self, name: str) -> AgentEndpoint:
        return self._agents[name].endpoint

    def agents(self) -> list[str]:
        return sorted(self._agents)

    def is_linked(self, name: str) -> bool:
        """The agent has an open link (possibly not yet welcomed: pump to finish the handshake)."""
        return self._agents[name].link is not None

    def last_error(self, name: str) -> Exception | None:
        """Why the agent's last link was closed by the protocol (Rejected, ProtocolError), if it was."""
        return self._agents[name].last_error

    # --- faults and controls
    def connect(self, name: str) -> None:
        """Open a new stream for the agent (replacing its current link, if any)."""
        agent = self._agents[name]
        if agent.link is not None:
            self.disconnect(name)
        agent.last_error = None
        agent.link = _Link(agent_stream=agent.endpoint.open_stream())

    def disconnect(self, name: str, *, drop_in_flight: bool = True) -> None:
        """Break the agent's link. With ``drop_in_flight`` (the default) whatever
        was queued on it is lost; otherwise it is delivered first (a clean close)."""
        agent = self._agents[name]
        link = agent.link
        if link is None:
            return
        if not drop_in_flight:
            self._deliver(name, agent, link)
        self._close(agent, link)

    def reconnect(self, name: str) -> None:
        self.disconnect(name)
        self.connect(name)

    def connect_all(self) -> None:
        for name in self.agents():
            self.connect(name)

    def replace_agent(self, name: str, endpoint: AgentEndpoint) -> None:
        """The agent process restarted: drop its link and swap in a new endpoint (not connected)."""
        self.disconnect(name)
        self._agents[name].endpoint = endpoint

    def replace_hub(self, hub: HubEndpoint) -> None:
        """The hub process restarted: every link drops; agents stay unconnected until connect()."""
        for name in self.agents():
            self.disconnect(name)
        self.hub = hub

    def heartbeat(self, name: str | None = None) -> None:
        """Have one agent (or every connected agent) send a Heartbeat; then pump()."""
        for agent_name in [name] if name is not None else self.agents():
            self._agents[agent_name].endpoint.heartbeat()

    # --- delivery
    def pump(self, max_envelopes: int = 1_000_000) -> int:
        """Deliver until nothing is left in flight or waiting to be written.

        Returns the number of envelopes delivered. A handler exception closes
        that agent's link (as the gRPC transport does) and is re-raised.
        """
        delivered = 0
        while True:
            progressed = self.step(max_envelopes=max_envelopes + 1 - delivered)
            delivered += progressed
            if not progressed:
                return delivered
            if delivered > max_envelopes:
                raise RuntimeError(f"pump delivered more than {max_envelopes} envelopes; a message loop?")

    def step(self, max_envelopes: int = 1) -> int:
        """Write everything waiting onto the links, then deliver at most
        ``max_envelopes`` of what is in flight (links by name; on each link
        agent->hub first). What is left stays in flight: a disconnect now
        loses it, which is how tests lose messages that were already sent."""
        for name in self.agents():
            agent = self._agents[name]
            if agent.link is not None:
                self._collect(agent, agent.link)
        delivered = 0
        for name in self.agents():
            agent = self._agents[name]
            link = agent.link
            while link is not None and agent.link is link and delivered < max_envelopes:
                if link.to_hub:
                    self._deliver_one(name, agent, link, to_hub=True)
                elif link.to_agent:
                    self._deliver_one(name, agent, link, to_hub=False)
                else:
                    break
                delivered += 1
        return delivered

    def in_flight(self, name: str) -> int:
        """Envelopes written onto the agent's link and not yet delivered."""
        link = self._agents[name].link
        return 0 if link is None else len(link.to_hub) + len(link.to_agent)

    def _collect(self, agent: _Agent, link: _Link) -> None:
        for env in agent.endpoint.take_outgoing(link.agent_stream):
            data = env.SerializeToString()
            self.bytes_to_hub += len(data)
            link.to_hub.append(data)
        if link.hub_stream is not None:
            for hub_env in self.hub.take_outgoing(link.hub_stream):
                data = hub_env.SerializeToString()
                self.bytes_to_agents += len(data)
                link.to_agent.append(data)

    def _deliver(self, name: str, agent: _Agent, link: _Link) -> None:
        """Deliver everything in flight on one link (a clean close)."""
        self._collect(agent, link)
        while agent.link is link and (link.to_hub or link.to_agent):
            self._deliver_one(name, agent, link, to_hub=bool(link.to_hub))
            if agent.link is link and not link.to_hub and not link.to_agent:
                self._collect(agent, link)

    def _deliver_one(self, name: str, agent: _Agent, link: _Link, *, to_hub: bool) -> None:
        try:
            if to_hub:
                env = pb.AgentMessage.FromString(link.to_hub.popleft())
                if link.hub_stream is None:
                    link.hub_stream = self.hub.open_stream(env, cert_cluster=agent.cert_cluster)
                    # The hub writes its Welcome (and replay) right after accepting.
                    self._collect(agent, link)
                else:
                    self.hub.receive(link.hub_stream, env)
            else:
                agent.endpoint.receive(link.agent_stream, pb.HubMessage.FromString(link.to_agent.popleft()))
        except (Rejected, ProtocolError, StaleStream) as err:
            log.info("loopback %s: link closed: %s", name, err)
            agent.last_error = err
            self._close(agent, link)
        except BaseException:
            self._close(agent, link)
            raise

    def _close(self, agent: _Agent, link: _Link) -> None:
        if agent.link is not link:
            return
        agent.link = None
        agent.endpoint.close_stream(link.agent_stream)
        if link.hub_stream is not None:
            self.hub.close_stream(link.hub_stream)
