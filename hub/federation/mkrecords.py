"""The MultiKueue controller's records: one per dispatched workload, one per worker agent,
and what the transport thread hands over to the controller thread (its inbox)."""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mkhub.v1 import federation_pb2 as pb

from .session import AgentSender


@dataclass
class Dispatch:
    """One reservation of a hub workload and where its copies stand."""

    key: str
    did: str
    uid: str
    check: str
    clusters: tuple[str, ...]  # the MultiKueueConfig's, in preference order
    cluster_queue: str = ""
    nominated: list[str] = field(default_factory=list)
    candidates: dict[str, float] = field(default_factory=dict)  # cluster -> time its copy was admitted
    winner: str | None = None
    new_round: bool = True  # Incremental: nominate the next step on the next reconcile
    message: pb.Dispatch | None = None  # built once, sent to every nominated cluster


@dataclass
class Worker:
    """The hub's view of one worker cluster's agent."""

    name: str
    sender: AgentSender | None = None
    connected: bool = False
    ever_connected: bool = False
    lost_since: float | None = None  # start of the current outage
    since: float | None = None  # the last connect or disconnect
    # workload key -> dispatch id of the copy it holds, as far as the hub knows
    held: dict[str, str] = field(default_factory=dict)
    # dispatch ids recently withdrawn: reports about them that crossed the Withdraw are expected
    withdrawn: OrderedDict[str, None] = field(default_factory=OrderedDict)
    out: list[pb.HubItem] = field(default_factory=list)
    reports_job_status: bool = False  # its Hello said so: it sends its Jobs' statuses (Kubernetes mode)


@dataclass(frozen=True, slots=True)
class Connected:
    cluster: str
    hello: pb.Hello
    sender: AgentSender
    resumed: bool


@dataclass(frozen=True, slots=True)
class InboxItems:
    cluster: str
    items: Sequence[pb.AgentItem]


@dataclass(frozen=True, slots=True)
class Disconnected:
    cluster: str


InboxEntry = Connected | InboxItems | Disconnected


@dataclass
class MultiKueueStats:
    """Counters for metrics. ``by_queue`` feeds Kueue's multikueue_workloads_dispatched_total and
    multikueue_workloads_admitted_total: (event, cluster_queue, cluster) -> count."""

    dispatched: int = 0  # Dispatch items sent (one per copy)
    admitted: int = 0  # winners elected
    withdrawn: int = 0
    retries: int = 0  # checks set to Retry (worker eviction, lost worker, lost copy)
    rejected: int = 0
    stale: int = 0  # reports about dispatches the hub no longer wants
    fenced: int = 0  # runs agents stopped themselves when cut off from the hub (Status reason Fenced)
    by_queue: Counter[tuple[str, str, str]] = field(default_factory=Counter)


def unwanted_copies(workers: Iterable[Worker], dispatches: Mapping[str, Dispatch]) -> list[tuple[Worker, str, str, str]]:
    """(worker, workload key, dispatch id, uid) of every copy a connected worker holds that the hub
    does not want (Kueue's per-cluster garbage collection): another dispatch's, or on a cluster
    that is neither the winner nor, before one is elected, nominated."""
    out = []
    for worker in workers:
        if not worker.connected:
            continue
        for key, did in sorted(worker.held.items()):
            d = dispatches.get(key)
            wanted = d is not None and d.did == did and (
                worker.name == d.winner or (d.winner is None and worker.name in d.nominated))
            if not wanted:
                out.append((worker, key, did, d.uid if d is not None else ""))
    return out
