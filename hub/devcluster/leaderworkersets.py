"""A simulated LeaderWorkerSet controller (``leaderworkerset.x-k8s.io/v1``), after
kubernetes-sigs/lws, as far as Kueue's examples use it.

For each group ``i < spec.replicas`` a leader pod ``<lws>-<i>`` (from ``leaderTemplate``, else
``workerTemplate``) and ``size - 1`` worker pods ``<lws>-<i>-<j>`` (``1 <= j < size``, from
``workerTemplate``), labelled as LWS labels them: ``leaderworkerset.sigs.k8s.io/name``,
``group-index``, ``worker-index`` (0 for the leader) and ``group-key`` (SHA-1 of
``<namespace>/<leader>``), annotated with ``size`` (and ``leader-name`` on workers). Scaling
(``spec.replicas``, also through the ``scale`` subresource) adds or deletes whole groups, from
the highest index down. A group whose pod failed or was deleted is recreated whole
(``RecreateGroupOnPodRestart``, the default; ``None`` recreates only the pod). Status:
``replicas`` (groups that exist), ``readyReplicas`` (groups whose pods are all Running and
Ready), ``hpaPodSelector`` and the conditions ``Available`` (``AllGroupsReady``) or
``Progressing`` (``GroupsProgressing``), mutually exclusive as LWS keeps them. With
``startupPolicy: LeaderReady`` a group's workers are created once its leader is ready.

The pods are created through ``create`` (mkhub dev-cluster passes its API, so admission webhooks
such as Kueue's pod webhook see them, as the apps controllers' pods), owned by the LeaderWorkerSet (``controller: true``, so the
garbage collector deletes them with it), with ``restartPolicy: Always`` (as StatefulSet pods
have it): the dev-cluster's kubelet runs them until they are deleted. A pod template carrying
``schedulingGates`` (Kueue's topology-aware scheduling gate) leaves its pods Pending until
ungated.

Not done (the real controller does): the leader and worker StatefulSets the real one goes
through (so no StatefulSet objects, no per-group worker StatefulSet, no revision history),
rolling updates of changed templates (``rolloutStrategy``, ``updatedReplicas`` counts every
group), subgroups,
exclusive placement, the headless Service and ``LWS_*`` environment variables,
volumeClaimTemplates, the webhook's validation beyond the CRD schema. Events: one per
condition change, as LWS records them.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import logging
from collections.abc import Callable
from typing import Any

from hub.obs.events import NORMAL, EventRecorder, ObjectRef
from hub.store.interface import AlreadyExists, Conflict, InvalidObject, NotFound, Object, Store

from .apps import RETRY_SECONDS
from .jobs import pod_ready
from .jobsets import set_condition
from .operators import LWS_API_VERSION, LWS_KIND

PREFIX = "leaderworkerset.sigs.k8s.io/"
NAME = PREFIX + "name"
GROUP_INDEX = PREFIX + "group-index"
WORKER_INDEX = PREFIX + "worker-index"
GROUP_KEY = PREFIX + "group-key"
SIZE = PREFIX + "size"
LEADER_NAME = PREFIX + "leader-name"

AVAILABLE, PROGRESSING = "Available", "Progressing"

log = logging.getLogger(__name__)

Clock = Callable[[], float]


def _int(value: Any, default: int) -> int:
    return default if value is None else int(value)


def pod_name(lws: str, group: int, worker: int) -> str:
    return f"{lws}-{group}" if worker == 0 else f"{lws}-{group}-{worker}"


def new_pod(lws: Object, group: int, worker: int) -> Object:
    """Pod ``worker`` (0: the leader) of group ``group``, with LWS's labels and annotations."""
    meta, spec = lws["metadata"], lws.get("spec") or {}
    lwt = spec.get("leaderWorkerTemplate") or {}
    template = (lwt.get("leaderTemplate") if worker == 0 else None) or lwt.get("workerTemplate") or {}
    ns, leader = meta.get("namespace", ""), pod_name(meta["name"], group, 0)
    tmeta = template.get("metadata") or {}
    labels = {**(tmeta.get("labels") or {}), NAME: meta["name"], GROUP_INDEX: str(group),
              WORKER_INDEX: str(worker), GROUP_KEY: hashlib.sha1(f"{ns}/{leader}".encode()).hexdigest()}
    annotations = {**(tmeta.get("annotations") or {}), SIZE: str(_int(lwt.get("size"), 1))}
    if worker:
        annotations[LEADER_NAME] = leader
    pod_spec = copy.deepcopy(template.get("spec") or {})
    pod_spec["restartPolicy"] = "Always"
    pod_spec.setdefault("schedulerName", "default-scheduler")
    pod_spec.setdefault("hostname", pod_name(meta["name"], group, worker))
    pod_spec.setdefault("subdomain", meta["name"])
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod_name(meta["name"], group, worker), "namespace": ns, "labels": labels,
                     "annotations": annotations,
                     "ownerReferences": [{"apiVersion": LWS_API_VERSION, "kind": LWS_KIND, "name": meta["name"],
                                          "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}]},
        "spec": pod_spec,
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }


def _running_and_ready(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and pod_ready(pod)


def _broken(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or bool(pod["metadata"].get("deletionTimestamp"))


class LeaderWorkerSetController:
    """Reconciles one LeaderWorkerSet at a time (waits for events; a timer only after a refused Pod)."""

    def __init__(self, store: Store, clock: Clock, create: Callable[[Object], Object] | None = None) -> None:
        self.store = store
        self.clock = clock
        self.create = create or store.create  # raises AlreadyExists, or InvalidObject when refused
        self.events = EventRecorder("leaderworkerset", clock=clock)

    def reconcile_all(self) -> None:
        sets, _ = self.store.list(LWS_KIND)
        for lws in sets:
            self.reconcile(lws["metadata"].get("namespace", ""), lws["metadata"]["name"])

    def reconcile(self, namespace: str, name: str) -> float | None:
        """Returns when to try again (a Pod was refused), else None."""
        for _ in range(5):  # a conflicting writer (Kueue, kubectl scale) moved it: read again
            try:
                return self._reconcile(namespace, name)
            except NotFound:
                return None
            except Conflict:
                continue
        return None

    def _reconcile(self, namespace: str, name: str) -> float | None:
        lws = self.store.get(LWS_KIND, namespace, name)
        if lws is None or lws["metadata"].get("deletionTimestamp"):
            return None
        meta, spec = lws["metadata"], lws.get("spec") or {}
        lwt = spec.get("leaderWorkerTemplate") or {}
        replicas, size = _int(spec.get("replicas"), 1), _int(lwt.get("size"), 1)
        pods, _ = self.store.list("Pod", namespace, f"{NAME}={name}")
        groups: dict[int, dict[int, Object]] = {}
        for pod in pods:
            if not any(r.get("uid") == meta.get("uid") for r in pod["metadata"].get("ownerReferences") or []):
                continue
            labels = pod["metadata"].get("labels") or {}
            with contextlib.suppress(ValueError):
                groups.setdefault(int(labels.get(GROUP_INDEX, "")), {})[int(labels.get(WORKER_INDEX, ""))] = pod
        whole_group = lwt.get("restartPolicy", "RecreateGroupOnPodRestart") != "None"
        leader_first = spec.get("startupPolicy") == "LeaderReady"
        with self.store.batch():
            for group in sorted(groups):
                members = groups[group]
                if group >= replicas:
                    self._delete(list(members.values()))
                    continue
                broken = [p for p in members.values() if _broken(p)]
                # One was deleted: the group starts over. (LeaderReady: a leader alone is waiting for its workers.)
                if whole_group and len(members) < size and (set(members) - {0} or not leader_first):
                    broken = list(members.values())
                if broken:
                    gone = list(members.values()) if whole_group else broken
                    self._delete(gone)
                    for pod in gone:
                        del members[int((pod["metadata"].get("labels") or {})[WORKER_INDEX])]
        retry: float | None = None
        # Created outside the batch: ``create`` may be the API, whose webhooks read this store meanwhile.
        for group in range(replicas):
            members = groups.setdefault(group, {})
            for worker in range(size):
                if worker and leader_first and not (0 in members and _running_and_ready(members[0])):
                    break  # LeaderReady: the workers wait for their leader
                if worker not in members:
                    try:
                        members[worker] = self.create(new_pod(lws, group, worker))
                    except AlreadyExists:  # written before a crash: it stays
                        continue
                    except InvalidObject as exc:  # refused (a webhook): tried again shortly, as the apps controllers do
                        log.warning("LeaderWorkerSet %s/%s: pod refused: %s", namespace, name, exc)
                        retry = self.clock() + RETRY_SECONDS
                        break
        ready = sum(1 for g in range(replicas) if len(groups[g]) >= size
                    and all(_running_and_ready(p) for p in groups[g].values()))
        self._status(lws, replicas, ready)
        return retry

    def _status(self, lws: Object, replicas: int, ready: int) -> None:
        status: dict[str, Any] = copy.deepcopy(lws.get("status") or {})
        generation = lws["metadata"].get("generation") or 1
        status.update(replicas=replicas, readyReplicas=ready, updatedReplicas=replicas, observedGeneration=generation,
                      hpaPodSelector=f"{NAME}={lws['metadata']['name']},{WORKER_INDEX}=0")
        for key in ("replicas", "readyReplicas", "updatedReplicas"):  # omitempty, as LWS writes them
            if not status[key]:
                del status[key]
        now = self.clock()
        before = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        if ready == replicas:
            reason, message = "AllGroupsReady", "All replicas are ready"
            set_condition(status, (AVAILABLE, "True", reason, message), now)
            set_condition(status, (PROGRESSING, "False", "GroupsProgressing", "Replicas are progressing"), now)
        else:
            reason, message = "GroupsProgressing", "Replicas are progressing"
            set_condition(status, (PROGRESSING, "True", reason, message), now)
            set_condition(status, (AVAILABLE, "False", "AllGroupsReady", "All replicas are ready"), now)
        if before != {c.get("type"): c.get("status") for c in status.get("conditions") or []}:
            meta = lws["metadata"]
            ref = ObjectRef(LWS_KIND, meta.get("namespace", ""), meta["name"], meta.get("uid", ""), LWS_API_VERSION)
            self.events.record(ref, NORMAL, reason, f"{message}, with {ready} groups ready of total {replicas} groups", now)
            self.events.flush(self.store)
        for cond in status.get("conditions") or []:
            cond["observedGeneration"] = generation
        if status != (lws.get("status") or {}):
            self.store.update_status({**lws, "status": status})

    def _delete(self, pods: list[Object]) -> None:
        for pod in pods:
            with contextlib.suppress(NotFound):
                self.store.delete("Pod", pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
