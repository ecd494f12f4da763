"""``mkhub delete``: by kind and name, or every object of a manifest file.

Deleting a Namespace deletes what lives in it, in the same transaction, as
Kubernetes' namespace controller eventually does. The ``default`` Namespace
cannot be deleted. A Job's Workload goes with the Job: the hub deletes it once
it sees the Job gone (owner references, as Kubernetes' garbage collector does).
A ClusterQueue in which workloads still hold quota keeps Kueue's
``kueue.x-k8s.io/resource-in-use`` finalizer: it is terminating (admits nothing
new) until they finish, then the hub removes it.
"""

from __future__ import annotations

from hub.api.queues import RESOURCE_IN_USE_FINALIZER
from hub.api.registry import KINDS, object_ref, resolve_kind
from hub.store.interface import NotFound, ObjectKey, Store

from .apply import DEFAULT_NAMESPACE, Result
from .manifests import ManifestError, read_documents
from .naming import resource_name


class Deleter:
    def __init__(self, store: Store) -> None:
        self.store = store

    def delete(self, kind: str, namespace: str, name: str) -> Result:
        info = resolve_kind(kind)
        if info is None:
            return Result(kind, namespace, name, error=f'the server doesn\'t have a resource type "{kind}"')
        ns = (namespace or DEFAULT_NAMESPACE) if info.namespaced else ""
        result = Result(info.kind, ns, name)
        if info.kind == "Namespace" and name == DEFAULT_NAMESPACE:
            result.error = f'namespaces "{name}" is forbidden: this namespace may not be deleted'
            return result
        try:
            with self.store.batch():
                if info.kind == "ClusterQueue":
                    holding = self._release_if_unused(name)
                    if holding:
                        result.warning = (
                            f'clusterqueue "{name}" is terminating: {holding} workload(s) hold quota in it; '
                            f"it goes once they finish (finalizer {RESOURCE_IN_USE_FINALIZER})"
                        )
                    elif self.store.get(info.kind, ns, name) is None:  # it was terminating: now gone
                        result.action = "deleted"
                        return result
                self.store.delete(info.kind, ns, name)
                if info.kind == "Namespace":
                    self._empty_namespace(name)
        except NotFound:
            result.error = f'{resource_name(info)} "{name}" not found'
            return result
        result.action = "deleted"
        return result

    def _release_if_unused(self, name: str) -> int:
        """How many unfinished workloads hold quota in the ClusterQueue; with none, drop its finalizer."""
        holding = 0
        for wl in self.store.list("Workload")[0]:
            status = wl.get("status") or {}
            if (status.get("admission") or {}).get("clusterQueue") != name:
                continue
            conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or [] if isinstance(c, dict)}
            if conditions.get("QuotaReserved") == "True" and conditions.get("Finished") != "True":
                holding += 1
        if holding:
            return holding
        current = self.store.get("ClusterQueue", "", name)
        if current is None:
            raise NotFound(ObjectKey("ClusterQueue", "", name))
        finalizers = current["metadata"].get("finalizers") or []
        if RESOURCE_IN_USE_FINALIZER in finalizers:
            current["metadata"]["finalizers"] = [f for f in finalizers if f != RESOURCE_IN_USE_FINALIZER]
            self.store.update(current)
        return 0

    def _empty_namespace(self, namespace: str) -> None:
        for info in KINDS.values():
            if not info.namespaced:
                continue
            objects, _ = self.store.list(info.kind, namespace)
            for obj in objects:
                self.store.delete(info.kind, namespace, obj["metadata"]["name"])

    def delete_manifests(self, text: str, *, default_namespace: str = "", source: str = "") -> list[Result]:
        try:
            docs = read_documents(text, source)
        except ManifestError as exc:
            return [Result("", "", "", error=str(exc))]
        results = []
        for doc in reversed(docs):  # dependents first: a file lists what they depend on before them
            if not isinstance(doc.manifest, dict):
                results.append(Result("", "", "", error=f"{source or '<input>'}: document {doc.index} is not an object"))
                continue
            kind, ns, name = object_ref(doc.manifest)
            results.append(self.delete(kind, ns or default_namespace, name))
        return results
