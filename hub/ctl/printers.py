"""kubectl-style output of stored objects: tables (with Kueue's printer columns), YAML, JSON, names."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import yaml

from hub.api.meta import parse_time
from hub.api.registry import KINDS
from hub.api.schema.columns import human_duration

Object = dict[str, Any]


# --------------------------------------------------------------------------- small readers


def dig(obj: Any, *path: str | int) -> Any:
    for step in path:
        if isinstance(step, int):  # -1: the last item
            obj = obj[step] if isinstance(obj, list) and -len(obj) <= step < len(obj) else None
        else:
            obj = obj.get(step) if isinstance(obj, dict) else None
        if obj is None:
            return None
    return obj


def condition(obj: Object, type_: str) -> dict[str, Any] | None:
    for cond in dig(obj, "status", "conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == type_:
            return cond
    return None


def condition_status(obj: Object, type_: str) -> str:
    cond = condition(obj, type_)
    return str(cond.get("status", "")) if cond else ""


def _time(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return parse_time(text)
    except ValueError:
        return None


def age(obj: Object, now: float) -> str:
    created = _time(dig(obj, "metadata", "creationTimestamp"))
    return "<unknown>" if created is None else human_duration(now - created)


def _text(value: Any) -> str:
    if value is None or value == "":
        return ""
    return str(value)


def workload_phase(obj: Object) -> str:
    """One word for where a workload stands (the wide STATUS column)."""
    if condition_status(obj, "Finished") == "True":
        return "Finished"
    if condition_status(obj, "Evicted") == "True":
        return "Evicted"
    if condition_status(obj, "Admitted") == "True":
        return "Admitted"
    if condition_status(obj, "QuotaReserved") == "True":
        return "QuotaReserved"
    return "Pending"


# Set on listed Workloads by ``get -o wide`` from the visibility API (never sent anywhere).
POSITION_KEY = "__mkhubPosition"


def mark_positions(objects: Sequence[Object], summary: Object) -> None:
    """Attach each pending workload's position in its ClusterQueue (``positionInClusterQueue``)."""
    where = {(i["metadata"]["namespace"], i["metadata"]["name"]): i["positionInClusterQueue"] for i in summary.get("items") or []}
    for obj in objects:
        meta = obj.get("metadata") or {}
        position = where.get((meta.get("namespace", ""), meta.get("name", "")))
        if position is not None:
            obj[POSITION_KEY] = position


def workload_reason(obj: Object) -> str:
    """Why a workload stands where it does: QuotaReserved=False's reason while pending, else the last word."""
    for cond in dig(obj, "status", "conditions") or []:
        if cond.get("type") == "QuotaReserved" and cond.get("status") == "False":
            return str(cond.get("reason") or "")
    for type_ in ("Finished", "Evicted", "Admitted", "QuotaReserved"):
        for cond in dig(obj, "status", "conditions") or []:
            if cond.get("type") == type_ and cond.get("status") == "True":
                return str(cond.get("reason") or "")
    return ""


def job_phase(obj: Object) -> str:
    for type_, word in (("Complete", "Complete"), ("Failed", "Failed"), ("Suspended", "Suspended")):
        if condition_status(obj, type_) == "True":
            return word
    return "Running" if dig(obj, "status", "active") else ("Suspended" if dig(obj, "spec", "suspend") else "Pending")


def pod_phase(obj: Object) -> str:
    """kubectl's STATUS of a Pod, as far as mkhub's Pods go: SchedulingGated while it has a
    scheduling gate (Kueue's, until admission), Terminating once deleted, else its phase."""
    if dig(obj, "metadata", "deletionTimestamp"):
        return "Terminating"
    if dig(obj, "spec", "schedulingGates"):
        return "SchedulingGated"
    return str(dig(obj, "status", "phase") or "Pending")


def _pod_ready(obj: Object) -> str:
    containers = dig(obj, "spec", "containers") or []
    ready = sum(1 for c in dig(obj, "status", "containerStatuses") or [] if isinstance(c, dict) and c.get("ready"))
    if not ready and condition_status(obj, "Ready") == "True":
        ready = len(containers)  # the embedded hub's simulated status has the condition only
    return f"{ready}/{len(containers)}"


def _job_completions(obj: Object) -> str:
    spec = obj.get("spec") or {}
    want = spec.get("completions")
    if want is None:
        want = spec.get("parallelism", 1)
    return f"{dig(obj, 'status', 'succeeded') or 0}/{want}"


def _job_duration(obj: Object, now: float) -> str:
    start = _time(dig(obj, "status", "startTime"))
    if start is None:
        return ""
    end = _time(dig(obj, "status", "completionTime")) or now
    return human_duration(end - start)


# --------------------------------------------------------------------------- columns


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    value: Callable[[Object, float], str]
    wide: bool = False  # only with -o wide


def _c(header: str, fn: Callable[[Object], Any], wide: bool = False) -> Column:
    return Column(header, lambda obj, _now: _text(fn(obj)), wide)


_AGE = Column("AGE", age)


def _replicas(obj: Object) -> Any:
    replicas = dig(obj, "spec", "replicas")
    return 1 if replicas is None else replicas


def _since(text: Any, now: float) -> str:
    when = _time(text)
    return "<none>" if when is None else human_duration(now - when)

COLUMNS: dict[str, list[Column]] = {
    # Kueue's +kubebuilder:printcolumn markers, then AGE.
    "Workload": [
        _c("QUEUE", lambda o: dig(o, "spec", "queueName")),
        _c("RESERVED IN", lambda o: dig(o, "status", "admission", "clusterQueue")),
        _c("ADMITTED", lambda o: condition_status(o, "Admitted")),
        _c("FINISHED", lambda o: condition_status(o, "Finished")),
        _AGE,
        _c("PRIORITY", lambda o: dig(o, "spec", "priority") or 0, wide=True),
        _c("STATUS", workload_phase, wide=True),
        _c("POSITION", lambda o: o.get(POSITION_KEY), wide=True),
        _c("REASON", workload_reason, wide=True),
        _c("WORKER", lambda o: dig(o, "status", "clusterName"), wide=True),
    ],
    "ClusterQueue": [
        _c("COHORT", lambda o: dig(o, "spec", "cohortName") or dig(o, "spec", "cohort")),
        _c("STRATEGY", lambda o: dig(o, "spec", "queueingStrategy") or "BestEffortFIFO", wide=True),
        _c("PENDING WORKLOADS", lambda o: dig(o, "status", "pendingWorkloads") or 0),
        _c("ADMITTED WORKLOADS", lambda o: dig(o, "status", "admittedWorkloads") or 0),
        _c("RESERVING WORKLOADS", lambda o: dig(o, "status", "reservingWorkloads") or 0, wide=True),
        _c("ACTIVE", lambda o: condition_status(o, "Active"), wide=True),
        _AGE,
    ],
    "LocalQueue": [
        _c("CLUSTERQUEUE", lambda o: dig(o, "spec", "clusterQueue")),
        _c("PENDING WORKLOADS", lambda o: dig(o, "status", "pendingWorkloads") or 0),
        _c("ADMITTED WORKLOADS", lambda o: dig(o, "status", "admittedWorkloads") or 0),
        _c("ACTIVE", lambda o: condition_status(o, "Active"), wide=True),
        _AGE,
    ],
    "ResourceFlavor": [
        _AGE,
        _c("NODE LABELS", lambda o: ",".join(f"{k}={v}" for k, v in (dig(o, "spec", "nodeLabels") or {}).items()), wide=True),
    ],
    "Cohort": [_c("PARENT", lambda o: dig(o, "spec", "parentName")), _AGE],
    "WorkloadPriorityClass": [_c("VALUE", lambda o: o.get("value")), _AGE],
    "AdmissionCheck": [_c("CONTROLLER", lambda o: dig(o, "spec", "controllerName")), _c("ACTIVE", lambda o: condition_status(o, "Active")), _AGE],
    "MultiKueueConfig": [_c("CLUSTERS", lambda o: ",".join(dig(o, "spec", "clusters") or [])), _AGE],
    "MultiKueueCluster": [_c("ACTIVE", lambda o: condition_status(o, "Active")), _AGE],
    "Namespace": [_c("STATUS", lambda _o: "Active"), _AGE],
    "Topology": [_AGE, _c("LEVELS", lambda o: ",".join(str(lv.get("nodeLabel", "")) for lv in dig(o, "spec", "levels") or []), wide=True)],
    "ProvisioningRequestConfig": [_c("PROVISIONING CLASS", lambda o: dig(o, "spec", "provisioningClassName")), _AGE],
    "Event": [
        Column("LAST SEEN", lambda o, now: _event_age(o, now)),
        _c("TYPE", lambda o: o.get("type")),
        _c("REASON", lambda o: o.get("reason")),
        _c("OBJECT", lambda o: f"{str(dig(o, 'involvedObject', 'kind') or '').lower()}/{dig(o, 'involvedObject', 'name') or ''}"),
        _c("MESSAGE", lambda o: o.get("message")),
    ],
    # JobSet's and LeaderWorkerSet's CRD printer columns.
    "JobSet": [
        _c("TERMINALSTATE", lambda o: dig(o, "status", "terminalState")),
        _c("RESTARTS", lambda o: dig(o, "status", "restarts")),
        _c("COMPLETED", lambda o: condition_status(o, "Completed")),
        _c("SUSPENDED", lambda o: _json_bool(dig(o, "spec", "suspend"))),
        _AGE,
    ],
    # The Kubeflow training operator's CRD columns (its last condition).
    **{kind: [_c("STATE", lambda o: dig(o, "status", "conditions", -1, "type")), _AGE]
       for kind in ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob")},
    # The Kubeflow CRDs' columns: Age, and State, the last condition's type (MPIJob's order; TrainJob's State first).
    "MPIJob": [_AGE, _c("STATE", lambda o: _last_condition(o))],
    "TrainJob": [_c("STATE", lambda o: _last_condition(o)), _AGE],
    "LeaderWorkerSet": [
        _c("READY", lambda o: dig(o, "status", "readyReplicas")),
        _c("DESIRED", lambda o: dig(o, "spec", "replicas")),
        _c("UP-TO-DATE", lambda o: dig(o, "status", "updatedReplicas")),
        _AGE,
    ],
    # KubeRay's CRD printer columns (hub.devcluster.kuberay_crds).
    "RayJob": [
        _c("JOB STATUS", lambda o: dig(o, "status", "jobStatus")),
        _c("DEPLOYMENT STATUS", lambda o: dig(o, "status", "jobDeploymentStatus")),
        _c("RAY CLUSTER NAME", lambda o: dig(o, "status", "rayClusterName")),
        _c("START TIME", lambda o: dig(o, "status", "startTime")),
        _c("END TIME", lambda o: dig(o, "status", "endTime")),
        _AGE,
    ],
    "RayCluster": [
        _c("DESIRED WORKERS", lambda o: dig(o, "status", "desiredWorkerReplicas")),
        _c("AVAILABLE WORKERS", lambda o: dig(o, "status", "availableWorkerReplicas")),
        _c("CPUS", lambda o: dig(o, "status", "desiredCPU")),
        _c("MEMORY", lambda o: dig(o, "status", "desiredMemory")),
        _c("GPUS", lambda o: dig(o, "status", "desiredGPU")),
        _c("STATUS", lambda o: dig(o, "status", "state")),
        _AGE,
        _c("HEAD POD IP", lambda o: dig(o, "status", "head", "podIP"), wide=True),
    ],
    "RayService": [
        _c("SERVICE STATUS", lambda o: dig(o, "status", "serviceStatus")),
        _c("NUM SERVE ENDPOINTS", lambda o: dig(o, "status", "numServeEndpoints")),
        _AGE,
    ],
    # kubectl's columns for the kinds the embedded hub runs with its simulated controllers.
    "Deployment": [
        _c("READY", lambda o: f"{dig(o, 'status', 'readyReplicas') or 0}/{_replicas(o)}"),
        _c("UP-TO-DATE", lambda o: dig(o, "status", "updatedReplicas") or 0),
        _c("AVAILABLE", lambda o: dig(o, "status", "availableReplicas") or 0),
        _AGE,
    ],
    "ReplicaSet": [
        _c("DESIRED", _replicas),
        _c("CURRENT", lambda o: dig(o, "status", "replicas") or 0),
        _c("READY", lambda o: dig(o, "status", "readyReplicas") or 0),
        _AGE,
    ],
    "StatefulSet": [_c("READY", lambda o: f"{dig(o, 'status', 'readyReplicas') or 0}/{_replicas(o)}"), _AGE],
    "CronJob": [
        _c("SCHEDULE", lambda o: dig(o, "spec", "schedule")),
        _c("TIMEZONE", lambda o: dig(o, "spec", "timeZone") or "<none>"),
        _c("SUSPEND", lambda o: _json_bool(bool(dig(o, "spec", "suspend")))),
        _c("ACTIVE", lambda o: len(dig(o, "status", "active") or [])),
        Column("LAST SCHEDULE", lambda o, now: _since(dig(o, "status", "lastScheduleTime"), now)),
        _AGE,
    ],
    "Pod": [
        _c("READY", _pod_ready),
        _c("STATUS", pod_phase),
        _AGE,
        _c("QUEUE", lambda o: dig(o, "metadata", "labels", "kueue.x-k8s.io/queue-name"), wide=True),
        _c("NODE", lambda o: dig(o, "spec", "nodeName"), wide=True),
    ],
    "Job": [
        _c("STATUS", job_phase),
        _c("COMPLETIONS", _job_completions),
        Column("DURATION", _job_duration),
        _AGE,
        _c("QUEUE", lambda o: dig(o, "metadata", "labels", "kueue.x-k8s.io/queue-name"), wide=True),
    ],
}


def _last_condition(obj: dict[str, Any]) -> str:
    """``.status.conditions[-1:].type``."""
    conditions = dig(obj, "status", "conditions") or []
    return str(conditions[-1].get("type") or "") if conditions and isinstance(conditions[-1], dict) else ""


def _json_bool(value: Any) -> Any:
    """A boolean as JSON writes it (kubectl prints a boolean column so)."""
    return ("true" if value else "false") if isinstance(value, bool) else value


def _event_age(obj: Object, now: float) -> str:
    for field in ("lastTimestamp", "eventTime", "firstTimestamp"):
        when = _time(obj.get(field))
        if when is not None:
            return human_duration(now - when)
    return age(obj, now)


# Kinds whose table has no NAME column (kubectl prints events by what they are about).
_NAMELESS = frozenset({"Event"})


def labels_text(obj: Object) -> str:
    labels = dig(obj, "metadata", "labels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


def format_table(rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns, three spaces apart, like kubectl's tabwriter."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines)


def table(
    kind: str,
    objects: Sequence[Object],
    *,
    now: float,
    wide: bool = False,
    namespace_column: bool = False,
    header: bool = True,
    show_labels: bool = False,
    name_prefix: str = "",
) -> str:
    """kubectl's table: NAMESPACE (with -A), NAME (``name_prefix`` + name when several kinds print), the kind's
    columns, LABELS (``--show-labels``)."""
    columns = [c for c in COLUMNS.get(kind, [_AGE]) if wide or not c.wide]
    named = kind not in _NAMELESS
    rows: list[list[str]] = []
    if header:
        rows.append(
            (["NAMESPACE"] if namespace_column else [])
            + (["NAME"] if named else [])
            + [c.header for c in columns]
            + (["LABELS"] if show_labels else [])
        )
    for obj in objects:
        meta = obj.get("metadata") or {}
        row = [str(meta.get("namespace", ""))] if namespace_column else []
        if named:
            row.append(name_prefix + str(meta.get("name", "")))
        row.extend(c.value(obj, now) for c in columns)
        if show_labels:
            row.append(labels_text(obj))
        rows.append(row)
    return format_table(rows) if rows else ""


# --------------------------------------------------------------------------- other formats


def type_name(kind: str) -> str:
    """``workload.kueue.x-k8s.io``, ``job.batch``, ``namespace`` (kubectl's -o name prefix)."""
    info = KINDS.get(kind)
    if info is None:
        return kind.lower()
    version = info.api_versions[0]
    group = version.rsplit("/", 1)[0] if "/" in version else ""
    return f"{kind.lower()}.{group}" if group else kind.lower()


def names(objects: Sequence[Object]) -> str:
    return "\n".join(f"{type_name(str(o.get('kind', '')))}/{dig(o, 'metadata', 'name')}" for o in objects)


def as_list(objects: Sequence[Object]) -> Object:
    return {"apiVersion": "v1", "kind": "List", "items": list(objects), "metadata": {"resourceVersion": ""}}


def dump(data: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=4, ensure_ascii=False)
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True).rstrip("\n")


def write(out: TextIO, text: str) -> None:
    if text:
        out.write(text + "\n")
