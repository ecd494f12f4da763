"""``meta.k8s.io/v1`` Table responses (``kubectl get`` asks for them), with Kueue's printer columns.

Kueue's kinds: the ``additionalPrinterColumns`` of the CRDs, from the one
definition in :mod:`hub.api.schema.columns` (the CRDs and ``mkhub get`` use it
too), evaluated on the object in the requested version, as the API server does.
Built-in kinds (:data:`COLUMNS`): the columns kubectl shows against a real API
server, computed. ``Name`` comes first, ``date`` columns print as ages (``5m``),
and a kind without printer columns gets ``Age``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hub.api.meta import parse_time
from hub.api.schema import KUEUE_KINDS, STORAGE_VERSION, row_cells, table_columns
from hub.api.schema.columns import PrinterColumn, human_duration
from hub.api.selectors import format_label_selector
from hub.store.interface import Object

TABLE_PARAMS = ("as=Table", "g=meta.k8s.io")

Cell = Any


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str  # string | integer | number | boolean | date
    json_path: str = ""
    description: str = ""
    priority: int = 0
    compute: Callable[[Object, float], Cell] | None = None


def age_of(value: Any, now: float) -> str:
    if not isinstance(value, str) or not value:
        return "<unknown>"
    try:
        return human_duration(now - parse_time(value))
    except ValueError:
        return "<unknown>"


# --------------------------------------------------------------------------- a small JSONPath

_STEP = re.compile(r"\.([A-Za-z0-9_\-]+)|\[\?\(@\.([A-Za-z0-9_]+)==['\"]([^'\"]*)['\"]\)\]|\[(\d+)\]|\[(-?\d+):\]")


def json_path(obj: Any, path: str) -> Any:
    """The subset of JSONPath CRD printer columns use: ``.a.b``, ``[0]``, ``[?(@.type=='X')]``,
    ``[-1:]`` (the training operator's last condition)."""
    values = [obj]
    for match in _STEP.finditer(path):
        field, key, want, index, start = match.groups()
        out: list[Any] = []
        for value in values:
            if start is not None:
                if isinstance(value, list):
                    out.extend(value[int(start):])
            elif field is not None:
                if isinstance(value, dict) and field in value:
                    out.append(value[field])
            elif key is not None:
                if isinstance(value, list):
                    out.extend(v for v in value if isinstance(v, dict) and str(v.get(key)) == want)
            elif isinstance(value, list) and int(index) < len(value):
                out.append(value[int(index)])
        values = out
    if not values:
        return None
    return values[0] if len(values) == 1 else ",".join(str(v) for v in values)


# --------------------------------------------------------------------------- built-in kinds


def _cond(obj: Object, type_: str) -> str:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == type_ and c.get("status") == "True":
            return type_
    return ""


def _job_status(obj: Object, _: float) -> str:
    for type_, shown in (("Complete", "Complete"), ("Failed", "Failed"), ("Suspended", "Suspended")):
        if _cond(obj, type_):
            return shown
    if (obj.get("spec") or {}).get("suspend"):
        return "Suspended"
    return "Running"


def _job_completions(obj: Object, _: float) -> str:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    completions = spec.get("completions")
    done = status.get("succeeded", 0)
    return f"{done}/{completions}" if completions is not None else f"{done}/1 of {spec.get('parallelism', 1)}"


def _job_duration(obj: Object, now: float) -> str:
    status = obj.get("status") or {}
    start = status.get("startTime")
    if not isinstance(start, str):
        return ""
    end = status.get("completionTime")
    try:
        stop = parse_time(end) if isinstance(end, str) else now
        return human_duration(stop - parse_time(start))
    except ValueError:
        return ""


def _containers(obj: Object, field: str) -> str:
    spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    return ",".join(str(c.get(field, "")) for c in spec.get("containers") or [] if isinstance(c, dict))


def _pod_ready(obj: Object, _: float) -> str:
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    total = len((obj.get("spec") or {}).get("containers") or []) or len(statuses)
    ready = sum(1 for s in statuses if isinstance(s, dict) and s.get("ready"))
    return f"{ready}/{total}"


def _pod_restarts(obj: Object, _: float) -> int:
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    return sum(int(s.get("restartCount", 0)) for s in statuses if isinstance(s, dict))


def _node_ready(obj: Object, _: float) -> str:
    out = "Ready" if _cond(obj, "Ready") else "NotReady"
    return out + (",SchedulingDisabled" if (obj.get("spec") or {}).get("unschedulable") else "")


def _node_roles(obj: Object, _: float) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix):] for k in ((obj.get("metadata") or {}).get("labels") or {}) if k.startswith(prefix))
    return ",".join(r for r in roles if r) or "<none>"


def _node_address(kind: str) -> Callable[[Object, float], str]:
    def address(obj: Object, _: float) -> str:
        for a in (obj.get("status") or {}).get("addresses") or []:
            if isinstance(a, dict) and a.get("type") == kind:
                return str(a.get("address", ""))
        return "<none>"

    return address


def _apiservice_service(obj: Object, _: float) -> str:
    ref = (obj.get("spec") or {}).get("service")
    return f"{ref.get('namespace', '')}/{ref.get('name', '')}" if isinstance(ref, dict) else "Local"


def _apiservice_available(obj: Object, _: float) -> str:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "Available":
            status = str(c.get("status", "Unknown"))
            return status if status == "True" else f"{status} ({c.get('reason', '')})"
    return "Unknown"


def _event_object(obj: Object, _: float) -> str:
    ref = obj.get("involvedObject") or obj.get("regarding") or {}
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"


def _event_last_seen(obj: Object, now: float) -> str:
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        if obj.get(key):
            return age_of(obj[key], now)
    return age_of((obj.get("metadata") or {}).get("creationTimestamp"), now)


def _int_of(node: Any, key: str) -> int:
    value = node.get(key) if isinstance(node, dict) else None
    return value if isinstance(value, int) else 0


def _ready_of_desired(obj: Object, _: float) -> str:
    return f"{_int_of(obj.get('status'), 'readyReplicas')}/{_int_of(obj.get('spec'), 'replicas')}"


def _selector(obj: Object, _: float) -> str:
    return format_label_selector((obj.get("spec") or {}).get("selector")) or "<none>"


def _cron_containers(field: str) -> Callable[[Object, float], str]:
    def cell(obj: Object, _: float) -> str:
        job = ((obj.get("spec") or {}).get("jobTemplate") or {}).get("spec") or {}
        return _containers({"spec": job}, field)

    return cell


def _last_schedule(obj: Object, now: float) -> str:
    when = (obj.get("status") or {}).get("lastScheduleTime")
    return age_of(when, now) if when else "<none>"


def _pod_phase(obj: Object, _: float) -> str:
    """kubectl's STATUS, as kube-apiserver's pod printer derives it: the phase (or status.reason),
    SchedulingGated while gates hold the pod back, then the last container's waiting or terminated
    reason (a finished pod shows Completed or Error), Terminating while a live pod is deleted."""
    status = obj.get("status") or {}
    reason = str(status.get("reason") or status.get("phase") or "Pending")
    for c in status.get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    running = False
    for cs in reversed([s for s in status.get("containerStatuses") or [] if isinstance(s, dict)]):
        raw = cs.get("state")
        state: dict[str, Any] = raw if isinstance(raw, dict) else {}
        waiting, done = state.get("waiting"), state.get("terminated")
        if isinstance(waiting, dict) and waiting.get("reason"):
            reason = str(waiting["reason"])
        elif isinstance(done, dict):
            signal = done.get("signal")
            reason = str(done.get("reason") or (f"Signal:{signal}" if signal else f"ExitCode:{done.get('exitCode', 0)}"))
        elif cs.get("ready") and "running" in state:
            running = True
    if reason == "Completed" and running:  # some containers still run
        reason = "Running" if _cond(obj, "Ready") else "NotReady"
    if (obj.get("metadata") or {}).get("deletionTimestamp") and status.get("phase") not in ("Succeeded", "Failed"):
        reason = "Terminating"
    return reason


def _param_kind(obj: Object) -> str:
    kind = (obj.get("spec") or {}).get("paramKind")
    return f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}" if isinstance(kind, dict) else "<unset>"


def _param_ref(obj: Object) -> str:
    ref = (obj.get("spec") or {}).get("paramRef")
    if not isinstance(ref, dict):
        return "<unset>"
    return f"{ref['namespace']}/{ref.get('name', '*')}" if ref.get("namespace") else str(ref.get("name", "*"))


_AGE = Column("Age", "date", ".metadata.creationTimestamp", "CreationTimestamp is a timestamp representing the server time when this object was created.")

COLUMNS: dict[str, list[Column]] = {
    # built-ins, as kubectl prints them against an API server
    "Namespace": [
        Column("Status", "string", description="The status of the namespace", compute=lambda o, _: (o.get("status") or {}).get("phase") or ("Terminating" if (o.get("metadata") or {}).get("deletionTimestamp") else "Active")),
        _AGE,
    ],
    "Job": [
        Column("Status", "string", description="Status of the job.", compute=_job_status),
        Column("Completions", "string", description="The completion status of the job.", compute=_job_completions),
        Column("Duration", "string", description="Time required to complete the job.", compute=_job_duration),
        _AGE,
        Column("Containers", "string", description="Names of each container in the template.", priority=1, compute=lambda o, _: _containers(o, "name")),
        Column("Images", "string", description="Images referenced by each container in the template.", priority=1, compute=lambda o, _: _containers(o, "image")),
    ],
    "Pod": [
        Column("Ready", "string", description="The aggregate readiness state of this pod for accepting traffic.", compute=_pod_ready),
        Column("Status", "string", description="The aggregate status of the containers in this pod.", compute=_pod_phase),
        Column("Restarts", "string", description="The number of times the containers in this pod have been restarted.", compute=_pod_restarts),
        _AGE,
        Column("Node", "string", ".spec.nodeName", "Name of the Node this pod is assigned to.", 1),
    ],
    "Node": [
        Column("Status", "string", description="The status of the node", compute=_node_ready),
        Column("Roles", "string", description="The roles of the node", compute=_node_roles),
        _AGE,
        Column("Version", "string", ".status.nodeInfo.kubeletVersion", "Kubelet Version reported by the node."),
        Column("Internal-IP", "string", description="List of internal IPs for the node.", priority=1,
               compute=_node_address("InternalIP")),
        Column("External-IP", "string", description="List of external IPs for the node.", priority=1,
               compute=_node_address("ExternalIP")),
        Column("OS-Image", "string", ".status.nodeInfo.osImage", "OS image reported by the node.", 1),
        Column("Kernel-Version", "string", ".status.nodeInfo.kernelVersion", "Kernel version reported by the node.", 1),
        Column("Container-Runtime", "string", ".status.nodeInfo.containerRuntimeVersion",
               "Container runtime version reported by the node.", 1),
    ],
    "APIService": [
        Column("Service", "string", description="The reference to the service that hosts this API endpoint.",
               compute=_apiservice_service),
        Column("Available", "string", description="Whether this service is available.", compute=_apiservice_available),
        _AGE,
    ],
    "Event": [
        Column("Last Seen", "string", description="Time since the event was last seen", compute=_event_last_seen),
        Column("Type", "string", ".type", "Type of this event"),
        Column("Reason", "string", ".reason", "Why the action was taken"),
        Column("Object", "string", description="The object the event is about", compute=_event_object),
        Column("Message", "string", ".message", "A human-readable description of the event"),
    ],
    "Deployment": [
        Column("Ready", "string", description="Number of the pod with ready state", compute=_ready_of_desired),
        Column("Up-to-date", "integer", ".status.updatedReplicas", "Total number of non-terminated pods targeted by "
               "this deployment that have the desired template spec.", compute=lambda o, _: _int_of(o.get("status"), "updatedReplicas")),
        Column("Available", "integer", description="Total number of available pods (ready for at least minReadySeconds) "
               "targeted by this deployment.", compute=lambda o, _: _int_of(o.get("status"), "availableReplicas")),
        _AGE,
        Column("Containers", "string", description="Names of each container in the template.", priority=1, compute=lambda o, _: _containers(o, "name")),
        Column("Images", "string", description="Images referenced by each container in the template.", priority=1, compute=lambda o, _: _containers(o, "image")),
        Column("Selector", "string", description="Label selector for pods.", priority=1, compute=_selector),
    ],
    "ReplicaSet": [
        Column("Desired", "integer", description="Number of desired pods.", compute=lambda o, _: _int_of(o.get("spec"), "replicas")),
        Column("Current", "integer", description="Number of actual replicas.", compute=lambda o, _: _int_of(o.get("status"), "replicas")),
        Column("Ready", "integer", description="Number of ready replicas.", compute=lambda o, _: _int_of(o.get("status"), "readyReplicas")),
        _AGE,
        Column("Containers", "string", description="Names of each container in the template.", priority=1, compute=lambda o, _: _containers(o, "name")),
        Column("Images", "string", description="Images referenced by each container in the template.", priority=1, compute=lambda o, _: _containers(o, "image")),
        Column("Selector", "string", description="Label selector for pods.", priority=1, compute=_selector),
    ],
    "StatefulSet": [
        Column("Ready", "string", description="Number of the pod with ready state", compute=_ready_of_desired),
        _AGE,
        Column("Containers", "string", description="Names of each container in the template.", priority=1, compute=lambda o, _: _containers(o, "name")),
        Column("Images", "string", description="Images referenced by each container in the template.", priority=1, compute=lambda o, _: _containers(o, "image")),
    ],
    "CronJob": [
        Column("Schedule", "string", ".spec.schedule", "The schedule in Cron format."),
        Column("Timezone", "string", description="The timezone of the schedule.",
               compute=lambda o, _: (o.get("spec") or {}).get("timeZone") or "<none>"),
        Column("Suspend", "boolean", description="Whether the cronjob is suspended.",
               compute=lambda o, _: bool((o.get("spec") or {}).get("suspend"))),
        Column("Active", "integer", description="Number of running jobs.",
               compute=lambda o, _: len((o.get("status") or {}).get("active") or [])),
        Column("Last Schedule", "string", description="When the last job was scheduled.", compute=_last_schedule),
        _AGE,
        Column("Containers", "string", description="Names of each container in the template.", priority=1, compute=_cron_containers("name")),
        Column("Images", "string", description="Images referenced by each container in the template.", priority=1, compute=_cron_containers("image")),
        Column("Selector", "string", description="Label selector for pods.", priority=1, compute=lambda o, _: "<none>"),
    ],
    "PriorityClass": [
        Column("Value", "integer", ".value", "The integer value of the priority class."),
        Column("Global-Default", "boolean", description="Whether this is the default priority class.",
               compute=lambda o, _: bool(o.get("globalDefault"))),
        _AGE,
        Column("PreemptionPolicy", "string", ".preemptionPolicy", "The preemption policy of the priority class."),
    ],
    "ValidatingAdmissionPolicy": [
        Column("Validations", "integer", description="Number of validations.",
               compute=lambda o, _: len((o.get("spec") or {}).get("validations") or [])),
        Column("ParamKind", "string", description="The kind of the parameters.",
               compute=lambda o, _: _param_kind(o)),
        _AGE,
    ],
    "ValidatingAdmissionPolicyBinding": [
        Column("PolicyName", "string", ".spec.policyName", "The policy bound."),
        Column("ParamRef", "string", description="The parameters.", compute=lambda o, _: _param_ref(o)),
        _AGE,
    ],
    "Lease": [
        Column("Holder", "string", ".spec.holderIdentity", "The holder of the lease"),
        _AGE,
    ],
}


def columns_for(kind: str) -> list[Column]:
    return COLUMNS.get(kind) or [_AGE]


def _definitions(columns: Sequence[Column]) -> list[dict[str, Any]]:
    name = {"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}
    out = [name]
    for c in columns:
        out.append({"name": c.name, "type": "string" if c.type == "date" else c.type, "format": "",
                    "description": c.description, "priority": c.priority})
    return out


def _cell(column: Column, obj: Object, now: float) -> Cell:
    if column.compute is not None:
        return column.compute(obj, now)
    value = json_path(obj, column.json_path)
    if column.type == "date":
        return age_of(value, now)
    return value


def _row_object(external: Object, include: str) -> Object | None:
    if include == "None":
        return None
    if include == "Object":
        return external
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": external.get("metadata", {})}


def table(
    kind: str,
    stored: Sequence[Object],
    external: Sequence[Object],
    *,
    version: str = "",
    resource_version: str = "",
    include_object: str = "Metadata",
    headers: bool = True,
    continue_token: str = "",
    remaining: int | None = None,
    now: float | None = None,
    custom_columns: tuple[PrinterColumn, ...] | None = None,
) -> Object:
    """A Table of ``stored`` objects (cells computed on the stored form); row objects from ``external``.
    ``custom_columns``: a kind served from a CRD (hub.kubeapi.crds), evaluated on ``external`` as Kueue's."""
    now = time.time() if now is None else now
    kueue = kind in KUEUE_KINDS or custom_columns is not None
    if custom_columns is not None:
        kueue_columns = custom_columns
    else:
        kueue_columns = table_columns(kind, version or STORAGE_VERSION) if kueue else ()
    columns = [] if kueue else columns_for(kind)
    rows = []
    for obj, ext in zip(stored, external):
        cells = row_cells(kueue_columns, ext, now) if kueue else [obj["metadata"]["name"], *(_cell(c, obj, now) for c in columns)]
        row: Object = {"cells": cells}
        shown = _row_object(ext, include_object)
        if shown is not None:
            row["object"] = shown
        rows.append(row)
    meta: Object = {"resourceVersion": resource_version} if resource_version else {}
    if continue_token:
        meta["continue"] = continue_token
    if remaining is not None:
        meta["remainingItemCount"] = remaining
    out: Object = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "rows": rows}
    definitions = [c.to_table() for c in kueue_columns] if kueue else _definitions(columns)
    out["columnDefinitions"] = definitions if headers else []
    return out


def wants_table(accept: str) -> bool:
    """True when the Accept header prefers a meta.k8s.io Table (v1 or v1beta1)."""
    first = accept.split(",")[0]
    params = {p.strip() for p in first.split(";")[1:]}
    return all(p in params for p in TABLE_PARAMS)
