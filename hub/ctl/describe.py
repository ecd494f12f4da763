"""``mkhub describe``: a stored object plus what the engine knows about it, as kubectl lays it out."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml

from hub.api.errors import ValidationError
from hub.api.quantity import format_quantity
from hub.api.registry import parse_object
from hub.api.workload import Workload
from mkhub.v1 import control_pb2 as pb

from .printers import Object, condition_status, dig, format_table, human_duration, job_phase, workload_phase

_WARNING_EVENTS = frozenset({"Evicted", "Preempted", "Deactivated"})


class _Doc:
    """Label/value lines with the values aligned, and indented tables."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str] | str] = []

    def field(self, label: str, value: Any) -> None:
        self.lines.append((label, "<none>" if value in (None, "", [], {}) else str(value)))

    def raw(self, text: str) -> None:
        self.lines.append(text)

    def table(self, label: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        if not rows:
            self.field(label, None)
            return
        self.raw(f"{label}:")
        for line in format_table([list(header), *[list(r) for r in rows]]).splitlines():
            self.raw("  " + line)

    def render(self) -> str:
        width = max((len(item[0]) for item in self.lines if isinstance(item, tuple)), default=0) + 2
        out = []
        for item in self.lines:
            if isinstance(item, tuple):
                out.append(f"{item[0] + ':':<{width}}{item[1]}".rstrip())
            else:
                out.append(item)
        return "\n".join(out)


def _pairs(values: dict[str, Any] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in (values or {}).items())


def _ago(stamp: Any, now: float) -> str:
    from hub.api.meta import parse_time

    if not isinstance(stamp, str) or not stamp:
        return ""
    try:
        return f"{human_duration(now - parse_time(stamp))} ago"
    except ValueError:
        return stamp


def _header(doc: _Doc, obj: Object, now: float) -> None:
    meta = obj.get("metadata") or {}
    doc.field("Name", meta.get("name"))
    if meta.get("namespace"):
        doc.field("Namespace", meta.get("namespace"))
    doc.field("Kind", obj.get("kind"))
    doc.field("API Version", obj.get("apiVersion"))
    doc.field("Labels", _pairs(meta.get("labels")))
    doc.field("Annotations", _pairs(meta.get("annotations")))
    created = meta.get("creationTimestamp")
    doc.field("Created", f"{created} ({_ago(created, now)})" if created else None)
    doc.field("UID", meta.get("uid"))


def _conditions(doc: _Doc, obj: Object, now: float) -> None:
    rows = [
        [str(c.get("type", "")), str(c.get("status", "")), str(c.get("reason", "")), _ago(c.get("lastTransitionTime"), now), str(c.get("message", ""))]
        for c in dig(obj, "status", "conditions") or []
    ]
    doc.table("Conditions", ["TYPE", "STATUS", "REASON", "LAST TRANSITION", "MESSAGE"], rows)


def _cluster_queue(doc: _Doc, row: pb.ClusterQueueRow, title: str) -> None:
    doc.raw(f"{title}:")
    state = "Active" if row.active else f"Inactive ({row.inactive_reason})"
    doc.raw(
        f"  {state}; pending {row.pending + row.inadmissible} ({row.inadmissible} inadmissible), "
        f"reserving {row.reserving}, admitted {row.admitted}"
    )
    rows = [[r.flavor, r.resource, r.usage, r.nominal, r.borrowing_limit or "-"] for r in row.resources]
    if rows:
        for line in format_table([["FLAVOR", "RESOURCE", "USAGE", "NOMINAL QUOTA", "BORROWING LIMIT"], *rows]).splitlines():
            doc.raw("  " + line)


def _events(doc: _Doc, events: Sequence[pb.Event], now: float) -> None:
    rows = [
        [
            e.event_type or ("Warning" if e.type in _WARNING_EVENTS else "Normal"),
            e.type,
            f"{human_duration(now - e.time)} ago"
            if e.count <= 1
            else f"{human_duration(now - e.time)} ago (x{e.count} over {human_duration(e.time - e.first_time)})",
            e.message or e.reason,
        ]
        for e in events
    ]
    doc.table("Events", ["TYPE", "REASON", "AGE", "MESSAGE"], rows)


def _pod_sets(doc: _Doc, obj: Object) -> None:
    try:
        wl = parse_object(obj)
    except ValidationError:
        return
    if not isinstance(wl, Workload):
        return
    rows = [
        [ps.name, str(ps.count), ", ".join(f"{r}={format_quantity(r, v)}" for r, v in ps.spec.per_pod_requests)]
        for ps in wl.pod_sets
    ]
    doc.table("Pod Sets", ["NAME", "COUNT", "REQUESTS PER POD"], rows)


def _admission(doc: _Doc, obj: Object) -> None:
    adm = dig(obj, "status", "admission")
    if not adm:
        doc.field("Admission", None)
        return
    doc.raw("Admission:")
    doc.raw(f"  ClusterQueue: {adm.get('clusterQueue', '')}")
    rows = [
        [str(p.get("name", "")), str(p.get("count", "")), _pairs(p.get("flavors")), _pairs(p.get("resourceUsage"))]
        for p in adm.get("podSetAssignments") or []
    ]
    for line in format_table([["POD SET", "COUNT", "FLAVORS", "USAGE"], *rows]).splitlines():
        doc.raw("  " + line)


def _checks(doc: _Doc, obj: Object) -> None:
    rows = [
        [str(c.get("name", "")), str(c.get("state", "")), str(c.get("message", ""))]
        for c in dig(obj, "status", "admissionChecks") or []
    ]
    doc.table("Admission Checks", ["NAME", "STATE", "MESSAGE"], rows)


def _workload(doc: _Doc, obj: Object, info: pb.DescribeResponse, now: float) -> None:
    spec = obj.get("spec") or {}
    doc.field("Queue", spec.get("queueName"))
    doc.field("Priority", spec.get("priority", 0))
    doc.field("Active", str(spec.get("active", True)).lower())
    _pod_sets(doc, obj)
    doc.field("Status", workload_phase(obj))
    doc.field("Why", info.explanation)
    _position(doc, info)
    _admission(doc, obj)
    _checks(doc, obj)
    _conditions(doc, obj, now)


def _position(doc: _Doc, info: pb.DescribeResponse) -> None:
    """A pending workload's place in its ClusterQueue and the workloads ahead of it (Kueue's visibility API)."""
    if info.position_in_cluster_queue < 0 or not info.HasField("cluster_queue"):
        return
    doc.field("Position", f"{info.position_in_cluster_queue} in ClusterQueue {info.cluster_queue.name}, "
                          f"{info.position_in_local_queue} in its LocalQueue ({info.ahead_count} ahead)")
    ahead = [json.loads(a) for a in info.ahead_json]
    if ahead:
        rows = [[str(a["positionInClusterQueue"]), f"{a['metadata']['namespace']}/{a['metadata']['name']}",
                 a["localQueueName"], str(a["priority"])] for a in ahead]
        doc.table("Workloads Ahead", ["POSITION", "WORKLOAD", "LOCAL QUEUE", "PRIORITY"], rows)


def _job(doc: _Doc, obj: Object, info: pb.DescribeResponse, now: float) -> None:
    spec = obj.get("spec") or {}
    doc.field("Queue", dig(obj, "metadata", "labels", "kueue.x-k8s.io/queue-name"))
    doc.field("Parallelism", spec.get("parallelism", 1))
    doc.field("Completions", spec.get("completions"))
    doc.field("Suspend", str(bool(spec.get("suspend", False))).lower())
    doc.field("Status", job_phase(obj))
    doc.field("Start Time", dig(obj, "status", "startTime"))
    doc.field("Completion Time", dig(obj, "status", "completionTime"))
    doc.field("Workload", info.workload_name)
    doc.field("Why", info.explanation)
    _position(doc, info)
    _conditions(doc, obj, now)


def _mk_cluster(doc: _Doc, obj: Object, now: float) -> None:
    """A worker: Kueue's Active condition and the fleet view (status.fleet, hub.federation.fleet)."""
    doc.field("Active", condition_status(obj, "Active") or "False (no status yet)")
    fleet = dig(obj, "status", "fleet") or {}
    since = fleet.get("since")
    state = "yes" if fleet.get("connected") else "no"
    beat = fleet.get("lastHeartbeat")
    # A restarted hub (or a new leader) knows no since until the agent is back; a heartbeat says it connected once.
    doc.field("Connected", f"{state} since {since} ({_ago(since, now)})" if since else state if beat else f"{state} (never connected)")
    doc.field("Last Heartbeat", f"{beat} ({_ago(beat, now)})" if beat else None)
    counts = fleet.get("workloads") or {}
    doc.field("Workloads", f"{counts.get('pending', 0)} pending, {counts.get('admitted', 0)} admitted, "
                           f"{counts.get('running', 0)} running" if counts else None)
    if fleet and not fleet.get("capacityVersion"):
        doc.field("Quota", "unknown (the agent sends no capacity reports)")
    else:
        rows = [[str(q.get(k, "")) for k in ("clusterQueue", "flavor", "resource", "usage", "nominal")]
                for q in fleet.get("quota") or []]
        doc.table("Quota", ["CLUSTERQUEUE", "FLAVOR", "RESOURCE", "USAGE", "NOMINAL"], rows)
    topology = [[str(t.get("flavor", "")), str(t.get("level", "")), str(t.get("domains", "")),
                 ", ".join(f"{r}={v}" for r, v in (t.get("largestFree") or {}).items())]
                for t in fleet.get("topology") or []]
    if topology:  # the most one domain of each level has free: the largest gang it takes now
        doc.table("Topology", ["FLAVOR", "LEVEL", "DOMAINS", "LARGEST FREE DOMAIN"], topology)
    _conditions(doc, obj, now)


def _generic(doc: _Doc, obj: Object) -> None:
    for part in ("spec", "status"):
        if obj.get(part):
            doc.raw(f"{part.capitalize()}:")
            text = yaml.safe_dump(json.loads(json.dumps(obj[part])), sort_keys=False, default_flow_style=False).rstrip()
            doc.raw("\n".join("  " + line for line in text.splitlines()))
    if obj.get("value") is not None:
        doc.field("Value", obj.get("value"))


def render(info: pb.DescribeResponse, now: float) -> str:
    obj: Object = json.loads(info.object_json)
    kind = obj.get("kind")
    doc = _Doc()
    _header(doc, obj, now)
    if kind == "Workload":
        _workload(doc, obj, info, now)
    elif kind == "Job":
        _job(doc, obj, info, now)
    elif kind == "ClusterQueue":
        spec = obj.get("spec") or {}
        doc.field("Cohort", spec.get("cohortName"))
        doc.field("Queueing Strategy", spec.get("queueingStrategy", "BestEffortFIFO"))
        doc.field("Namespace Selector", json.dumps(spec["namespaceSelector"]) if "namespaceSelector" in spec else "<nil> (selects no namespace)")
        doc.field("Active", condition_status(obj, "Active") or info.explanation)
        _conditions(doc, obj, now)
    elif kind == "LocalQueue":
        doc.field("ClusterQueue", dig(obj, "spec", "clusterQueue"))
        doc.field("Pending Workloads", dig(obj, "status", "pendingWorkloads") or 0)
        doc.field("Reserving Workloads", dig(obj, "status", "reservingWorkloads") or 0)
        doc.field("Admitted Workloads", dig(obj, "status", "admittedWorkloads") or 0)
        if info.explanation:
            doc.field("Why", info.explanation)
        _conditions(doc, obj, now)
    elif kind == "MultiKueueCluster":
        _mk_cluster(doc, obj, now)
    else:
        _generic(doc, obj)
    if info.HasField("cluster_queue"):
        _cluster_queue(doc, info.cluster_queue, f"ClusterQueue {info.cluster_queue.name}")
    if kind in ("Workload", "Job"):
        _events(doc, info.events, now)
    return doc.render()
