"""``mkhub serve --health-listen HOST:PORT``: the gRPC health service (grpc.health.v1) in
plaintext, for the kubelet's ``grpc:`` probes, which speak neither TLS nor client
certificates (the hub's own port is mutual TLS only).

Two services answer, so that one port serves both probes of a Deployment with a standby:

- ``liveness``: SERVING from the start of the process until it stops — a standby replica
  waiting for the leader Lease is alive and must not be restarted;
- ``""`` (the server's overall health, the probe's default): SERVING only while this
  replica serves (it holds the Lease and has restored its state), so the Services send
  agents, webhook calls and scrapes to the leader alone.
"""

from __future__ import annotations

import logging

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

log = logging.getLogger("mkhub.health")

LIVENESS = "liveness"


class HealthPort:
    def __init__(self, address: str) -> None:
        self.address = address
        self.servicer = health.aio.HealthServicer()
        self._server: grpc.aio.Server | None = None

    async def start(self) -> int:
        """Bind and serve (alive, not ready); returns the bound port."""
        server = grpc.aio.server()
        health_pb2_grpc.add_HealthServicer_to_server(self.servicer, server)
        port = server.add_insecure_port(self.address)
        if not port:
            raise OSError(f"--health-listen {self.address}: cannot bind")
        await server.start()
        self._server = server
        await self.servicer.set(LIVENESS, health_pb2.HealthCheckResponse.SERVING)
        await self.set_ready(False)
        log.info("gRPC health (plaintext, for probes) on %s (port %d)", self.address, port)
        return port

    async def set_ready(self, ready: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if ready else health_pb2.HealthCheckResponse.NOT_SERVING
        await self.servicer.set("", status)

    async def stop(self) -> None:
        if self._server is None:
            return
        await self.servicer.enter_graceful_shutdown()
        await self._server.stop(0.5)
        self._server = None
