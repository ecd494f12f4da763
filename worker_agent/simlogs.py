"""Log lines of the embedded agent's simulated runs, for ``mkhub logs`` (``LogsRequest``).

An agent in embedded mode (``--objects``) runs no pods, so there is nothing to
read; it answers with the lines its simulated runner can vouch for: when the
run started, for how long it runs, and how it ended. One "pod" per copy, named
after the Job (``NAME-sim``), container ``main``. ``follow`` and ``tailLines``
apply to those lines; the answer never waits (the lines so far, then done).
"""

from __future__ import annotations

from collections.abc import Callable

from hub.api.meta import format_time
from hub.api.workload import FINISHED
from mkhub.v1 import federation_pb2 as pb

from .agent import Agent

DEFAULT_CONTAINER = "main"


class SimLogs:
    def __init__(self, agent: Agent, send: Callable[[list[pb.AgentItem]], None], default_duration: float) -> None:
        self.agent = agent
        self.send = send
        self.default_duration = default_duration

    def on_item(self, item: pb.HubItem) -> None:
        if item.WhichOneof("kind") != "logs_request":
            return  # nothing streams, so there is nothing to cancel
        req = item.logs_request
        name = req.job_name or req.workload_name
        c = self.agent.copy_named(f"{req.namespace}/{name}")
        chunks: list[pb.AgentItem] = []
        error = ""
        if c is None or not c.started or c.started_at is None:
            error = f'job "{name}" in namespace "{req.namespace}" does not run on this cluster'
        elif req.container and req.container != DEFAULT_CONTAINER:
            error = f"container {req.container} is not valid for pod {name}-sim"
        else:
            wl = self.agent.engine.workloads.get(c.key)
            duration = (self.agent.duration_of(wl) if wl is not None else None) or self.default_duration
            lines = [f"{format_time(c.started_at)} simulated run of {duration:g}s started on {self.agent.cluster_name} "
                     "(mkagent embedded mode: no real pods)"]
            cond = wl.status.condition(FINISHED) if wl is not None else None
            if cond is not None:
                lines.append(f"{format_time(cond.last_transition_time)} finished: {cond.reason or 'Succeeded'}")
            if req.HasField("tail_lines"):
                lines = lines[-req.tail_lines:] if req.tail_lines else []
            chunks.append(pb.AgentItem(log_chunk=pb.LogChunk(
                request_id=req.request_id, pod=f"{name}-sim", container=DEFAULT_CONTAINER, lines=lines)))
        chunks.append(pb.AgentItem(log_chunk=pb.LogChunk(request_id=req.request_id, done=True, error=error)))
        self.send(chunks)
