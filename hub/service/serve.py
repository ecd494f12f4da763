"""``mkhub serve``: the hub as a process.

One gRPC port carries the Federation service (agents), the Control service
(the mkhub CLI) and gRPC health checking. Health reports NOT_SERVING until the
store is open and the engine restored from it, then SERVING. SIGTERM or SIGINT:
stop taking requests, let the reconciler finish and commit its round, close
the store, exit 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml
from grpc_health.v1 import health_pb2

from hub.api.config import Configuration, parse_configuration
from hub.api.errors import ValidationError
from hub.controllers.hub_runtime import HubRuntime
from hub.federation.server import SERVICE_NAME as FEDERATION_SERVICE
from hub.federation.server import FederationServer
from hub.federation.session import AgentSender
from hub.store.interface import Store, StoreError
from hub.store.sqlite import SQLiteStore
from mkhub.v1 import control_pb2_grpc
from mkhub.v1 import federation_pb2 as fed_pb

from . import views
from .apply import ensure_namespace
from .certs import ADMIN_NAME, hub_server_credentials
from .control import SERVICE_NAME as CONTROL_SERVICE
from .control import ControlService

log = logging.getLogger("mkhub.serve")

DB_FILE = "hub.db"
DEFAULT_LISTEN = "[::]:7443"
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


class StandaloneAgents:
    """The federation handler of a hub without MultiKueue dispatch (standalone mode).

    Agents of known MultiKueueClusters may connect and are shown by ``mkhub top``;
    they are sent no work, so any work report from them is logged and dropped.
    """

    def __init__(self) -> None:
        self.hellos: dict[str, fed_pb.Hello] = {}

    def on_agent_connected(self, cluster_name: str, hello: fed_pb.Hello, sender: AgentSender) -> None:
        self.hellos[cluster_name] = hello
        log.info("agent %s connected (version %s)", cluster_name, hello.agent_version or "?")

    def on_agent_items(self, cluster_name: str, items: Sequence[fed_pb.AgentItem]) -> None:
        log.warning("agent %s sent %d work items, but this hub dispatches nothing: dropped", cluster_name, len(items))

    def on_agent_disconnected(self, cluster_name: str) -> None:
        log.info("agent %s disconnected", cluster_name)


def load_config(path: Path | None) -> Configuration:
    """A Kueue Configuration file (YAML); raises ValueError with a one-line reason."""
    if path is None:
        return Configuration()
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"cannot read config {path}: {exc}") from None
    if data is not None and not isinstance(data, dict):
        raise ValueError(f"config {path}: a Kueue Configuration must be a mapping")
    try:
        return parse_configuration(data)
    except ValidationError as exc:
        raise ValueError(f"config {path}: {exc}") from None


def _link(server: FederationServer, name: str) -> views.WorkerLink:
    heard = server.last_heard(name)
    return views.WorkerLink(name in server.connected_clusters(), None if heard is None else time.monotonic() - heard)


def _authorizer(store: Store) -> Callable[[str], bool]:
    def authorize(cluster: str) -> bool:
        # Only MultiKueueClusters someone declared; never the CLI's identity.
        return cluster != ADMIN_NAME and store.get("MultiKueueCluster", "", cluster) is not None

    return authorize


async def _restored(runtime: HubRuntime) -> None:
    """Wait for the engine to be restored, without leaving a thread blocked if it never is."""
    while not await asyncio.to_thread(runtime.ready.wait, 0.2):
        if runtime.done.done():
            return


async def _set_health(server: FederationServer, status: int) -> None:
    for service in ("", FEDERATION_SERVICE, CONTROL_SERVICE):
        await server.health.set(service, status)


async def serve(opts: ServeOptions) -> int:
    """Run the hub until SIGTERM/SIGINT. Returns the process exit code."""
    credentials = None if opts.insecure else hub_server_credentials(opts.tls_dir or Path("."))
    opts.data_dir.mkdir(parents=True, exist_ok=True)
    store = SQLiteStore(opts.data_dir / DB_FILE)
    runtime: HubRuntime | None = None
    server: FederationServer | None = None
    control: ControlService | None = None
    try:
        ensure_namespace(store)
        runtime = HubRuntime(store, opts.config, default_duration=opts.sim_duration)
        server = FederationServer(
            StandaloneAgents(),
            address=opts.listen,
            credentials=credentials,
            insecure=opts.insecure,
            authorize=_authorizer(store),
            hub_version=_version(),
            worker_lost_timeout=opts.config.multikueue.worker_lost_timeout,
        )
        fed = server
        service = control = ControlService(
            store, runtime, admin_identity=None if opts.insecure else ADMIN_NAME, worker_link=lambda name: _link(fed, name)
        )
        server.add_servicer(lambda s: control_pb2_grpc.add_ControlServicer_to_server(service, s))  # type: ignore[no-untyped-call]
        await _set_health(server, health_pb2.HealthCheckResponse.NOT_SERVING)
        port = await server.start()
        await _set_health(server, health_pb2.HealthCheckResponse.NOT_SERVING)
        host = opts.listen.rsplit(":", 1)[0]
        log.info("mkhub hub listening on %s:%d (%s), data in %s", host, port, "insecure" if opts.insecure else "mTLS", opts.data_dir)

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        runtime.start()
        failed: asyncio.Future[Any] = asyncio.wrap_future(runtime.done)
        ready: asyncio.Future[Any] = asyncio.ensure_future(_restored(runtime))
        stopping: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
        await asyncio.wait({ready, failed, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if ready.done() and not failed.done():
            await _set_health(server, health_pb2.HealthCheckResponse.SERVING)
            log.info("state restored; serving")
            await asyncio.wait({failed, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if failed.done():
            log.error("the reconciler stopped: %s", failed.exception())
            return 1
        log.info("shutting down")
        return 0
    finally:
        if control is not None:
            control.close()
        if server is not None:
            await server.stop(opts.shutdown_grace)
        if runtime is not None:
            # Let the current round commit before the store closes.
            await asyncio.to_thread(runtime.stop)
        store.close()
        log.info("store closed")


def _version() -> str:
    with contextlib.suppress(metadata.PackageNotFoundError):
        return metadata.version("mkhub")
    return "dev"


def serve_main(opts: ServeOptions) -> int:
    try:
        return asyncio.run(serve(opts))
    except (StoreError, FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
