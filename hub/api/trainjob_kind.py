"""Kubeflow Trainer v2 (``trainer.kubeflow.org/v1alpha1``): TrainJob, ClusterTrainingRuntime and
TrainingRuntime, typed, read and validated; and the JobSet a TrainJob runs as.

A TrainJob names its runtime (``spec.runtimeRef``: a ClusterTrainingRuntime by default, or a
TrainingRuntime in its namespace); the runtime's ``template`` is a JobSet spec. The Trainer
builds the TrainJob's JobSet from it (:func:`child_jobset_spec`): the trainer step's replicated
job (labelled ``trainer.kubeflow.org/trainjob-ancestor-step: trainer``) runs ``numNodes`` pods
(``spec.trainer.numNodes``, else the runtime's ``mlPolicy.numNodes``) and its ``node`` container
gets the TrainJob's image, command, args, env and ``resourcesPerNode``; ``spec.runtimePatches``
(Kueue writes its own, manager ``kueue.x-k8s.io/manager``, with the admission's labels,
annotations, nodeSelector and tolerations per replicated job) are merged into the pod
templates. Kueue's pod sets are that JobSet's (:mod:`hub.api.jobkinds.trainjob`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import FieldErrors
from .jobset_kind import JobSet, read_jobset, validate_jobset
from .meta import Condition, ObjectMeta, read_conditions
from .others import QUEUE_NAME_LABEL
from .reader import Reader
from .validation import validate_name

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_API_VERSION = f"{TRAINER_GROUP}/v1alpha1"
TRAINJOB_CONTROLLER = "trainer.kubeflow.org/trainjob-controller"
KUEUE_PATCH_MANAGER = "kueue.x-k8s.io/manager"  # Kueue's entry in spec.runtimePatches
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_STEP = "trainer"
NODE = "node"  # the container the TrainJob's trainer settings go to
CLUSTER_RUNTIME, RUNTIME = "ClusterTrainingRuntime", "TrainingRuntime"
MANAGED_BY = (TRAINJOB_CONTROLLER, "kueue.x-k8s.io/multikueue")


@dataclass(slots=True)
class TrainingRuntime:
    """A ClusterTrainingRuntime (cluster-scoped) or a TrainingRuntime (namespaced)."""

    meta: ObjectMeta
    kind: str
    num_nodes: int | None  # spec.mlPolicy.numNodes
    spec_raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(slots=True)
class JobStatus:
    name: str
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    active: int = 0
    suspended: int = 0


@dataclass(slots=True)
class TrainJobStatus:
    conditions: list[Condition] = field(default_factory=list)
    jobs_status: list[JobStatus] = field(default_factory=list)


@dataclass(slots=True)
class TrainJob:
    meta: ObjectMeta
    runtime_kind: str = CLUSTER_RUNTIME
    runtime_name: str = ""
    num_nodes: int | None = None  # spec.trainer.numNodes
    suspend: bool = False
    managed_by: str = ""
    status: TrainJobStatus = field(default_factory=TrainJobStatus)
    spec_raw: dict[str, Any] = field(default_factory=dict, repr=False)
    # The referenced runtime, once the controllers found it (never read from the manifest).
    runtime: TrainingRuntime | None = None

    kind = "TrainJob"

    @property
    def queue_name(self) -> str:
        return self.meta.labels.get(QUEUE_NAME_LABEL, "")

    @property
    def runtime_key(self) -> tuple[str, str, str]:
        """(kind, namespace, name) of its runtime."""
        namespace = self.meta.namespace if self.runtime_kind == RUNTIME else ""
        return self.runtime_kind, namespace, self.runtime_name


# --- reading and validation -------------------------------------------------------------------------------


def read_trainjob(r: Reader, meta: ObjectMeta) -> TrainJob:
    spec = r.child("spec")
    ref = spec.child("runtimeRef")
    if not spec.has("runtimeRef"):
        r.errors.add(spec.at("runtimeRef"), "Required value")
    elif not ref.string("name"):
        r.errors.add(ref.at("name"), "Required value")
    api_group = ref.string("apiGroup", TRAINER_GROUP)
    if api_group != TRAINER_GROUP:
        r.errors.invalid(ref.at("apiGroup"), api_group, f"supported values: '{TRAINER_GROUP}'")
    trainer = spec.child("trainer")
    resources = trainer.child("resourcesPerNode")
    resources.resource_list("requests")
    resources.resource_list("limits")
    patches = spec.items("runtimePatches")
    for patch in patches:
        if not patch.string("manager"):
            r.errors.add(patch.at("manager"), "Required value")
    st = r.child("status")
    raw = r.raw("spec")
    return TrainJob(
        meta=meta,
        runtime_kind=ref.enum("kind", (CLUSTER_RUNTIME, RUNTIME), CLUSTER_RUNTIME),
        runtime_name=ref.string("name"),
        num_nodes=trainer.integer("numNodes", None, minimum=1, bits=32),
        suspend=spec.boolean("suspend", False),
        managed_by=spec.string("managedBy"),
        status=TrainJobStatus(
            conditions=read_conditions(st),
            jobs_status=[JobStatus(name=s.string("name"), **{k: s.integer(k, 0, bits=32) or 0 for k in
                                                             ("ready", "succeeded", "failed", "active", "suspended")})
                         for s in st.items("jobsStatus")],
        ),
        spec_raw=raw if isinstance(raw, dict) else {},
    )


def validate_trainjob(job: TrainJob, errs: FieldErrors) -> None:
    validate_name(job.meta, errs, namespaced=True)
    if job.managed_by and job.managed_by not in MANAGED_BY:
        errs.invalid("spec.managedBy", job.managed_by, f"supported values: {', '.join(repr(m) for m in MANAGED_BY)}")


def validate_trainjob_update(old: TrainJob, new: TrainJob, errs: FieldErrors) -> None:
    """managedBy and runtimeRef are immutable (the Trainer's CRD rules)."""
    if old.managed_by != new.managed_by:
        errs.invalid("spec.managedBy", new.managed_by, "field is immutable")
    if (old.runtime_kind, old.runtime_name) != (new.runtime_kind, new.runtime_name):
        errs.add("spec.runtimeRef", "field is immutable")


def _runtime_reader(kind: str) -> Any:
    def read(r: Reader, meta: ObjectMeta) -> TrainingRuntime:
        spec = r.child("spec")
        template = spec.child("template")
        if not template.child("spec").has("replicatedJobs"):
            r.errors.add(template.at("spec.replicatedJobs"), "Required value")
        else:  # the template is a JobSet's spec: read (and so checked) as one
            _template_jobset(template, meta)
        raw = r.raw("spec")
        return TrainingRuntime(meta=meta, kind=kind,
                               num_nodes=spec.child("mlPolicy").integer("numNodes", None, minimum=1, bits=32),
                               spec_raw=raw if isinstance(raw, dict) else {})
    return read


def _template_jobset(template: Reader, meta: ObjectMeta) -> JobSet:
    return read_jobset(Reader({"spec": template.data.get("spec")}, template.path, template.errors), meta)


read_cluster_training_runtime = _runtime_reader(CLUSTER_RUNTIME)
read_training_runtime = _runtime_reader(RUNTIME)


def validate_training_runtime(rt: TrainingRuntime, errs: FieldErrors) -> None:
    validate_name(rt.meta, errs, namespaced=rt.kind == RUNTIME)
    template = rt.spec_raw.get("template") or {}
    js = _template_jobset(Reader(template, "spec.template", errs), ObjectMeta(name=rt.meta.name or "runtime"))
    inner = FieldErrors()
    validate_jobset(js, inner)
    for err in inner.items:  # JobSet's rules on the template (its name checks aside: the JobSet is the TrainJob's)
        if not err.path.startswith("metadata"):
            errs.items.append(replace(err, path=f"spec.template.{err.path}"))


# --- the TrainJob's JobSet ---------------------------------------------------------------------------------


def _merge_pod_patch(pod: dict[str, Any], patch: dict[str, Any]) -> None:
    meta, spec = pod.setdefault("metadata", {}), pod.setdefault("spec", {})
    pmeta, pspec = patch.get("metadata") or {}, patch.get("spec") or {}
    for key in ("labels", "annotations"):
        if pmeta.get(key):
            meta[key] = {**(meta.get(key) or {}), **pmeta[key]}
    if pspec.get("nodeSelector"):
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **pspec["nodeSelector"]}
    for key in ("tolerations", "schedulingGates"):
        if pspec.get(key):
            current = list(spec.get(key) or [])
            spec[key] = current + [t for t in pspec[key] if t not in current]


def child_jobset_spec(trainjob_spec: dict[str, Any], runtime_spec: dict[str, Any]) -> dict[str, Any]:
    """The spec of the JobSet the Trainer makes for a TrainJob from its runtime (the parts Kueue's
    pod sets and the dev-cluster's simulated Trainer need)."""
    out = copy.deepcopy((runtime_spec.get("template") or {}).get("spec") or {})
    trainer = trainjob_spec.get("trainer") or {}
    num_nodes = trainer.get("numNodes") or (runtime_spec.get("mlPolicy") or {}).get("numNodes")
    replicated = [rj for rj in out.get("replicatedJobs") or [] if isinstance(rj, dict)]
    for rj in replicated:
        job = rj.setdefault("template", {})
        labels = (job.get("metadata") or {}).get("labels") or {}
        if labels.get(ANCESTOR_LABEL) != TRAINER_STEP and rj.get("name") != NODE:
            continue
        job_spec = job.setdefault("spec", {})
        if isinstance(num_nodes, int):
            job_spec["parallelism"] = job_spec["completions"] = num_nodes
        pod_spec = job_spec.setdefault("template", {}).setdefault("spec", {})
        for container in pod_spec.get("containers") or []:
            if isinstance(container, dict) and container.get("name") == NODE:
                for key in ("image", "command", "args"):
                    if trainer.get(key):
                        container[key] = copy.deepcopy(trainer[key])
                if trainer.get("env"):
                    names = {e.get("name") for e in trainer["env"] if isinstance(e, dict)}
                    container["env"] = [e for e in container.get("env") or [] if e.get("name") not in names] + \
                        copy.deepcopy(trainer["env"])
                if trainer.get("resourcesPerNode"):
                    container["resources"] = copy.deepcopy(trainer["resourcesPerNode"])
    by_name = {rj.get("name"): rj for rj in replicated}
    for patch in trainjob_spec.get("runtimePatches") or []:
        template_patch = ((patch or {}).get("trainingRuntimeSpec") or {}).get("template") or {}
        for rj_patch in (template_patch.get("spec") or {}).get("replicatedJobs") or []:
            target = by_name.get(rj_patch.get("name"))
            pod_patch = (((rj_patch.get("template") or {}).get("spec") or {}).get("template")) or {}
            if target is not None and pod_patch:
                _merge_pod_patch(target["template"].setdefault("spec", {}).setdefault("template", {}), pod_patch)
    out["suspend"] = bool(trainjob_spec.get("suspend"))
    return out
