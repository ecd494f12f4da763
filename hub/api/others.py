"""WorkloadPriorityClass, AdmissionCheck, MultiKueue objects, Namespace and batch/v1 Job."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .meta import Condition, ObjectMeta, read_conditions
from .pods import PodSpecInfo, read_pod_template
from .reader import Reader

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"

# Labels and annotations of Kueue's job integration.
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
MAX_EXEC_TIME_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
JOB_MIN_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-min-parallelism"
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
MULTIKUEUE_ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"


@dataclass(slots=True)
class WorkloadPriorityClass:
    meta: ObjectMeta
    value: int = 0
    description: str = ""

    kind = "WorkloadPriorityClass"


@dataclass(slots=True)
class AdmissionCheck:
    meta: ObjectMeta
    controller_name: str = ""
    parameters_api_group: str = ""
    parameters_kind: str = ""
    parameters_name: str = ""
    conditions: list[Condition] = field(default_factory=list)

    kind = "AdmissionCheck"

    @property
    def is_multikueue(self) -> bool:
        return self.controller_name == MULTIKUEUE_CONTROLLER


@dataclass(slots=True)
class MultiKueueConfig:
    meta: ObjectMeta
    clusters: tuple[str, ...] = ()
    quota_management: str = ""  # "Automated": the manager ClusterQueues follow their workers' quotas

    kind = "MultiKueueConfig"


@dataclass(slots=True)
class MultiKueueCluster:
    meta: ObjectMeta
    kubeconfig_location: str = ""
    kubeconfig_location_type: str = "Secret"
    cluster_profile: str = ""
    conditions: list[Condition] = field(default_factory=list)
    fleet: dict[str, Any] | None = None  # status.fleet (hub.federation.fleet)

    kind = "MultiKueueCluster"


@dataclass(slots=True)
class Namespace:
    meta: ObjectMeta

    kind = "Namespace"


@dataclass(slots=True)
class JobStatus:
    active: int = 0
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    conditions: list[Condition] = field(default_factory=list)


@dataclass(slots=True)
class Job:
    """``batch/v1`` Job, as far as Kueue's job integration reads it."""

    meta: ObjectMeta
    parallelism: int = 1
    completions: int | None = None
    suspend: bool = False
    managed_by: str = ""
    completion_mode: str = "NonIndexed"
    template: dict[str, Any] = field(default_factory=dict)
    pod_spec: PodSpecInfo = field(default_factory=lambda: PodSpecInfo(containers=()))
    status: JobStatus = field(default_factory=JobStatus)

    kind = "Job"

    @property
    def queue_name(self) -> str:
        return self.meta.labels.get(QUEUE_NAME_LABEL, "")

    @property
    def pods_count(self) -> int:
        """Kueue counts min(parallelism, completions) pods."""
        if self.completions is not None and self.completions < self.parallelism:
            return self.completions
        return self.parallelism


def read_priority_class(r: Reader, meta: ObjectMeta) -> WorkloadPriorityClass:
    if not r.has("value"):
        r.errors.required("value")
    return WorkloadPriorityClass(meta, r.integer("value", 0) or 0, r.string("description"))


def read_admission_check(r: Reader, meta: ObjectMeta) -> AdmissionCheck:
    spec = r.child("spec")
    params = spec.child("parameters")
    controller = spec.string("controllerName")
    if not controller:
        spec.errors.required(spec.at("controllerName"))
    return AdmissionCheck(
        meta=meta,
        controller_name=controller,
        parameters_api_group=params.string("apiGroup"),
        parameters_kind=params.string("kind"),
        parameters_name=params.string("name"),
        conditions=read_conditions(r.child("status")),
    )


def read_mk_config(r: Reader, meta: ObjectMeta) -> MultiKueueConfig:
    spec = r.child("spec")
    return MultiKueueConfig(
        meta, tuple(spec.strings("clusters")), spec.enum("quotaManagement", ("Manual", "Automated"), "Manual")
    )


def read_mk_cluster(r: Reader, meta: ObjectMeta) -> MultiKueueCluster:
    source = r.child("spec").child("clusterSource")
    kc = source.child("kubeConfig")
    return MultiKueueCluster(
        meta=meta,
        kubeconfig_location=kc.string("location"),
        kubeconfig_location_type=kc.enum("locationType", ("Secret", "Path"), "Secret"),
        cluster_profile=source.child("clusterProfileRef").string("name"),
        conditions=read_conditions(r.child("status")),
        fleet=_fleet(r.child("status").raw("fleet")),
    )


def _fleet(raw: object) -> dict[str, Any] | None:
    return dict(raw) if isinstance(raw, dict) else None


def read_job(r: Reader, meta: ObjectMeta) -> Job:
    spec = r.child("spec")
    st = r.child("status")
    parallelism = spec.integer("parallelism", 1, minimum=0, bits=32)
    template = spec.raw("template")
    if template is not None and not isinstance(template, dict):
        template = None  # read_pod_template below reports it
    return Job(
        meta=meta,
        parallelism=parallelism if parallelism is not None else 1,
        completions=spec.integer("completions", None, minimum=0, bits=32),
        suspend=spec.boolean("suspend", False),
        managed_by=spec.string("managedBy"),
        completion_mode=spec.enum("completionMode", ("NonIndexed", "Indexed"), "NonIndexed"),
        template=dict(template or {}),
        pod_spec=read_pod_template(spec.child("template")),
        status=JobStatus(
            active=st.integer("active", 0) or 0,
            ready=st.integer("ready", 0) or 0,
            succeeded=st.integer("succeeded", 0) or 0,
            failed=st.integer("failed", 0) or 0,
            conditions=read_conditions(st),
        ),
    )
