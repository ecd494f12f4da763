"""``mkhub logs``: pod logs of a worker's Job, relayed over its agent's stream.

The hub asks the agent with a ``LogsRequest`` control item and the agent
answers with ``LogChunk`` items (proto/mkhub/v1/federation.proto); nothing
about logs is numbered or replayed. :class:`LogRelay` runs on the federation
server's event loop (where the Control service runs too): it hands each chunk
to the one request waiting for it, and cancels a request whose reader went away.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

from mkhub.v1 import federation_pb2 as pb

from .session import HubEndpoint


class LogRelay:
    def __init__(self, endpoint: HubEndpoint) -> None:
        self.endpoint = endpoint
        self._waiting: dict[str, asyncio.Queue[pb.LogChunk | None]] = {}
        self._cluster_of: dict[str, str] = {}
        endpoint.on_log_chunk = self._on_chunk

    def serves(self, cluster: str) -> bool:
        """The cluster's agent is connected and answers LogsRequest items."""
        hello = self.endpoint.hello(cluster)
        return self.endpoint.is_connected(cluster) and hello is not None and hello.serves_logs

    def serving_clusters(self) -> list[str]:
        return [c for c in self.endpoint.connected_clusters() if self.serves(c)]

    def _on_chunk(self, cluster: str, chunk: pb.LogChunk) -> None:
        queue = self._waiting.get(chunk.request_id)
        if queue is not None and self._cluster_of.get(chunk.request_id) == cluster:
            queue.put_nowait(chunk)

    def on_disconnected(self, cluster: str) -> None:
        for rid, name in list(self._cluster_of.items()):
            if name == cluster and rid in self._waiting:
                self._waiting[rid].put_nowait(None)

    async def stream(
        self, cluster: str, namespace: str, job_name: str, *, container: str = "", follow: bool = False,
        tail_lines: int | None = None, poll: float = 1.0,
    ) -> AsyncIterator[pb.LogChunk]:
        """The chunks of one request to ``cluster``, the last one ``done``. Raises ConnectionError when
        the agent is (or goes) away before it answered."""
        rid = uuid.uuid4().hex
        req = pb.LogsRequest(request_id=rid, namespace=namespace, job_name=job_name, container=container, follow=follow)
        if tail_lines is not None:
            req.tail_lines = tail_lines
        queue: asyncio.Queue[pb.LogChunk | None] = asyncio.Queue()
        self._waiting[rid] = queue
        self._cluster_of[rid] = cluster
        done = False
        try:
            if not self.endpoint.send_control(cluster, [pb.HubItem(logs_request=req)]):
                raise ConnectionError(f"the agent of {cluster} is not connected")
            while True:
                try:
                    chunk = await asyncio.wait_for(queue.get(), poll)
                except TimeoutError:
                    if not self.endpoint.is_connected(cluster):
                        raise ConnectionError(f"the agent of {cluster} went away") from None
                    continue
                if chunk is None:
                    raise ConnectionError(f"the agent of {cluster} went away")
                done = chunk.done
                yield chunk
                if done:
                    return
        finally:
            self._waiting.pop(rid, None)
            self._cluster_of.pop(rid, None)
            if not done:
                self.endpoint.send_control(cluster, [pb.HubItem(logs_cancel=pb.LogsCancel(request_id=rid))])
