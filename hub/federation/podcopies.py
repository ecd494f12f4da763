"""A dispatched pod group's Pods made after its dispatch reach the copies (Kueue's pod MultiKueue
adapter creates every local Pod of the group in the worker on each sync).

A StatefulSet's Pods are made one at a time (``OrderedReady``): the next ordinal only once the last
is Ready, which in the manager means once the winning worker's Pod runs and its status is mirrored.
So its group is dispatched with its first Pod, and each later Pod joins the dispatched Workload:
the dispatch is sent again, same dispatch id, with every Pod of the group, to each cluster holding a
copy; the agent adds the new Pods to its copy and creates them if it runs
(:meth:`worker_agent.agent.Agent._dispatch`).
"""

from __future__ import annotations

from collections.abc import Mapping

from hub.api.workload import Workload
from hub.controllers.pods import PodIntegration
from mkhub.v1 import federation_pb2 as pb

from .mkrecords import Dispatch, Worker
from .mkwire import make_dispatch


def grown_copies(pods: PodIntegration | None, dispatches: Mapping[str, Dispatch], workers: Mapping[str, Worker],
                 workloads: Mapping[str, Workload]) -> list[tuple[Worker, pb.Dispatch]]:
    """The dispatches to send again, and to whom, for the groups that gained Pods since the last call."""
    out: list[tuple[Worker, pb.Dispatch]] = []
    if pods is None:
        return out
    for key in sorted(pods.drain_grown()):
        d, wl = dispatches.get(key), workloads.get(key)
        held = [w for w in workers.values() if d is not None and w.held.get(key) == d.did]
        holders = [w for w in held if w.connected]
        if len(holders) < len(held):
            pods.grown.add(key)  # again once the others are back: their copies need the Pods too
        if d is None or wl is None or not holders:
            continue  # not sent yet: the first send carries every Pod
        message = make_dispatch(wl, d.did, None, pods.member_pods(key))
        if d.message is not None:  # not yet elected: the next copies get them too
            message.trace_context.update(d.message.trace_context)
            d.message = message
        message.workload_uid = message.workload_uid or d.uid
        out += [(w, message) for w in holders]
    return out
