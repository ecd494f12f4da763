"""The hub's gRPC server for the Federation service (grpc.aio).

Mutual TLS by default: a client certificate signed by the hub's CA is
required, its subject Common Name names the MultiKueueCluster the agent serves,
``authorize(cluster)`` must accept that name, and the stream's Hello must name
the same cluster. Everything else is refused (UNAUTHENTICATED,
PERMISSION_DENIED) and logged. ``insecure=True`` serves plaintext on a
loopback address only; then the Hello alone names the cluster.

One live stream per cluster: a newer stream for the same cluster replaces the
older one, which is closed with ABORTED.

The session logic (seq/ack/replay/dedup) is :class:`hub.federation.session.HubEndpoint`;
this module only moves its envelopes. Handler callbacks run on the server's
event loop and must not block. ``ClusterSender.send`` may be called from any
thread: sends from other threads are handed to the loop.

The same server carries gRPC health checking (grpc.health.v1: "" and
"mkhub.v1.Federation") and whatever else is registered with
:meth:`FederationServer.add_servicer` before :meth:`start` (e.g. the control
service of the CLI).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from mkhub.v1 import federation_pb2 as pb
from mkhub.v1 import federation_pb2_grpc as pb_grpc

from .refusals import RefusalLog
from .session import (
    ClusterSender,
    HubEndpoint,
    HubHandler,
    HubStream,
    ProtocolError,
    Rejected,
    StaleStream,
)
from .wakeup import Wakeup, call_soon_on

log = logging.getLogger(__name__)

SERVICE_NAME = "mkhub.v1.Federation"
# The largest message the server reads: a Hello listing every workload copy an agent holds.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# Every later agent envelope is a batch of Reserved/Status items (the agent packs at most
# 1 MiB per envelope); nothing else needs megabytes.
MAX_AGENT_ENVELOPE_BYTES = 4 * 1024 * 1024

_REJECT_CODES = {
    "unauthenticated": grpc.StatusCode.UNAUTHENTICATED,
    "permission_denied": grpc.StatusCode.PERMISSION_DENIED,
    "invalid_argument": grpc.StatusCode.INVALID_ARGUMENT,
}


def is_loopback_address(address: str) -> bool:
    """Whether a ``host:port`` binds only to the loopback interface."""
    host = address.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def server_options(
    *,
    keepalive_time: float = 30.0,
    keepalive_timeout: float = 10.0,
    min_agent_ping_interval: float = 0.5,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> list[tuple[str, Any]]:
    """Channel arguments of the hub's server.

    Agents ping (HTTP/2 keepalive) to detect a dead hub even while no data
    flows; gRPC's default server policy answers pings more frequent than every
    5 minutes on a connection without data with GOAWAY too_many_pings, so
    allow them down to ``min_agent_ping_interval``.
    """
    return [
        # The hub pings too, to notice agents whose connection silently died.
        ("grpc.keepalive_time_ms", int(keepalive_time * 1000)),
        ("grpc.keepalive_timeout_ms", int(keepalive_timeout * 1000)),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", int(min_agent_ping_interval * 1000)),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.max_receive_message_length", max_message_bytes),
        # Replies to the CLI (a List of every Job) have no fixed bound; the CLI receives any size.
        ("grpc.max_send_message_length", -1),
        # Fail loudly when the port is taken instead of sharing it.
        ("grpc.so_reuseport", 0),
    ]


def _cert_cluster(context: grpc.aio.ServicerContext) -> str | None:
    """The Common Name of the verified client certificate, if any."""
    auth = context.auth_context()
    names = auth.get("x509_common_name") or []
    if len(names) != 1:
        return None
    raw = names[0]
    return raw.decode() if isinstance(raw, bytes) else str(raw)


class _Stream:
    def __init__(self, handle: HubStream, peer: str, wake: Wakeup) -> None:
        self.handle = handle
        self.peer = peer
        self.wake = wake
        # Set when the stream must end: (status code, details); OK = clean.
        self.end: tuple[grpc.StatusCode, str] | None = None

    def finish(self, code: grpc.StatusCode, details: str) -> None:
        if self.end is None:
            self.end = (code, details)
        self.wake.data()


class FederationServer:
    """The hub's Federation gRPC server.

    Either pass ``credentials`` (see :func:`hub.federation.tls.server_credentials`:
    client certificate required) or ``insecure=True`` with a loopback
    ``address``. ``authorize(cluster_name)`` decides which clusters may
    connect. ``heartbeat_interval`` and ``worker_lost_timeout`` (seconds) are
    announced to agents in the Welcome; what a lost worker means is up to the
    handler, which can read :meth:`last_heard`.
    """

    def __init__(
        self,
        handler: HubHandler,
        *,
        address: str = "[::]:7443",
        credentials: grpc.ServerCredentials | None = None,
        insecure: bool = False,
        authorize: Callable[[str], bool] = lambda _cluster: True,
        hub_version: str = "",
        heartbeat_interval: float = 5.0,
        worker_lost_timeout: float = 30.0,
        fencing_margin: float = 0.0,
        hello_timeout: float = 10.0,
        ack_delay: float = 0.005,
        ack_every: int = 32,
        options: list[tuple[str, Any]] | None = None,
        instance_id: str | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if insecure:
            if credentials is not None:
                raise ValueError("pass either credentials or insecure=True, not both")
            if not is_loopback_address(address):
                raise ValueError(f"insecure mode binds to a loopback address only, not {address!r}")
        elif credentials is None:
            raise ValueError(
                "mutual TLS credentials are required (insecure=True is for loopback testing only)"
            )
        self.address = address
        self.insecure = insecure
        self.hello_timeout = hello_timeout
        self.ack_delay = ack_delay
        self.ack_every = ack_every
        self._credentials = credentials
        self._options = options if options is not None else server_options()
        self.endpoint = HubEndpoint(
            handler,
            authorize=authorize,
            hub_version=hub_version,
            heartbeat_interval_ms=int(heartbeat_interval * 1000),
            worker_lost_timeout_ms=int(worker_lost_timeout * 1000),
            fencing_margin_ms=int(fencing_margin * 1000),
            instance_id=instance_id,
            monotonic=monotonic,
            call_soon=self._call_soon,
        )
        self.endpoint.on_outgoing = self._on_outgoing
        self.health = health.aio.HealthServicer()
        self._extra: list[Callable[[grpc.aio.Server], None]] = []
        self._server: grpc.aio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._streams: dict[str, _Stream] = {}
        self.port: int | None = None
        self.refusals = RefusalLog(log)

    # --- setup
    def add_servicer(self, register: Callable[[grpc.aio.Server], None]) -> None:
        """Register another service on the same server, e.g.
        ``server.add_servicer(lambda s: add_ControlServicer_to_server(impl, s))``; before start()."""
        if self._server is not None:
            raise RuntimeError("add_servicer() must be called before start()")
        self._extra.append(register)

    async def start(self) -> int:
        """Bind and serve; returns the bound port (useful with port 0)."""
        self._loop = asyncio.get_running_loop()
        server = grpc.aio.server(options=self._options)
        pb_grpc.add_FederationServicer_to_server(_Servicer(self), server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        for register in self._extra:
            register(server)
        port: int
        if self.insecure:
            port = server.add_insecure_port(self.address)
        else:
            assert self._credentials is not None
            port = server.add_secure_port(self.address, self._credentials)
        if not port:
            raise RuntimeError(f"cannot bind {self.address}")
        await server.start()
        await self.health.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
        self._server = server
        self.port = port
        log.info(
            "federation server listening on %s (port %d, %s)",
            self.address,
            port,
            "insecure" if self.insecure else "mTLS",
        )
        return port

    async def stop(self, grace: float | None = 1.0) -> None:
        """Report NOT_SERVING, end every stream and stop (each agent is reported disconnected)."""
        if self._server is None:
            return
        await self.health.enter_graceful_shutdown()
        for stream in list(self._streams.values()):
            stream.finish(grpc.StatusCode.UNAVAILABLE, "hub shutting down")
        await self._server.stop(grace)
        self._server = None

    async def wait_for_termination(self) -> None:
        if self._server is not None:
            await self._server.wait_for_termination()

    # --- queries and controls for the MultiKueue logic
    def last_heard(self, cluster_name: str) -> float | None:
        """The ``monotonic`` time anything was last received from the cluster."""
        return self.endpoint.last_heard(cluster_name)

    def connected_clusters(self) -> list[str]:
        return self.endpoint.connected_clusters()

    def sender(self, cluster_name: str) -> ClusterSender:
        return self.endpoint.sender(cluster_name)

    def drop_stream(self, cluster_name: str, details: str = "closed by the hub") -> bool:
        """End the cluster's live stream with UNAVAILABLE (the agent reconnects). Loop thread only."""
        stream = self._streams.get(cluster_name)
        if stream is None:
            return False
        stream.finish(grpc.StatusCode.UNAVAILABLE, details)
        return True

    # --- plumbing
    def _call_soon(self, fn: Callable[[], None]) -> None:
        call_soon_on(self._loop, fn)

    def _on_outgoing(self, handle: HubStream) -> None:
        stream = self._streams.get(handle.cluster_name)
        if stream is not None and stream.handle == handle:
            stream.wake.data()

    async def _refuse(
        self, context: grpc.aio.ServicerContext, code: grpc.StatusCode, details: str, identity: str | None = None
    ) -> None:
        if identity is None and not self.insecure:
            identity = _cert_cluster(context)
        self.refusals.refused(identity or "", context.peer(), "agent stream", f"{code.name}: {details}")
        await context.abort(code, details)

    async def _serve(
        self, requests: AsyncIterator[pb.AgentMessage], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.HubMessage]:
        endpoint = self.endpoint
        cert_cluster: str | None = None
        if not self.insecure:
            # Refuse before reading: TLS already verified the chain (client certificate
            # required) and its subject Common Name is the cluster, so an unknown identity
            # never gets to make the hub read (and hold) a Hello of up to 64 MiB. Such an
            # agent may see a generic status if it is still writing; the hub logs why.
            # open_stream() checks the Hello against the certificate.
            cert_cluster = _cert_cluster(context)
            if cert_cluster is None:
                await self._refuse(
                    context,
                    grpc.StatusCode.UNAUTHENTICATED,
                    "a client certificate naming the cluster is required",
                    identity="",
                )
                return
            if not endpoint.authorize(cert_cluster):
                await self._refuse(
                    context, grpc.StatusCode.PERMISSION_DENIED, f"cluster {cert_cluster!r} is not allowed to connect"
                )
                return
        try:
            first = await asyncio.wait_for(anext(requests), self.hello_timeout)
        except StopAsyncIteration:
            return
        except TimeoutError:
            await self._refuse(
                context, grpc.StatusCode.DEADLINE_EXCEEDED, f"no Hello within {self.hello_timeout}s"
            )
            return
        try:
            handle = endpoint.open_stream(first, cert_cluster=cert_cluster)
        except Rejected as err:
            await self._refuse(context, _REJECT_CODES[err.code], err.message)
            return
        except Exception as err:  # on_agent_connected failed: the agent retries later
            log.exception("accepting a stream from %s failed", context.peer())
            await context.abort(grpc.StatusCode.INTERNAL, f"hub handler failed: {type(err).__name__}")
            return

        name = handle.cluster_name
        stream = _Stream(handle, context.peer(), Wakeup(ack_delay=self.ack_delay, ack_every=self.ack_every))
        old = self._streams.get(name)
        if old is not None:
            old.finish(grpc.StatusCode.ABORTED, "replaced by a newer stream of the same cluster")
        self._streams[name] = stream
        reader = asyncio.create_task(self._read(stream, requests), name=f"federation-read-{name}")
        try:
            while True:
                stream.wake.clear()
                for env in endpoint.take_outgoing(handle):
                    yield env
                if stream.end is not None:
                    break
                if endpoint.has_data(handle):
                    continue  # queued while we were writing
                stream.wake.ack(endpoint.ack_due(handle))
                await stream.wake.wait()
        finally:
            reader.cancel()
            if self._streams.get(name) is stream:
                del self._streams[name]
            endpoint.close_stream(handle)
        code, details = stream.end
        if code != grpc.StatusCode.OK:
            log.info("cluster %s: stream from %s ended: %s: %s", name, stream.peer, code.name, details)
            await context.abort(code, details)

    async def _read(self, stream: _Stream, requests: AsyncIterator[pb.AgentMessage]) -> None:
        endpoint = self.endpoint
        handle = stream.handle
        try:
            async for env in requests:
                size = env.ByteSize()
                if size > MAX_AGENT_ENVELOPE_BYTES:
                    raise ProtocolError(f"an envelope of {size} bytes; at most {MAX_AGENT_ENVELOPE_BYTES} after the Hello")
                endpoint.receive(handle, env)
                if endpoint.has_data(handle):
                    stream.wake.data()
                else:
                    stream.wake.ack(endpoint.ack_due(handle))
            stream.finish(grpc.StatusCode.OK, "agent closed the stream")
        except StaleStream:
            stream.finish(grpc.StatusCode.ABORTED, "replaced by a newer stream of the same cluster")
        except ProtocolError as err:
            log.warning("cluster %s: protocol error from %s: %s", handle.cluster_name, stream.peer, err)
            stream.finish(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        except asyncio.CancelledError:
            raise
        except Exception as err:  # a handler bug: drop the stream, the envelope is replayed
            log.exception("cluster %s: handler failed", handle.cluster_name)
            stream.finish(grpc.StatusCode.INTERNAL, f"hub handler failed: {type(err).__name__}")


class _Servicer(pb_grpc.FederationServicer):
    def __init__(self, server: FederationServer) -> None:
        # grpc.aio recognises a streaming handler by being an async generator
        # function; a bound method of one is, and saves a generator hop per message.
        self.Connect = server._serve  # type: ignore[method-assign]
