"""Plain ``v1`` Pods on the job framework (Kueue's ``pkg/controller/jobs/pod``, single-Pod half).

A Pod labelled ``kueue.x-k8s.io/queue-name`` is one Workload (``pod-<name>-<hash>``, one pod set
``main`` of one pod, the Pod its controller owner). Kueue's webhook marks it at creation: the
``kueue.x-k8s.io/managed=true`` label, the ``kueue.x-k8s.io/managed`` finalizer, the
``kueue.x-k8s.io/admission`` scheduling gate and the ``kueue.x-k8s.io/role-hash`` annotation
(:func:`default_at_creation`). Admission ungates it with the flavors' nodeSelector and tolerations
merged in (:func:`ungate`; kube-apiserver only lets a *gated* Pod's nodeSelector and tolerations
grow, in the same update that removes the gate). A Pod cannot be suspended once running: Kueue
stops it by marking it ``TerminationTarget`` and deleting it (:func:`pods_to_stop`). Pod groups,
many Pods as one Workload, are :mod:`.pod_group`'s.

Everything here is pure: reads take a :class:`Pod` (:func:`read_pod`), writes change a manifest.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config import Configuration
from ..errors import FieldError, FieldErrors, ValidationError
from ..limits import validate_annotations, validate_labels
from ..meta import ObjectMeta, format_time, meta_to_dict, read_meta, read_time
from ..others import MAX_EXEC_TIME_LABEL, QUEUE_NAME_LABEL
from ..pods import PodSpecInfo, read_pod_template
from ..quantity import QuantityError, resource_value
from ..reader import Reader
from ..validation import NOT_DNS_SUBDOMAIN, is_dns_subdomain
from ..workload import ADMITTED, DEFAULT_POD_SET_NAME, EVICTED, FINISHED, PodSet, Workload
from .framework import Manifest, Outcome, PodSetInfo, info_for, topology_request
from .management import manages

FRAMEWORK = "pod"
SCHEDULING_GATE = "kueue.x-k8s.io/admission"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"  # TAS's gate: dropped on ungating when the admission does not keep it
MANAGED_LABEL = "kueue.x-k8s.io/managed"
MANAGED_VALUE = "true"
POD_FINALIZER = "kueue.x-k8s.io/managed"  # Kueue's finalizer has the managed label's name
GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
GROUP_TOTAL_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
ROLE_HASH_ANNOTATION = "kueue.x-k8s.io/role-hash"
RETRIABLE_IN_GROUP_ANNOTATION = "kueue.x-k8s.io/retriable-in-group"
FAST_ADMISSION_ANNOTATION = "kueue.x-k8s.io/pod-group-fast-admission"
SERVING_ANNOTATION = "kueue.x-k8s.io/pod-group-serving"
SUSPENDED_BY_PARENT_ANNOTATION = "kueue.x-k8s.io/pod-suspending-parent"
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
POD_INDEX_LABEL = "kueue.x-k8s.io/pod-group-pod-index"  # the label indexing a group's pods (TAS)
POD_INDEX_LABEL_ANNOTATION = "kueue.x-k8s.io/pod-group-pod-index-label"  # names the label it is copied from
TERMINATION_TARGET = "TerminationTarget"  # the condition Kueue sets on a Pod it stops

_LABEL_PATH = "metadata.labels[{}]"
_ANNOTATION_PATH = "metadata.annotations[{}]"
# The pod spec fields Kueue's role hash covers (``utilpod.SpecShape``); containers and init
# containers contribute only their resource requests and ports.
_SHAPE_FIELDS = ("nodeSelector", "affinity", "tolerations", "runtimeClassName", "priority",
                 "topologySpreadConstraints", "resourceClaims")
# What a worker copy keeps of the manager's metadata (Kueue's CloneObjectMetaForCreation).
_CREATION_META = ("name", "namespace", "labels", "annotations")


@dataclass(slots=True)
class Pod:
    """A ``v1`` Pod as far as Kueue's pod integration reads it."""

    meta: ObjectMeta
    spec: dict[str, Any]  # the raw spec, the pod set's template
    pod_spec: PodSpecInfo
    phase: str = ""
    message: str = ""
    ready: bool = False  # the Ready condition is True
    node_name: str = ""
    scheduling_gates: tuple[str, ...] = ()
    # When the Pod was seen failing (ContainersReady False, reason PodFailed): Kueue's lastActiveTime.
    failed_at: float | None = None

    kind = "Pod"

    @property
    def kueue_managed(self) -> bool:
        """Kueue's webhook marked it (a Pod without the label, e.g. created before Kueue, is skipped)."""
        return self.meta.labels.get(MANAGED_LABEL) == MANAGED_VALUE

    @property
    def group_name(self) -> str:
        """The pod group it belongs to ("" for a single Pod)."""
        return self.meta.labels.get(GROUP_NAME_LABEL, "")

    @property
    def gated(self) -> bool:
        return SCHEDULING_GATE in self.scheduling_gates

    @property
    def terminated(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def deleting(self) -> bool:
        return self.meta.deletion_timestamp is not None


def read_pod(manifest: Any) -> Pod:
    """The typed Pod of a manifest; raises :class:`ValidationError` (one line) naming each bad field."""
    if not isinstance(manifest, Mapping):
        raise ValidationError("Pod", "<unnamed>", "", [FieldError("", "a manifest must be a mapping", manifest, True)])
    errs = FieldErrors()
    r = Reader(manifest, "", errs)
    meta = read_meta(r, True)
    validate_labels(meta.labels, "metadata.labels", errs)
    validate_annotations(meta.annotations, "metadata.annotations", errs)
    spec = r.child("spec")
    pod_spec = read_pod_template(Reader({"spec": dict(spec.data)}, "", errs))
    if not spec.items("containers") and not errs:
        errs.required(spec.at("containers"))
    phase, message, ready, failed_at = _read_status(r.child("status"))
    pod = Pod(
        meta=meta,
        spec=copy.deepcopy(dict(spec.data)),
        pod_spec=pod_spec,
        phase=phase,
        message=message,
        ready=ready,
        node_name=spec.string("nodeName"),
        scheduling_gates=tuple(g.string("name") for g in spec.items("schedulingGates")),
        failed_at=failed_at,
    )
    errs.raise_for("Pod", meta.name, meta.namespace)
    return pod


def _read_status(status: Reader) -> tuple[str, str, bool, float | None]:
    """phase, message, Ready, and when it was seen failing."""
    ready = False
    failed_at = None
    for cond in status.items("conditions"):
        if cond.string("type") == "Ready":
            ready = cond.string("status") == "True"
        elif cond.string("type") == "ContainersReady" and cond.string("status") == "False" \
                and cond.string("reason") == "PodFailed":
            failed_at = read_time(cond, "lastTransitionTime")
    return status.string("phase"), status.string("message"), ready, failed_at


# What a Pod's writes after its creation change, besides its status: read again from the last Pod.
_VOLATILE_META = ("resourceVersion", "managedFields")


def _without(data: Any, keys: tuple[str, ...]) -> Any:
    return {k: v for k, v in data.items() if k not in keys} if isinstance(data, Mapping) else data


def reread_pod(manifest: Any, last: tuple[Mapping[str, Any], Pod] | None) -> Pod:
    """:func:`read_pod` of a new version of the Pod ``last`` holds (its manifest and Pod). When only its
    resourceVersion, managedFields, ``spec.nodeName`` or status changed (a Pod's binding and its
    kubelet's reports: most of its writes), the last Pod is reused with those read again: the label
    and annotation checks, the metadata and the spec's copy are most of read_pod's time, per event."""
    if last is None or not isinstance(manifest, Mapping):
        return read_pod(manifest)
    old, pod = last
    meta, spec = manifest.get("metadata"), manifest.get("spec")
    if not isinstance(meta, Mapping) or not isinstance(spec, Mapping):
        return read_pod(manifest)
    node = spec.get("nodeName", "")
    if (not isinstance(node, str) or _without(meta, _VOLATILE_META) != _without(old.get("metadata"), _VOLATILE_META)
            or _without(spec, ("nodeName",)) != _without(old.get("spec"), ("nodeName",))):
        return read_pod(manifest)
    errs = FieldErrors()
    phase, message, ready, failed_at = _read_status(Reader(manifest, "", errs).child("status"))
    errs.raise_for("Pod", pod.meta.name, pod.meta.namespace)
    out_spec = pod.spec
    if node != pod.node_name or ("nodeName" in spec) != ("nodeName" in pod.spec):
        out_spec = {k: v for k, v in pod.spec.items() if k != "nodeName"}
        if "nodeName" in spec:
            out_spec["nodeName"] = node
    rv = meta.get("resourceVersion")
    return dataclasses.replace(pod, meta=dataclasses.replace(pod.meta, resource_version=str(rv or "")), spec=out_spec,
                               phase=phase, message=message, ready=ready, node_name=node, failed_at=failed_at)


# --- roles ---------------------------------------------------------------------------------------------


def role_hash(spec: Mapping[str, Any]) -> str:
    """The role of a pod spec: 8 hex of sha256 over the fields Kueue's ``GenerateRoleHash`` covers
    (each container's and init container's ``resources.requests`` and ``ports``; ``nodeSelector``,
    ``affinity``, ``tolerations``, ``runtimeClassName``, ``priority``, ``topologySpreadConstraints``,
    ``overhead``, ``resourceClaims``; pod-level ``resources.requests`` when set). Quantities are
    hashed by value ("1" and "1000m" CPU are one role); the digest is mkhub's own, stable across runs
    but not byte-equal to Kueue's (which hashes Go's JSON of the same shape)."""
    shape: dict[str, Any] = {
        "initContainers": _containers_shape(spec.get("initContainers")),
        "containers": _containers_shape(spec.get("containers")),
        "overhead": _requests_shape(spec.get("overhead")),
    }
    for name in _SHAPE_FIELDS:
        shape[name] = spec.get(name)
    resources = spec.get("resources")
    if isinstance(resources, Mapping):
        shape["resources"] = _requests_shape(resources.get("requests"))
    text = json.dumps(shape, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode(errors="surrogatepass")).hexdigest()[:8]


def _containers_shape(containers: Any) -> list[Any] | None:
    if not isinstance(containers, list):
        return None
    out: list[Any] = []
    for c in containers:
        c = c if isinstance(c, Mapping) else {}
        resources = c.get("resources")
        requests = resources.get("requests") if isinstance(resources, Mapping) else None
        out.append({"resources": {"requests": _requests_shape(requests)}, "ports": c.get("ports")})
    return out


def _requests_shape(requests: Any) -> Any:
    if not isinstance(requests, Mapping):
        return requests
    out = {}
    for name, value in requests.items():
        try:
            out[str(name)] = str(resource_value(str(name), value))
        except (QuantityError, TypeError, ValueError):
            out[str(name)] = str(value)
    return out


# --- which Pods Kueue manages and what its webhook does ------------------------------------------------


def manages_pod(config: Configuration, pod: Pod, namespace_labels: Mapping[str, str] | None,
                owner_managed: bool = False) -> bool:
    """Kueue's pod webhook would manage this Pod: the management rule with framework ``pod``, and no
    owner Kueue already manages (a Job's pods are the Job's, never queued on their own)."""
    if owner_managed:
        return False
    return manages(config, FRAMEWORK, pod.meta.labels.get(QUEUE_NAME_LABEL, ""),
                   pod.meta.namespace, namespace_labels)


def default_at_creation(manifest: Manifest) -> Manifest:
    """What Kueue's webhook does to a Pod it manages, on a copy: the managed label, the finalizer,
    the admission gate and the role hash (computed before anything Kueue adds to the spec).
    Raises :class:`ValidationError` (one line) for a manifest :func:`read_pod` refuses."""
    read_pod(manifest)
    out = copy.deepcopy(manifest)
    meta = out.setdefault("metadata", {})
    spec = out["spec"]
    annotations = meta["annotations"] = dict(meta.get("annotations") or {})
    if SUSPENDED_BY_PARENT_ANNOTATION not in annotations:
        meta["labels"] = {**(meta.get("labels") or {}), MANAGED_LABEL: MANAGED_VALUE}
        finalizers = list(meta.get("finalizers") or [])
        meta["finalizers"] = finalizers if POD_FINALIZER in finalizers else finalizers + [POD_FINALIZER]
    annotations.setdefault(ROLE_HASH_ANNOTATION, role_hash(spec))
    index_label = annotations.get(POD_INDEX_LABEL_ANNOTATION)
    if index_label is not None:  # Kueue's webhook (TAS on): the pod's index under the label the ungater's ranks read
        labels = meta["labels"] = dict(meta.get("labels") or {})
        labels[POD_INDEX_LABEL] = str(labels.get(str(index_label), ""))
    gate(out)
    return out


def manifest_gated(manifest: Manifest) -> bool:
    spec = manifest.get("spec")
    gates = spec.get("schedulingGates") if isinstance(spec, dict) else None
    return isinstance(gates, list) and any(isinstance(g, dict) and g.get("name") == SCHEDULING_GATE for g in gates)


def gate(manifest: Manifest) -> None:
    """Add Kueue's scheduling gate (kube-apiserver accepts new gates only at creation)."""
    spec = manifest.setdefault("spec", {})
    if not manifest_gated(manifest):
        spec["schedulingGates"] = list(spec.get("schedulingGates") or []) + [{"name": SCHEDULING_GATE}]


def validate_pod(manifest: Manifest, old: Manifest | None = None) -> ValidationError | None:
    """Kueue's pod webhook validation (create, or update from ``old``): the queue name a DNS
    subdomain, the maximum-execution-time label a positive integer, the managed label's value,
    the group name label and total-count annotation together, the count a positive integer, the
    group name a DNS subdomain, a prebuilt workload named as the group. On update the group name is
    immutable, an unretriable group cannot become retriable, and the queue name (and the maximum
    execution time) cannot change once the Pod runs (ungated and not finished)."""
    if not isinstance(manifest, dict):
        return ValidationError("Pod", "<unnamed>", "", [FieldError("", "a manifest must be a mapping", manifest, True)])
    meta = manifest_meta(manifest)
    labels = _str_map(meta.get("labels"))
    annotations = _str_map(meta.get("annotations"))
    errs = FieldErrors()
    queue = labels.get(QUEUE_NAME_LABEL)
    if queue is not None and not is_dns_subdomain(queue):
        errs.invalid(_LABEL_PATH.format(QUEUE_NAME_LABEL), queue, NOT_DNS_SUBDOMAIN)
    max_exec = labels.get(MAX_EXEC_TIME_LABEL)
    if max_exec is not None:
        seconds = atoi(max_exec)
        if seconds is None:
            errs.invalid(_LABEL_PATH.format(MAX_EXEC_TIME_LABEL), max_exec, _atoi_error(max_exec))
        elif seconds <= 0:
            errs.invalid(_LABEL_PATH.format(MAX_EXEC_TIME_LABEL), seconds, "should be greater than 0")
    managed = labels.get(MANAGED_LABEL)
    if managed is not None and managed != MANAGED_VALUE:
        errs.add(_LABEL_PATH.format(MANAGED_LABEL), f"Forbidden: managed label value can only be '{MANAGED_VALUE}'")
    group_metadata_errors(labels, annotations, errs)
    prebuilt = labels.get(PREBUILT_WORKLOAD_LABEL, "")
    group = labels.get(GROUP_NAME_LABEL, "")
    if group and prebuilt and prebuilt != group:
        errs.invalid(_LABEL_PATH.format(PREBUILT_WORKLOAD_LABEL), prebuilt, "prebuilt workload and pod group should be equal")
    if isinstance(old, dict):
        old_meta = manifest_meta(old)
        old_labels = _str_map(old_meta.get("labels"))
        running = not _manifest_suspended(manifest)
        if running and labels.get(QUEUE_NAME_LABEL, "") != old_labels.get(QUEUE_NAME_LABEL, ""):
            errs.invalid(_LABEL_PATH.format(QUEUE_NAME_LABEL), labels.get(QUEUE_NAME_LABEL, ""), "field is immutable")
        if (running or not _manifest_suspended(old)) and \
                labels.get(MAX_EXEC_TIME_LABEL, "") != old_labels.get(MAX_EXEC_TIME_LABEL, ""):
            errs.invalid(_LABEL_PATH.format(MAX_EXEC_TIME_LABEL), labels.get(MAX_EXEC_TIME_LABEL, ""), "field is immutable")
        old_group = old_labels.get(GROUP_NAME_LABEL, "")
        if old_group and group != old_group:
            errs.invalid(_LABEL_PATH.format(GROUP_NAME_LABEL), group, "field is immutable")
        old_unretriable = _str_map(old_meta.get("annotations")).get(RETRIABLE_IN_GROUP_ANNOTATION) == "false"
        if group and old_unretriable and annotations.get(RETRIABLE_IN_GROUP_ANNOTATION) != "false":
            errs.add(_ANNOTATION_PATH.format(RETRIABLE_IN_GROUP_ANNOTATION),
                     "Forbidden: unretriable pod group can't be converted to retriable")
    if not errs:
        return None
    return ValidationError("Pod", str(meta.get("name") or "<unnamed>"), str(meta.get("namespace") or ""), errs.items)


def _manifest_suspended(manifest: Manifest) -> bool:
    """Kueue's ``IsSuspended`` of one Pod: gated, or finished."""
    status = manifest.get("status")
    phase = status.get("phase") if isinstance(status, dict) else None
    return manifest_gated(manifest) or phase in ("Succeeded", "Failed")


def _atoi_error(text: str) -> str:
    """Go's ``strconv.Atoi`` error, as Kueue's messages quote it."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    why = "value out of range" if digits and digits.isascii() and digits.isdigit() else "invalid syntax"
    return f"strconv.Atoi: parsing {json.dumps(text)}: {why}"


def group_metadata_errors(labels: Mapping[str, str], annotations: Mapping[str, str], errs: FieldErrors) -> int | None:
    """Kueue's ``validatePodGroupMetadata`` of one Pod; the group's total count when it is valid."""
    detail = f"both the '{GROUP_TOTAL_COUNT_ANNOTATION}' annotation and the '{GROUP_NAME_LABEL}' label should be set"
    group = labels.get(GROUP_NAME_LABEL, "")
    raw = annotations.get(GROUP_TOTAL_COUNT_ANNOTATION)
    if not group:
        if raw is not None:
            errs.add(_LABEL_PATH.format(GROUP_NAME_LABEL), f"Required value: {detail}")
        return None
    if len(group) > 253:
        errs.invalid(_LABEL_PATH.format(GROUP_NAME_LABEL), group, "must be no more than 253 characters")
    elif not is_dns_subdomain(group):
        errs.invalid(_LABEL_PATH.format(GROUP_NAME_LABEL), group, NOT_DNS_SUBDOMAIN)
    if raw is None:
        errs.add(_ANNOTATION_PATH.format(GROUP_TOTAL_COUNT_ANNOTATION), f"Required value: {detail}")
        return None
    count = atoi(raw)
    path = _ANNOTATION_PATH.format(GROUP_TOTAL_COUNT_ANNOTATION)
    if count is None:
        errs.invalid(path, raw, _atoi_error(raw))
        return None
    if count < 1:
        errs.invalid(path, raw, f"incorrect annotation value '{GROUP_TOTAL_COUNT_ANNOTATION}={raw}': "
                                "group total count should be greater than zero")
        return None
    return count


def atoi(text: str) -> int | None:
    """Go's ``strconv.Atoi``: optional sign, ASCII digits only, int64."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def manifest_meta(manifest: Manifest) -> dict[str, Any]:
    meta = manifest.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


# --- admission: ungate with the flavors' node selector and tolerations ---------------------------------


def ungate(manifest: Manifest, info: PodSetInfo) -> str | None:
    """Kueue's ``prepare``: merge the admission into a gated Pod and remove the gate, in place.

    Labels, annotations and nodeSelector entries are added (one naming a key the Pod already has
    with another value is a conflict, as in Kueue's ``PodSetInfo.Merge``: the Pod is left as it was
    and the one-line reason returned); tolerations are appended unless already there. A Pod that
    is not gated is left alone (kube-apiserver would refuse to change its scheduling directives).
    """
    if not manifest_gated(manifest):
        return None
    spec = manifest["spec"]
    meta = manifest.setdefault("metadata", {})
    name = f"{meta.get('namespace', '')}/{meta.get('name', '')}".lstrip("/")
    for what, current, more in (("annotations", meta.get("annotations"), info.annotations),
                                ("labels", meta.get("labels"), info.labels),
                                ("nodeSelector", spec.get("nodeSelector"), info.node_selector)):
        for key, value in more.items():
            if isinstance(current, dict) and key in current and current[key] != value:
                return (f'Pod "{name}": the admission\'s {what} {key}={value} conflicts with the '
                        f"Pod's {key}={current[key]}")
    if info.annotations:
        meta["annotations"] = {**(meta.get("annotations") or {}), **info.annotations}
    if info.labels:
        meta["labels"] = {**(meta.get("labels") or {}), **info.labels}
    if info.node_selector:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **info.node_selector}
    if info.tolerations:
        current = list(spec.get("tolerations") or [])
        spec["tolerations"] = current + [t for t in info.tolerations if t not in current]
    # TAS's gate goes too: the topology domain's nodeSelector came with the info (pod_group.ungate_group).
    spec["schedulingGates"] = [g for g in spec.get("schedulingGates") or []
                               if not (isinstance(g, dict) and g.get("name") in (SCHEDULING_GATE, TOPOLOGY_GATE))]
    if not spec["schedulingGates"]:
        del spec["schedulingGates"]
    return None


class InjectionConflict(ValueError):
    """The admission names a label, annotation or nodeSelector key the Pod already sets otherwise."""


def json_patch(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """RFC 6902 operations that turn ``before`` into ``after``: maps are walked key by key, anything
    else is replaced whole (the webhook's patch, and the controllers' ungating patch)."""
    if isinstance(before, dict) and isinstance(after, dict):
        ops: list[dict[str, Any]] = []
        for key in before:
            if key not in after:
                ops.append({"op": "remove", "path": f"{path}/{_pointer(key)}"})
        for key, value in after.items():
            where = f"{path}/{_pointer(key)}"
            if key not in before:
                ops.append({"op": "add", "path": where, "value": copy.deepcopy(value)})
            else:
                ops.extend(json_patch(before[key], value, where))
        return ops
    if before == after and type(before) is type(after):
        return []
    return [{"op": "replace", "path": path, "value": copy.deepcopy(after)}]


def _pointer(key: Any) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


# --- stopping: Kueue deletes the Pods of an evicted or deleted Workload ----------------------------------


def pods_to_stop(pods: Iterable[Pod], workload_deleted: bool = False) -> list[Pod]:
    """The Pods Kueue's ``Stop`` marks ``TerminationTarget`` and deletes: those not already being
    deleted, and, unless the Workload itself is gone, not already gated or finished."""
    out = []
    for pod in pods:
        if pod.deleting:
            continue
        if not workload_deleted and (pod.gated or pod.terminated):
            continue
        out.append(pod)
    return out


def termination_target(reason: str, message: str, now: float) -> dict[str, Any]:
    """The status condition Kueue applies to a Pod before deleting it (``reason`` is the stop reason,
    e.g. ``WorkloadEvicted``, ``NoMatchingWorkload``, ``WorkloadDeleted``)."""
    return {"type": TERMINATION_TARGET, "status": "True", "reason": reason, "message": message,
            "lastTransitionTime": format_time(now)}


def remove_finalizer(manifest: Manifest) -> bool:
    """Drop Kueue's finalizer from a Pod manifest; whether it was there."""
    meta = manifest.get("metadata")
    if not isinstance(meta, dict) or POD_FINALIZER not in (meta.get("finalizers") or []):
        return False
    meta["finalizers"] = [f for f in meta["finalizers"] if f != POD_FINALIZER]
    if not meta["finalizers"]:
        del meta["finalizers"]
    return True


# --- the adapter ----------------------------------------------------------------------------------------


def pod_set_of(pod: Pod, name: str = DEFAULT_POD_SET_NAME, count: int = 1) -> PodSet:
    """Kueue's ``constructPodSet``: the template is the Pod's spec alone (its gates included: Kueue
    compares pod sets by containers and tolerations only); TAS requests from the Pod's annotations."""
    template = {"spec": copy.deepcopy(pod.spec)}
    request = topology_request({"metadata": {"annotations": pod.meta.annotations}}, POD_INDEX_LABEL)
    return PodSet(name=name, count=count, template=template, spec=pod.pod_spec, topology_request=request)


def pod_outcome(phase: str, message: str) -> Outcome | None:
    if phase == "Succeeded":
        return "succeeded", message or "Pod succeeded"
    if phase == "Failed":
        return "failed", message or "Pod failed"
    return None


class PodAdapter:
    """A single Pod (not in a group) as a :class:`~.framework.JobAdapter`."""

    framework = FRAMEWORK
    api_version = "v1"
    kind = "Pod"
    controller_template_labels: frozenset[str] = frozenset()
    managed_by_path: tuple[str, ...] = ()  # a Pod has no managedBy: MultiKueue copies it by the prebuilt workload label
    controller_name = "v1_pod"  # Kueue's integration name: Pods have no controller of their own
    # The whole status goes back from a worker's Pod (Kueue's pod MultiKueue adapter copies it all).
    mirrored_status_fields: tuple[str, ...] = (
        "phase", "conditions", "message", "reason", "nominatedNodeName", "hostIP", "hostIPs", "podIP", "podIPs",
        "startTime", "initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses", "qosClass",
        "resize", "resourceClaimStatuses")

    def pod_sets(self, pod: Pod) -> list[PodSet]:
        return [pod_set_of(pod)]

    def pod_spec_priority_class(self, pod: Pod) -> str:
        return pod.pod_spec.priority_class_name

    def is_suspended(self, pod: Pod) -> bool:
        return pod.terminated or pod.gated

    def managed_by(self, pod: Pod) -> str:
        return ""

    def finished(self, pod: Pod) -> Outcome | None:
        return pod_outcome(pod.phase, pod.message)

    def pods_ready(self, pod: Pod) -> bool:
        return pod.ready

    def suspend(self, manifest: Manifest) -> None:
        """Gate the Pod: only a Pod being created can be suspended; a running one is stopped by
        deleting it (:func:`pods_to_stop`)."""
        gate(manifest)

    def run_with_pod_sets_info(self, manifest: Manifest, infos: Sequence[PodSetInfo], pod_sets: Sequence[PodSet]) -> None:
        """Ungate with the admission; raises :class:`InjectionConflict` (one line) on a conflict."""
        info = info_for(infos, DEFAULT_POD_SET_NAME, 0)
        problem = ungate(manifest, info if info is not None else PodSetInfo(DEFAULT_POD_SET_NAME, 1))
        if problem is not None:
            raise InjectionConflict(problem)

    def restore_pod_sets_info(self, manifest: Manifest, pod_sets: Sequence[PodSet]) -> None:
        """The spec's nodeSelector and tolerations as the pod set kept them. Kueue never restores a
        Pod it ran (it deletes it); this serves a manifest not yet created, e.g. a re-gated copy."""
        if not pod_sets:
            return
        spec = manifest.setdefault("spec", {})
        original = (pod_sets[0].template or {}).get("spec") or {}
        for name in ("nodeSelector", "tolerations"):
            if original.get(name):
                spec[name] = copy.deepcopy(original[name])
            else:
                spec.pop(name, None)

    def manifest(self, pod: Pod) -> Manifest:
        meta = {k: copy.deepcopy(v) for k, v in meta_to_dict(pod.meta).items() if k in _CREATION_META or k == "uid"}
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": meta, "spec": copy.deepcopy(pod.spec)}

    def worker_copy(self, manifest: Manifest) -> Manifest:
        """The Pod a worker creates: name, namespace, labels and annotations of the manager's Pod,
        its spec without Kueue's gate (the agent runs it), no status."""
        meta = manifest.get("metadata") or {}
        out: Manifest = {"apiVersion": "v1", "kind": "Pod",
                         "metadata": {k: copy.deepcopy(meta[k]) for k in _CREATION_META if k in meta}}
        spec = copy.deepcopy(manifest.get("spec") or {})
        gates = [g for g in spec.get("schedulingGates") or [] if not (isinstance(g, dict) and g.get("name") == SCHEDULING_GATE)]
        if gates:
            spec["schedulingGates"] = gates
        else:
            spec.pop("schedulingGates", None)
        out["spec"] = spec
        return out

    def status_outcome(self, status: Manifest) -> Outcome | None:
        return pod_outcome(str(status.get("phase") or ""), str(status.get("message") or ""))

    def status_running(self, status: Manifest) -> bool:
        return str(status.get("phase") or "") == "Running"

    def status_terminal(self, status: Manifest) -> bool:
        return self.status_outcome(status) is not None

    def simulated_status(self, wl: Workload, pod: Pod, previous: Manifest | None, ready_at: float | None) -> Manifest:
        """The status the simulated Pod would have, from its Workload (embedded mode)."""
        prev = previous or {}
        admitted = wl.status.condition(ADMITTED)
        finished = wl.status.condition(FINISHED)
        if finished is not None and finished.is_true:
            ok = finished.reason == "Succeeded"
            return {"phase": "Succeeded" if ok else "Failed", "message": finished.message,
                    "startTime": prev.get("startTime") or format_time(finished.last_transition_time),
                    "conditions": [_condition("Ready", "False", "PodCompleted" if ok else "PodFailed")]}
        if admitted is not None and admitted.is_true and not wl.status.is_true(EVICTED):
            is_ready = ready_at is not None
            condition = _condition("Ready", "True" if is_ready else "False", "" if is_ready else "ContainersNotReady")
            if ready_at is not None:  # since when: a Deployment counts it available after minReadySeconds
                condition["lastTransitionTime"] = format_time(ready_at)
            return {"phase": "Running", "startTime": prev.get("startTime") or format_time(admitted.last_transition_time),
                    "conditions": [_condition("PodScheduled", "True", ""), condition]}
        return {"phase": "Pending", "conditions": [_condition("PodScheduled", "False", "SchedulingGated")]}


def _condition(type_: str, status: str, reason: str) -> dict[str, Any]:
    out = {"type": type_, "status": status}
    if reason:
        out["reason"] = reason
    return out


POD = PodAdapter()
