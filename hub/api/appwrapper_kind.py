"""``workload.codeflare.dev/v1beta2`` AppWrapper: the typed object, its reader and its validation.

An AppWrapper wraps other objects (its ``spec.components[].template``) and declares their pod
sets itself: ``podSets[].path`` points into the component at a pod template
(``template.spec.template`` for a Deployment), ``replicas`` (default 1) says how many pods run it.
A component without declared pod sets of a kind the AppWrapper project knows (Job, JobSet,
PyTorchJob, RayCluster, RayJob, Pod, Deployment, StatefulSet) has them inferred, as its
``utils.InferPodSets`` does. The checks are its webhook's (``validateAppWrapperCreate``): no
nested AppWrapper, no component in another namespace, every path a pod template, declared pod
sets agreeing with the inferred ones, 1 to 8 pod sets in all; and its update rule that the
declared pod sets and ``managedBy`` never change. Templates may change: Kueue's admission is
written into them (:mod:`hub.api.jobkinds.appwrapper`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import FieldErrors
from .meta import Condition, ObjectMeta, read_conditions
from .others import QUEUE_NAME_LABEL
from .pods import PodSpecInfo, read_pod_template
from .reader import Reader
from .validation import validate_name, validate_pod_template_resources

APPWRAPPER_API_VERSION = "workload.codeflare.dev/v1beta2"
APPWRAPPER_CONTROLLER = "workload.codeflare.dev/appwrapper-controller"
APPWRAPPER_LABEL = "workload.codeflare.dev/appwrapper"  # on every component and its pod templates
MAX_POD_SETS = 8  # Kueue's limit on a Workload's pod sets
# The pod set annotations naming the TAS labels (the AppWrapper project's utils).
TAS_POD_INDEX_LABEL = "workload.codeflare.dev.appwrapper/tas-pod-index-label"
TAS_SUB_GROUP_INDEX_LABEL = "workload.codeflare.dev.appwrapper/tas-sub-group-index-label"
TAS_SUB_GROUP_COUNT = "workload.codeflare.dev.appwrapper/tas-sub-group-count"

_STEP = re.compile(r"\.([^.\[]+)|\[(-?[0-9]+)\]")


@dataclass(slots=True)
class AppWrapperPodSet:
    path: str
    replicas: int = 1
    annotations: dict[str, str] = field(default_factory=dict)
    template: dict[str, Any] = field(default_factory=dict)  # the pod template at ``path``, as written
    spec: PodSpecInfo = field(default_factory=lambda: PodSpecInfo(containers=()))


@dataclass(slots=True)
class Component:
    template: dict[str, Any]  # the wrapped object
    pod_sets: tuple[AppWrapperPodSet, ...] = ()
    declared: bool = True  # pod sets written in the AppWrapper (else inferred from the kind)

    @property
    def api_version(self) -> str:
        return str(self.template.get("apiVersion") or "")

    @property
    def kind(self) -> str:
        return str(self.template.get("kind") or "")


@dataclass(slots=True)
class AppWrapperStatus:
    phase: str = ""
    conditions: list[Condition] = field(default_factory=list)
    retries: int = 0


@dataclass(slots=True)
class AppWrapper:
    """``workload.codeflare.dev/v1beta2`` AppWrapper, as its webhook and Kueue read it."""

    meta: ObjectMeta
    components: tuple[Component, ...] = ()
    suspend: bool = False
    managed_by: str = ""
    status: AppWrapperStatus = field(default_factory=AppWrapperStatus)
    spec_raw: dict[str, Any] = field(default_factory=dict, repr=False)
    # Errors found while reading that validation reports (a path that is no pod template, ...).
    problems: list[tuple[str, object, str]] = field(default_factory=list, repr=False)

    kind = "AppWrapper"

    @property
    def queue_name(self) -> str:
        return self.meta.labels.get(QUEUE_NAME_LABEL, "")

    @property
    def pod_sets(self) -> list[AppWrapperPodSet]:
        return [ps for c in self.components for ps in c.pod_sets]


# --- paths into a component ------------------------------------------------------------------------------


def value_at(component: Mapping[str, Any], path: str) -> tuple[Any, str]:
    """The value at ``path`` (``template.spec.x[0].y``) in a component, or (None, why not)."""
    if not path.startswith("template"):
        return None, "first element of the path must be 'template'"
    cursor: Any = component.get("template")
    done, rest = "template", path[len("template"):]
    while rest:
        m = _STEP.match(rest)
        if m is None:
            return None, f"at path position '{done}' invalid path element '{rest}'"
        key, index = m.group(1), m.group(2)
        if key is not None:
            if not isinstance(cursor, Mapping):
                return None, f"at path position '{done}' non-map value"
            if key not in cursor:
                return None, f"at path position '{done}' missing field '{key}'"
            cursor = cursor[key]
        else:
            i = int(index)
            if not isinstance(cursor, list):
                return None, f"at path position '{done}' found non-array value"
            if not 0 <= i < len(cursor):
                return None, f"at path position '{done}' out of bounds index '{i}'"
            cursor = cursor[i]
        done, rest = done + m.group(0), rest[m.end():]
    return cursor, ""


def pod_template_at(component: Mapping[str, Any], path: str) -> tuple[dict[str, Any] | None, str]:
    """The pod template at ``path`` (the object itself, for edits), or (None, why it is not one)."""
    value, why = value_at(component, path)
    if why:
        return None, why
    if not isinstance(value, dict):
        return None, f"at path position '{path}' non-map value"
    if not isinstance(value.get("spec"), dict):
        return None, f"content at {path} does not contain a spec"
    return value, ""


def _replicas_at(component: Mapping[str, Any], path: str, default: int = 1) -> int:
    value, why = value_at(component, path)
    return value if not why and isinstance(value, int) and not isinstance(value, bool) else default


def _ray(component: Mapping[str, Any], prefix: str) -> list[tuple[str, int, dict[str, str]]]:
    out: list[tuple[str, int, dict[str, str]]] = [(f"{prefix}headGroupSpec.template", 1, {})]
    workers, why = value_at(component, f"{prefix}workerGroupSpecs")
    for i in range(len(workers) if not why and isinstance(workers, list) else 0):
        group = f"{prefix}workerGroupSpecs[{i}]."
        if not value_at(component, group + "template")[1]:
            out.append((group + "template", _replicas_at(component, group + "replicas"), {}))
    return out


def infer_pod_sets(component: Mapping[str, Any]) -> list[tuple[str, int, dict[str, str]]]:
    """(path, replicas, annotations) of a known kind's pod sets, as the AppWrapper project infers them."""
    template = component.get("template")
    if not isinstance(template, Mapping):
        return []
    gvk = (str(template.get("apiVersion") or ""), str(template.get("kind") or ""))
    if gvk == ("batch/v1", "Job"):
        par = _replicas_at(component, "template.spec.parallelism")
        comp = _replicas_at(component, "template.spec.completions", par)
        return [("template.spec.template", min(par, comp), {TAS_POD_INDEX_LABEL: "batch.kubernetes.io/job-completion-index"})]
    if gvk == ("jobset.x-k8s.io/v1alpha2", "JobSet"):
        jobs, why = value_at(component, "template.spec.replicatedJobs")
        out = []
        for i in range(len(jobs) if not why and isinstance(jobs, list) else 0):
            p = f"template.spec.replicatedJobs[{i}]."
            if value_at(component, p + "template")[1]:
                continue
            par = _replicas_at(component, p + "template.spec.parallelism")
            pods = min(par, _replicas_at(component, p + "template.spec.completions", par))
            replicas = _replicas_at(component, p + "replicas")
            out.append((p + "template.spec.template", replicas * pods, {
                TAS_POD_INDEX_LABEL: "batch.kubernetes.io/job-completion-index",
                TAS_SUB_GROUP_INDEX_LABEL: "jobset.sigs.k8s.io/job-index", TAS_SUB_GROUP_COUNT: str(replicas)}))
        return out
    if gvk == ("kubeflow.org/v1", "PyTorchJob"):
        out = []
        for role in ("Master", "Worker"):
            p = f"template.spec.pytorchReplicaSpecs.{role}."
            if not value_at(component, p + "template")[1]:
                out.append((p + "template", _replicas_at(component, p + "replicas"),
                            {TAS_POD_INDEX_LABEL: "training.kubeflow.org/replica-index"}))
        return out
    if gvk == ("ray.io/v1", "RayCluster"):
        return _ray(component, "template.spec.")
    if gvk == ("ray.io/v1", "RayJob"):
        return _ray(component, "template.spec.rayClusterSpec.")
    if gvk == ("v1", "Pod"):
        return [("template", 1, {})]
    if gvk in (("apps/v1", "Deployment"), ("apps/v1", "StatefulSet")) and not value_at(component, "template.spec.template")[1]:
        return [("template.spec.template", _replicas_at(component, "template.spec.replicas"), {})]
    return []


def component_pod_sets(component: Mapping[str, Any]) -> list[tuple[str, int, dict[str, str]]]:
    """A component's pod sets as the AppWrapper runs them: the declared ones, else the inferred."""
    declared = [ps for ps in component.get("podSets") or [] if isinstance(ps, Mapping)]
    if declared:
        return [(str(ps.get("path") or ""), _int(ps.get("replicas")), dict(ps.get("annotations") or {}))
                for ps in declared]
    return infer_pod_sets(component)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


# --- reading ---------------------------------------------------------------------------------------------


def read_appwrapper(r: Reader, meta: ObjectMeta) -> AppWrapper:
    spec = r.child("spec")
    aw = AppWrapper(meta=meta, suspend=spec.boolean("suspend", False), managed_by=spec.string("managedBy"),
                    spec_raw=raw if isinstance(raw := r.raw("spec"), dict) else {})
    if not isinstance(spec.raw("components"), list):
        r.errors.required(spec.at("components"))
    components = []
    for c in spec.items("components"):
        if not isinstance(c.raw("template"), dict):
            r.errors.invalid(c.at("template"), c.raw("template"), "must be an object (the wrapped resource)")
            continue
        declared = []
        for ps in c.items("podSets"):
            if not ps.string("path"):
                r.errors.required(ps.at("path"))
            replicas = ps.integer("replicas", 1, bits=32)
            declared.append((ps.string("path"), replicas if replicas is not None else 1, ps.string_map("annotations")))
        c.items("podSetInfos")
        found = declared or infer_pod_sets(c.data)
        pod_sets = []
        for j, (path, replicas, notes) in enumerate(found):
            template, why = pod_template_at(c.data, path)
            if template is None:
                if path:  # the empty one is reported as required
                    where = c.at(f"podSets[{j}].path") if declared else c.at("template")
                    aw.problems.append((where, path, f"path does not refer to a v1.PodSpecTemplate: {why}"))
                continue
            spec_info = read_pod_template(Reader(template, f"{c.path}.{path}", r.errors))
            pod_sets.append(AppWrapperPodSet(path, replicas, notes, template, spec_info))
        components.append(Component(c.raw("template"), tuple(pod_sets), bool(declared)))
    aw.components = tuple(components)
    st = r.child("status")
    aw.status = AppWrapperStatus(phase=st.string("phase"), conditions=read_conditions(st),
                                 retries=st.integer("resettingCount", 0, bits=32) or 0)
    return aw


# --- validation ------------------------------------------------------------------------------------------


def validate_appwrapper(aw: AppWrapper, errs: FieldErrors) -> None:
    """The AppWrapper webhook's ValidateCreate, and pod templates that can run."""
    validate_name(aw.meta, errs, namespaced=True)
    for where, value, reason in aw.problems:
        errs.invalid(where, value, reason)
    raw_components = [c for c in aw.spec_raw.get("components") or [] if isinstance(c, dict)]
    count = 0
    for i, c in enumerate(aw.components):
        path = f"spec.components[{i}]"
        if not c.api_version or not c.kind:
            errs.invalid(f"{path}.template", c.kind or "<no kind>", "failed to decode as JSON: apiVersion and kind are required")
        if (c.api_version, c.kind) == (APPWRAPPER_API_VERSION, "AppWrapper"):
            errs.add(f"{path}.template", "Forbidden: Nested AppWrappers are forbidden")
        ns = (c.template.get("metadata") or {}).get("namespace") if isinstance(c.template.get("metadata"), dict) else None
        if ns and ns != aw.meta.namespace:
            errs.add(f"{path}.template.metadata.namespace", "Forbidden: AppWrappers cannot create objects in other namespaces")
        for j, ps in enumerate(c.pod_sets):
            if ps.replicas < 0:
                errs.invalid(f"{path}.podSets[{j}].replicas", ps.replicas, "must be greater than or equal to 0")
            if not ps.spec.containers:
                errs.required(f"{path}.{ps.path}.spec.containers")
            validate_pod_template_resources(ps.spec, f"{path}.{ps.path}.spec", errs)
        inferred = infer_pod_sets(raw_components[i]) if i < len(raw_components) else []
        if c.declared:
            _agree(c, inferred, f"{path}.podSets", errs)
        count += max(len(c.pod_sets) if c.declared else 0, len(inferred))
    if count == 0:
        errs.invalid("spec.components", len(aw.components), "components contains no podspecs")
    elif count > MAX_POD_SETS:
        errs.invalid("spec.components", count, f"components contains {count} podspecs; at most {MAX_POD_SETS} are allowed")


def _agree(c: Component, inferred: list[tuple[str, int, dict[str, str]]], path: str, errs: FieldErrors) -> None:
    """Declared pod sets: distinct paths and, for a known kind, the inferred ones (the webhook's ValidatePodSets)."""
    declared = {ps.path: ps.replicas for ps in c.pod_sets}
    if len(declared) < len(c.pod_sets):
        dup = next(ps.path for k, ps in enumerate(c.pod_sets) if ps.path in {p.path for p in c.pod_sets[:k]})
        errs.invalid(path, dup, f"multiple DeclaredPodSets with path '{dup}'")
        return
    if not inferred:
        return
    if len(inferred) != len(c.pod_sets):
        errs.invalid(path, len(c.pod_sets), f"DeclaredPodSet count {len(c.pod_sets)} differs from inferred count {len(inferred)}")
        return
    for ipath, ireplicas, _ in inferred:
        if ipath not in declared:
            errs.invalid(path, ipath, f"PodSet with path '{ipath}' is missing")
        elif declared[ipath] != ireplicas:
            errs.invalid(path, declared[ipath], f"replica count {declared[ipath]} differs from inferred count "
                                                f"{ireplicas} for PodSet at path position '{ipath}'")


def validate_appwrapper_update(old: AppWrapper, new: AppWrapper, errs: FieldErrors) -> None:
    """The webhook's ValidateUpdate: the declared pod sets and managedBy never change."""
    msg = "Forbidden: attempt to change immutable field"
    if len(old.components) != len(new.components):
        errs.add("spec.components", msg)
        return
    for i, (o, n) in enumerate(zip(old.components, new.components, strict=True)):
        if not (o.declared and n.declared):
            continue
        if len(o.pod_sets) != len(n.pod_sets):
            errs.add(f"spec.components[{i}].podSets", msg)
            continue
        for j, (ops, nps) in enumerate(zip(o.pod_sets, n.pod_sets, strict=True)):
            if ops.replicas != nps.replicas:
                errs.add(f"spec.components[{i}].podSets[{j}].replicas", msg)
            if ops.path != nps.path:
                errs.add(f"spec.components[{i}].podSets[{j}].path", msg)
    if old.managed_by != new.managed_by:
        errs.add("spec.managedBy", msg)
