"""The objects topology-aware scheduling reads: Kueue's ``Topology`` and core/v1 ``Node``.

A Topology names the node labels of its levels, highest first (block, rack, host); a
ResourceFlavor's ``spec.topologyName`` links the flavor's nodes (selected by its
``nodeLabels``) to it. A Node is read in Kubernetes' own shape: ``metadata.labels``,
``status.allocatable``, ``spec.taints``, ``spec.unschedulable`` and the ``Ready``
condition of ``status.conditions``; the rest of it is kept as written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import FieldErrors
from .meta import TAINT_EFFECTS, ObjectMeta, Taint
from .reader import Reader
from .validation import is_dns_subdomain, validate_name

# The versions Kueue has served Topology in (it started in v1alpha1).
TOPOLOGY_VERSIONS = ("kueue.x-k8s.io/v1alpha1", "kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2")
NODE_VERSIONS = ("v1",)

# Kueue's +kubebuilder:validation markers on TopologySpec.Levels.
MAX_TOPOLOGY_LEVELS = 16
HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(slots=True)
class Topology:
    meta: ObjectMeta
    levels: tuple[str, ...] = ()

    kind = "Topology"


@dataclass(slots=True)
class Node:
    meta: ObjectMeta
    allocatable: dict[str, int] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = False  # a Node without a Ready=True condition gets no pods, as the scheduler does

    kind = "Node"

    @property
    def schedulable(self) -> bool:
        return self.ready and not self.unschedulable


def read_topology(r: Reader, meta: ObjectMeta) -> Topology:
    spec = r.child("spec")
    if not spec.has("levels"):
        r.errors.required(spec.at("levels"))
    levels = []
    for level in spec.items("levels"):
        label = level.string("nodeLabel")
        if not label:
            r.errors.required(level.at("nodeLabel"))
        levels.append(label)
    return Topology(meta, tuple(levels))


def validate_topology(obj: Topology, errs: FieldErrors) -> None:
    validate_name(obj.meta, errs, namespaced=False)
    if not 1 <= len(obj.levels) <= MAX_TOPOLOGY_LEVELS:
        errs.invalid("spec.levels", len(obj.levels), f"must have 1 to {MAX_TOPOLOGY_LEVELS} items")
    seen: set[str] = set()
    for i, label in enumerate(obj.levels):
        if label in seen:
            errs.invalid(f"spec.levels[{i}].nodeLabel", label, "must be unique")
        elif label and not _is_label_key(label):
            errs.invalid(f"spec.levels[{i}].nodeLabel", label, "must be a qualified label key ([prefix/]name)")
        seen.add(label)
    if HOSTNAME_LABEL in obj.levels and obj.levels[-1] != HOSTNAME_LABEL:
        # Kueue's CRD rule on TopologySpec.Levels.
        errs.invalid("spec.levels", [{"nodeLabel": x} for x in obj.levels],
                     f"the {HOSTNAME_LABEL} label can only be used at the lowest level of topology")


def validate_topology_update(old: Topology, new: Topology, errs: FieldErrors) -> None:
    both_end_in_hosts = old.levels[-1:] == new.levels[-1:] == (HOSTNAME_LABEL,)
    if old.levels != new.levels and not both_end_in_hosts:
        errs.invalid("spec.levels", [{"nodeLabel": x} for x in new.levels], "levels are mutable only when "
                     f"{HOSTNAME_LABEL} is the lowest level both before and after the change")


def _is_label_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and not is_dns_subdomain(prefix):
        return False
    return 0 < len(name) <= 63 and name[0].isalnum() and name[-1].isalnum() and all(
        c.isalnum() or c in "-_." for c in name)


def read_node(r: Reader, meta: ObjectMeta) -> Node:
    spec, status = r.child("spec"), r.child("status")
    taints = []
    for t in spec.items("taints"):
        key = t.string("key")
        if not key:
            t.errors.required(t.at("key"))
        effect = t.string("effect")
        if not effect:
            t.errors.required(t.at("effect"))
        elif effect not in TAINT_EFFECTS:
            t.errors.invalid(t.at("effect"), effect, f"supported values: {', '.join(repr(e) for e in TAINT_EFFECTS)}")
        taints.append(Taint(key, t.string("value"), effect))
    ready = False
    for cond in status.items("conditions"):
        if cond.string("type") == "Ready":
            ready = cond.string("status") == "True"
    allocatable = status.resource_list("allocatable")
    if not status.has("allocatable"):
        allocatable = status.resource_list("capacity")  # the kubelet's capacity stands in until it reports
    return Node(meta, allocatable, tuple(taints), spec.boolean("unschedulable", False), ready)


def validate_node(obj: Node, errs: FieldErrors) -> None:
    validate_name(obj.meta, errs, namespaced=False)
    for name, value in obj.allocatable.items():
        if value < 0:
            errs.invalid(f"status.allocatable[{name}]", value, "must be greater than or equal to 0")
