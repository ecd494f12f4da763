"""``sparkoperator.k8s.io/v1beta2`` SparkApplication: the typed object, its reader and validation.

What Kueue's SparkApplication integration reads (``pkg/controller/jobs/sparkapplication``, alpha,
behind the SparkApplicationIntegration gate): a driver and an executor pod set whose templates it
builds from the ``spec.driver`` / ``spec.executor`` fields as the Spark operator builds their pods
(a container named as the operator names it with ``coreRequest`` / ``coreLimit``, ``memory`` /
``memoryLimit`` in Java notation and ``gpu``; the role's volumes, init containers, sidecars,
priority class, nodeSelector, affinity and tolerations; the role ``template``'s metadata with its
``labels`` and ``annotations``). Checks: the operator CRD's enums and required fields, quantities
that parse, and Kueue's webhook for a queued one (cluster mode only, no dynamic allocation).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from .errors import FieldErrors
from .meta import ObjectMeta
from .others import QUEUE_NAME_LABEL
from .pods import PodSpecInfo, read_pod_template
from .quantity import QuantityError, resource_value
from .reader import Reader
from .validation import validate_name

SPARK_API_VERSION = "sparkoperator.k8s.io/v1beta2"
SPARK_CONTROLLER = "sparkoperator.k8s.io/spark-operator"
DRIVER_CONTAINER, EXECUTOR_CONTAINER = "spark-kubernetes-driver", "executor"  # the operator's names
TYPES = ("Java", "Python", "Scala", "R")
MODES = ("cluster", "client", "in-cluster-client")
LOCAL_DIR_PREFIX = "spark-local-dir-"
_JAVA_UNITS = {"k": "Ki", "m": "Mi", "g": "Gi", "t": "Ti", "p": "Pi"}


def java_memory(value: str) -> str:
    """The Spark operator's ``ConvertJavaMemoryStringToK8sMemoryString``: ``1g`` is ``1Gi``."""
    unit = _JAVA_UNITS.get(value[-1:].lower())
    return value[:-1] + unit if unit else value


@dataclass(slots=True)
class SparkRole:
    """``spec.driver`` or ``spec.executor``, and the pod template Kueue builds from it."""

    raw: dict[str, Any]
    template: dict[str, Any]
    spec: PodSpecInfo
    instances: int = 1  # the executor's; a driver is one pod


@dataclass(slots=True)
class SparkStatus:
    state: str = ""  # applicationState.state: "", SUBMITTED, RUNNING, COMPLETED, FAILED, ...
    error_message: str = ""
    executor_state: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class SparkApplication:
    meta: ObjectMeta
    mode: str = "cluster"
    suspend: bool = False
    dynamic_allocation: bool = False
    driver: SparkRole = field(default_factory=lambda: SparkRole({}, {}, PodSpecInfo(containers=())))
    executor: SparkRole = field(default_factory=lambda: SparkRole({}, {}, PodSpecInfo(containers=())))
    status: SparkStatus = field(default_factory=SparkStatus)
    spec_raw: dict[str, Any] = field(default_factory=dict, repr=False)

    kind = "SparkApplication"

    @property
    def queue_name(self) -> str:
        return self.meta.labels.get(QUEUE_NAME_LABEL, "")


def build_template(spec: dict[str, Any], role: str, r: Reader | None = None) -> dict[str, Any]:
    """The pod template of ``role`` (driver | executor) as Kueue's ``build*PodTemplateSpec`` makes it;
    ``r`` (at ``spec.<role>``) reports quantities that do not parse."""
    rs: dict[str, Any] = spec.get(role) if isinstance(spec.get(role), dict) else {}  # type: ignore[assignment]
    container: dict[str, Any] = {"name": DRIVER_CONTAINER if role == "driver" else EXECUTOR_CONTAINER}
    pod: dict[str, Any] = {"containers": [container]}
    volumes = {v.get("name"): v for v in spec.get("volumes") or [] if isinstance(v, dict)}
    for mount in rs.get("volumeMounts") or []:
        name = mount.get("name") if isinstance(mount, dict) else None
        if not name or str(name).startswith(LOCAL_DIR_PREFIX) or name not in volumes:
            continue
        if all(v.get("name") != name for v in pod.get("volumes", [])):
            pod.setdefault("volumes", []).append(copy.deepcopy(volumes[name]))
        container.setdefault("volumeMounts", []).append(copy.deepcopy(mount))
    for key, into in (("initContainers", "initContainers"), ("sidecars", "containers")):
        for c in rs.get(key) or []:
            if isinstance(c, dict) and not any((c.get("name"), c.get("image")) == (o.get("name"), o.get("image"))
                                               for o in pod.get(into, [])):
                pod.setdefault(into, []).append(copy.deepcopy(c))
    for key in ("priorityClassName", "affinity"):
        if rs.get(key):
            pod[key] = copy.deepcopy(rs[key])
    if rs.get("nodeSelector"):
        pod["nodeSelector"] = dict(rs["nodeSelector"])
    if rs.get("tolerations"):
        pod["tolerations"] = copy.deepcopy(rs["tolerations"])
    resources: dict[str, dict[str, Any]] = {}
    for key, kind, resource, convert in (("coreRequest", "requests", "cpu", False), ("coreLimit", "limits", "cpu", False),
                                         ("memory", "requests", "memory", True), ("memoryLimit", "limits", "memory", True)):
        value = rs.get(key)
        if value is None:
            continue
        text = java_memory(str(value)) if convert else str(value)
        try:
            resource_value(resource, text)
        except QuantityError as exc:
            if r is not None:
                r.errors.invalid(r.at(key), value, str(exc))
            continue
        resources.setdefault(kind, {})[resource] = text
    gpu = rs.get("gpu") if isinstance(rs.get("gpu"), dict) else {}
    if gpu and gpu.get("name") and isinstance(gpu.get("quantity"), int) and gpu["quantity"] > 0:
        resources.setdefault("limits", {})[str(gpu["name"])] = gpu["quantity"]
    if resources:
        container["resources"] = resources
    base: dict[str, Any] = rs["template"] if isinstance(rs.get("template"), dict) else {}
    tmeta: dict[str, Any] = base["metadata"] if isinstance(base.get("metadata"), dict) else {}
    meta: dict[str, Any] = {}
    for key in ("labels", "annotations"):
        merged = {**(tmeta.get(key) or {}), **(rs.get(key) or {})}
        if merged:
            meta[key] = merged
    return {"metadata": meta, "spec": pod} if meta else {"spec": pod}


def read_spark(r: Reader, meta: ObjectMeta) -> SparkApplication:
    spec = r.child("spec")
    raw: dict[str, Any] = r.raw("spec") if isinstance(r.raw("spec"), dict) else {}
    if spec.has("type"):
        spec.enum("type", TYPES, "Scala")
    else:
        r.errors.required(spec.at("type"))
    if not spec.string("sparkVersion"):
        r.errors.required(spec.at("sparkVersion"))
    roles = {}
    for role in ("driver", "executor"):
        rr = spec.child(role)
        for key in ("labels", "annotations", "nodeSelector"):
            rr.string_map(key)
        for key in ("coreRequest", "coreLimit", "memory", "memoryLimit", "priorityClassName"):
            rr.string(key)
        template = build_template(raw, role, rr)
        info = read_pod_template(Reader(template, rr.path, r.errors))
        instances = rr.integer("instances", 1, minimum=0, bits=32) if role == "executor" else 1
        roles[role] = SparkRole(raw[role] if isinstance(raw.get(role), dict) else {}, template, info,
                                instances if instances is not None else 1)
    st = r.child("status")
    app = st.child("applicationState")
    return SparkApplication(
        meta=meta,
        mode=spec.enum("mode", MODES, "cluster"),
        suspend=spec.boolean("suspend", False),
        dynamic_allocation=spec.child("dynamicAllocation").boolean("enabled", False),
        driver=roles["driver"],
        executor=roles["executor"],
        status=SparkStatus(state=app.string("state"), error_message=app.string("errorMessage"),
                           executor_state=st.string_map("executorState")),
        spec_raw=raw,
    )


def validate_spark(app: SparkApplication, errs: FieldErrors) -> None:
    """The API server's name rule, and Kueue's webhook for one it queues (labelled with a queue)."""
    validate_name(app.meta, errs, namespaced=True)
    if not app.queue_name:
        return
    if app.mode != "cluster":
        errs.invalid("spec.mode", app.mode, "only Cluster mode is supported for a kueue managed job")
    if app.dynamic_allocation:
        errs.invalid("spec.dynamicAllocation.enabled", True, "a kueue managed job can use dynamicAllocation only when "
                     "the ElasticJobsViaWorkloadSlices feature gate is on and the job is an elastic job")
