"""The resources the Kubernetes API of mkhub serves: group, versions, plural, scope, verbs.

Every Kueue kind of :data:`hub.api.registry.KINDS` is served in ``kueue.x-k8s.io``
``v1beta1`` and ``v1beta2``; the store holds one version (v1beta2, Kueue's storage
version) and reads and writes are converted with :mod:`hub.api.conversion`.
Built-in kinds: ``batch/v1`` Jobs, ``v1`` Namespaces, ``v1`` Pods (``spec.schedulingGates``
hold them back from the dev-cluster's scheduler), ``v1`` Nodes
(written from the dev-cluster's ``--nodes``; deleted, tainted, their status patched with kubectl),
``v1`` Events and ``coordination.k8s.io/v1`` Leases; and the kinds of a deployment that are
stored without being acted on (:mod:`hub.kubeapi.stored`).

The store keys objects by kind alone, so two served kinds must never share a name.
"""

from __future__ import annotations

from dataclasses import dataclass

from hub.api.conversion import KUEUE_GROUP, V1BETA2, to_internal, to_version
from hub.api.registry import KINDS
from hub.store.interface import Object

from .stored import STORED_KINDS

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
READ_VERBS = ("get", "list", "watch")
KUEUE_VERSIONS = ("v1beta2", "v1beta1")  # preferred first
STORAGE_VERSION = V1BETA2


@dataclass(frozen=True, slots=True)
class Resource:
    """One served resource (a kind in a group, in every version the group serves)."""

    kind: str
    group: str  # "" for the core group
    versions: tuple[str, ...]  # preferred first
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    categories: tuple[str, ...] = ()
    has_status: bool = True

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def preferred(self) -> str:
        return self.versions[0]

    @property
    def group_resource(self) -> str:
        """``clusterqueues.kueue.x-k8s.io``, or ``namespaces`` in the core group (error messages)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self) -> str:
        """``ClusterQueue.kueue.x-k8s.io``, or ``Namespace`` (Invalid error messages)."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    @property
    def writable(self) -> bool:
        return "update" in self.verbs

    def to_external(self, obj: Object, version: str) -> Object:
        """A stored object in the form of ``version`` of this resource's group."""
        if self.group == KUEUE_GROUP:
            return to_version(obj, self.api_version(version))
        return obj

    def to_storage(self, obj: Object) -> Object:
        """An object in any served version, in the stored form (a deep copy for Kueue kinds)."""
        if self.group == KUEUE_GROUP:
            return to_internal(obj)
        return obj


def _kueue() -> list[Resource]:
    out = []
    for info in KINDS.values():
        if not all(v.startswith(KUEUE_GROUP + "/") for v in info.api_versions):
            continue
        out.append(
            Resource(info.kind, KUEUE_GROUP, KUEUE_VERSIONS, info.plural, info.namespaced, info.short_names)
        )
    return out


RESOURCES: tuple[Resource, ...] = (
    Resource("Namespace", "", ("v1",), "namespaces", False, ("ns",)),
    # Created by users and the dev-cluster's controllers; updates as kube-apiserver allows them
    # (hub.kubeapi.updaterules: an image, tolerations, removing scheduling gates...).
    Resource("Pod", "", ("v1",), "pods", True, ("po",), ALL_VERBS, ("all",)),
    Resource("Event", "", ("v1",), "events", True, ("ev",), has_status=False),
    # The dev-cluster writes them from --nodes (hub.devcluster.nodes); kubectl deletes, taints and
    # patches their status as on a cluster, and the dev-cluster follows (hub.devcluster.node_lifecycle).
    Resource("Node", "", ("v1",), "nodes", False, ("no",), ALL_VERBS),
    Resource("Job", "batch", ("v1",), "jobs", True, (), ALL_VERBS, ("all",)),
    Resource("Lease", "coordination.k8s.io", ("v1",), "leases", True, (), has_status=False),
    # Other CRDs' kinds are served by hub.kubeapi.crds; a CRD of a built-in kind (Kueue's) is recorded only.
    Resource("CustomResourceDefinition", "apiextensions.k8s.io", ("v1",), "customresourcedefinitions", False,
             ("crd", "crds")),
    *(Resource(k.kind, k.group, (k.version,), k.plural, k.namespaced, k.short_names, ALL_VERBS, k.categories,
               k.has_status) for k in STORED_KINDS),
    *_kueue(),
)

_BY_PATH: dict[tuple[str, str, str], Resource] = {
    (r.group, v, r.plural): r for r in RESOURCES for v in r.versions
}
BY_KIND: dict[str, Resource] = {r.kind: r for r in RESOURCES}
assert len(BY_KIND) == len(RESOURCES), "two served resources share a kind name"


def lookup(group: str, version: str, plural: str) -> Resource | None:
    return _BY_PATH.get((group, version, plural))


def groups() -> dict[str, tuple[str, ...]]:
    """Non-core group name -> its versions, preferred first, in a stable order."""
    out: dict[str, tuple[str, ...]] = {}
    for r in RESOURCES:
        if r.group and r.group not in out:
            out[r.group] = r.versions
    return out


def in_group_version(group: str, version: str) -> list[Resource]:
    return [r for r in RESOURCES if r.group == group and version in r.versions]
