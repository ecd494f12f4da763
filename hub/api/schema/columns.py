"""Kueue's printer columns as data, and the evaluator that renders them.

The same columns go into the CRDs (``additionalPrinterColumns``), the API's
``Table`` responses and the CLI, so ``kubectl get`` prints the same against
Kueue, the hub's API and ``mkhub get``. Cells are computed as the API server's
CRD table convertor does: the column's simple JSONPath, the first result, typed
by the column's type, ``date`` rendered as a human-readable age.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .versions import V1BETA1, V1BETA2, VERSIONS


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    name: str
    type: str  # integer, number, string, boolean or date
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""

    def to_crd(self) -> dict[str, Any]:
        """The column as a CRD's additionalPrinterColumns entry."""
        out: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.description:
            out["description"] = self.description
        if self.priority:
            out["priority"] = self.priority
        if self.format:
            out["format"] = self.format
        return out

    def to_table(self) -> dict[str, Any]:
        """The column as a meta.k8s.io/v1 TableColumnDefinition."""
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


NAME_COLUMN = PrinterColumn(
    "Name", "string", ".metadata.name",
    "Name must be unique within a namespace. Cannot be updated.", format="name",
)
AGE_COLUMN = PrinterColumn("Age", "date", ".metadata.creationTimestamp", "Time this object was created")
_PENDING = PrinterColumn("Pending Workloads", "integer", ".status.pendingWorkloads", "Number of pending workloads")
_CREATED = PrinterColumn("Age", "date", ".metadata.creationTimestamp", "Time this workload was created")


def _condition(column: str, type_: str, description: str) -> PrinterColumn:
    return PrinterColumn(column, "string", f".status.conditions[?(@.type=='{type_}')].status", description)


def _cluster_queue(version: str) -> tuple[PrinterColumn, ...]:
    cohort = ".spec.cohort" if version == V1BETA1 else ".spec.cohortName"
    return (
        PrinterColumn("Cohort", "string", cohort, "Cohort that this ClusterQueue belongs to"),
        PrinterColumn("Strategy", "string", ".spec.queueingStrategy",
                      "The queueing strategy used to prioritize workloads", priority=1),
        _PENDING,
        PrinterColumn("Admitted Workloads", "integer", ".status.admittedWorkloads",
                      "Number of admitted workloads that haven't finished yet", priority=1),
    )


def _local_queue(_: str) -> tuple[PrinterColumn, ...]:
    return (
        PrinterColumn("ClusterQueue", "string", ".spec.clusterQueue", "Backing ClusterQueue"),
        _PENDING,
        PrinterColumn("Admitted Workloads", "integer", ".status.admittedWorkloads",
                      "Number of admitted workloads that haven't finished yet."),
    )


def _workload(_: str) -> tuple[PrinterColumn, ...]:
    return (
        PrinterColumn("Queue", "string", ".spec.queueName", "Name of the queue this workload was submitted to"),
        PrinterColumn("Reserved in", "string", ".status.admission.clusterQueue",
                      "Name of the ClusterQueue where the workload is reserving quota"),
        _condition("Admitted", "Admitted", "Admission status"),
        _condition("Finished", "Finished", "Workload finished"),
        _CREATED,
    )


def _priority_class(_: str) -> tuple[PrinterColumn, ...]:
    return (PrinterColumn("Value", "integer", ".value", "Value of workloadPriorityClass's Priority"),)


def _multikueue_cluster(_: str) -> tuple[PrinterColumn, ...]:
    return (_condition("Connected", "Active", "MultiKueueCluster is connected"), _CREATED)


def _none(_: str) -> tuple[PrinterColumn, ...]:
    return ()


_COLUMNS = {
    "ResourceFlavor": _none,
    "ClusterQueue": _cluster_queue,
    "Cohort": _none,
    "LocalQueue": _local_queue,
    "Workload": _workload,
    "WorkloadPriorityClass": _priority_class,
    "AdmissionCheck": _none,
    "MultiKueueConfig": _none,
    "MultiKueueCluster": _multikueue_cluster,
}


def printer_columns(kind: str, version: str = V1BETA2) -> tuple[PrinterColumn, ...]:
    """The CRD's additionalPrinterColumns of a Kueue kind (empty for kinds Kueue gives none)."""
    if version not in VERSIONS:
        raise ValueError(f"{kind}: unknown version {version!r}")
    return _COLUMNS[kind](version)


def table_columns(kind: str, version: str = V1BETA2) -> tuple[PrinterColumn, ...]:
    """The columns of a Table: Name, then the printer columns, or Age when the CRD has none
    (as the API server serves custom resources)."""
    return (NAME_COLUMN, *(printer_columns(kind, version) or (AGE_COLUMN,)))


# --------------------------------------------------------------------------- JSONPath

_STEP = re.compile(
    r"""\.(?P<field>[A-Za-z0-9_\-]+)
      | \[(?P<index>-?\d+)\]
      | \[(?P<start>-?\d*):(?P<end>-?\d*)\]
      | \[\*\]
      | \[\?\(@\.(?P<key>[A-Za-z0-9_\-]+)\s*==\s*(?P<q>['"])(?P<value>.*?)(?P=q)\)\]""",
    re.VERBOSE,
)


class JSONPathError(ValueError):
    pass


def _steps(path: str) -> list[re.Match[str]]:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    text = text.removeprefix("$")
    steps: list[re.Match[str]] = []
    pos = 0
    while pos < len(text):
        m = _STEP.match(text, pos)
        if m is None:
            raise JSONPathError(f"unsupported JSONPath {path!r} at {text[pos:]!r}")
        steps.append(m)
        pos = m.end()
    return steps


def evaluate(path: str, obj: Any) -> list[Any]:
    """All values a simple JSONPath selects: ``.a.b``, ``[0]``, ``[1:3]``, ``[*]`` and
    ``[?(@.key=='value')]`` steps. Missing keys select nothing (no error)."""
    current = [obj]
    for step in _steps(path):
        nxt: list[Any] = []
        for value in current:
            if step.group("field") is not None:
                if isinstance(value, dict) and step.group("field") in value:
                    nxt.append(value[step.group("field")])
            elif step.group("index") is not None:
                i = int(step.group("index"))
                if isinstance(value, list) and -len(value) <= i < len(value):
                    nxt.append(value[i])
            elif step.group("start") is not None:  # [-1:]: the last (Kubeflow's State column)
                if isinstance(value, list):
                    start, end = step.group("start"), step.group("end")
                    nxt.extend(value[int(start) if start else None:int(end) if end else None])
            elif step.group("key") is not None:
                if isinstance(value, list):
                    key, wanted = step.group("key"), step.group("value")
                    nxt.extend(v for v in value if isinstance(v, dict) and _text(v.get(key)) == wanted)
            elif isinstance(value, list):  # [*]
                nxt.extend(value)
            elif isinstance(value, dict):
                nxt.extend(value.values())
        current = nxt
    return current


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def human_duration(seconds: float) -> str:
    """Kubernetes' duration.HumanDuration: ``45s``, ``5m30s``, ``3h``, ``4d2h``, ``3y``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def _parse_time(text: str) -> float:
    value = text[:-1] + "+00:00" if text.endswith("Z") else text
    moment = datetime.fromisoformat(value)
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def cell(column: PrinterColumn, obj: Any, now: float) -> Any:
    """One Table cell: None when the path selects nothing or the value has the wrong type."""
    results = evaluate(column.json_path, obj)
    if not results or results[0] is None:
        return None
    value = results[0]
    kind = column.type
    if kind == "string":
        return _text(value)
    if kind == "integer":
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    if kind == "number":
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "date":
        if not isinstance(value, str):
            return None
        try:
            return human_duration(now - _parse_time(value))
        except ValueError:
            return "<invalid>"
    return None


def row_cells(columns: tuple[PrinterColumn, ...], obj: Any, now: float) -> list[Any]:
    """The cells of one Table row for ``obj`` (a manifest in the columns' version)."""
    return [cell(c, obj, now) for c in columns]
