"""Kueue's LeaderWorkerSet reconciler in the hub: each group's Workload made from the set.

Kueue creates a group's Workload from the LeaderWorkerSet, not from its Pods, so a group is queued
(and admitted) before its Pods exist: with ``startupPolicy: LeaderReady`` the LWS controller
creates a group's workers only once its leader runs, which needs the leader admitted first.
mkhub does so for LeaderReady sets only, where composing the group from its Pods cannot work; other
sets' groups are still composed once their Pods exist (:mod:`hub.controllers.pods`), because
MultiKueue here dispatches a group's Pods, which a Workload made ahead of them would go without. The
Pods then join their group's Workload by name (:mod:`hub.controllers.pods`), as a prebuilt
Workload's do; a set's group Workloads stay while their Pods come and go (a group re-created), and
go when the set scales below their group or is deleted: at once when no Pod of theirs is left,
else with their last Pod. Pure bookkeeping over the engine, beside :class:`.pods.PodIntegration`;
the Workloads to delete from the store are drained by the hub's round (:meth:`LwsIntegration.drain_deleted`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from hub.api.jobkinds.leaderworkerset import FRAMEWORK, group_workloads, marked
from hub.api.jobkinds.management import framework_enabled
from hub.api.lws_kind import LeaderWorkerSet
from hub.api.others import QUEUE_NAME_LABEL
from hub.api.workload import Workload
from hub.engine.engine import Engine
from hub.store.interface import ObjectKey

from .pods import PodIntegration

log = logging.getLogger(__name__)

KIND = "LeaderWorkerSet"
LEADER_READY = "LeaderReady"


@dataclass(slots=True)
class LwsIntegration:
    engine: Engine
    pods: PodIntegration
    groups: dict[ObjectKey, set[str]] = field(default_factory=dict)  # set -> its group Workload keys
    deleted: set[str] = field(default_factory=set)  # group Workloads to delete from the store
    refused: set[ObjectKey] = field(default_factory=set)  # sets warned about (LeaderReady through MultiKueue)

    @property
    def enabled(self) -> bool:
        return framework_enabled(self.engine.config, FRAMEWORK)

    def apply(self, lws: LeaderWorkerSet, now: float) -> list[Workload]:
        """Record a set; returns the group Workloads to create (those the engine does not hold yet)."""
        key = ObjectKey(KIND, lws.meta.namespace, lws.meta.name)
        if not self.enabled or not marked(lws) or lws.startup_policy != LEADER_READY or lws.meta.deletion_timestamp is not None:
            self.delete(key, now)
            return []
        if self._through_multikueue(lws):
            if key not in self.refused:
                self.refused.add(key)
                log.warning("LeaderWorkerSet %s/%s: startupPolicy LeaderReady through MultiKueue is not supported "
                            "yet (Kueue creates the set in the worker); its groups wait for all their Pods",
                            lws.meta.namespace, lws.meta.name)
            self.delete(key, now)
            return []
        wanted = group_workloads(lws, now)
        keys = {wl.meta.key for wl in wanted}
        for gone in self.groups.get(key, set()) - keys:
            self._release(gone, now)
        self.groups[key] = keys
        self.pods.kept |= keys
        out = []
        for wl in wanted:
            if wl.meta.key not in self.engine.workloads:
                self.pods.adopt_waiting(wl.meta.key)
                out.append(wl)
        return out

    def _through_multikueue(self, lws: LeaderWorkerSet) -> bool:
        """The set's queue dispatches to worker clusters: MultiKueue here sends a group's Pods, and a
        Workload made ahead of them would go without any."""
        lq = self.engine.local_queues.get(f"{lws.meta.namespace}/{lws.meta.labels.get(QUEUE_NAME_LABEL, '')}")
        cq = self.engine.cqs.get(lq.cluster_queue) if lq is not None else None
        if cq is None:
            return False
        checks = self.engine.admission_checks
        return any((check := checks.get(rule.name)) is not None and check.is_multikueue
                   for rule in cq.spec.admission_checks)

    def delete(self, key: ObjectKey, now: float) -> None:
        for wl_key in self.groups.pop(key, set()):
            self._release(wl_key, now)

    def _release(self, wl_key: str, now: float) -> None:
        """A group the set no longer wants: its Workload goes now if no Pod of it is left, else
        with its last Pod (the pod integration deletes it then)."""
        self.pods.kept.discard(wl_key)
        if self.pods.members.get(wl_key) or wl_key not in self.engine.workloads:
            return
        ns, _, name = wl_key.partition("/")
        self.engine.delete("Workload", ns, name, now)
        self.deleted.add(wl_key)

    def drain_deleted(self) -> set[str]:
        out, self.deleted = self.deleted, set()
        return out


__all__ = ["KIND", "LwsIntegration"]
