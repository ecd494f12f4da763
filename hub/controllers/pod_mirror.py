"""The manager's Pods as mirrors of the winning worker's Pods (Kueue's MultiKueue pod adapter).

A Pod (or pod group) Workload dispatched through MultiKueue runs in the worker that won it;
the manager's Pods stay gated and get the worker Pods' status. An agent running copies in a
Kubernetes cluster reports them in ``Status.job_status_json`` as ``{"pods": {"<name>":
<PodStatus>}}`` (:mod:`hub.federation.jobmirror` keeps the winner's last report); the hub's
round writes them to the manager's Pods (:func:`hub.controllers.pods.write_pods`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from hub.api.jobkinds.pod import POD

Status = dict[str, Any]

# What a gated manager Pod shows until its worker Pod is scheduled (Kueue keeps the local
# condition so that the manager's autoscaler does not take it for an unschedulable Pod).
_GATED = {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}


def worker_pod_statuses(mirrored: Mapping[str, Any] | None) -> dict[str, Status]:
    """The worker Pods' statuses by Pod name, from a winner's report (empty: none reported)."""
    pods = (mirrored or {}).get("pods")
    if not isinstance(pods, dict):
        return {}
    return {str(name): status for name, status in pods.items() if isinstance(status, dict)}


def _scheduled(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "PodScheduled":
            return cond
    return None


def manager_pod_status(previous: Mapping[str, Any] | None, remote: Mapping[str, Any]) -> Status:
    """The gated manager Pod's status: the worker Pod's, but the local PodScheduled condition
    kept while the worker Pod is not scheduled yet (as Kueue's ``syncLocalPodWithRemote``)."""
    status: Status = {k: copy.deepcopy(remote[k]) for k in POD.mirrored_status_fields if k in remote}
    remote_scheduled = _scheduled(remote)
    if remote_scheduled is not None and remote_scheduled.get("status") == "True":
        return status
    local = dict(_scheduled(previous or {}) or _GATED)
    conditions = [c for c in status.get("conditions") or [] if not (isinstance(c, dict) and c.get("type") == "PodScheduled")]
    status["conditions"] = [local, *conditions]
    return status
