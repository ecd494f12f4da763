"""The manager Job's status as a mirror of the winning worker's Job (Kueue's MultiKueue Job adapter).

A Job created with ``spec.managedBy: kueue.x-k8s.io/multikueue`` is never run by the
manager's Job controller: its pods run in the worker that won its Workload, and
Kueue copies that worker Job's ``status`` into the manager's Job. An agent running
copies as Jobs in a Kubernetes cluster (``mkagent --kubeconfig``) reports the worker
Job's status with every change (``Status.job_status_json``, with ``Status.job``); the
hub keeps the winner's last report per Workload here, and its reconciler writes it to
the manager's Job (:mod:`hub.controllers.hub`). Reports of a copy that did not win are
ignored. Agents that do not send the field (older ones, embedded mode) leave the hub
to derive the Job's status from its Workload, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from hub.api import fastjson

log = logging.getLogger(__name__)


class StatusReport(Protocol):
    """What is read of a federation ``Status`` (pb.Status)."""

    workload_uid: str
    dispatch_id: str


def job_status_of(msg: StatusReport) -> dict[str, Any] | None:
    """The worker Job's status an agent's Status carries, or None (older agents: no such field)."""
    raw = getattr(msg, "job_status_json", "")
    if not raw:
        return None
    try:
        status = fastjson.loads(raw)
    except ValueError:
        log.warning("ignoring a worker Job status that is no JSON object: %.200s", raw)
        return None
    if not isinstance(status, dict):
        return None
    return status  # the kind's adapter picks the fields it mirrors (hub.controllers.job_status)


class JobMirror:
    """Last reported worker Job status of each dispatched Workload (by its key)."""

    def __init__(self) -> None:
        self.statuses: dict[str, dict[str, Any]] = {}
        self._dirty: set[str] = set()
        # Whether a Workload's status will come from its worker (the federation says): until its
        # first report the hub writes none of its own, as Kueue writes the manager's Job status
        # only by copying the worker's (SyncJob).
        self.expected: Callable[[str], bool] = lambda key: False

    def record(self, key: str, msg: StatusReport) -> bool:
        """The winner's report about Workload ``key``; True when the mirrored status changed."""
        status = job_status_of(msg)
        if status is None or self.statuses.get(key) == status:
            return False
        self.statuses[key] = status
        self._dirty.add(key)
        return True

    def forget(self, key: str) -> None:
        self.statuses.pop(key, None)
        self._dirty.discard(key)

    def drain(self) -> set[str]:
        """Workload keys whose mirrored status changed since the last call."""
        out, self._dirty = self._dirty, set()
        return out
