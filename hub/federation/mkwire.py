"""What the hub and the agents agree on about a dispatched workload.

Pure helpers shared by the hub's MultiKueue controller, the agent and the
simulator: how a dispatch is named, how a Workload (and its Job) travel in a
Dispatch, and the small vocabulary of local states and phases.

A **dispatch id** names one reservation of a hub workload:
``<namespace>/<name>/<evictions>.<reserved-at-us>``. It is derived from the
workload's persisted status (``schedulingStats.evictions`` and the
``QuotaReserved`` transition time, in the microseconds the store keeps, never
a rounding of the in-memory float that a read back could round otherwise), so a restarted hub computes the same id for
the same reservation and recognises the copies its agents still hold, and any
new reservation (after an eviction, or a lost reservation) gets a new one. The
workload's key is part of the id, so a message about a dispatch names its
workload even when the hub has forgotten it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hub.api import fastjson
from hub.api.conversion import V1BETA2
from hub.api.jobkinds import POD, JobAdapter, adapter_of_kind, is_external
from hub.api.jobkinds.framework import KindObject
from hub.api.jobkinds.pod import Pod
from hub.api.meta import meta_to_dict, stored_microseconds
from hub.api.others import JOB_UID_LABEL, MULTIKUEUE_CONTROLLER, MULTIKUEUE_ORIGIN_LABEL
from hub.api.workload import QUOTA_RESERVED, Workload, workload_spec_to_dict
from mkhub.v1 import federation_pb2 as pb

# Where an agent records which dispatch a local copy belongs to.
DISPATCH_ID_ANNOTATION = "mkhub.dev/dispatch-id"
ORIGIN_LABEL = MULTIKUEUE_ORIGIN_LABEL


def dispatch_id(wl: Workload) -> str:
    """The id of the workload's current reservation (see the module docstring)."""
    cond = wl.status.condition(QUOTA_RESERVED)
    reserved_us = stored_microseconds(cond.last_transition_time) if cond is not None else 0
    evictions = sum(stat.count for stat in wl.status.evictions)
    return f"{wl.meta.namespace}/{wl.meta.name}/{evictions}.{reserved_us}"


def dispatch_key(did: str) -> str:
    """The workload key (``namespace/name``) a dispatch id belongs to."""
    return did.rsplit("/", 1)[0]


def workload_manifest(wl: Workload) -> dict[str, Any]:
    """The Workload as a remote copy is created from it: spec and identity, no status."""
    meta = meta_to_dict(wl.meta)
    for field in ("resourceVersion", "generation", "deletionTimestamp", "finalizers", "ownerReferences"):
        meta.pop(field, None)
    return {"apiVersion": V1BETA2, "kind": "Workload", "metadata": meta, "spec": workload_spec_to_dict(wl)}


def job_manifest(job: KindObject) -> dict[str, Any]:
    """The object (a Job, a JobSet...) as the hub knows it (the agent adapts it for its cluster)."""
    return _adapter(job).manifest(job)


def _adapter(job: KindObject) -> JobAdapter[Any]:
    adapter = adapter_of_kind(job.kind)
    if adapter is None:
        raise KeyError(f"{job.kind} is no kind on the job framework")
    return adapter


def to_json(manifest: dict[str, Any]) -> str:
    """Compact JSON. Not key-sorted: the manifests above are built in a fixed order, with
    ``spec`` last (the agent's parse cache keys on what follows ``"spec"``)."""
    return fastjson.dumps(manifest)


def dispatch_rejection(wl: Workload, job: KindObject | None) -> str:
    """Why Kueue's MultiKueue controller rejects the workload's check; empty when it may go. A
    concurrent-admission variant is owned by its parent Workload, a kind no MultiKueue adapter
    serves: Kueue rejects it (so concurrent admission does not run through MultiKueue)."""
    refs = wl.meta.owner_references
    owner = next((o for o in refs if o.get("controller")), refs[0] if refs else None)
    if owner is not None and owner.get("kind") == "Workload":
        return f'No multikueue adapter found for owner kind "{owner.get("apiVersion", "")}, Kind=Workload"'
    return managed_by_rejection(job)


def managed_by_rejection(job: KindObject | None) -> str:
    """Why Kueue rejects dispatching this object: another controller manages it (its webhook
    defaults the kind's own controller and no value to MultiKueue's); empty when it may go."""
    if job is None:
        return ""
    adapter = _adapter(job)
    managed_by = adapter.managed_by(job)
    # An external framework's object goes only when it names MultiKueue (the generic adapter).
    allowed = (MULTIKUEUE_CONTROLLER,) if is_external(adapter) else ("", adapter.controller_name, MULTIKUEUE_CONTROLLER)
    if managed_by not in allowed:
        return (
            "The owner is not managed by Kueue: Expecting spec.managedBy to be "
            f'"{MULTIKUEUE_CONTROLLER}" not "{managed_by}"'
        )
    return ""


def make_dispatch(wl: Workload, did: str, job: KindObject | None, pods: Sequence[Pod] = ()) -> pb.Dispatch:
    """``pods``: the Workload's Pods when it is one of Kueue's pod integration (their manifests go
    in ``pod_jsons``, which older agents ignore: they run the copy on simulated pods)."""
    return pb.Dispatch(
        workload_uid=wl.meta.uid,
        dispatch_id=did,
        namespace=wl.meta.namespace,
        name=wl.meta.name,
        workload_json=to_json(workload_manifest(wl)),
        job_json=to_json(job_manifest(job)) if job is not None else "",
        priority=wl.priority or 0,
        pod_jsons=[to_json(POD.manifest(pod)) for pod in pods],
    )


def remote_copy(manifest: dict[str, Any], origin: str, did: str) -> dict[str, Any]:
    """A Workload manifest from a Dispatch turned into the worker's copy, as Kueue clones it:
    the job-uid label dropped, the origin label added; no owner, no status."""
    out = dict(manifest)
    meta = dict(out.get("metadata") or {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != JOB_UID_LABEL}
    labels[ORIGIN_LABEL] = origin
    annotations = dict(meta.get("annotations") or {})
    annotations[DISPATCH_ID_ANNOTATION] = did
    meta["labels"] = labels
    meta["annotations"] = annotations
    for field in ("uid", "creationTimestamp", "ownerReferences", "resourceVersion"):
        meta.pop(field, None)
    out["metadata"] = meta
    out.pop("status", None)
    return out



# Status.reason of a run an agent stopped itself because the hub could no longer hear it (fencing).
FENCED = "Fenced"


def fill_workload_uids(items: list[pb.HubItem], workloads: Mapping[str, Workload]) -> dict[str, str]:
    """Items decided in the round that created their Workload carry no uid yet (the store gives
    it at the commit); they leave after it, so fill it in from ``workloads``. Returns what was
    filled, per workload key."""
    filled: dict[str, str] = {}
    for item in items:
        kind = item.WhichOneof("kind")
        msg = item.dispatch if kind == "dispatch" else item.start if kind == "start" else item.withdraw if kind == "withdraw" else None
        if msg is None or msg.workload_uid:
            continue
        key = dispatch_key(msg.dispatch_id)
        wl = workloads.get(key)
        uid = filled.get(key) or (wl.meta.uid if wl is not None else "")
        if uid:
            msg.workload_uid = filled[key] = uid
    return filled
