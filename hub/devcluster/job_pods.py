"""Which pods each Job may own, by their ``batch.kubernetes.io/controller-uid`` label, kept from the
dev-cluster controllers' watch (the Job controller's informer index, as kube-controller-manager lists a Job's
pods from its informer cache, not from the API server).

A label-selected list of the store scans every pod of the namespace (``instr`` on each stored body): a worker
running a few hundred Jobs spent most of its Job controller's time there, quadratic in its pods. The index
only names candidates: :meth:`JobController.pods_of <hub.devcluster.jobs.JobController>` reads each one and
applies the selector to what it read, so a stale entry is dropped, and a pod the index does not hold yet has
an event still to come, which makes the Job look again.
"""

from __future__ import annotations

from collections.abc import Iterable

from hub.store.interface import Object

CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"


def controller_uid(pod: Object) -> str | None:
    labels = pod["metadata"].get("labels")
    uid = labels.get(CONTROLLER_UID_LABEL) if isinstance(labels, dict) else None
    return uid if isinstance(uid, str) else None


def not_newer(resource_version: str, version: int | None) -> bool:
    """Whether an event's resourceVersion is no newer than ``version`` (what a controller last read or
    wrote of the object): the state the event carries was already acted on."""
    return version is not None and resource_version.isdigit() and int(resource_version) <= version


class PodIndex:
    """(namespace, name) of the pods by their controller-uid label, as last seen."""

    def __init__(self) -> None:
        self._by_uid: dict[str, set[tuple[str, str]]] = {}
        self._uid_of: dict[tuple[str, str], str] = {}

    def reset(self, pods: Iterable[Object]) -> None:
        self._by_uid.clear()
        self._uid_of.clear()
        for pod in pods:
            self.put(pod)

    def put(self, pod: Object) -> None:
        meta = pod["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        uid = controller_uid(pod)
        old = self._uid_of.get(key)
        if old == uid:
            return
        if old is not None:
            self.drop(*key)
        if uid is not None:
            self._uid_of[key] = uid
            self._by_uid.setdefault(uid, set()).add(key)

    def drop(self, namespace: str, name: str) -> None:
        uid = self._uid_of.pop((namespace, name), None)
        if uid is None:
            return
        keys = self._by_uid.get(uid)
        if keys is not None:
            keys.discard((namespace, name))
            if not keys:
                del self._by_uid[uid]

    def names(self, namespace: str, uid: str) -> list[str]:
        """The names of the pods in ``namespace`` last seen with this controller-uid, sorted (as a list is)."""
        return sorted(name for ns, name in self._by_uid.get(uid, ()) if ns == namespace)
