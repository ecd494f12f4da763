"""``mkhub serve --kubeconfig FILE`` (or ``--in-cluster``): the hub on a Kubernetes API server.

The store is :class:`hub.store.kube.KubeStore` (objects from the API server,
status written back there); everything else in ``mkhub serve`` is unchanged.
With leader election on (the default), a replica fills its caches and then waits
for the coordination.k8s.io/v1 Lease; the store's writes are fenced by it (and
bounded by the time left on it), and losing it
stops the hub (``mkhub serve`` exits 1, to be restarted as a standby by its
supervisor), as controller-runtime's managers do.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hub.api.config import ClientConnection, Configuration
from hub.api.jobkinds import adapter_of_kind, enabled_job_kinds, external_kinds
from hub.api.jobkinds.leaderworkerset import FRAMEWORK as LWS_FRAMEWORK
from hub.api.jobkinds.management import framework_enabled
from hub.api.jobkinds.serving import STATEFULSET, pod_integration_enabled
from hub.api.registry import KINDS
from hub.store.interface import Store, StoreError

log = logging.getLogger("mkhub.serve")


# mkhub's client rate limit without --kube-qps/--kube-burst or a clientConnection (set before Kueue
# v0.20 raised its own to 300 and 500; every ``bench kube`` figure was measured with it).
DEFAULT_QPS, DEFAULT_BURST = 500.0, 1000


@dataclass(frozen=True, slots=True)
class KubeOptions:
    kubeconfig: Path | None  # None: in-cluster (service account)
    context: str | None = None
    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST
    leader_elect: bool = True
    lease_name: str = "mkhub-hub-leader"
    lease_namespace: str = "default"
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    sync_timeout: float = 600.0
    # Kinds of the enabled job frameworks beside batch/v1 Job (a JobSet's...): listed and watched
    # when their CRDs are installed (hub.store.kube's optional kinds); "Pod" with the pod framework.
    job_kinds: tuple[str, ...] = ()
    # TAS_WATCHED too: Kueue runs its TAS controllers, the Pod watch among them, only with the
    # TopologyAwareScheduling gate on (then whether or not a TAS flavor exists).
    tas: bool = True


def client_rate_limit(qps: float | None, burst: int | None, connection: ClientConnection | None) -> tuple[float, int]:
    """The hub's client rate limit (qps 0: none): ``mkhub serve --kube-qps/--kube-burst`` where given, else
    the Configuration's ``clientConnection`` as Kueue reads it, else mkhub's own default."""
    default_qps, default_burst = (DEFAULT_QPS, DEFAULT_BURST) if connection is None else (connection.qps or 0.0, connection.burst)
    return (default_qps if qps is None else qps), (default_burst if burst is None else burst)


class KubeBackend:
    """The transport, the election and the store of one hub process."""

    def __init__(self, transport: Any, election: Any, store: Store, records: Store | None = None) -> None:
        self.transport = transport
        self.election = election
        self.store = store
        self.records = records if records is not None else store  # the hub's Events: a rate limit of their own

    def close(self) -> None:
        self.store.close()
        if self.election is not None:
            self.election.release()
            self.election.stop()
        self.transport.close()


def default_identity() -> str:
    return f"{socket.gethostname()}_{os.getpid()}_{uuid.uuid4().hex[:8]}"


# What pod templates claim devices through (hub.controllers.dra); optional: a cluster may not serve DRA.
DRA_WATCHED = ("ResourceClaim", "ResourceClaimTemplate")
# Topology-aware scheduling's inventory, the kinds of it the registry has (Node: hub.api.tas_kinds), and
# Pods: TAS ungates them, and counts those it did not place against their nodes (hub.controllers.tas_pods).
TAS_WATCHED = tuple(k for k in ("Topology", "Node", "Pod") if k in KINDS)


def watched_job_kinds(config: Configuration) -> tuple[str, ...]:
    """The kinds beside Kueue's the hub lists and watches: the enabled frameworks' (a JobSet's...),
    and Pods when the pod integration runs (the pod framework, or Deployment/StatefulSet implying it)."""
    kinds = enabled_job_kinds(config)
    # What their pod sets come from (a TrainJob's runtimes), optional as the kinds are.
    referenced = tuple(sorted({k for kind in kinds for k in getattr(adapter_of_kind(kind), "referenced_kinds", ())}))
    # StatefulSets too with their framework: the pod webhook reads a new Pod's set (its current replicas);
    # LeaderWorkerSets with theirs: a LeaderReady set's groups' Workloads are made from the set.
    return (kinds + referenced + (("Pod",) if pod_integration_enabled(config) else ())
            + (("StatefulSet",) if framework_enabled(config, STATEFULSET) else ())
            + (("LeaderWorkerSet",) if framework_enabled(config, LWS_FRAMEWORK) else ())
            + external_kinds())  # multiKueue.externalFrameworks (registered when the config was read)


def store_options(opts: KubeOptions) -> Any:
    """The Kubernetes store's options: Kueue's kinds, and the enabled frameworks' kinds as optional."""
    from hub.store.kube import KubeStoreOptions
    from hub.store.kube.store import DEFAULT_KINDS

    tas = TAS_WATCHED if opts.tas else ()
    extra = tuple(k for k in dict.fromkeys((*opts.job_kinds, *DRA_WATCHED, *tas)) if k not in DEFAULT_KINDS)
    optional = tuple(k for k in extra if k not in ("Pod", "Node"))  # a cluster always serves these: missing is an error
    return KubeStoreOptions(kinds=DEFAULT_KINDS + extra, optional_kinds=optional, sync_timeout=opts.sync_timeout)


class EarlyStore:
    """The transport and the store, opened on a thread of their own as soon as the options are known:
    the API server lists (its CPU, on another core) while ``mkhub serve`` imports the rest of the
    hub, so the two overlap instead of adding up. :func:`open_backend` takes them over."""

    def __init__(self, opts: KubeOptions) -> None:
        self.opts = opts
        self.transport: Future[Any] = Future()
        self.store: Future[Any] = Future()
        threading.Thread(target=self._open, name="mkhub-early-store", daemon=True).start()

    def _open(self) -> None:
        from hub.store.kube import ApiClientTransport, KubeStore

        opts = self.opts
        try:
            transport = ApiClientTransport.from_kubeconfig(opts.kubeconfig, context=opts.context, qps=opts.qps, burst=opts.burst)
        except BaseException as exc:
            self.transport.set_exception(exc)
            self.store.set_exception(exc)
            return
        self.transport.set_result(transport)
        try:
            # Unfenced until open_backend sets the Lease's fence: nothing writes before it returns.
            self.store.set_result(KubeStore(transport, store_options(opts)))
        except BaseException as exc:
            self.store.set_exception(exc)


_EARLY: dict[KubeOptions, EarlyStore] = {}


def open_early(opts: KubeOptions) -> None:
    """Start listing for ``opts`` now; the next :func:`open_backend` with the same options uses it."""
    if opts.kubeconfig is None and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        return  # open_backend says what is missing
    from hub.tuning import tune_gc

    tune_gc(freeze=False, collect=False)  # the lists build long-lived state (as serve_main does)
    _EARLY[opts] = EarlyStore(opts)


async def open_backend(
    opts: KubeOptions, stopping: asyncio.Event, on_lost: Callable[[], None], on_election: Callable[[Any], None] | None = None
) -> KubeBackend | None:
    """Connect, list everything into the store, then wait to lead (unless stopped first: None)."""
    from hub.store.kube import ApiClientTransport, KubeStore, LeaderElection, LeaseConfig

    if opts.kubeconfig is None and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        raise StoreError("--in-cluster needs KUBERNETES_SERVICE_HOST (run inside a pod) or give --kubeconfig FILE")
    early = _EARLY.pop(opts, None)
    if early is not None:
        transport = await asyncio.to_thread(early.transport.result)
    else:
        transport = await asyncio.to_thread(
            ApiClientTransport.from_kubeconfig, opts.kubeconfig, context=opts.context, qps=opts.qps, burst=opts.burst
        )
    election = None
    store = None
    try:
        fence = remaining = None
        if opts.leader_elect:
            loop = asyncio.get_running_loop()
            config = LeaseConfig(
                opts.identity or default_identity(),
                name=opts.lease_name,
                namespace=opts.lease_namespace,
                lease_duration=opts.lease_duration,
                renew_deadline=opts.renew_deadline,
                retry_period=opts.retry_period,
            )
            # Renewals have a rate limit of their own: a burst of writes must not delay them.
            election = LeaderElection(transport.for_leases(), config, on_lost=lambda: loop.call_soon_threadsafe(on_lost))
            fence, remaining = election.is_leader, election.remaining
            if on_election is not None:  # the dashboard of a standby names the leader
                on_election(election)
            election.start()
            log.info("waiting for the leader Lease %s/%s as %s", config.namespace, config.name, config.identity)
        # As controller-runtime, caches start before leading: a standby keeps them warm, so a
        # failover costs no full list. Writes are fenced by the Lease and bounded by what is left of it.
        if early is not None:
            store = await asyncio.to_thread(early.store.result)
            store.fence, store.lease_remaining = fence, remaining
        else:
            store = await asyncio.to_thread(
                KubeStore, transport, store_options(opts), fence=fence, lease_remaining=remaining
            )
        log.info("Kubernetes store synced from %s", transport.configuration.host)
        if election is not None:
            while not election.leading.is_set():
                if stopping.is_set():
                    await asyncio.to_thread(store.close)
                    election.stop()
                    transport.close()
                    return None
                await asyncio.to_thread(election.leading.wait, 0.2)
            log.info("leading as %s", election.config.identity)
    except BaseException:
        if store is not None:
            store.close()
        elif early is not None:  # still listing: close it once it is done
            early.store.add_done_callback(lambda done: done.exception() is None and done.result().close())
        if election is not None:
            election.stop()
        transport.close()
        raise
    from hub.store.kube.records import records_view

    return KubeBackend(transport, election, store, records_view(store))
