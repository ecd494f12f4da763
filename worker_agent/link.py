"""The agent's link to the hub: one gRPC stream (grpc.aio), held and re-established.

:class:`HubLink` dials the hub, sends the Hello built by the handler, delivers
the hub's items to the handler in order, sends Heartbeats at the interval the
Welcome announces, and reconnects with exponential backoff and jitter
(tenacity) when the stream drops or the hub is unreachable. The session
layer (:class:`hub.federation.session.AgentEndpoint`) replays whatever the hub
did not acknowledge.

Handler callbacks run on the link's event loop and must not block.
:meth:`HubLink.send` may be called from any thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

import grpc
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    wait_exponential,
    wait_random_exponential,
)

from hub.federation.session import (
    AgentEndpoint,
    AgentHandler,
    AgentItemLike,
    AgentStream,
    ProtocolError,
    StaleStream,
)
from hub.federation.wakeup import Wakeup, call_soon_on
from mkhub.v1 import federation_pb2 as pb
from mkhub.v1 import federation_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class LinkDown(Exception):
    """One attempt to hold the stream ended; the link retries after a backoff."""


def channel_options(
    *,
    keepalive_time: float = 20.0,
    keepalive_timeout: float = 10.0,
    backoff_max: float = 10.0,
    server_name: str | None = None,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> list[tuple[str, Any]]:
    """Channel arguments of the agent. HTTP/2 keepalive pings detect a dead hub
    (or a dead NAT mapping) even while no data flows; the hub's server options
    allow pings down to 0.5 s."""
    options: list[tuple[str, Any]] = [
        ("grpc.keepalive_time_ms", int(keepalive_time * 1000)),
        ("grpc.keepalive_timeout_ms", int(keepalive_timeout * 1000)),
        ("grpc.keepalive_permit_without_calls", 1),
        # Keep pinging on a stream without data (the default stops after 2 pings).
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        # gRPC's own reconnect backoff must not outgrow ours (its default max is 120 s).
        ("grpc.initial_reconnect_backoff_ms", 200),
        ("grpc.min_reconnect_backoff_ms", 200),
        ("grpc.max_reconnect_backoff_ms", int(backoff_max * 1000)),
    ]
    if server_name:
        options.append(("grpc.ssl_target_name_override", server_name))
    return options


class HubLink:
    """Holds the agent's stream to the hub at ``target`` (``host:port``).

    ``credentials``: see :func:`hub.federation.tls.channel_credentials`; None
    requires ``insecure=True`` (plaintext, for loopback testing). A session that
    stayed up ``stable_after`` seconds resets the backoff.
    """

    def __init__(
        self,
        target: str,
        handler: AgentHandler,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        insecure: bool = False,
        server_name: str | None = None,
        keepalive_time: float = 20.0,
        keepalive_timeout: float = 10.0,
        backoff_initial: float = 0.2,
        backoff_max: float = 10.0,
        stable_after: float = 10.0,
        welcome_timeout: float = 10.0,
        ack_delay: float = 0.005,
        ack_every: int = 32,
        options: list[tuple[str, Any]] | None = None,
        session_id: str | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if credentials is None and not insecure:
            raise ValueError(
                "mutual TLS credentials are required (insecure=True is for loopback testing only)"
            )
        self.target = target
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.stable_after = stable_after
        self.welcome_timeout = welcome_timeout
        self.ack_delay = ack_delay
        self.ack_every = ack_every
        self._credentials = credentials
        self._options = (
            options
            if options is not None
            else channel_options(
                keepalive_time=keepalive_time,
                keepalive_timeout=keepalive_timeout,
                backoff_max=backoff_max,
                server_name=server_name,
            )
        )
        self._monotonic = monotonic
        self.endpoint = AgentEndpoint(
            handler, session_id=session_id, monotonic=monotonic, call_soon=self._call_soon
        )
        self.endpoint.on_outgoing = self._on_outgoing
        self.attempts = 0  # stream attempts so far
        self.last_error: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._channel: grpc.aio.Channel | None = None
        self._task: asyncio.Task[None] | None = None
        self._call: Any = None  # the live StreamStreamCall
        self._handle: AgentStream | None = None
        self._wake: Wakeup | None = None
        self._stopping = False
        self._welcomed_at: float | None = None
        self._connected = asyncio.Event()
        self._fresh_channel = False  # the last stream died silently: dial a new connection
        # (worker_lost_timeout, fencing margin) in seconds, from the latest Welcome.
        self.fencing_terms: tuple[float, float] | None = None
        self.dead_links = 0  # streams given up because the hub stopped answering heartbeats

    # --- public API
    @property
    def connected(self) -> bool:
        return self.endpoint.connected

    @property
    def session_id(self) -> str:
        return self.endpoint.session_id

    def send(self, items: Iterable[AgentItemLike]) -> None:
        """Queue Reserved/Status items for the hub (reliable, ordered; kept while disconnected). Any thread."""
        self.endpoint.send(items)

    async def start(self) -> None:
        """Start holding the link in a background task."""
        if self._task is not None:
            raise RuntimeError("already started")
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.create_task(self.run(), name=f"hub-link-{self.target}")

    async def wait_connected(self, timeout: float | None = None) -> pb.Welcome:
        """Wait until a stream is welcomed; returns the Welcome."""
        await asyncio.wait_for(self._connected.wait(), timeout)
        assert self.endpoint.welcome is not None
        return self.endpoint.welcome

    async def stop(self, timeout: float = 2.0) -> None:
        """Close the stream cleanly (the hub sees the agent leave) and stop reconnecting."""
        self._stopping = True
        if self._wake is not None:
            self._wake.data()
        if self._task is not None:
            # Connected: let the writer say goodbye. Otherwise (backoff, dialling) just cancel.
            done, _ = await asyncio.wait({self._task}, timeout=timeout if self.connected else 0)
            if not done:
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
            self._task = None
        if self._channel is not None:
            await self._channel.close()
            self._channel = None

    def drop_stream(self) -> bool:
        """Cancel the live stream as a broken connection would (the link reconnects). For tests."""
        if self._call is None:
            return False
        self._call.cancel()
        return True

    @property
    def heard_by_hub(self) -> float | None:
        """When (``monotonic``) the hub last proved it heard this agent (see AgentEndpoint)."""
        return self.endpoint.heard_by_hub

    def fence_after(self) -> float | None:
        """Seconds of not being heard by the hub after which the agent must stop its workloads:
        the hub's workerLostTimeout minus its safety margin (None: the hub announced no margin)."""
        if self.fencing_terms is None:
            return None
        timeout, margin = self.fencing_terms
        return max(0.0, timeout - margin)

    def link_deadline(self) -> float | None:
        """Seconds without a HeartbeatEcho after which the stream counts as dead (None: not checked)."""
        welcome = self.endpoint.welcome
        interval = self.endpoint.heartbeat_interval
        if welcome is None or not welcome.echoes_heartbeats or interval is None:
            return None
        return max(3 * interval, 1.0)

    def _open_channel(self) -> pb_grpc.FederationStub:
        if self._channel is None:
            if self._credentials is not None:
                self._channel = grpc.aio.secure_channel(self.target, self._credentials, options=self._options)
            else:
                self._channel = grpc.aio.insecure_channel(self.target, options=self._options)
        return pb_grpc.FederationStub(self._channel)  # type: ignore[no-untyped-call]

    async def run(self) -> None:
        """Hold the link until stop(); reconnect with exponential backoff and jitter."""
        self._loop = asyncio.get_running_loop()
        half_initial, half_max = self.backoff_initial / 2, self.backoff_max / 2
        while not self._stopping:
            # "Equal jitter": half the exponential delay fixed, half random, so a
            # fleet of agents does not reconnect in lockstep after a hub restart.
            retrying = AsyncRetrying(
                wait=wait_exponential(multiplier=half_initial, max=half_max)
                + wait_random_exponential(multiplier=half_initial, max=half_max),
                retry=retry_if_exception_type(LinkDown),
                before_sleep=self._before_sleep,
                reraise=True,
            )
            async for attempt in retrying:
                with attempt:
                    if self._fresh_channel and self._channel is not None:
                        # A silently dead connection would carry the next stream too.
                        self._fresh_channel = False
                        await self._channel.close()
                        self._channel = None
                    await self._hold(self._open_channel())

    # --- one stream
    def _before_sleep(self, state: RetryCallState) -> None:
        wait = state.next_action.sleep if state.next_action else 0.0
        log.warning("hub link to %s down (%s); retrying in %.2fs", self.target, self.last_error, wait)

    async def _hold(self, stub: pb_grpc.FederationStub) -> None:
        """One stream attempt. Returns when stopping or after a stable session
        (so that the backoff starts over); raises LinkDown otherwise."""
        if self._stopping:
            return
        self.attempts += 1
        handle = self.endpoint.open_stream()
        wake = Wakeup(ack_delay=self.ack_delay, ack_every=self.ack_every)
        self._handle, self._wake = handle, wake
        call = stub.Connect()
        self._call = call
        self._welcomed_at = None
        try:
            await self._converse(call, handle, wake)
        except LinkDown as err:
            self.last_error = str(err)
            if self._stopping:
                return
            welcomed_at = self._welcomed_at
            if welcomed_at is not None and self._monotonic() - welcomed_at >= self.stable_after:
                log.warning("hub link to %s dropped (%s); reconnecting", self.target, self.last_error)
                return
            raise
        finally:
            self._connected.clear()
            self.endpoint.close_stream(handle)
            self._call = None
            call.cancel()

    async def _converse(self, call: Any, handle: AgentStream, wake: Wakeup) -> None:
        """Hello, Welcome, then read/write/heartbeat until the stream ends.
        Every failure comes out as LinkDown; returns only when stopping."""
        endpoint = self.endpoint
        tasks: list[asyncio.Task[None]] = []
        try:
            for env in endpoint.take_outgoing(handle):  # the Hello
                await call.write(env)
            first = await asyncio.wait_for(call.read(), self.welcome_timeout)
            if first is grpc.aio.EOF:
                raise LinkDown("hub closed the stream before its Welcome")
            endpoint.receive(handle, first)
            self._welcomed_at = self._monotonic()
            welcome = endpoint.welcome
            assert welcome is not None
            if welcome.fencing_margin_ms > 0 and welcome.echoes_heartbeats:
                self.fencing_terms = (welcome.worker_lost_timeout_ms / 1000.0, welcome.fencing_margin_ms / 1000.0)
            else:
                self.fencing_terms = None
            log.info(
                "connected to hub %s (instance %s, %s)",
                self.target,
                welcome.hub_instance,
                "resumed" if welcome.resumed else "new session",
            )
            self._connected.set()
            reader = asyncio.create_task(self._reader(call, handle, wake))
            tasks = [
                reader,
                asyncio.create_task(self._writer(call, handle, wake)),
                asyncio.create_task(self._heartbeats()),
                asyncio.create_task(self._watchdog()),
            ]
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if self._stopping:
                # The writer said goodbye (done_writing); let the hub end the stream.
                await asyncio.wait({reader}, timeout=self.welcome_timeout)
                return
            for task in done:
                if task.cancelled():  # grpc.aio raises CancelledError from a cancelled call
                    raise LinkDown("stream cancelled")
                task.result()  # raises what ended the stream
            raise LinkDown("stream ended")
        except grpc.aio.AioRpcError as err:
            if self._stopping:
                return
            code = err.code()
            detail = f"{code.name}: {err.details()}"
            if code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED):
                log.error("hub %s refused this agent: %s", self.target, detail)
            raise LinkDown(detail) from None
        except (TimeoutError, ProtocolError, StaleStream, asyncio.InvalidStateError) as err:
            raise LinkDown(f"{type(err).__name__}: {err}") from None
        except LinkDown:
            raise
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # we are being cancelled
            raise LinkDown("stream cancelled") from None  # only the call was (drop_stream)
        except Exception as err:  # a handler bug: drop the stream; the envelope is replayed
            log.exception("agent handler failed")
            raise LinkDown(f"handler failed: {type(err).__name__}: {err}") from None
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _reader(self, call: Any, handle: AgentStream, wake: Wakeup) -> None:
        endpoint = self.endpoint
        while True:
            env = await call.read()
            if env is grpc.aio.EOF:
                raise LinkDown("hub closed the stream")
            endpoint.receive(handle, env)
            if endpoint.has_data(handle):
                wake.data()
            else:
                wake.ack(endpoint.ack_due(handle))

    async def _writer(self, call: Any, handle: AgentStream, wake: Wakeup) -> None:
        endpoint = self.endpoint
        while True:
            wake.clear()
            for env in endpoint.take_outgoing(handle):
                try:
                    await call.write(env)
                except (grpc.aio.AioRpcError, asyncio.InvalidStateError) as err:
                    # A write racing the end of the stream fails with a generic
                    # INTERNAL that hides the hub's status (grpc.aio overwrites it).
                    detail = (
                        f"{err.code().name}: {err.details()}"
                        if isinstance(err, grpc.aio.AioRpcError)
                        else str(err)
                    )
                    raise LinkDown(f"stream ended while writing ({detail})") from None
            if self._stopping:
                # A clean goodbye: the hub sees the request stream end.
                await call.done_writing()
                return
            if endpoint.has_data(handle):
                continue  # queued while we were writing
            wake.ack(endpoint.ack_due(handle))
            await wake.wait()

    async def _watchdog(self) -> None:
        """Give up a stream the hub stopped answering: a blackholed connection (TCP kept open)
        shows no error, and HTTP/2 keepalive may never fire on it."""
        deadline = self.link_deadline()
        if deadline is None:
            await asyncio.Event().wait()  # an older hub: it does not echo heartbeats
            return
        while True:
            await asyncio.sleep(deadline / 4)
            heard = self.endpoint.heard_by_hub
            silent = self._monotonic() - heard if heard is not None else 0.0
            if silent > deadline:
                self.dead_links += 1
                self._fresh_channel = True
                log.warning(
                    "hub link to %s is dead: no answer to heartbeats for %.1fs (deadline %.1fs); reconnecting",
                    self.target, silent, deadline,
                )
                raise LinkDown(f"no answer to heartbeats for {silent:.1f}s")

    async def _heartbeats(self) -> None:
        while True:
            interval = self.endpoint.heartbeat_interval
            if interval is None:
                await asyncio.Event().wait()  # the hub asked for none
            await asyncio.sleep(interval or 0)
            self.endpoint.heartbeat()

    # --- plumbing
    def _call_soon(self, fn: Callable[[], None]) -> None:
        call_soon_on(self._loop, fn)

    def _on_outgoing(self, handle: AgentStream) -> None:
        if self._wake is not None and handle == self._handle:
            self._wake.data()
