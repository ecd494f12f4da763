"""Owner-reference garbage collection, after Kubernetes' garbage collector.

A dependent (any object with ``metadata.ownerReferences``) goes when none of its
owners exists any more — an owner "exists" when an object of that kind and name
with that uid is stored — which is what ``propagationPolicy=Background`` (the
default) asks for. Owners deleted with the other policies carry a finalizer, set by
whoever deletes them (the API layer):

- ``orphan`` (``propagationPolicy=Orphan``): the owner's reference is removed from
  its dependents, then the finalizer, and the owner goes;
- ``foregroundDeletion`` (``Foreground``): the dependents are deleted first; the
  finalizer is removed once none is left.

References to owners that are gone while others remain are dropped from the
dependent, which stays.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from hub.store.interface import Conflict, NotFound, Object, Store

from .jobs import TRACKING_FINALIZER

ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
DEPENDENT_KINDS = ("Pod", "PodLog", "Workload", "Job", "Event", "ReplicaSet", "JobSet", "TaskRun", "RayCluster")
"""Kinds whose objects may have owners in the dev-cluster. (PodLog: the pods' log objects an earlier
version of the kubelet stored, collected with their pods; none is written now.)"""


def _refs(obj: Object) -> list[dict[str, Any]]:
    return [r for r in obj["metadata"].get("ownerReferences") or [] if isinstance(r, dict)]


class GarbageCollector:
    def __init__(self, store: Store, dependent_kinds: Iterable[str] = DEPENDENT_KINDS) -> None:
        self.store = store
        self.dependent_kinds = tuple(dependent_kinds)

    def _owner_exists(self, namespace: str, ref: dict[str, Any]) -> bool:
        kind, name, uid = ref.get("kind", ""), ref.get("name", ""), ref.get("uid", "")
        for ns in (namespace, ""):
            owner = self.store.get(kind, ns, name)
            if owner is not None and owner["metadata"].get("uid") == uid:
                return True
            if not namespace:
                break
        return False

    def _dependents(self, namespace: str | None = None) -> list[Object]:
        out: list[Object] = []
        for kind in self.dependent_kinds:
            objs, _ = self.store.list(kind, namespace)
            out.extend(o for o in objs if _refs(o))
        return out

    def collect(self, namespace: str | None = None) -> int:
        """Sweep every dependent (at start-up): delete those whose owners are all gone."""
        return self.collect_objects(self._dependents(namespace))

    def collect_keys(self, keys: Iterable[tuple[str, str, str]]) -> int:
        """Check the dependents named by (kind, namespace, name), e.g. those of a deleted owner."""
        objs = [o for o in (self.store.get(*k) for k in keys) if o is not None]
        return self.collect_objects(objs)

    def collect_objects(self, deps: Iterable[Object]) -> int:
        """Delete the dependents whose owners are all gone; returns how many went."""
        gone = 0
        for dep in deps:
            ns = dep["metadata"].get("namespace", "")
            refs = _refs(dep)
            alive = [r for r in refs if self._owner_exists(ns, r)]
            try:
                if not alive:
                    self._release_tracking(dep)
                    self.store.delete(dep["kind"], ns, dep["metadata"]["name"])
                    gone += 1
                elif len(alive) != len(refs):
                    self._set_refs(dep, alive)
            except (NotFound, Conflict):
                continue
        return gone

    def finalize_owners(self, owners: Iterable[Object]) -> None:
        """Run the orphan and foreground finalizers of owners being deleted."""
        for owner in owners:
            meta = owner["metadata"]
            finalizers = meta.get("finalizers") or []
            if not meta.get("deletionTimestamp"):
                continue
            uid = meta.get("uid")
            ns = meta.get("namespace", "")
            scope = ns or None
            deps = [d for d in self._dependents(scope) if any(r.get("uid") == uid for r in _refs(d))]
            if ORPHAN_FINALIZER in finalizers:
                for dep in deps:
                    self._release_tracking(dep)
                    fresh = self.store.get(dep["kind"], dep["metadata"].get("namespace", ""), dep["metadata"]["name"])
                    if fresh is not None:
                        self._set_refs(fresh, [r for r in _refs(fresh) if r.get("uid") != uid])
                self._drop_finalizer(owner, ORPHAN_FINALIZER)
            elif FOREGROUND_FINALIZER in finalizers:
                for dep in deps:
                    self._release_tracking(dep)
                    with contextlib.suppress(NotFound):
                        self.store.delete(dep["kind"], dep["metadata"].get("namespace", ""), dep["metadata"]["name"])
                left = [d for d in self._dependents(scope) if any(r.get("uid") == uid for r in _refs(d))]
                if not left:
                    self._drop_finalizer(owner, FOREGROUND_FINALIZER)

    def owners_being_deleted(self) -> list[Object]:
        out: list[Object] = []
        for kind in ("Job", "Pod", "Workload"):
            objs, _ = self.store.list(kind)
            out.extend(o for o in objs if o["metadata"].get("deletionTimestamp")
                       and {ORPHAN_FINALIZER, FOREGROUND_FINALIZER} & set(o["metadata"].get("finalizers") or []))
        return out

    def _release_tracking(self, dep: Object) -> None:
        """The Job controller's part for the pods of a Job that is gone: it drops their
        tracking finalizer (nothing is left to count them into), so deletion completes."""
        finalizers = dep["metadata"].get("finalizers") or []
        if dep.get("kind") != "Pod" or TRACKING_FINALIZER not in finalizers:
            return
        meta = dict(dep["metadata"])
        meta["finalizers"] = [f for f in finalizers if f != TRACKING_FINALIZER]
        with contextlib.suppress(NotFound, Conflict):
            self.store.update({**dep, "metadata": meta})

    def _set_refs(self, dep: Object, refs: list[dict[str, Any]]) -> None:
        meta = dict(dep["metadata"])
        if refs:
            meta["ownerReferences"] = refs
        else:
            meta.pop("ownerReferences", None)
        with contextlib.suppress(NotFound, Conflict):
            self.store.update({**dep, "metadata": meta})

    def _drop_finalizer(self, owner: Object, finalizer: str) -> None:
        meta = dict(owner["metadata"])
        meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != finalizer]
        with contextlib.suppress(NotFound, Conflict):
            self.store.update({**owner, "metadata": meta})
