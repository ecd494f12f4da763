"""KubeRay's ``ray.io/v1`` RayCluster, RayJob and RayService: typed objects, readers, validation.

What Kueue's Ray integrations read (``pkg/controller/jobs/raycluster``, ``rayjob``, ``rayservice``):
the cluster spec (head group, worker groups, autoscaling), suspend, managedBy, the RayJob's
submission mode and submitter template, and the status fields Kueue decides on. The checks are
KubeRay's own (a head group with a container, worker groups with templates, replica bounds) and,
for an object labelled with a queue, Kueue's webhooks' with their messages (a RayJob must delete
its cluster when it finishes and may not use an existing one; a RayCluster autoscales only as an
elastic job, which mkhub does not have: Kueue's refusal without that feature gate).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import FieldErrors
from .meta import Condition, ObjectMeta, read_conditions
from .others import QUEUE_NAME_LABEL
from .pods import PodSpecInfo, read_pod_template
from .reader import Reader
from .validation import validate_name, validate_pod_template_resources

RAY_API_VERSION = "ray.io/v1"
KUBERAY_CONTROLLER = "ray.io/kuberay-operator"
HEAD = "head"  # the head group's pod set (Kueue reserves the name)
SUBMITTER = "submitter"  # a K8sJobMode RayJob's submitter Job's pod set
SUBMITTER_CONTAINER = "ray-job-submitter"
K8S_JOB_MODE, HTTP_MODE, INTERACTIVE_MODE, SIDECAR_MODE = "K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"
SUBMISSION_MODES = (K8S_JOB_MODE, HTTP_MODE, INTERACTIVE_MODE, SIDECAR_MODE)
MAX_POD_SETS = 18  # Kueue's jobframework.MaxPodSets
MAX_INT32 = 2**31 - 1
ELASTIC_JOB_ANNOTATION = "kueue.x-k8s.io/elastic-job"
AUTOSCALING_REFUSED = ("a kueue-managed RayCluster can use autoscaling only as an elastic job: enable the "
                       f'ElasticJobsViaWorkloadSlices feature gate and set the "{ELASTIC_JOB_ANNOTATION}": "true" annotation')
# The resources KubeRay's submitter (and sidecar submitter) container gets when none is written.
SUBMITTER_RESOURCES: dict[str, Any] = {"limits": {"cpu": "1", "memory": "1Gi"},
                                       "requests": {"cpu": "500m", "memory": "200Mi"}}


@dataclass(slots=True)
class WorkerGroup:
    group_name: str
    replicas: int = 0
    min_replicas: int = 0
    max_replicas: int = MAX_INT32
    num_of_hosts: int = 1
    suspend: bool = False
    template: dict[str, Any] = field(default_factory=dict)
    pod_spec: PodSpecInfo = field(default_factory=lambda: PodSpecInfo(containers=()))

    @property
    def pods_count(self) -> int:
        """Kueue's effectiveWorkerCount: replicas times hosts per replica."""
        return self.replicas * max(self.num_of_hosts, 1)


@dataclass(slots=True)
class RayClusterSpec:
    head_template: dict[str, Any] = field(default_factory=dict)
    head_pod_spec: PodSpecInfo = field(default_factory=lambda: PodSpecInfo(containers=()))
    worker_groups: tuple[WorkerGroup, ...] = ()
    enable_in_tree_autoscaling: bool = False
    suspend: bool = False
    has_head: bool = True


@dataclass(slots=True)
class RayCluster:
    """``ray.io/v1`` RayCluster: a Workload that stays admitted while the cluster exists."""

    meta: ObjectMeta
    spec: RayClusterSpec
    managed_by: str = ""
    state: str = ""  # status.state: ready, suspended, failed...
    reason: str = ""
    spec_raw: dict[str, Any] = field(default_factory=dict, repr=False)

    kind = "RayCluster"

    @property
    def queue_name(self) -> str:
        return self.meta.labels.get(QUEUE_NAME_LABEL, "")


@dataclass(slots=True)
class RayJob:
    """``ray.io/v1`` RayJob: its cluster's pod sets (and the submitter's), finished by its status."""

    meta: ObjectMeta
    cluster: RayClusterSpec | None
    suspend: bool = False
    managed_by: str = ""
    submission_mode: str = K8S_JOB_MODE
    shutdown_after_job_finishes: bool = False
    cluster_selector: dict[str, str] = field(default_factory=dict)
    entrypoint: str = ""
    submitter_template: dict[str, Any] | None = None
    job_status: str = ""  # PENDING, RUNNING, STOPPED, SUCCEEDED, FAILED
    job_deployment_status: str = ""  # New, Initializing, Running, Complete, Failed, Suspended...
    message: str = ""
    ray_cluster_name: str = ""
    cluster_state: str = ""  # status.rayClusterStatus.state
    spec_raw: dict[str, Any] = field(default_factory=dict, repr=False)

    kind = "RayJob"

    @property
    def queue_name(self) -> str:
        return self.meta.labels.get(QUEUE_NAME_LABEL, "")


@dataclass(slots=True)
class RayService:
    """``ray.io/v1`` RayService: a long-running cluster; suspended through ``rayClusterConfig``."""

    meta: ObjectMeta
    cluster: RayClusterSpec
    managed_by: str = ""
    conditions: list[Condition] = field(default_factory=list)
    service_status: str = ""
    spec_raw: dict[str, Any] = field(default_factory=dict, repr=False)

    kind = "RayService"

    @property
    def queue_name(self) -> str:
        return self.meta.labels.get(QUEUE_NAME_LABEL, "")


# --- reading ---------------------------------------------------------------------------------------------


def read_cluster_spec(r: Reader) -> RayClusterSpec:
    head = r.child("headGroupSpec")
    if not r.has("headGroupSpec"):
        r.errors.required(r.at("headGroupSpec"))
    elif not head.has("template"):
        r.errors.required(head.at("template"))
    head_template = head.child("template")
    groups = tuple(_read_worker_group(g) for g in r.items("workerGroupSpecs"))
    return RayClusterSpec(
        head_template=dict(head_template.data),
        head_pod_spec=read_pod_template(head_template),
        worker_groups=groups,
        enable_in_tree_autoscaling=r.boolean("enableInTreeAutoscaling", False),
        suspend=r.boolean("suspend", False),
        has_head=r.has("headGroupSpec"),
    )


def _read_worker_group(r: Reader) -> WorkerGroup:
    if not r.string("groupName"):
        r.errors.required(r.at("groupName"))
    if not r.has("template"):
        r.errors.required(r.at("template"))
    template = r.child("template")
    return WorkerGroup(
        group_name=r.string("groupName"),
        replicas=r.integer("replicas", 0, minimum=0, bits=32) or 0,
        min_replicas=r.integer("minReplicas", 0, minimum=0, bits=32) or 0,
        max_replicas=_or(r.integer("maxReplicas", MAX_INT32, minimum=0, bits=32), MAX_INT32),
        num_of_hosts=_or(r.integer("numOfHosts", 1, minimum=1, bits=32), 1),
        suspend=r.boolean("suspend", False),
        template=dict(template.data),
        pod_spec=read_pod_template(template),
    )


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def read_raycluster(r: Reader, meta: ObjectMeta) -> RayCluster:
    spec = r.child("spec")
    status = r.child("status")
    return RayCluster(
        meta=meta,
        spec=read_cluster_spec(spec),
        managed_by=spec.string("managedBy"),
        state=status.string("state"),
        reason=status.string("reason"),
        spec_raw=_raw(r, "spec"),
    )


def read_rayjob(r: Reader, meta: ObjectMeta) -> RayJob:
    spec = r.child("spec")
    status = r.child("status")
    submitter = spec.opt_child("submitterPodTemplate")
    return RayJob(
        meta=meta,
        cluster=read_cluster_spec(spec.child("rayClusterSpec")) if spec.has("rayClusterSpec") else None,
        suspend=spec.boolean("suspend", False),
        managed_by=spec.string("managedBy"),
        submission_mode=spec.enum("submissionMode", SUBMISSION_MODES, K8S_JOB_MODE),
        shutdown_after_job_finishes=spec.boolean("shutdownAfterJobFinishes", False),
        cluster_selector=spec.string_map("clusterSelector"),
        entrypoint=spec.string("entrypoint"),
        submitter_template=dict(submitter.data) if submitter is not None else None,
        job_status=status.string("jobStatus"),
        job_deployment_status=status.string("jobDeploymentStatus"),
        message=status.string("message"),
        ray_cluster_name=status.string("rayClusterName"),
        cluster_state=status.child("rayClusterStatus").string("state"),
        spec_raw=_raw(r, "spec"),
    )


def read_rayservice(r: Reader, meta: ObjectMeta) -> RayService:
    spec = r.child("spec")
    status = r.child("status")
    if not spec.has("rayClusterConfig"):
        r.errors.required(spec.at("rayClusterConfig"))
    return RayService(
        meta=meta,
        cluster=read_cluster_spec(spec.child("rayClusterConfig")),
        managed_by=spec.string("managedBy"),
        conditions=read_conditions(status),
        service_status=status.string("serviceStatus"),
        spec_raw=_raw(r, "spec"),
    )


def _raw(r: Reader, key: str) -> dict[str, Any]:
    value = r.raw(key)
    return dict(value) if isinstance(value, dict) else {}


# --- validation ------------------------------------------------------------------------------------------


def validate_cluster_spec(spec: RayClusterSpec, path: str, errs: FieldErrors, *, managed: bool) -> None:
    """KubeRay's rules for a cluster spec and, when Kueue manages the object, Kueue's."""
    if spec.has_head and not spec.head_pod_spec.containers:
        errs.add(f"{path}.headGroupSpec.template.spec.containers", "headGroupSpec should have at least one container")
    validate_pod_template_resources(spec.head_pod_spec, f"{path}.headGroupSpec.template.spec", errs)
    seen: set[str] = set()
    for i, g in enumerate(spec.worker_groups):
        gpath = f"{path}.workerGroupSpecs[{i}]"
        if g.group_name in seen:
            errs.add(f"{gpath}.groupName", f'Duplicate value: "{g.group_name}"')
        seen.add(g.group_name)
        if g.template and not g.pod_spec.containers:
            errs.add(f"{gpath}.template.spec.containers", "workerGroupSpec should have at least one container")
        if g.min_replicas > g.max_replicas:
            errs.invalid(f"{gpath}.minReplicas", g.min_replicas,
                         f"minReplicas ({g.min_replicas}) cannot be greater than maxReplicas ({g.max_replicas})")
        validate_pod_template_resources(g.pod_spec, f"{gpath}.template.spec", errs)
        if managed and g.group_name == HEAD:
            errs.add(f"{gpath}.groupName", f'Forbidden: "{HEAD}" is reserved for the head group')
    if not managed:
        return
    if spec.enable_in_tree_autoscaling:
        errs.invalid(f"{path}.enableInTreeAutoscaling", True, AUTOSCALING_REFUSED)
    if len(spec.worker_groups) + 1 > MAX_POD_SETS:
        errs.add(f"{path}.workerGroupSpecs", f"Too many: {len(spec.worker_groups) + 1}: must have at most "
                 f"{MAX_POD_SETS} items")


def validate_raycluster(rc: RayCluster, errs: FieldErrors) -> None:
    validate_name(rc.meta, errs, namespaced=True)
    validate_cluster_spec(rc.spec, "spec", errs, managed=bool(rc.queue_name))


def validate_rayjob(job: RayJob, errs: FieldErrors) -> None:
    """KubeRay's checks, then Kueue's RayJob webhook's for a queued one (its messages)."""
    validate_name(job.meta, errs, namespaced=True)
    managed = bool(job.queue_name)
    if job.cluster is not None:
        validate_cluster_spec(job.cluster, "spec.rayClusterSpec", errs, managed=managed)
    if not managed:
        if job.cluster is None and not job.cluster_selector:
            errs.required("spec.rayClusterSpec")
        return
    if job.cluster_selector and job.cluster is not None:
        errs.invalid("spec.clusterSelector", job.cluster_selector, "a kueue managed job should not use an existing cluster")
    elif job.cluster is None and not job.cluster_selector:
        errs.add("spec.rayClusterSpec", "Required value: rayClusterSpec is required for Kueue-managed jobs that don't "
                 "use clusterSelector")
    elif job.cluster is not None and not job.shutdown_after_job_finishes:
        errs.invalid("spec.shutdownAfterJobFinishes", False, "a kueue managed job should delete the cluster after finishing")


def validate_rayservice(svc: RayService, errs: FieldErrors) -> None:
    validate_name(svc.meta, errs, namespaced=True)
    validate_cluster_spec(svc.cluster, "spec.rayClusterConfig", errs, managed=bool(svc.queue_name))


def validate_ray_update(old: RayCluster | RayJob | RayService, new: RayCluster | RayJob | RayService,
                        errs: FieldErrors) -> None:
    """``spec.managedBy`` is immutable (KubeRay's CRD rule), as Kueue relies on it."""
    if old.managed_by != new.managed_by:
        errs.invalid("spec.managedBy", new.managed_by, "field is immutable")
