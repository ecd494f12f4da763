"""The job framework: what every queued workload kind tells the controllers (Kueue's GenericJob).

The engine sees only Workloads and their pod sets. A :class:`JobAdapter` per kind
translates between the kind and its Workload: the pod sets it asks for, suspend and
resume, the admission's flavors put into its pod templates and taken out again on
eviction, when it finished, when its pods are ready, its priority, its ``managedBy``
for MultiKueue and which of its status fields a worker copy mirrors back. Everything
here is pure and works on the kind's typed object (reads) or its manifest (writes),
so the same adapter serves the embedded hub, the hub on Kubernetes, the webhook and
the agent that creates worker copies.

Generic parts shared by every kind live here: the Workload's name and owner
reference as Kueue writes them, the priority class, the pod-set infos an admission
yields, and merging them into (and restoring them out of) a pod template.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from ..meta import ObjectMeta, Toleration, meta_to_dict
from ..others import JOB_UID_LABEL, MAX_EXEC_TIME_LABEL, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from ..queues import ResourceFlavor
from ..workload import (
    POD_PRIORITY_CLASS_GROUP,
    POD_PRIORITY_CLASS_KIND,
    WORKLOAD_PRIORITY_CLASS_GROUP,
    WORKLOAD_PRIORITY_CLASS_KIND,
    PodSet,
    PriorityClassRef,
    Workload,
)

Manifest = dict[str, Any]
Outcome = tuple[str, str]  # ("succeeded" | "failed", message)

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
# Topology-aware scheduling: the gate on the pods of a TAS pod set until the ungater gives each its
# domain, and how the ungater finds them (the Workload's name, the pod set's name), as Kueue names them.
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
PODSET_LABEL = "kueue.x-k8s.io/podset"
UNCONSTRAINED_ANNOTATION = "kueue.x-k8s.io/podset-unconstrained-topology"
_HASH_LENGTH = 5
_MAX_NAME = 253


class KindObject(Protocol):
    """The typed object an adapter reads: anything with Kubernetes metadata."""

    @property
    def meta(self) -> ObjectMeta: ...

    @property
    def kind(self) -> str: ...


J = TypeVar("J", bound=KindObject)
J_contra = TypeVar("J_contra", bound=KindObject, contravariant=True)


@dataclass(slots=True)
class PodSetInfo:
    """What an admission puts into one pod set's template (Kueue's ``podset.PodSetInfo``)."""

    name: str
    count: int
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    # Topology-aware scheduling: each assigned domain's nodeSelector (its level labels) and pod count,
    # what Kueue's topology ungater gives the pods one by one.
    topology_domains: list[tuple[dict[str, str], int]] = field(default_factory=list)
    scheduling_gates: list[str] = field(default_factory=list)  # added to the template (TAS's gate)


class JobAdapter(Protocol[J_contra]):
    """One workload kind. Reads take the typed object, writes change a manifest in place."""

    framework: str  # the name in Configuration.integrations.frameworks, e.g. "batch/job"
    api_version: str
    kind: str
    # Labels and annotations the kind's own controller puts on pod templates: never the Workload's.
    controller_template_labels: frozenset[str]
    # The status fields a worker copy's status mirrors into the manager's object (MultiKueue).
    mirrored_status_fields: tuple[str, ...]
    # Where the manifest names its controller (the webhook sets MultiKueue's there).
    managed_by_path: tuple[str, ...]
    # The controller that runs the kind when ``managedBy`` is empty (Kubernetes' managedBy rule).
    controller_name: str

    def pod_sets(self, job: J_contra) -> list[PodSet]:
        """The pod sets the kind asks for, templates cleaned of its controller's labels."""
        ...

    def pod_spec_priority_class(self, job: J_contra) -> str:
        """The pods' ``priorityClassName`` (the fallback priority when no WorkloadPriorityClass)."""
        ...

    def is_suspended(self, job: J_contra) -> bool: ...

    def managed_by(self, job: J_contra) -> str: ...

    def finished(self, job: J_contra) -> Outcome | None:
        """("succeeded" | "failed", message) once the kind says it has finished."""
        ...

    def pods_ready(self, job: J_contra) -> bool:
        """Every admitted pod is ready (waitForPodsReady's PodsReady)."""
        ...

    def suspend(self, manifest: Manifest) -> None:
        """Stop the kind's pods (Kueue's ``Suspend``)."""
        ...

    def run_with_pod_sets_info(self, manifest: Manifest, infos: Sequence[PodSetInfo], pod_sets: Sequence[PodSet]) -> None:
        """Merge the admission into the templates and start (Kueue's ``RunWithPodSetsInfo``)."""
        ...

    def restore_pod_sets_info(self, manifest: Manifest, pod_sets: Sequence[PodSet]) -> None:
        """Put the templates back as the Workload's pod sets kept them (``RestorePodSetsInfo``)."""
        ...

    def manifest(self, job: J_contra) -> Manifest:
        """The object as the hub knows it (identity, spec; no status): what a worker copy is made from."""
        ...

    def worker_copy(self, manifest: Manifest) -> Manifest:
        """The object an agent creates in its worker: run by the worker's own controller."""
        ...

    def status_outcome(self, status: Manifest) -> Outcome | None:
        """``finished`` read from a raw status (a worker copy's, as an agent reports it)."""
        ...

    def status_running(self, status: Manifest) -> bool:
        """A raw status (a worker copy's) saying its pods run: the agent's ``ready`` report."""
        ...

    def status_terminal(self, status: Manifest) -> bool:
        """A status (mirrored or derived) that says the object finished."""
        ...

    def simulated_status(self, wl: Workload, job: J_contra, previous: Manifest | None, ready_at: float | None) -> Manifest:
        """The status the embedded hub writes for an object it runs itself (simulated pods),
        derived from its Workload; ``previous`` is the status last written; ``ready_at``: since
        when all its pods are ready, None while they are not (the engine's word, which is no
        Workload condition without waitForPodsReady)."""
        ...


# --- the Workload of a job ----------------------------------------------------------------------------


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def workload_name(kind: str, group: str, name: str, uid: str) -> str:
    """Kueue's ``GetWorkloadNameForOwnerWithGVK``: ``<kind>-<name>-<5 hex of sha1(kind, group, name, uid)>``."""
    digest = hashlib.sha1("\n".join((kind, group, name, uid)).encode()).hexdigest()
    prefix = f"{kind.lower()}-{name}"[: _MAX_NAME - 1 - _HASH_LENGTH]
    return f"{prefix}-{digest[:_HASH_LENGTH]}"


def owner_reference(adapter: JobAdapter[Any], meta: ObjectMeta) -> dict[str, Any]:
    """The controller owner reference Kueue's reconciler puts on the Workload."""
    return {
        "apiVersion": adapter.api_version,
        "kind": adapter.kind,
        "name": meta.name,
        "uid": meta.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def priority_class_ref(adapter: JobAdapter[J], job: J) -> PriorityClassRef | None:
    """The ``kueue.x-k8s.io/priority-class`` label's WorkloadPriorityClass, else the pods' PriorityClass."""
    wpc = job.meta.labels.get(PRIORITY_CLASS_LABEL)
    if wpc:
        return PriorityClassRef(WORKLOAD_PRIORITY_CLASS_GROUP, WORKLOAD_PRIORITY_CLASS_KIND, wpc)
    pc = adapter.pod_spec_priority_class(job)
    if pc:
        return PriorityClassRef(POD_PRIORITY_CLASS_GROUP, POD_PRIORITY_CLASS_KIND, pc)
    return None


def queue_name(job: KindObject) -> str:
    return job.meta.labels.get(QUEUE_NAME_LABEL, "")


def workload_for(adapter: JobAdapter[J], job: J) -> Workload:
    """The Workload Kueue's reconciler creates for ``job`` (its priority is resolved later)."""
    meta = job.meta
    max_exec = meta.labels.get(MAX_EXEC_TIME_LABEL)
    return Workload(
        meta=ObjectMeta(
            name=workload_name(adapter.kind, group_of(adapter.api_version), meta.name, meta.uid),
            namespace=meta.namespace,
            labels={JOB_UID_LABEL: meta.uid} if meta.uid else {},
            creation_timestamp=meta.creation_timestamp,
            owner_references=[owner_reference(adapter, meta)],
        ),
        pod_sets=tuple(adapter.pod_sets(job)),
        queue_name=queue_name(job),
        priority_class_ref=priority_class_ref(adapter, job),
        active=True,
        maximum_execution_time_seconds=int(max_exec) if max_exec and max_exec.isdigit() else None,
    )


# --- pod templates --------------------------------------------------------------------------------------


def clean_template(template: Mapping[str, Any], controller_labels: frozenset[str]) -> dict[str, Any]:
    """The template without the kind's controller labels, as Kueue keeps it in the pod set."""
    out = dict(template)
    meta = dict(out.get("metadata") or {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in controller_labels}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    if meta:
        out["metadata"] = meta
    else:
        out.pop("metadata", None)
    return out


def toleration_dict(t: Toleration) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("key", "operator", "value", "effect"):
        value = getattr(t, name)
        if value:
            out[name] = value
    if t.toleration_seconds is not None:
        out["tolerationSeconds"] = t.toleration_seconds
    return out


def pod_set_infos(wl: Workload, flavors: Mapping[str, ResourceFlavor]) -> list[PodSetInfo]:
    """Per admitted pod set: its flavors' nodeLabels and tolerations, the admission checks'
    ``podSetUpdates`` and the admitted count (Kueue's ``getPodSetsInfoFromStatus``)."""
    admission = wl.status.admission
    if admission is None:
        return []
    infos = []
    for psa in admission.pod_set_assignments:
        info = PodSetInfo(name=psa.name, count=psa.count)
        topology_info(info, wl)
        for _, flavor_name in psa.flavors:
            flavor = flavors.get(flavor_name)
            if flavor is None:
                continue
            info.node_selector.update(flavor.node_labels)
            _add_tolerations(info.tolerations, [toleration_dict(t) for t in flavor.tolerations])
        for check in wl.status.admission_checks:
            for update in check.pod_set_updates:
                if update.get("name") not in (None, psa.name):
                    continue
                info.labels.update(update.get("labels") or {})
                info.annotations.update(update.get("annotations") or {})
                info.node_selector.update(update.get("nodeSelector") or {})
                _add_tolerations(info.tolerations, list(update.get("tolerations") or []))
        infos.append(info)
    return infos


def topology_info(info: PodSetInfo, wl: Workload) -> None:
    """What Kueue's ``getPodSetsInfoFromStatus`` adds for a pod set placed by TAS: its domains, the
    topology gate (its pods wait for the ungater), the Workload's name and the pod set's (how the
    ungater finds them), and the unconstrained annotation when the placement was implied (how a pod
    reads as TAS). Nothing when the admission did not place ``info``'s pod set by TAS."""
    name = info.name
    psa = next((p for p in wl.status.admission.pod_set_assignments if p.name == name), None) if wl.status.admission else None
    ta = psa.topology_assignment if psa is not None else None
    if ta is None:
        return
    info.topology_domains = [(dict(zip(ta.levels, values)), count) for values, count in ta.domains]
    info.scheduling_gates.append(TOPOLOGY_GATE)
    info.annotations[WORKLOAD_ANNOTATION] = wl.meta.name
    info.labels[PODSET_LABEL] = name
    ps = next((p for p in wl.pod_sets if p.name == name), None)
    request = (ps.topology_request if ps is not None else None) or {}
    if not (request.get("required") or request.get("preferred") or "unconstrained" in request):
        info.annotations[UNCONSTRAINED_ANNOTATION] = "true"


def _add_tolerations(into: list[dict[str, Any]], more: list[dict[str, Any]]) -> None:
    for t in more:
        if t not in into:
            into.append(t)


def merge_into_template(template: dict[str, Any], info: PodSetInfo) -> None:
    """Add an admission's pod-set info to a pod template (existing entries stay)."""
    pod = template.setdefault("spec", {})
    meta = template.setdefault("metadata", {})
    if info.node_selector:
        pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), **info.node_selector}
    if info.tolerations:
        current = list(pod.get("tolerations") or [])
        pod["tolerations"] = current + [t for t in info.tolerations if t not in current]
    if info.labels:
        meta["labels"] = {**(meta.get("labels") or {}), **info.labels}
    if info.annotations:
        meta["annotations"] = {**(meta.get("annotations") or {}), **info.annotations}
    if info.scheduling_gates:
        gates = list(pod.get("schedulingGates") or [])
        names = {g.get("name") for g in gates if isinstance(g, dict)}
        pod["schedulingGates"] = gates + [{"name": g} for g in info.scheduling_gates if g not in names]


def restore_template(template: dict[str, Any], original: Mapping[str, Any], controller_labels: frozenset[str]) -> None:
    """The template's scheduling directives and metadata as the pod set kept them; the kind's
    controller labels (not the Workload's to restore) stay."""
    pod = template.setdefault("spec", {})
    meta = template.setdefault("metadata", {})
    original_pod = original.get("spec") or {}
    original_meta = original.get("metadata") or {}
    for name in ("nodeSelector", "tolerations", "schedulingGates"):
        if original_pod.get(name):
            pod[name] = copy.deepcopy(original_pod[name])
        else:
            pod.pop(name, None)
    for name in ("labels", "annotations"):
        kept = dict(original_meta.get(name) or {})
        kept.update({k: v for k, v in (meta.get(name) or {}).items() if _controller_owned(k, controller_labels)})
        if kept:
            meta[name] = kept
        else:
            meta.pop(name, None)


def _controller_owned(key: str, controller_labels: frozenset[str]) -> bool:
    return key in controller_labels or any(p.endswith("/") and key.startswith(p) for p in controller_labels)


_TAS = "kueue.x-k8s.io/podset-"


def topology_request(template: Mapping[str, Any], pod_index_label: str | None = None,
                     sub_group: tuple[str, int] | None = None) -> dict[str, Any] | None:
    """The pod set's ``topologyRequest`` from its template's annotations, as Kueue builds it:
    one of required / preferred / unconstrained, or a slice request alone; the kind says which
    label indexes its pods and, for pods in several Jobs (a JobSet's replicas), which label
    indexes the Job and how many there are (``sub_group``). A value that does not parse is left out."""
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    request: dict[str, Any] = {}
    if f"{_TAS}required-topology" in annotations:
        request["required"] = str(annotations[f"{_TAS}required-topology"])
    elif f"{_TAS}preferred-topology" in annotations:
        request["preferred"] = str(annotations[f"{_TAS}preferred-topology"])
    elif f"{_TAS}unconstrained-topology" in annotations:
        flag = str(annotations[f"{_TAS}unconstrained-topology"]).lower()
        if flag in ("true", "false", "1", "0", "t", "f"):
            request["unconstrained"] = flag in ("true", "1", "t")
    slice_topology = annotations.get(f"{_TAS}slice-required-topology")
    slice_size = str(annotations.get(f"{_TAS}slice-size", ""))
    if slice_topology is not None and slice_size.isdigit():
        request["podSetSliceRequiredTopology"] = str(slice_topology)
        request["podSetSliceSize"] = int(slice_size)
    if not request:
        return None
    if pod_index_label:
        request["podIndexLabel"] = pod_index_label
    if sub_group is not None:
        request["subGroupIndexLabel"], request["subGroupCount"] = sub_group
    group = annotations.get(f"{_TAS}group-name")
    if group is not None and ("required" in request or "preferred" in request):
        request["podSetGroupName"] = str(group)
    return request


def info_for(infos: Sequence[PodSetInfo], name: str, index: int) -> PodSetInfo | None:
    """The info of pod set ``name`` (by position when the names differ, as a one-pod-set kind's may)."""
    for info in infos:
        if info.name == name:
            return info
    return infos[index] if index < len(infos) else None


# Set by the API server, never part of what a worker copy is made from.
_SERVER_FIELDS = ("resourceVersion", "generation", "deletionTimestamp", "finalizers")


def identity(meta: ObjectMeta) -> dict[str, Any]:
    """An object's metadata as its ``manifest()`` carries it: without the API server's fields."""
    out = meta_to_dict(meta)
    for name in _SERVER_FIELDS:
        out.pop(name, None)
    return out


# --- the suspend flag -------------------------------------------------------------------------------------

SPEC_SUSPEND: tuple[str, ...] = ("spec", "suspend")


def suspend_path(adapter: object | None) -> tuple[str, ...]:
    """Where a kind keeps its suspend flag: ``spec.suspend``, unless its adapter names another
    path in ``suspend_path`` (a Kubeflow job's ``spec.runPolicy.suspend``)."""
    return tuple(getattr(adapter, "suspend_path", SPEC_SUSPEND))


def get_path(manifest: Mapping[str, Any], path: Sequence[str]) -> Any:
    """The value at ``path`` in a manifest (None when any step is missing or no object)."""
    node: Any = manifest
    for step in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(step)
    return node


def set_path(manifest: dict[str, Any], path: Sequence[str], value: Any) -> bool:
    """Set the value at ``path``, making the objects on the way; whether it changed."""
    node = manifest
    for step in path[:-1]:
        child = node.get(step)
        if not isinstance(child, dict):
            child = node[step] = {}
        node = child
    if path[-1] in node and node[path[-1]] == value and type(node[path[-1]]) is type(value):
        return False
    node[path[-1]] = value
    return True


def json_patch_set(manifest: Mapping[str, Any], path: Sequence[str], value: Any) -> list[dict[str, Any]]:
    """The JSONPatch operations that set ``path`` to ``value`` (adding the missing objects on the way)."""
    ops: list[dict[str, Any]] = []
    target: Any = manifest
    for i, key in enumerate(path):
        pointer = "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in path[: i + 1])
        last = i == len(path) - 1
        if not isinstance(target, Mapping) or key not in target or target.get(key) is None:
            ops.append({"op": "add", "path": pointer, "value": value if last else _nested(path[i + 1:], value)})
            return ops
        if last:
            ops.append({"op": "replace", "path": pointer, "value": value})
            return ops
        if not isinstance(target[key], Mapping):
            ops.append({"op": "replace", "path": pointer, "value": _nested(path[i + 1:], value)})
            return ops
        target = target[key]
    return ops


def _nested(path: Sequence[str], value: Any) -> Any:
    for key in reversed(path):
        value = {key: value}
    return value
