"""Topology-aware scheduling in a worker, as the worker's Kueue does it under MultiKueue.

A copy the local engine admitted with a ``topologyAssignment`` is created with its pod templates
gated and marked (:func:`worker_agent.kube.jobs.worker_job`); its kind's controller then makes
gated pods. Here the worker's Pods feed :class:`hub.controllers.tas_pods.TasPods` (the copy's
gated pods, and the usage of the pods TAS did not place, taken off their Nodes), and each round the
due pods are ungated with their domains' nodeSelectors on the writer threads, never on the loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from hub.api.errors import ValidationError
from hub.api.jobkinds.pod import read_pod
from hub.controllers.cluster import ClusterController
from hub.controllers.tas_pods import due_ungates, ungate_pod
from hub.store.interface import EventType, ObjectKey, Store, WatchEvent

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PodUngate:
    """The writer's desired state of a gated Pod: ungated into this domain."""

    selector: dict[str, str]


class WorkerTas:
    """``desire(ref, state)`` queues a write on the writer threads (``Pod:ns/name``)."""

    def __init__(self, controller: ClusterController, desire: Callable[[str, object], None]) -> None:
        self.controller = controller
        self.desire = desire
        self._refused: set[tuple[str, str]] = set()  # Pods that did not parse, logged once

    def on_pod(self, event: WatchEvent, now: float) -> bool:
        """A Pod event of the worker (loop thread). True if the engine's inventory changed."""
        tas = self.controller.pods.tas
        meta = event.object.get("metadata") or {}
        ident = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        if event.type == EventType.DELETED:
            node = tas.delete_pod(ObjectKey("Pod", *ident))
        else:
            try:
                pod = read_pod(event.object)
            except ValidationError as exc:
                if ident not in self._refused:
                    self._refused.add(ident)
                    log.warning("ignoring a worker Pod for TAS: %s", exc)
                return False
            node = tas.apply_pod(pod)
        if node is None:
            return False
        self.controller.engine.apply(node, now)
        return True

    def flush(self) -> int:
        """Queue the ungating of the pods found due (loop thread); returns how many."""
        due = due_ungates(self.controller.pods.tas)
        for key, selector in due:
            self.desire(f"Pod:{key.namespace}/{key.name}", PodUngate(selector))
        return len(due)


def apply_ungate(store: Store, pod_key: str, state: PodUngate) -> None:
    """Writer thread: ungate one Pod (``ns/name``); its echo comes back through the watch."""
    namespace, _, name = pod_key.partition("/")
    ungate_pod(store, ObjectKey("Pod", namespace, name), state.selector)
