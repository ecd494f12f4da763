"""Kueue API version conversion at the manifest level.

v1beta2 is the internal (hub) form, as it is Kueue's storage version; v1beta1
manifests are converted on the way in and can be produced on the way out, so
users moving between Kueue and mkhub change nothing. Only the fields Kueue's
own conversion functions rename are touched; everything else passes through.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from .errors import FieldErrors
from .topology_assignment import TopologyAssignment, read_topology_assignment, to_v1beta1, to_v1beta2

KUEUE_GROUP = "kueue.x-k8s.io"
V1BETA1 = f"{KUEUE_GROUP}/v1beta1"
V1BETA2 = f"{KUEUE_GROUP}/v1beta2"
KUEUE_VERSIONS = (V1BETA1, V1BETA2)

WORKLOAD_PRIORITY_CLASS_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
POD_PRIORITY_CLASS_SOURCE = "scheduling.k8s.io/priorityclass"
_SOURCE_TO_REF = {
    WORKLOAD_PRIORITY_CLASS_SOURCE: ("kueue.x-k8s.io", "WorkloadPriorityClass"),
    POD_PRIORITY_CLASS_SOURCE: ("scheduling.k8s.io", "PriorityClass"),
}
_REF_TO_SOURCE = {v: k for k, v in _SOURCE_TO_REF.items()}




_SCALARS = (str, int, float, bool, type(None))


def json_copy(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars), several times faster than
    :func:`copy.deepcopy`; anything else is deep-copied the general way."""
    if isinstance(value, dict):
        return {k: v if isinstance(v, _SCALARS) else json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if isinstance(v, _SCALARS) else json_copy(v) for v in value]
    if isinstance(value, _SCALARS):
        return value
    return copy.deepcopy(value)


def to_internal(manifest: dict[str, Any], *, in_place: bool = False) -> dict[str, Any]:
    """A deep copy in v1beta2 form (non-Kueue objects are copied unchanged); ``in_place``:
    ``manifest`` itself, converted (for a caller that gives it up)."""
    out: dict[str, Any] = manifest if in_place else json_copy(manifest)
    if out.get("apiVersion") != V1BETA1:
        return out
    out["apiVersion"] = V1BETA2
    spec = out.get("spec")
    status = out.get("status")
    kind = out.get("kind")
    if isinstance(spec, dict):
        if kind == "ClusterQueue":
            _cluster_queue_up(spec)
        elif kind == "Workload":
            _workload_spec_up(spec)
        elif kind == "MultiKueueCluster":
            _mk_cluster_up(spec)
    if isinstance(status, dict):
        if kind == "Workload" and "accumulatedPastExexcutionTimeSeconds" in status:
            status["accumulatedPastExecutionTimeSeconds"] = status.pop("accumulatedPastExexcutionTimeSeconds")
        elif kind == "LocalQueue" and "flavorUsage" in status:
            status["flavorsUsage"] = status.pop("flavorUsage")
        if kind == "Workload":
            _topology_assignments(status, to_v1beta2)
    return out


def to_version(manifest: dict[str, Any], api_version: str) -> dict[str, Any]:
    """A deep copy of an internal (v1beta2) manifest in ``api_version`` form."""
    out: dict[str, Any] = json_copy(manifest)
    if api_version != V1BETA1 or out.get("apiVersion") != V1BETA2:
        return out
    out["apiVersion"] = V1BETA1
    spec = out.get("spec")
    status = out.get("status")
    kind = out.get("kind")
    if isinstance(spec, dict):
        if kind == "ClusterQueue":
            _cluster_queue_down(spec)
        elif kind == "Workload":
            _workload_spec_down(spec)
        elif kind == "MultiKueueCluster":
            _mk_cluster_down(spec)
        elif kind == "MultiKueueConfig":
            spec.pop("quotaManagement", None)  # not in v1beta1
    if isinstance(status, dict):
        if kind == "Workload" and "accumulatedPastExecutionTimeSeconds" in status:
            status["accumulatedPastExexcutionTimeSeconds"] = status.pop("accumulatedPastExecutionTimeSeconds")
        elif kind == "LocalQueue" and "flavorsUsage" in status:
            status["flavorUsage"] = status.pop("flavorsUsage")
        if kind == "Workload":
            _topology_assignments(status, to_v1beta1)
            status.pop("preemptionGates", None)  # v1beta2 only
    return out


def _topology_assignments(status: dict[str, Any], shape: Callable[[TopologyAssignment], dict[str, Any]]) -> None:
    """v1beta1 writes a pod set's topology assignment as levels + domains, v1beta2 compressed into slices."""
    admission = status.get("admission")
    if not isinstance(admission, dict):
        return
    for psa in admission.get("podSetAssignments") or []:
        if isinstance(psa, dict) and psa.get("topologyAssignment") is not None:
            ta = read_topology_assignment(psa["topologyAssignment"], "", FieldErrors())
            if ta is not None:
                psa["topologyAssignment"] = shape(ta)


def _cluster_queue_up(spec: dict[str, Any]) -> None:
    if "cohort" in spec:
        spec["cohortName"] = spec.pop("cohort")
    checks = spec.pop("admissionChecks", None)
    if isinstance(checks, list) and checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": name} for name in checks]}
    ff = spec.get("flavorFungibility")
    if isinstance(ff, dict):
        if ff.get("whenCanPreempt") == "Preempt":
            ff["whenCanPreempt"] = "MayStopSearch"
        if ff.get("whenCanBorrow") == "Borrow":
            ff["whenCanBorrow"] = "MayStopSearch"


def _cluster_queue_down(spec: dict[str, Any]) -> None:
    if "cohortName" in spec:
        spec["cohort"] = spec.pop("cohortName")
    spec.pop("concurrentAdmissionPolicy", None)  # not in v1beta1: Kueue's conversion drops it


def _workload_spec_up(spec: dict[str, Any]) -> None:
    name = spec.pop("priorityClassName", None)
    source = spec.pop("priorityClassSource", None)
    # As Kueue's Convert_v1beta1_WorkloadSpec_To_v1beta2_WorkloadSpec: only the two known sources
    # map to a priorityClassRef; a name with an empty source is dropped.
    if name and source in _SOURCE_TO_REF:
        group, kind = _SOURCE_TO_REF[source]
        spec["priorityClassRef"] = {"group": group, "kind": kind, "name": name}


def _workload_spec_down(spec: dict[str, Any]) -> None:
    spec.pop("preemptionGates", None)  # v1beta2 only: Kueue's conversion drops it
    ref = spec.pop("priorityClassRef", None)
    if isinstance(ref, dict):
        source = _REF_TO_SOURCE.get((str(ref.get("group", "")), str(ref.get("kind", ""))))
        if source:
            spec["priorityClassSource"] = source
            spec["priorityClassName"] = ref.get("name", "")


def _mk_cluster_up(spec: dict[str, Any]) -> None:
    source: dict[str, Any] = {}
    kubeconfig = spec.pop("kubeConfig", None)
    if isinstance(kubeconfig, dict) and kubeconfig.get("location"):
        source["kubeConfig"] = kubeconfig
    profile = spec.pop("clusterProfileRef", None)
    if isinstance(profile, dict):
        source["clusterProfileRef"] = profile
    if source:
        spec["clusterSource"] = source


def _mk_cluster_down(spec: dict[str, Any]) -> None:
    source = spec.pop("clusterSource", None)
    if isinstance(source, dict):
        if "kubeConfig" in source:
            spec["kubeConfig"] = source["kubeConfig"]
        if "clusterProfileRef" in source:
            spec["clusterProfileRef"] = source["clusterProfileRef"]
