"""``mkhub top``: the live ClusterQueue table (usage against quota) and the workers."""

from __future__ import annotations

from collections.abc import Sequence

from hub.api.meta import format_time
from hub.api.quantity import format_quantity, resource_value
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
        lines.extend(render_workers(snap.workers))
    else:
        lines.append("No workers (MultiKueueClusters): standalone hub.")
    return "\n".join(lines)


def render_workers(workers: Sequence[pb.WorkerRow]) -> list[str]:
    """The fleet: one row per worker, its quota per flavor and resource, and the totals."""
    rows = [["WORKER", "ACTIVE", "CONNECTED", "SINCE", "LAST HEARD", "PENDING", "ADMITTED", "RUNNING", "QUEUE", "FLAVOR",
             "RESOURCE", "USAGE/QUOTA"]]
    totals: dict[tuple[str, str], list[int]] = {}
    pending = admitted = running = 0
    for w in workers:
        heard = "never" if w.last_heard_seconds_ago < 0 else f"{w.last_heard_seconds_ago:.0f}s ago"
        since = w.since or ("never" if heard == "never" else "-")  # "-": connected once, before this hub started
        head = [w.name, "yes" if w.active else "no", "yes" if w.connected else "no", since, heard,
                str(w.pending), str(w.admitted), str(w.running)]
        pending, admitted, running = pending + w.pending, admitted + w.admitted, running + w.running
        quota = list(w.quota)
        if not quota:
            rows.append([*head, "-", "-", "-", "-" if w.capacity_version else "(no capacity reports)"])
        for i, q in enumerate(quota):
            rows.append([*(head if i == 0 else [""] * len(head)), q.cluster_queue, q.flavor, q.resource,
                         f"{q.usage}/{q.nominal}"])
            total = totals.setdefault((q.flavor, q.resource), [0, 0])
            total[0] += resource_value(q.resource, q.usage or "0")
            total[1] += resource_value(q.resource, q.nominal or "0")
    connected = sum(1 for w in workers if w.connected)
    out = [format_table(rows), "",
           f"fleet: {connected}/{len(workers)} workers connected; workloads {pending} pending, {admitted} admitted, "
           f"{running} running"]
    for (flavor, resource), (usage, nominal) in sorted(totals.items()):
        out.append(f"  {flavor}/{resource}: {format_quantity(resource, usage)}/{format_quantity(resource, nominal)}")
    return out
