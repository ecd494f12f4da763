"""MultiKueue's generic adapter for kinds mkhub has no adapter of its own for (Kueue's
``Configuration.multiKueue.externalFrameworks``, KEP-2349).

An entry names a GroupVersionKind as ``Kind.version.group`` (``PipelineRun.v1.tekton.dev``).
Kueue does not make Workloads for such a kind: an external controller does (tekton-kueue for
PipelineRuns), owned by the object. What Kueue's manager does for it, and so mkhub's hub:

- dispatch the owned Workload only while the object's ``spec.managedBy`` is exactly
  ``kueue.x-k8s.io/multikueue`` (anything else, an empty value too, rejects the check);
- create the object in the winning worker from its name, namespace, labels, annotations and
  spec, without ``spec.managedBy`` (the worker's own controller runs it) and with MultiKueue's
  prebuilt-workload and origin labels; never touch the manager's object otherwise;
- mirror the worker's whole ``status`` into the manager's object;
- delete the worker's object with the manager's.

The worker's copy is done when its status says so by the conventions such kinds follow (a
``Succeeded`` condition as Knative and Tekton write it, ``Complete``/``Failed`` as a Job's, or a
``phase`` of Succeeded/Failed/Error as Argo's): :func:`generic_outcome`.

Everything else about an object of the kind is the external controller's; the adapter's
pod-set methods are never called (:meth:`ExternalAdapter.pod_sets` says so if they are).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..gvk import default_plural, parse_gvk
from ..workload import PodSet, Workload
from .framework import KindObject, Manifest, Outcome, PodSetInfo, identity


def _conditions(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = status.get("conditions")
    return [c for c in raw if isinstance(c, Mapping)] if isinstance(raw, list) else []


def generic_outcome(status: Mapping[str, Any]) -> Outcome | None:
    """("succeeded" | "failed", message) from a status by the common conventions, else None."""
    by_type = {str(c.get("type")): c for c in _conditions(status)}
    succeeded = by_type.get("Succeeded")
    if succeeded is not None and succeeded.get("status") in ("True", "False"):
        if succeeded["status"] == "True":
            return "succeeded", str(succeeded.get("message") or "")
        return "failed", str(succeeded.get("message") or succeeded.get("reason") or "Failed")
    for kind, outcome in (("Complete", "succeeded"), ("Completed", "succeeded"), ("Failed", "failed")):
        cond = by_type.get(kind)
        if cond is not None and cond.get("status") == "True":
            return outcome, str(cond.get("message") or cond.get("reason") or kind)
    phase = status.get("phase")
    if phase in ("Succeeded", "Completed"):
        return "succeeded", str(status.get("message") or "")
    if phase in ("Failed", "Error"):
        return "failed", str(status.get("message") or phase)
    return None


@dataclass
class ExternalAdapter:
    """The generic adapter of one ``externalFrameworks`` entry."""

    framework: str  # the entry as written: Kind.version.group
    api_version: str
    kind: str
    plural: str
    controller_template_labels: frozenset[str] = frozenset()
    mirrored_status_fields: tuple[str, ...] = ()  # unused: the whole status is mirrored (:meth:`mirrored`)
    managed_by_path: tuple[str, ...] = ("spec", "managedBy")
    # Its own controller runs it when managedBy is empty; only MultiKueue's value lets it be
    # dispatched (Kueue's IsJobManagedByKueue for the generic adapter: hub.federation.mkwire).
    controller_name: str = ""
    external: bool = field(default=True, init=False)

    def mirrored(self, status: Mapping[str, Any]) -> Manifest:
        return copy.deepcopy(dict(status))

    def pod_sets(self, job: KindObject) -> list[PodSet]:
        raise TypeError(f"{self.kind} is an external framework: its Workload is made by its own controller")

    def pod_spec_priority_class(self, job: KindObject) -> str:
        return ""

    def is_suspended(self, job: KindObject) -> bool:
        return False  # not the hub's to say: the external controller suspends it

    def managed_by(self, job: KindObject) -> str:
        spec = getattr(job, "spec", None) or {}
        value = spec.get("managedBy") if isinstance(spec, Mapping) else None
        return value if isinstance(value, str) else ""

    def finished(self, job: KindObject) -> Outcome | None:
        return generic_outcome(getattr(job, "status", None) or {})

    def pods_ready(self, job: KindObject) -> bool:
        return self.status_running(getattr(job, "status", None) or {})

    def suspend(self, manifest: Manifest) -> None:
        pass  # the hub never writes the manager's object but its status

    def run_with_pod_sets_info(self, manifest: Manifest, infos: Sequence[PodSetInfo], pod_sets: Sequence[PodSet]) -> None:
        pass  # Kueue's generic adapter creates the object as it is: where its pods go is not known

    def restore_pod_sets_info(self, manifest: Manifest, pod_sets: Sequence[PodSet]) -> None:
        pass

    def manifest(self, job: KindObject) -> Manifest:
        meta = identity(job.meta)
        kept = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if meta.get(k)}
        spec = getattr(job, "spec", None) or {}
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": kept, "spec": copy.deepcopy(dict(spec))}

    def worker_copy(self, manifest: Manifest) -> Manifest:
        spec = manifest.get("spec")
        if isinstance(spec, dict):
            spec.pop("managedBy", None)
        return manifest

    def status_outcome(self, status: Manifest) -> Outcome | None:
        return generic_outcome(status)

    def status_running(self, status: Manifest) -> bool:
        if generic_outcome(status) is not None:
            return False
        if status.get("phase") == "Running":
            return True
        for c in _conditions(status):
            if c.get("type") == "Succeeded" and c.get("status") == "Unknown" and c.get("reason") == "Running":
                return True
            if c.get("type") in ("Running", "Ready") and c.get("status") == "True":
                return True
        return False

    def status_terminal(self, status: Manifest) -> bool:
        return generic_outcome(status) is not None

    def simulated_status(self, wl: Workload, job: KindObject, previous: Manifest | None, ready_at: float | None) -> Manifest:
        return dict(previous or {})  # the hub derives nothing: the worker's status or none


def is_external(adapter: object) -> bool:
    return bool(getattr(adapter, "external", False))


def external_adapters(names: Iterable[str]) -> dict[str, ExternalAdapter]:
    """The adapters of ``multiKueue.externalFrameworks`` entries (already validated), by kind."""
    out: dict[str, ExternalAdapter] = {}
    for name in names:
        kind, api_version = parse_gvk(name)
        out[kind] = ExternalAdapter(name, api_version, kind, default_plural(kind))
    return out
