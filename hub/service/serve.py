"""``mkhub serve``: the hub as a process.

One gRPC port carries the Federation service (agents), the Control service
(the mkhub CLI) and gRPC health checking; ``--kube-listen`` adds the hub's
Kubernetes API (kubectl) on a second port (hub/service/kubeserve.py). Health reports NOT_SERVING until the
store is open and the engine restored from it, then SERVING. SIGTERM or SIGINT:
stop taking requests, let the reconciler finish and commit its round, close
the store, exit 0.

The federation handler is always MultiKueue's controller
(:class:`hub.federation.multikueue.MultiKueueController`), a plugin of the
reconciler's rounds (:class:`hub.controllers.hub.Federation`): agents'
messages are queued by the transport and wake the reconciler, which applies
them in its next round, commits, and only then sends what the round decided.
Without a MultiKueue AdmissionCheck it has nothing to do: a standalone hub.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from grpc_health.v1 import health_pb2

from hub.api.config import Configuration, MultiKueueOptions
from hub.controllers.hub import HubReconciler
from hub.controllers.hub_runtime import HubRuntime
from hub.engine.engine import Engine
from hub.federation.logrelay import LogRelay
from hub.federation.multikueue import MultiKueueController
from hub.federation.server import SERVICE_NAME as FEDERATION_SERVICE
from hub.federation.server import FederationServer
from hub.obs import tracing, visibility
from hub.obs.process import ProcessObs
from hub.store.interface import Store, StoreError
from hub.store.sqlite import SQLiteStore
from hub.tuning import tune_gc
from mkhub.v1 import control_pb2_grpc

from . import views
from .apply import ensure_namespace
from .certs import ADMIN_NAME, hub_server_credentials
from .control import SERVICE_NAME as CONTROL_SERVICE
from .control import ControlService
from .embedded_operators import EmbeddedOperators
from .healthport import HealthPort
from .kubemode import KubeBackend, KubeOptions, open_backend
from .parent_marks import ParentWebhooks
from .uihook import UIContext, UIServer, UIStarter

if TYPE_CHECKING:  # hub.kubeapi and aiohttp load only with --kube-listen / --webhook-listen: a faster start
    from hub.kubeapi import KubeAPI
    from hub.kubeapi.visibility import Pending, VisibilityServer

    from .webhook import Webhook

log = logging.getLogger("mkhub.serve")

DB_FILE = "hub.db"
# Changes kept in memory for watches: the hub's own watch follows every round, and a round of
# ROUND_BUDGET changed workloads writes about four changes each (status, two Events, queues).
# A smaller ring makes the watch read its own round back from the database.
WATCH_CACHE = 16_384
# Loopback unless told otherwise: agents on other machines need --listen 0.0.0.0:7443 (or [::]),
# a choice to make on purpose (the deployment manifests make it).
DEFAULT_LISTEN = "127.0.0.1:7443"
INSECURE_LISTEN = "127.0.0.1:7443"


@dataclass(frozen=True, slots=True)
class ServeOptions:
    data_dir: Path
    listen: str = DEFAULT_LISTEN
    config: Configuration = Configuration()
    tls_dir: Path | None = None
    insecure: bool = False
    sim_duration: float = 5.0
    shutdown_grace: float = 5.0
    metrics_listen: str | None = None  # HOST:PORT for /metrics; None: off
    kube_listen: str = ""  # HOST:PORT of the Kubernetes API (hub/kubeapi); "" for none
    kube_store: KubeOptions | None = None  # the Kubernetes store instead of the embedded one
    health_listen: str = ""  # HOST:PORT of the plaintext gRPC health service for probes; "" for none
    webhook_listen: str = ""  # HOST:PORT of Kueue's Job webhook (hub/service/webhook.py); "" for none
    webhook_tls_dir: Path | None = None  # its certificate; None: tls_dir
    visibility_listen: str = ""  # HOST:PORT of Kueue's visibility API alone, for an APIService; "" for none
    visibility_client_ca: Path | None = None  # client certificates it requires; None: none asked
    ui_listen: str = ""  # HOST:PORT of the web dashboard (hub/ui); "" for none
    ui_tokens: Path | None = None  # the dashboard's token hashes (`mkhub ui token`); None: data_dir/ui-tokens
    ui: UIStarter | None = None  # hub.ui.server.start, passed in by the CLI (hub/ui sits above this layer)


# Agents heartbeat this often at most; more often with a short workerLostTimeout, so that an
# idle but healthy agent is always heard from several times within it.
MAX_HEARTBEAT = 5.0
HEARTBEATS_PER_LOST_TIMEOUT = 4


def heartbeat_interval(options: MultiKueueOptions) -> float:
    """The heartbeat the hub asks of its agents (Kueue's Configuration has no such field)."""
    return max(0.05, min(MAX_HEARTBEAT, options.worker_lost_timeout / HEARTBEATS_PER_LOST_TIMEOUT))


def fencing_margin(options: MultiKueueOptions) -> float:
    """How much sooner than workerLostTimeout an agent that nobody hears stops its workloads.

    The agent counts from the last Heartbeat the hub answered, which is never later than the
    hub's own "last heard"; the margin covers the agent's reaction time and the hub's
    lost-worker check running early: two heartbeats, or a tenth of the timeout when that is
    more, and never more than half of it.
    """
    timeout = options.worker_lost_timeout
    return min(timeout / 2, max(2 * heartbeat_interval(options), timeout / 10))





# Debugging aid for rounding bugs (e2e/test_hub_restart_winner.py): pins the fraction of a millisecond
# of every reading of the reconciler's clock, e.g. 0.4998 for times such as 12:00:00.0014998.
SUBMILLISECOND_ENV = "MKHUB_DEBUG_SUBMILLISECOND"


def _reconciler_clock() -> Callable[[], float]:
    raw = os.environ.get(SUBMILLISECOND_ENV, "")
    if not raw:
        return time.time
    try:
        fraction = float(raw)
    except ValueError:
        fraction = -1.0
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"{SUBMILLISECOND_ENV}: {raw!r} is not a fraction in [0, 1)")
    return lambda: (int(time.time() * 1000) + fraction) / 1000


def _link(server: FederationServer, name: str) -> views.WorkerLink:
    heard = server.last_heard(name)
    return views.WorkerLink(name in server.connected_clusters(), None if heard is None else time.monotonic() - heard)


def _authorizer(mk: MultiKueueController) -> Callable[[str], bool]:
    def authorize(cluster: str) -> bool:
        # Only MultiKueueClusters the engine knows (none until it is restored); never the CLI's identity.
        return cluster != ADMIN_NAME and mk.authorize(cluster)

    return authorize


def _drop_streams(server: FederationServer) -> None:
    """Make every agent reconnect (loop thread): its Hello tells a rebuilt hub what it holds."""
    for cluster in server.connected_clusters():
        server.drop_stream(cluster, "the hub rebuilt its state from the store; reconnect")


async def _poke_while_connected(runtime: HubRuntime, server: FederationServer, interval: float) -> None:
    """The transport reports messages, not silence: a round every heartbeat interval while agents
    are connected lets MultiKueue notice one that stopped talking (``mk.silence``) in time."""
    while True:
        await asyncio.sleep(interval)
        if server.connected_clusters():
            runtime.wake()


async def _restored(runtime: HubRuntime) -> None:
    """Wait for the engine to be restored, without leaving a thread blocked if it never is."""
    while not await asyncio.to_thread(runtime.ready.wait, 0.2):
        if runtime.done.done():
            return


async def _follow_store_health(store: Store, server: FederationServer, probes: HealthPort | None) -> None:
    """Readiness off, said once at ERROR, when the store reports a problem (a Kubernetes
    store's informer died: its kind's cache is frozen); on again once it clears."""
    problem_of = getattr(store, "problem", None)
    if problem_of is None:
        return
    reported: str | None = None
    while True:
        await asyncio.sleep(1.0)
        problem = problem_of()
        if problem == reported:
            continue
        if problem is not None:
            log.error("not ready: %s", problem)
        status = health_pb2.HealthCheckResponse.NOT_SERVING if problem else health_pb2.HealthCheckResponse.SERVING
        await _set_health(server, status)
        if probes is not None:
            await probes.set_ready(problem is None)
        reported = problem


async def _set_health(server: FederationServer, status: int) -> None:
    for service in ("", FEDERATION_SERVICE, CONTROL_SERVICE):
        await server.health.set(service, status)


async def serve(opts: ServeOptions) -> int:
    """Run the hub until SIGTERM/SIGINT. Returns the process exit code."""
    credentials = None if opts.insecure else hub_server_credentials(opts.tls_dir or Path("."))
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    backend: KubeBackend | None = None
    lost = asyncio.Event()
    store: Store
    probes = HealthPort(opts.health_listen) if opts.health_listen else None
    if probes is not None:
        await probes.start()  # alive while standing by for the Lease
    ui: tuple[UIContext, UIServer] | None = None
    try:
        if opts.kube_store is not None:
            elections: list[Any] = []
            if opts.ui is not None and opts.ui_listen:  # a standby's dashboard says who leads
                ctx = _ui_context(opts, lambda: _standby_leader(elections))
                ui = (ctx, await opts.ui(ctx))
            backend = await open_backend(opts.kube_store, stop, lost.set, on_election=elections.append)
            if backend is None:
                return 0  # stopped while standing by
            store = backend.store
        else:
            opts.data_dir.mkdir(parents=True, exist_ok=True)
            store = SQLiteStore(opts.data_dir / DB_FILE, watch_cache=WATCH_CACHE)
        return await _serve_with(opts, store, backend, credentials, stop, lost, probes, ui)
    finally:
        if ui is not None:
            await ui[1].stop()
        if probes is not None:
            await probes.stop()


def _ui_context(opts: ServeOptions, leader: Callable[[], str | None] = lambda: None) -> UIContext:
    return UIContext(opts.ui_listen, opts.ui_tokens or opts.data_dir / "ui-tokens", opts.tls_dir, opts.insecure,
                     None if opts.insecure else ADMIN_NAME, leader=leader)


def _standby_leader(elections: list[Any]) -> str | None:
    """Who holds the Lease, as this replica last saw it ("" not known yet); None once we lead."""
    if not elections:
        return ""  # still filling the caches
    election = elections[0]
    if election.leading.is_set():
        return None
    observed = election.elector.observed
    return str(observed.holder) if observed is not None else ""


async def _serve_with(
    opts: ServeOptions,
    store: Store,
    backend: KubeBackend | None,
    credentials: grpc.ServerCredentials | None,
    stop: asyncio.Event,
    lost: asyncio.Event,
    probes: HealthPort | None,
    early_ui: tuple[UIContext, UIServer] | None = None,
) -> int:
    loop = asyncio.get_running_loop()
    runtime: HubRuntime | None = None
    server: FederationServer | None = None
    control: ControlService | None = None
    poker: asyncio.Task[None] | None = None
    obs = ProcessObs("mkhub", _version(), record_events=True)
    if backend is not None:
        obs.observer.events_store = backend.records
    kube: KubeAPI | None = None
    hook: Webhook | None = None
    vis: VisibilityServer | None = None
    operators: EmbeddedOperators | None = None
    ui: UIServer | None = None
    try:
        tracing.configure_from_env("mkhub")
        ensure_namespace(store)
        # Bound to the runtime's engine before any agent can reach it (HubReconciler rebinds it to
        # every engine it builds); until then it authorizes nobody.
        mk = MultiKueueController(Engine(opts.config, time.time()), opts.config, auto_flush=False)
        server = FederationServer(
            mk,
            address=opts.listen,
            credentials=credentials,
            insecure=opts.insecure,
            authorize=_authorizer(mk),
            hub_version=_version(),
            heartbeat_interval=heartbeat_interval(opts.config.multikueue),
            worker_lost_timeout=opts.config.multikueue.worker_lost_timeout,
            fencing_margin=fencing_margin(opts.config.multikueue),
        )
        fed = server

        def on_rebuild() -> None:
            # The round that failed may have decided things no agent must act on.
            mk.forget_agents_view()
            loop.call_soon_threadsafe(_drop_streams, fed)

        mk.observer = obs.for_hub()
        runtime = HubRuntime(
            store, opts.config, clock=_reconciler_clock(), default_duration=opts.sim_duration, federation=mk, on_rebuild=on_rebuild,
            observer=obs.observer,
        )
        rt = runtime
        obs.collect_engine(lambda fn: rt.call(lambda rec: fn(rec.engine)).result(timeout=30))
        obs.collect_workers(
            lambda fn: rt.call(lambda rec: fn(rec.engine)).result(timeout=30), fed.connected_clusters, fed.last_heard
        )
        obs.serve_metrics(opts.metrics_listen)
        mk.silence = server.endpoint.silent_for  # connected but silent past workerLostTimeout: lost
        mk.notify = runtime.wake  # on the transport's thread: the next round applies the messages
        service = control = ControlService(
            store, runtime, admin_identity=None if opts.insecure else ADMIN_NAME, worker_link=lambda name: _link(fed, name),
            logs=LogRelay(server.endpoint),
        )
        server.add_servicer(lambda s: control_pb2_grpc.add_ControlServicer_to_server(service, s))  # type: ignore[no-untyped-call]
        await _set_health(server, health_pb2.HealthCheckResponse.NOT_SERVING)
        port = await server.start()
        await _set_health(server, health_pb2.HealthCheckResponse.NOT_SERVING)
        host = opts.listen.rsplit(":", 1)[0]
        where = (
            f"objects in the API server at {backend.transport.configuration.host}"
            if backend is not None
            else f"data in {opts.data_dir}"
        )
        log.info("mkhub hub listening on %s:%d (%s), %s", host, port, "insecure" if opts.insecure else "mTLS", where)

        if opts.kube_listen:
            from hub.kubeapi.visibility import DISCOVERY, VisibilityRoutes

            from .kubeserve import build_kube_api, start_kube_api

            kube = build_kube_api(
                store, insecure=opts.insecure, partial_admission=opts.config.gate("PartialAdmission"), version=_version()
            )
            kube.extra_routes.append(VisibilityRoutes(_pending_reader(runtime), kube.authorizer).register)
            if backend is None:  # no cluster, no webhooks: Kueue's marking of Deployments... done in-process
                kube.writer.mutating = ParentWebhooks(store, opts.config)
            kube.extra_groups = lambda: (DISCOVERY,)
            await start_kube_api(kube, opts.kube_listen, tls_dir=opts.tls_dir, insecure=opts.insecure)
        if opts.webhook_listen:
            from .webhook import start_webhook

            # Its lookups only read: the Kubernetes store's cache answers them without a deep copy.
            hook = await start_webhook(getattr(store, "get_shared", store.get), opts.webhook_listen,
                                       opts.webhook_tls_dir or opts.tls_dir, opts.config)
        if opts.visibility_listen:
            from .kubeserve import start_visibility

            vis = await start_visibility(_pending_reader(runtime), opts.visibility_listen,
                                         opts.webhook_tls_dir or opts.tls_dir, opts.visibility_client_ca)

        if opts.ui is not None and opts.ui_listen:
            ctx, started = early_ui if early_ui is not None else (_ui_context(opts), None)
            ctx.store, ctx.runtime, ctx.worker_link = store, runtime, lambda name: _link(fed, name)
            ctx.logs, ctx.metrics, ctx.dispatch, ctx.leader = control.logs, obs.metrics, obs.dispatch, lambda: None
            ui = started if started is not None else await opts.ui(ctx)
            ui.attach()
        runtime.start()
        if backend is None:  # no cluster: the embedded hub runs Deployments, StatefulSets, CronJobs, LWS itself
            operators = EmbeddedOperators(store, opts.config)
            operators.start()
        poker = asyncio.create_task(_poke_while_connected(runtime, server, heartbeat_interval(opts.config.multikueue)))
        failed: asyncio.Future[Any] = asyncio.wrap_future(runtime.done)
        ready: asyncio.Future[Any] = asyncio.ensure_future(_restored(runtime))
        stopping: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
        lost_lease: asyncio.Future[Any] = asyncio.ensure_future(lost.wait())
        await asyncio.wait({ready, failed, stopping, lost_lease}, return_when=asyncio.FIRST_COMPLETED)
        if ready.done() and not failed.done() and not lost_lease.done():
            await _set_health(server, health_pb2.HealthCheckResponse.SERVING)
            if probes is not None:
                await probes.set_ready(True)
            log.info("state restored; serving")
            health = asyncio.create_task(_follow_store_health(store, server, probes))
            await asyncio.wait({failed, stopping, lost_lease}, return_when=asyncio.FIRST_COMPLETED)
            health.cancel()
        if lost_lease.done():
            log.error("lost the leader Lease: stopping (writes are already refused)")
            return 1
        if failed.done():
            log.error("the reconciler stopped: %s", failed.exception())
            return 1
        log.info("shutting down")
        return 0
    finally:
        if probes is not None:
            await probes.set_ready(False)
        if poker is not None:
            poker.cancel()
        if kube is not None:
            from .kubeserve import stop_kube_api

            await stop_kube_api(kube)
        if hook is not None:
            await hook.stop()
        if ui is not None and early_ui is None:
            await ui.stop()
        if vis is not None:
            await vis.stop()
        if control is not None:
            control.close()
        if operators is not None:
            await asyncio.to_thread(operators.stop)
        if server is not None:
            await server.stop(opts.shutdown_grace)
        if runtime is not None:
            # Let the current round commit before the store closes.
            await asyncio.to_thread(runtime.stop)
        await asyncio.to_thread(obs.observer.close)  # the Events on their way out, before the store closes
        if backend is not None:
            backend.close()  # releases the Lease: a standby takes over at once
        else:
            store.close()
        obs.stop()
        log.info("store closed")


def _pending_reader(runtime: HubRuntime) -> Pending:
    """The visibility API's reads, on the reconciler's thread (hub.obs.visibility over its engine)."""

    async def pending(kind: str, namespace: str, name: str) -> list[visibility.PendingWorkload] | None:
        def read(rec: HubReconciler) -> list[visibility.PendingWorkload] | None:
            if kind == "clusterqueues":
                return visibility.cluster_queue_pending(rec.engine, name)
            return visibility.local_queue_pending(rec.engine, namespace, name)

        return await asyncio.wrap_future(runtime.call(read))

    return pending


def _version() -> str:
    with contextlib.suppress(metadata.PackageNotFoundError):
        return metadata.version("mkhub")
    return "dev"


def serve_main(opts: ServeOptions) -> int:
    tune_gc(freeze=False, collect=False)  # from the start: the initial lists and restore build long-lived state
    try:
        return asyncio.run(serve(opts))
    except (StoreError, OSError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
