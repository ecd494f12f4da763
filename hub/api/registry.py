"""Every kind mkhub understands: how to parse, validate and name it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from . import fastjson
from .apps_kind import (
    APPS_VERSIONS,
    CRONJOB_VERSIONS,
    read_cronjob,
    read_deployment,
    read_replicaset,
    read_statefulset,
    spec_reader,
    validate_apps,
    validate_apps_update,
    validate_cronjob,
)
from .apps_kind import Workload as AppsObject
from .appwrapper_kind import (
    APPWRAPPER_API_VERSION,
    AppWrapper,
    read_appwrapper,
    validate_appwrapper,
    validate_appwrapper_update,
)
from .config import Configuration
from .conversion import KUEUE_VERSIONS, to_internal
from .dra import (
    DRA_VERSIONS,
    DraObject,
    read_device_class,
    read_resource_claim,
    read_resource_claim_template,
    validate_dra_object,
    validate_dra_update,
)
from .errors import FieldError, FieldErrors, ValidationError
from .jobkinds import register_external_frameworks
from .jobkinds.pod import Pod, read_pod, validate_pod
from .jobset_kind import JOBSET_API_VERSION, JobSet, read_jobset, validate_jobset, validate_jobset_update
from .kubeflow_kind import (
    FAMILY,
    KUBEFLOW_API_VERSION,
    KubeflowJob,
    reader_for,
    validate_kubeflow_job,
    validate_kubeflow_job_update,
)
from .limits import (
    MAX_OBJECT_BYTES,
    TooDeep,
    check_depth,
    copy_within_depth,
    validate_annotations,
    validate_labels,
)
from .lws_kind import LWS_API_VERSION, LeaderWorkerSet, read_lws, validate_lws, validate_lws_update
from .meta import ObjectMeta, meta_to_dict, read_meta
from .mpijob_kind import MPIJOB_API_VERSION, MPIJob, read_mpijob, validate_mpijob, validate_mpijob_update
from .others import (
    AdmissionCheck,
    Job,
    MultiKueueCluster,
    MultiKueueConfig,
    Namespace,
    WorkloadPriorityClass,
    read_admission_check,
    read_job,
    read_mk_cluster,
    read_mk_config,
    read_priority_class,
)
from .passive import (
    EVENT_VERSIONS,
    PROVISIONING_VERSIONS,
    Passive,
    read_event,
    read_provisioning_config,
    validate_event,
    validate_passive,
)
from .podbased_kind import KINDS as PODBASED_KINDS
from .podbased_kind import PodBasedObject
from .podbased_kind import reader as podbased_reader
from .podbased_kind import validate as validate_podbased
from .queues import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    read_cluster_queue,
    read_cohort,
    read_flavor,
    read_local_queue,
)
from .ray_kind import (
    RAY_API_VERSION,
    RayCluster,
    RayJob,
    RayService,
    read_raycluster,
    read_rayjob,
    read_rayservice,
    validate_ray_update,
    validate_raycluster,
    validate_rayjob,
    validate_rayservice,
)
from .reader import Reader
from .spark_kind import SPARK_API_VERSION, SparkApplication, read_spark, validate_spark
from .tas_kinds import (
    NODE_VERSIONS,
    TOPOLOGY_VERSIONS,
    Node,
    Topology,
    read_node,
    read_topology,
    validate_node,
    validate_topology,
    validate_topology_update,
)
from .trainjob_kind import (
    TRAINER_API_VERSION,
    TrainingRuntime,
    TrainJob,
    read_cluster_training_runtime,
    read_training_runtime,
    read_trainjob,
    validate_training_runtime,
    validate_trainjob,
    validate_trainjob_update,
)
from .validation import (
    validate_admission_check,
    validate_admission_check_update,
    validate_cluster_queue,
    validate_cluster_queue_update,
    validate_cohort,
    validate_dns_label_name,
    validate_flavor,
    validate_flavor_update,
    validate_job,
    validate_local_queue,
    validate_local_queue_update,
    validate_mk_cluster,
    validate_mk_config,
    validate_name,
    validate_priority_class,
    validate_workload,
    validate_workload_update,
)
from .workload import Workload, read_workload

ApiObject = (
    ResourceFlavor
    | ClusterQueue
    | Cohort
    | LocalQueue
    | Workload
    | WorkloadPriorityClass
    | AdmissionCheck
    | MultiKueueConfig
    | MultiKueueCluster
    | Namespace
    | Job
    | JobSet
    | KubeflowJob
    | LeaderWorkerSet
    | RayCluster
    | RayJob
    | RayService
    | MPIJob
    | TrainJob
    | TrainingRuntime
    | AppWrapper
    | SparkApplication
    | Pod
    | Passive
    | Topology
    | Node
    | AppsObject
    | PodBasedObject
    | DraObject
)


@dataclass(frozen=True)
class KindInfo:
    kind: str
    api_versions: tuple[str, ...]
    namespaced: bool
    plural: str
    short_names: tuple[str, ...]
    read: Callable[[Reader, ObjectMeta], Any]
    validate: Callable[[Any, FieldErrors], None]
    validate_update: Callable[[Any, Any, FieldErrors], None] | None = None
    # False for kinds that are stored and listed but never reach the engine (hub.api.passive).
    acted_on: bool = True
    # Said at apply time for a kind mkhub does not act on (empty: nothing to say).
    passive_note: str = ""


def _read_namespace(_: Reader, meta: ObjectMeta) -> Namespace:
    return Namespace(meta)


def _validate_namespace(ns: Namespace, errs: FieldErrors) -> None:
    validate_dns_label_name(ns.meta, errs)


def _read_pod(r: Reader, meta: ObjectMeta) -> Pod | None:
    """A Pod as Kueue's pod integration reads it (:func:`hub.api.jobkinds.pod.read_pod`)."""
    try:
        return read_pod(r.data)
    except ValidationError as exc:  # parse_object already reported the metadata's errors once
        r.errors.items.extend(e for e in exc.errors if e not in r.errors.items)
        return None


def _pod_manifest(pod: Pod) -> dict[str, Any]:
    return {"metadata": meta_to_dict(pod.meta), "spec": pod.spec, "status": {"phase": pod.phase}}


def _validate_pod(pod: Pod, errs: FieldErrors) -> None:
    """The API server's name rule, then Kueue's pod webhook (queue name, group metadata...)."""
    validate_name(pod.meta, errs, namespaced=True)
    refused = validate_pod(_pod_manifest(pod))
    if refused is not None:
        errs.items.extend(refused.errors)


def _validate_pod_update(old: Pod, new: Pod, errs: FieldErrors) -> None:
    refused = validate_pod(_pod_manifest(new), _pod_manifest(old))
    if refused is not None:
        errs.items.extend(refused.errors)


KINDS: dict[str, KindInfo] = {
    info.kind: info
    for info in (
        KindInfo("ResourceFlavor", KUEUE_VERSIONS, False, "resourceflavors", ("rf", "flavor", "flavors"),
                 read_flavor, validate_flavor, validate_flavor_update),
        KindInfo("ClusterQueue", KUEUE_VERSIONS, False, "clusterqueues", ("cq",),
                 read_cluster_queue, validate_cluster_queue, validate_cluster_queue_update),
        KindInfo("Cohort", KUEUE_VERSIONS, False, "cohorts", ("co",), read_cohort, validate_cohort),
        KindInfo("LocalQueue", KUEUE_VERSIONS, True, "localqueues", ("lq", "queue", "queues"),
                 read_local_queue, validate_local_queue, validate_local_queue_update),
        KindInfo("Workload", KUEUE_VERSIONS, True, "workloads", ("wl", "kwl", "kueueworkload", "kueueworkloads"),
                 read_workload, validate_workload, validate_workload_update),
        KindInfo("WorkloadPriorityClass", KUEUE_VERSIONS, False, "workloadpriorityclasses", ("wpc",),
                 read_priority_class, validate_priority_class),
        KindInfo("AdmissionCheck", KUEUE_VERSIONS, False, "admissionchecks", ("ac",),
                 read_admission_check, validate_admission_check, validate_admission_check_update),
        KindInfo("MultiKueueConfig", KUEUE_VERSIONS, False, "multikueueconfigs", ("mkconf",),
                 read_mk_config, validate_mk_config),
        KindInfo("MultiKueueCluster", KUEUE_VERSIONS, False, "multikueueclusters", ("mkc",),
                 read_mk_cluster, validate_mk_cluster),
        KindInfo("Namespace", ("v1",), False, "namespaces", ("ns",), _read_namespace, _validate_namespace),
        KindInfo("Job", ("batch/v1",), True, "jobs", (), read_job, validate_job),
        KindInfo("JobSet", (JOBSET_API_VERSION,), True, "jobsets", (), read_jobset, validate_jobset,
                 validate_jobset_update),
        KindInfo("LeaderWorkerSet", (LWS_API_VERSION,), True, "leaderworkersets", ("lws",), read_lws, validate_lws,
                 validate_lws_update, acted_on=False),
        KindInfo("RayCluster", (RAY_API_VERSION,), True, "rayclusters", (), read_raycluster, validate_raycluster,
                 validate_ray_update),
        KindInfo("RayJob", (RAY_API_VERSION,), True, "rayjobs", (), read_rayjob, validate_rayjob, validate_ray_update),
        KindInfo("RayService", (RAY_API_VERSION,), True, "rayservices", (), read_rayservice, validate_rayservice,
                 validate_ray_update),
        KindInfo("MPIJob", (MPIJOB_API_VERSION,), True, "mpijobs", (), read_mpijob, validate_mpijob, validate_mpijob_update),
        KindInfo("TrainJob", (TRAINER_API_VERSION,), True, "trainjobs", (), read_trainjob, validate_trainjob,
                 validate_trainjob_update),
        KindInfo("ClusterTrainingRuntime", (TRAINER_API_VERSION,), False, "clustertrainingruntimes", (),
                 read_cluster_training_runtime, validate_training_runtime),
        KindInfo("TrainingRuntime", (TRAINER_API_VERSION,), True, "trainingruntimes", (),
                 read_training_runtime, validate_training_runtime),
        # Run in the embedded hub by the dev-cluster's simulated controllers (hub.service.embedded_operators).
        KindInfo("Deployment", APPS_VERSIONS, True, "deployments", ("deploy",), read_deployment, validate_apps,
                 validate_apps_update, acted_on=False),
        KindInfo("ReplicaSet", APPS_VERSIONS, True, "replicasets", ("rs",), read_replicaset, validate_apps,
                 validate_apps_update, acted_on=False),
        KindInfo("StatefulSet", APPS_VERSIONS, True, "statefulsets", ("sts",), read_statefulset, validate_apps,
                 validate_apps_update, acted_on=False),
        KindInfo("CronJob", CRONJOB_VERSIONS, True, "cronjobs", ("cj",), read_cronjob, validate_cronjob, acted_on=False),
        KindInfo("AppWrapper", (APPWRAPPER_API_VERSION,), True, "appwrappers", ("aw",), read_appwrapper,
                 validate_appwrapper, validate_appwrapper_update),
        KindInfo("SparkApplication", (SPARK_API_VERSION,), True, "sparkapplications", ("sparkapp",), read_spark,
                 validate_spark),
        # Pod-based frameworks: Kueue queues the Pods (or Job) their operators make (hub.api.podbased_kind).
        *(KindInfo(kind, versions, True, plural, short, podbased_reader(kind), validate_podbased, acted_on=False)
          for kind, versions, plural, short in PODBASED_KINDS),
        KindInfo("Pod", ("v1",), True, "pods", ("po",), _read_pod, _validate_pod, _validate_pod_update),
        KindInfo("Topology", TOPOLOGY_VERSIONS, False, "topologies", (), read_topology, validate_topology,
                 validate_topology_update),
        KindInfo("Node", NODE_VERSIONS, False, "nodes", ("no",), read_node, validate_node),
        KindInfo("ProvisioningRequestConfig", PROVISIONING_VERSIONS, False, "provisioningrequestconfigs", (),
                 read_provisioning_config, validate_passive,
                 acted_on=False, passive_note="the ProvisioningRequest admission check is not implemented"),
        KindInfo("Event", EVENT_VERSIONS, True, "events", ("ev",), read_event, validate_event, acted_on=False),
        # Read by the controllers: devices a pod template claims count against quota (hub.api.dra).
        KindInfo("DeviceClass", DRA_VERSIONS, False, "deviceclasses", (), read_device_class, validate_dra_object,
                 validate_dra_update),
        KindInfo("ResourceClaim", DRA_VERSIONS, True, "resourceclaims", (), read_resource_claim, validate_dra_object,
                 validate_dra_update),
        KindInfo("ResourceClaimTemplate", DRA_VERSIONS, True, "resourceclaimtemplates", (),
                 read_resource_claim_template, validate_dra_object, validate_dra_update),
        *(KindInfo(k.kind, (KUBEFLOW_API_VERSION,), True, k.plural, (), reader_for(k.kind), validate_kubeflow_job,
                   validate_kubeflow_job_update) for k in FAMILY.values()),
    )
}



def resolve_kind(name: str) -> KindInfo | None:
    """A kind from its name, plural or short name, case-insensitively (as kubectl does)."""
    lowered = name.lower()
    for info in KINDS.values():
        if lowered in (info.kind.lower(), info.plural, info.plural.split(".")[0], *info.short_names):
            return info
    if lowered.endswith(".kueue.x-k8s.io"):
        return resolve_kind(lowered.removesuffix(".kueue.x-k8s.io"))
    return None


def object_ref(manifest: dict[str, Any]) -> tuple[str, str, str]:
    """(kind, namespace, name) as written, for error messages about unparsable input."""
    meta = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    return (
        str(manifest.get("kind") or "<no kind>"),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or "<unnamed>"),
    )


def parse_object(
    manifest: Any,
    *,
    default_namespace: str = "",
    partial_admission: bool = True,
    depth_checked: bool = False,
    owned: bool = False,
) -> ApiObject:
    """Parse, default and validate one manifest (v1beta1 or v1beta2) into a typed object.

    ``partial_admission=False`` mirrors Kueue's webhook with the PartialAdmission
    gate off: pod sets' ``minCount`` is dropped before validation.
    ``depth_checked``: the caller has already refused documents nested too deep
    (``read_documents`` checks a whole request at once), so the walk is not repeated.
    ``owned``: the caller gives ``manifest`` up; it is converted and defaulted in place, not
    copied, and the object may share its nested maps.
    Raises :class:`ValidationError` naming the object, every bad field and why.
    """
    if not isinstance(manifest, dict):
        raise ValidationError("<unknown>", "<unnamed>", "", [_top("", manifest, "a manifest must be a mapping")])
    kind, namespace, name = object_ref(manifest)
    # Not ours to change and not checked yet: one walk copies it and checks its depth.
    copied = None if depth_checked or owned else copy_within_depth(manifest)
    try:
        if not depth_checked and copied is None:
            check_depth(manifest)
    except TooDeep as exc:
        raise ValidationError(kind, name, namespace, [FieldError(exc.path, str(exc))]) from None
    # orjson's size answers when it is far enough below the limit that json's exact text (floats'
    # exponents at most 1.5 times as long) cannot be over it; otherwise json measures.
    size = fastjson.utf8_size(manifest)
    if size is None or size * 3 // 2 + 16 > MAX_OBJECT_BYTES:
        size = len(json.dumps(manifest, separators=(",", ":"), ensure_ascii=False, default=str).encode(errors="surrogatepass"))
    if size > MAX_OBJECT_BYTES:
        raise ValidationError(
            kind, name, namespace, [_top("", f"{size} bytes", f"Too long: an object must have at most {MAX_OBJECT_BYTES} bytes")]
        )
    info = KINDS.get(kind)
    if info is None:
        # RayJob, Pod, Deployment, ...: a clear "not served", naming the kinds that are.
        reason = f"unknown kind: not served by mkhub; it serves {', '.join(sorted(KINDS))}"
        raise ValidationError(kind, name, namespace, [_top("kind", kind, reason)])
    api_version = manifest.get("apiVersion")
    if api_version not in info.api_versions:
        raise ValidationError(
            kind, name, namespace,
            [_top("apiVersion", api_version, f"supported versions for {kind}: {', '.join(info.api_versions)}")],
        )
    internal = to_internal(manifest, in_place=owned) if copied is None else to_internal(copied, in_place=True)
    raw_meta = internal.get("metadata")
    if info.namespaced and default_namespace and isinstance(raw_meta, dict) and not raw_meta.get("namespace"):
        raw_meta["namespace"] = default_namespace
    elif info.namespaced and default_namespace and raw_meta is None:
        internal["metadata"] = {"namespace": default_namespace}
    errs = FieldErrors()
    reader = Reader(internal, "", errs)
    meta = read_meta(reader, info.namespaced)
    validate_labels(meta.labels, "metadata.labels", errs)
    validate_annotations(meta.annotations, "metadata.annotations", errs)
    obj = info.read(reader, meta)
    if not partial_admission and isinstance(obj, Workload):
        obj.pod_sets = tuple(replace(ps, min_count=None) for ps in obj.pod_sets)
    if not errs:
        info.validate(obj, errs)
    errs.raise_for(kind, meta.name, meta.namespace)
    return obj  # type: ignore[no-any-return]


def validate_update(old: ApiObject, new: ApiObject) -> None:
    """Kueue's update-time rules (immutable fields); raises :class:`ValidationError`."""
    info = KINDS[new.kind]
    if info.validate_update is None:
        return
    errs = FieldErrors()
    info.validate_update(old, new, errs)
    errs.raise_for(new.kind, new.meta.name, new.meta.namespace)


def _top(path: str, value: object, reason: str) -> FieldError:
    return FieldError(path or "<root>", reason, value, True)


def serve_external_frameworks(config: Configuration) -> None:
    """Kueue's ``multiKueue.externalFrameworks``: their adapters (MultiKueue's generic one) and
    their kinds served; raises ValueError for an entry a built-in adapter has."""
    for adapter in register_external_frameworks(config):
        register_external_kind(adapter.kind, adapter.api_version, adapter.plural)


def register_external_kind(kind: str, api_version: str, plural: str) -> None:
    """Serve a kind of Kueue's ``multiKueue.externalFrameworks`` (stored spec whole), unless the
    registry knows it already in that version (Tekton's PipelineRun is one of the pod-based kinds)."""
    info = KINDS.get(kind)
    if info is not None:
        if api_version not in info.api_versions:
            KINDS[kind] = replace(info, api_versions=(*info.api_versions, api_version))
        return
    KINDS[kind] = KindInfo(kind, (api_version,), True, plural, (), spec_reader(kind),
                           lambda obj, errs: validate_name(obj.meta, errs, namespaced=True))
