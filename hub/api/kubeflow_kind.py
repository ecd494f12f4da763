"""Kubeflow Training v1 (``kubeflow.org/v1``): PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob.

One shape serves the family, as Kueue's ``kubeflowjob`` package does: a map of replica specs
(``spec.<kind>ReplicaSpecs``, replica type -> replicas, restart policy, pod template), a
``spec.runPolicy`` (``suspend``, ``managedBy``, ``schedulingPolicy.priorityClass``) and the
training operator's status (conditions ``Created``/``Running``/``Restarting``/``Succeeded``/
``Failed``/``Suspended``, ``replicaStatuses`` per replica type). :data:`FAMILY` says what differs
per kind: the replica-spec field, the replica types in Kueue's order, the default container name.

Validation is the training operator's webhook's (``pkg/webhooks/<kind>``), with its messages:
the name a DNS-1035 label, replica specs required, replica types of the kind only, each with
containers, images and one container of the kind's default name; PyTorchJob's and XGBoostJob's
Master exactly one replica (XGBoostJob's required), TFJob at most one Chief or Master;
``runPolicy.managedBy`` the operator's or MultiKueue's, and immutable.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import FieldErrors
from .meta import Condition, ObjectMeta, read_conditions
from .others import QUEUE_NAME_LABEL
from .pods import PodSpecInfo, read_pod_template
from .reader import Reader
from .validation import validate_name, validate_pod_template_resources

KUBEFLOW_API_VERSION = "kubeflow.org/v1"
TRAINING_OPERATOR = "kubeflow.org/training-operator"  # the operator's managedBy value
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
NOT_DNS1035 = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
               "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
               "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")


@dataclass(frozen=True, slots=True)
class KubeflowKind:
    """What one kind of the family has of its own."""

    kind: str
    plural: str
    replica_field: str  # spec.<this>: the replica specs
    replica_types: tuple[str, ...]  # Kueue's OrderedReplicaTypes: the Workload's pod-set order
    default_container: str  # the operator's webhook wants one container of this name per replica
    single_master: bool = False  # Master must have exactly one replica (PyTorchJob, XGBoostJob)
    master_required: bool = False  # XGBoostJob

    @property
    def framework(self) -> str:
        return f"kubeflow.org/{self.kind.lower()}"


FAMILY: dict[str, KubeflowKind] = {k.kind: k for k in (
    KubeflowKind("PyTorchJob", "pytorchjobs", "pytorchReplicaSpecs", ("Master", "Worker"), "pytorch", single_master=True),
    KubeflowKind("TFJob", "tfjobs", "tfReplicaSpecs", ("Chief", "Master", "PS", "Worker", "Evaluator"), "tensorflow"),
    KubeflowKind("XGBoostJob", "xgboostjobs", "xgbReplicaSpecs", ("Master", "Worker"), "xgboost",
                 single_master=True, master_required=True),
    KubeflowKind("PaddleJob", "paddlejobs", "paddleReplicaSpecs", ("Master", "Worker"), "paddle"),
    KubeflowKind("JAXJob", "jaxjobs", "jaxReplicaSpecs", ("Worker",), "jax"),
)}


@dataclass(slots=True)
class ReplicaSpec:
    type: str  # as written: "Master", "Worker", "PS"...
    replicas: int = 1
    restart_policy: str = ""
    template: dict[str, Any] = field(default_factory=dict)  # the pod template as written
    pod_spec: PodSpecInfo = field(default_factory=lambda: PodSpecInfo(containers=()))


@dataclass(slots=True)
class ReplicaStatus:
    active: int = 0
    succeeded: int = 0
    failed: int = 0


@dataclass(slots=True)
class KubeflowStatus:
    conditions: list[Condition] = field(default_factory=list)
    replica_statuses: dict[str, ReplicaStatus] = field(default_factory=dict)


@dataclass(slots=True)
class KubeflowJob:
    """One object of the family, as far as Kueue and the operator's webhook read it."""

    meta: ObjectMeta
    kind: str
    replicas: tuple[ReplicaSpec, ...] = ()  # in Kueue's order (unknown types last, refused by validation)
    suspend: bool = False
    managed_by: str = ""
    scheduling_priority_class: str = ""  # runPolicy.schedulingPolicy.priorityClass
    status: KubeflowStatus = field(default_factory=KubeflowStatus)
    replicas_given: bool = True  # spec.<replica field> was there (a map, maybe empty)
    # The whole spec as written: what a MultiKueue worker copy is made from.
    spec_raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def family(self) -> KubeflowKind:
        return FAMILY[self.kind]

    @property
    def queue_name(self) -> str:
        return self.meta.labels.get(QUEUE_NAME_LABEL, "")


# --- reading ---------------------------------------------------------------------------------------------


def reader_for(kind: str) -> Any:
    """The registry's read function of ``kind``."""
    family = FAMILY[kind]

    def read(r: Reader, meta: ObjectMeta) -> KubeflowJob:
        return read_kubeflow_job(family, r, meta)

    return read


def read_kubeflow_job(family: KubeflowKind, r: Reader, meta: ObjectMeta) -> KubeflowJob:
    spec = r.child("spec")
    run_policy = spec.child("runPolicy")
    specs = spec.child(family.replica_field)
    order = {t: i for i, t in enumerate(family.replica_types)}
    replicas = sorted((_read_replica(t, specs) for t in specs.data), key=lambda rs: (order.get(rs.type, len(order)), rs.type))
    raw_spec = r.raw("spec")
    return KubeflowJob(
        meta=meta,
        kind=family.kind,
        replicas=tuple(replicas),
        suspend=run_policy.boolean("suspend", False),
        managed_by=run_policy.string("managedBy"),
        scheduling_priority_class=run_policy.child("schedulingPolicy").string("priorityClass"),
        status=_read_status(r.child("status")),
        replicas_given=isinstance(spec.raw(family.replica_field), dict),
        spec_raw=copy.deepcopy(raw_spec) if isinstance(raw_spec, dict) else {},
    )


def _read_replica(type_: Any, specs: Reader) -> ReplicaSpec:
    key = str(type_)
    path = f"{specs.path}[{key}]"  # a map key, as Kubernetes' field paths write it
    value = specs.raw(type_)
    if not isinstance(value, dict):
        specs.errors.invalid(path, value, "must be an object")
        value = {}
    rs = Reader(value, path, specs.errors)
    template = rs.child("template")
    replicas = rs.integer("replicas", 1, minimum=0, bits=32)
    return ReplicaSpec(
        type=key,
        replicas=replicas if replicas is not None and replicas >= 0 else 1,
        restart_policy=rs.enum("restartPolicy", RESTART_POLICIES, "") if rs.has("restartPolicy") else "",
        template=dict(template.data),
        pod_spec=read_pod_template(template),
    )


def _read_status(st: Reader) -> KubeflowStatus:
    statuses: dict[str, ReplicaStatus] = {}
    by_type = st.child("replicaStatuses")
    for type_, value in by_type.data.items():
        s = Reader(value if isinstance(value, dict) else {}, f"{by_type.path}[{type_}]", st.errors)
        statuses[str(type_)] = ReplicaStatus(active=s.integer("active", 0) or 0, succeeded=s.integer("succeeded", 0) or 0,
                                             failed=s.integer("failed", 0) or 0)
    return KubeflowStatus(conditions=read_conditions(st), replica_statuses=statuses)


# --- validation ------------------------------------------------------------------------------------------


def validate_kubeflow_job(job: KubeflowJob, errs: FieldErrors) -> None:
    """The training operator's webhook (ValidateCreate), and what Kueue needs of the pod sets."""
    family = job.family
    validate_name(job.meta, errs, namespaced=True)
    if job.meta.name and (len(job.meta.name) > 63 or not _DNS1035.match(job.meta.name)):
        errs.invalid("metadata.name", job.meta.name, f"should match: {NOT_DNS1035}")
    _validate_managed_by(job.managed_by, errs)
    base = f"spec.{family.replica_field}"
    if not job.replicas:
        errs.add(base, "Required value: must be required")
    supported = ", ".join(f'"{t}"' for t in family.replica_types)
    for rs in job.replicas:
        path = f"{base}[{rs.type}]"
        if rs.type not in family.replica_types:
            errs.add(path, f'Unsupported value: "{rs.type}": supported values: {supported}')
        _validate_containers(rs, path, family.default_container, errs)
        if family.single_master and rs.type == "Master" and rs.replicas != 1:
            errs.add(f"{path}.replicas", "Forbidden: must be 1")
        validate_pod_template_resources(rs.pod_spec, f"{path}.template.spec", errs)
    types = {rs.type for rs in job.replicas}
    if family.master_required and job.replicas and "Master" not in types:
        errs.add(f"{base}[Master]", "Required value: must be present")
    if family.kind == "TFJob" and len(types & {"Chief", "Master"}) > 1:
        errs.add(base, "Forbidden: must not have more than 1 Chief or Master role")


def _validate_containers(rs: ReplicaSpec, path: str, default_container: str, errs: FieldErrors) -> None:
    containers_path = f"{path}.template.spec.containers"
    containers = (rs.template.get("spec") or {}).get("containers") if isinstance(rs.template.get("spec"), dict) else None
    if not isinstance(containers, list) or not containers:
        errs.add(containers_path, "Required value: must be specified")
        return
    named = False
    for i, c in enumerate(containers):
        if not isinstance(c, dict):
            continue  # the pod template's reader said so already
        if not c.get("image"):
            errs.add(f"{containers_path}[{i}].image", "Required value: must be required")
        named = named or c.get("name") == default_container
    if not named:
        errs.add(containers_path, f"Required value: must have at least one container with name {default_container}")


def _validate_managed_by(value: str, errs: FieldErrors) -> None:
    if value and value not in (MULTIKUEUE, TRAINING_OPERATOR):
        errs.add("spec.runPolicy.managedBy",
                 f'Unsupported value: "{value}": supported values: "{MULTIKUEUE}", "{TRAINING_OPERATOR}"')


def validate_kubeflow_job_update(old: KubeflowJob, new: KubeflowJob, errs: FieldErrors) -> None:
    """The operator's ValidateUpdate: ``runPolicy.managedBy`` is immutable."""
    if old.managed_by != new.managed_by:
        errs.invalid("spec.runPolicy.managedBy", new.managed_by, "field is immutable")
