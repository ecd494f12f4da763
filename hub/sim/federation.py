"""MultiKueue inside ``mkhub simulate``: the hub controller and one agent per worker, in process.

The manager's and the workers' :class:`hub.sim.cluster.SimCluster` s keep their
engines and ClusterControllers; this module adds the hub's
:class:`~hub.federation.multikueue.MultiKueueController` to the manager and an
:class:`~worker_agent.agent.Agent` to each worker, and connects them through a
:class:`~hub.federation.loopback.LoopbackNetwork` — real envelopes, real
encoding, real seq/ack/replay — on the scenario's simulated clock.

A scenario's ``schedule`` step becomes :meth:`SimFederation.settle`: the
manager schedules, messages flow, the workers schedule, messages flow back,
until a whole round moves nothing (or, with ``cycles``, after that many manager
cycles, each followed by the workers and the links settling).
"""

from __future__ import annotations

from collections.abc import Callable

from hub.api.config import Configuration
from hub.federation.loopback import LoopbackNetwork
from hub.federation.multikueue import MultiKueueController
from hub.federation.session import AgentEndpoint, HubEndpoint
from hub.sim.cluster import SimCluster
from worker_agent.agent import Agent

MAX_ROUNDS = 10_000


class SimFederation:
    def __init__(self, manager: SimCluster, workers: dict[str, SimCluster], config: Configuration) -> None:
        self.manager = manager
        self.workers = workers
        self.now = manager.engine.now
        self.controller = MultiKueueController(manager.engine, config, jobs=manager.controller.jobs)
        manager.controller.plugins.append(self.controller)
        self.hub = HubEndpoint(
            self.controller,
            authorize=self.controller.authorize,
            hub_version="sim",
            worker_lost_timeout_ms=int(config.multikueue.worker_lost_timeout * 1000),
            instance_id="sim-hub",
            monotonic=self._clock,
        )
        self.network = LoopbackNetwork(self.hub)
        self.agents: dict[str, Agent] = {}
        for name in sorted(workers):
            cluster = workers[name]
            agent = Agent(
                name,
                cluster.controller,
                origin=config.multikueue.origin,
                version="sim",
                partial_admission=config.gate("PartialAdmission"),
                capacity_interval=0.0,  # the clock stands still while a step settles
            )
            endpoint = AgentEndpoint(
                agent, session_id=f"sim-{name}", monotonic=self._clock, now_ms=lambda: int(self.now * 1000)
            )
            agent.send = endpoint.send
            self.network.add_agent(name, endpoint)
            self.agents[name] = agent
            # A worker's expectations name the manager's Job; its copy has the Workload's name and
            # remembers the Job's it came from (so it is found after the manager's Job is gone).
            cluster.alias = self._alias(agent)
        self.started = False

    @staticmethod
    def _alias(agent: Agent) -> Callable[[str], str | None]:
        def alias(name: str) -> str | None:
            c = agent.copy_named(name)
            return c.key if c is not None else None

        return alias

    def _clock(self) -> float:
        return self.now

    def start(self, now: float) -> None:
        """Connect every agent (once the manager's MultiKueueClusters exist)."""
        self.now = now
        self.started = True
        self.network.connect_all()
        self._propagate(now)

    def settle(self, now: float, cycles: int | None = None) -> None:
        self.now = now
        if not self.started:
            self.start(now)
        manager = self.manager.controller
        if cycles is not None:
            for _ in range(cycles):
                manager.schedule_once(now)
                self._propagate(now)
            return
        for _ in range(MAX_ROUNDS):
            manager.settle(now)
            if not self._propagate(now):
                return
        raise RuntimeError("the federation did not settle")

    def _propagate(self, now: float) -> bool:
        """Manager reacts, links deliver, workers settle, links deliver: until nothing moves."""
        moved = False
        for _ in range(MAX_ROUNDS):
            self.manager.controller.react(now)
            delivered = self.network.pump()
            for name in sorted(self.workers):
                capacity = self.agents[name].capacity
                if capacity is not None:
                    capacity.dirty = True  # a step may have changed a worker's queues
                self.workers[name].controller.settle(now)
            delivered += self.network.pump()
            if not delivered:
                return moved
            moved = True
        raise RuntimeError("the federation links did not settle")

    def disconnect(self, name: str, now: float) -> None:
        self.now = now
        self.network.disconnect(name)
        self.manager.controller.react(now)  # the hub notices the loss now

    def reconnect(self, name: str, now: float) -> None:
        self.now = now
        self.network.connect(name)
        self._propagate(now)
