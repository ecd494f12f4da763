"""``mkhub top``: the live ClusterQueue table (usage against quota) and the workers."""

from __future__ import annotations

from hub.api.meta import format_time
from mkhub.v1 import control_pb2 as pb

from .printers import format_table


def _percent(row: pb.ResourceRow) -> str:
    if row.nominal_value <= 0:
        return ""
    return f" ({100 * row.usage_value // row.nominal_value}%)"


def render(snap: pb.TopSnapshot) -> str:
    lines = [
        f"mkhub top   {format_time(round(snap.time))}   workloads: {snap.workloads_pending} pending, "
        f"{snap.workloads_admitted} admitted, {snap.workloads_finished} finished, {snap.workloads_total} total",
        "",
    ]
    rows = [["CLUSTERQUEUE", "COHORT", "ACTIVE", "PENDING", "INADMISSIBLE", "RESERVING", "ADMITTED", "FLAVOR", "RESOURCE", "USAGE/QUOTA"]]
    for cq in snap.cluster_queues:
        head = [
            cq.name,
            cq.cohort or "-",
            "yes" if cq.active else f"no ({cq.inactive_reason})",
            str(cq.pending + cq.inadmissible),
            str(cq.inadmissible),
            str(cq.reserving),
            str(cq.admitted),
        ]
        if not cq.resources:
            rows.append([*head, "-", "-", "-"])
        for i, res in enumerate(cq.resources):
            lead = head if i == 0 else [""] * len(head)
            rows.append([*lead, res.flavor, res.resource, f"{res.usage}/{res.nominal}{_percent(res)}"])
    if len(rows) == 1:
        lines.append("No ClusterQueues.")
    else:
        lines.append(format_table(rows))
    lines.append("")
    if snap.workers:
        worker_rows = [["WORKER", "ACTIVE", "CONNECTED", "LAST HEARD"]]
        for w in snap.workers:
            heard = "never" if w.last_heard_seconds_ago < 0 else f"{w.last_heard_seconds_ago:.0f}s ago"
            worker_rows.append([w.name, "yes" if w.active else "no", "yes" if w.connected else "no", heard])
        lines.append(format_table(worker_rows))
    else:
        lines.append("No workers (MultiKueueClusters): standalone hub.")
    return "\n".join(lines)
