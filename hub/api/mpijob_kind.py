"""``kubeflow.org/v2beta1`` MPIJob: the typed object, its reader and its validation.

What Kueue's MPIJob integration reads (``mpiReplicaSpecs`` Launcher and Worker,
``runPolicy.suspend``, ``runPolicy.managedBy``, ``runPolicy.schedulingPolicy.priorityClass``,
status conditions) and what the MPI operator checks before it runs one
(``pkg/apis/kubeflow/validation``), after its defaults (``SetDefaults_MPIJob``): cleanPodPolicy
None, slotsPerWorker 1, sshAuthMountPath /root/.ssh, mpiImplementation OpenMPI,
launcherCreationPolicy AtStartup, Launcher restartPolicy OnFailure, Worker restartPolicy Never.
The operator refuses an invalid MPIJob when it reconciles it; mkhub refuses it when it is
created, with the operator's messages, so a user sees why at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .errors import FieldErrors
from .meta import Condition, ObjectMeta, read_conditions
from .others import QUEUE_NAME_LABEL
from .pods import PodSpecInfo, read_pod_template
from .reader import Reader
from .validation import validate_name, validate_pod_template_resources

MPIJOB_API_VERSION = "kubeflow.org/v2beta1"
MPI_OPERATOR = "kubeflow.org/mpi-operator"  # the operator's managedBy name (KubeflowJobController)
LAUNCHER, WORKER = "Launcher", "Worker"
REPLICA_TYPES = (LAUNCHER, WORKER)  # Kueue's pod-set order
CLEAN_POD_POLICIES = ("All", "None", "Running")
MPI_IMPLEMENTATIONS = ("Intel", "MPICH", "OpenMPI")
LAUNCHER_CREATION_POLICIES = ("AtStartup", "WaitForWorkersReady")
RESTART_POLICIES = ("Never", "OnFailure")
MANAGED_BY = (MPI_OPERATOR, "kueue.x-k8s.io/multikueue")  # the CRD's enum

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(slots=True)
class ReplicaSpec:
    """One of ``mpiReplicaSpecs``: Launcher or Worker."""

    type: str
    replicas: int | None  # None: not written (Kueue counts 1)
    restart_policy: str
    template: dict[str, Any] = field(default_factory=dict)
    pod_spec: PodSpecInfo = field(default_factory=lambda: PodSpecInfo(containers=()))

    @property
    def count(self) -> int:
        """Its pods as Kueue counts them (``ptr.Deref(replicas, 1)``)."""
        return 1 if self.replicas is None else self.replicas


@dataclass(slots=True)
class ReplicaStatus:
    active: int = 0
    succeeded: int = 0
    failed: int = 0


@dataclass(slots=True)
class MPIJobStatus:
    conditions: list[Condition] = field(default_factory=list)
    replica_statuses: dict[str, ReplicaStatus] = field(default_factory=dict)


@dataclass(slots=True)
class MPIJob:
    meta: ObjectMeta
    replica_specs: tuple[ReplicaSpec, ...]  # in Kueue's order: Launcher, then Worker
    suspend: bool = False
    managed_by: str = ""
    slots_per_worker: int = 1
    run_launcher_as_worker: bool = False
    launcher_creation_policy: str = "AtStartup"
    scheduling_priority_class: str = ""  # runPolicy.schedulingPolicy.priorityClass
    clean_pod_policy: str = "None"
    ssh_auth_mount_path: str = "/root/.ssh"
    mpi_implementation: str = "OpenMPI"
    status: MPIJobStatus = field(default_factory=MPIJobStatus)
    # The whole spec as read: what a MultiKueue worker copy is made from.
    spec_raw: dict[str, Any] = field(default_factory=dict, repr=False)

    kind = "MPIJob"

    @property
    def queue_name(self) -> str:
        return self.meta.labels.get(QUEUE_NAME_LABEL, "")

    def replica(self, type_: str) -> ReplicaSpec | None:
        return next((r for r in self.replica_specs if r.type == type_), None)


# --- reading ---------------------------------------------------------------------------------------------


def read_mpijob(r: Reader, meta: ObjectMeta) -> MPIJob:
    spec = r.child("spec")
    run_policy = spec.child("runPolicy")
    specs = spec.child("mpiReplicaSpecs")
    if not spec.has("mpiReplicaSpecs"):
        r.errors.add(spec.at("mpiReplicaSpecs"), "Required value: must have replica specs")
    for key in specs.data:
        if key not in REPLICA_TYPES:
            r.errors.invalid(f"{specs.path}[{key}]", key, f"supported values: {', '.join(map(repr, REPLICA_TYPES))}")
    replicas = tuple(_read_replica(specs, t) for t in REPLICA_TYPES if specs.has(t))
    raw = r.raw("spec")
    return MPIJob(
        meta=meta,
        replica_specs=replicas,
        suspend=run_policy.boolean("suspend", False),
        managed_by=run_policy.string("managedBy"),
        slots_per_worker=_read_int(spec, "slotsPerWorker", 1),
        run_launcher_as_worker=spec.boolean("runLauncherAsWorker", False),
        launcher_creation_policy=spec.enum("launcherCreationPolicy", LAUNCHER_CREATION_POLICIES, "AtStartup"),
        scheduling_priority_class=run_policy.child("schedulingPolicy").string("priorityClass"),
        clean_pod_policy=run_policy.enum("cleanPodPolicy", CLEAN_POD_POLICIES, "None"),
        ssh_auth_mount_path=spec.string("sshAuthMountPath", "/root/.ssh") or "/root/.ssh",
        mpi_implementation=spec.enum("mpiImplementation", MPI_IMPLEMENTATIONS, "OpenMPI"),
        status=_read_status(r.child("status")),
        spec_raw=raw if isinstance(raw, dict) else {},
    )


def _read_int(r: Reader, key: str, default: int) -> int:
    value = r.integer(key, default, minimum=0, bits=32)
    return default if value is None else value


def _read_replica(specs: Reader, type_: str) -> ReplicaSpec:
    # The map's key is the path segment, as Kubernetes writes it: spec.mpiReplicaSpecs[Launcher].
    r = Reader(specs.data[type_] if isinstance(specs.data[type_], dict) else {}, f"{specs.path}[{type_}]", specs.errors)
    if not isinstance(specs.data[type_], dict):
        specs.errors.invalid(r.path, specs.data[type_], "must be an object")
    template = r.child("template")
    default_policy = "OnFailure" if type_ == LAUNCHER else "Never"
    return ReplicaSpec(
        type=type_,
        replicas=r.integer("replicas", None, bits=32),
        restart_policy=r.string("restartPolicy", default_policy) or default_policy,
        template=dict(template.data),
        pod_spec=read_pod_template(template),
    )


def _read_status(st: Reader) -> MPIJobStatus:
    statuses = {}
    raw = st.raw("replicaStatuses")
    if isinstance(raw, dict):
        for type_, value in raw.items():
            s = Reader(value if isinstance(value, dict) else {}, f"{st.at('replicaStatuses')}[{type_}]", st.errors)
            statuses[str(type_)] = ReplicaStatus(_read_int(s, "active", 0), _read_int(s, "succeeded", 0),
                                                 _read_int(s, "failed", 0))
    return MPIJobStatus(conditions=read_conditions(st), replica_statuses=statuses)


# --- validation ------------------------------------------------------------------------------------------


def validate_mpijob(job: MPIJob, errs: FieldErrors) -> None:
    """The MPI operator's ValidateMPIJob (after its defaults), the CRD's managedBy enum and what
    Kueue needs of the pod sets (requests within limits)."""
    validate_name(job.meta, errs, namespaced=True)
    worker = job.replica(WORKER)
    last = max(worker.replicas or 1, 1) - 1 if worker is not None else 0
    hostname = f"{job.meta.name}-worker-{last}"
    if job.meta.name and (len(hostname) > 63 or not _DNS1123_LABEL.match(hostname)):
        errs.invalid("metadata.name", job.meta.name, f'will not able to create pod with invalid DNS label "{hostname}"')
    if job.managed_by and job.managed_by not in MANAGED_BY:
        errs.invalid("spec.runPolicy.managedBy", job.managed_by,
                     f"supported values: {', '.join(repr(m) for m in MANAGED_BY)}")
    launcher = job.replica(LAUNCHER)
    if launcher is None:
        errs.add("spec.mpiReplicaSpecs[Launcher]", "Required value: must have Launcher replica spec")
    for replica in job.replica_specs:
        path = f"spec.mpiReplicaSpecs[{replica.type}]"
        if replica.type == LAUNCHER and replica.replicas is not None and replica.replicas != 1:
            errs.invalid(f"{path}.replicas", replica.replicas, "must be 1")
        if replica.type == WORKER and replica.replicas is not None and replica.replicas <= 0:
            errs.invalid(f"{path}.replicas", replica.replicas, "must be greater than or equal to 1")
        if replica.restart_policy not in RESTART_POLICIES:
            errs.invalid(f"{path}.restartPolicy", replica.restart_policy,
                         f"supported values: {', '.join(repr(p) for p in RESTART_POLICIES)}")
        if not replica.pod_spec.containers:
            errs.add(f"{path}.template.spec.containers", "Required value: must define at least one container")
        validate_pod_template_resources(replica.pod_spec, f"{path}.template.spec", errs)


def validate_mpijob_update(old: MPIJob, new: MPIJob, errs: FieldErrors) -> None:
    """``runPolicy.managedBy`` is immutable (the CRD's rule, as Kubernetes' for Jobs)."""
    if old.managed_by != new.managed_by:
        errs.invalid("spec.runPolicy.managedBy", new.managed_by, "field is immutable")
