"""A simulated AppWrapper controller (``workload.codeflare.dev/v1beta2``), after
project-codeflare/appwrapper, as far as Kueue's examples use it.

Unsuspended (Kueue admitted it), it creates each component (``spec.components[].template``) in the
AppWrapper's namespace through ``create`` (mkhub dev-cluster passes its API, so webhooks see them),
owned by the AppWrapper (``controller: true``) and labelled ``workload.codeflare.dev/appwrapper:
<name>``, as are the pod templates at its pod sets' paths, into which any ``podSetInfos`` (what a
real Kueue writes) are merged. The components' own controllers (the dev-cluster's Deployment,
StatefulSet, Job, JobSet and LeaderWorkerSet controllers) run them; their Pods are counted by that
label. Status, as the AppWrapper controller keeps it: phase ``Suspended`` / ``Running`` /
``Succeeded`` / ``Failed`` and the conditions ``QuotaReserved``, ``ResourcesDeployed`` and
``PodsReady`` (as many Pods Running and Ready as the pod sets' replicas). Suspended again (Kueue
evicted it) or deleted, it deletes its components. One whose ``spec.managedBy`` names another
controller (MultiKueue's, in a manager cluster) is left alone: its worker copy runs it.

A component the dev-cluster cannot create (a kind without a CRD here, e.g. a PyTorchJob before its
operator's CRD is installed) fails the AppWrapper: phase ``Failed``, ``ResourcesDeployed`` False
with reason ``CreateFailed`` and the API's message (the real controller does the same for a
non-retryable create error), which Kueue reads as a failed workload.

Not done (the real controller does): its grace periods, retries (``resettingCount``) and
success TTL (a failed Pod fails the AppWrapper at once and its components are deleted),
``componentStatus``, node health monitoring, the webhook's user labels.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable, Mapping
from typing import Any

from hub.api.appwrapper_kind import (
    APPWRAPPER_API_VERSION,
    APPWRAPPER_CONTROLLER,
    APPWRAPPER_LABEL,
    component_pod_sets,
    pod_template_at,
)
from hub.store.interface import AlreadyExists, Conflict, InvalidObject, NotFound, Object, Store, StoreError

from .apps import RETRY_SECONDS, Key
from .jobs import pod_ready
from .kubelet import format_time

KIND = "AppWrapper"
KINDS = (KIND,)
SUSPENDED, RUNNING, SUCCEEDED, FAILED = "Suspended", "Running", "Succeeded", "Failed"
QUOTA_RESERVED, RESOURCES_DEPLOYED, PODS_READY = "QuotaReserved", "ResourcesDeployed", "PodsReady"
# Kinds a component may be, looked for when the AppWrapper is gone (they carry its label).
COMPONENT_KINDS = ("Deployment", "StatefulSet", "Job", "Pod", "JobSet", "LeaderWorkerSet", "PyTorchJob",
                   "RayCluster", "RayJob")

log = logging.getLogger(__name__)
Clock = Callable[[], float]


def component_object(aw: Object, index: int) -> Object:
    """Component ``index`` as the AppWrapper controller creates it."""
    meta = aw["metadata"]
    component = copy.deepcopy(((aw.get("spec") or {}).get("components") or [])[index])
    obj: Object = component["template"]
    ometa = obj.setdefault("metadata", {})
    ometa["namespace"] = meta.get("namespace", "")
    ometa["labels"] = {**(ometa.get("labels") or {}), APPWRAPPER_LABEL: meta["name"]}
    ometa["ownerReferences"] = [{"apiVersion": APPWRAPPER_API_VERSION, "kind": KIND, "name": meta["name"],
                                 "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}]
    infos = [i for i in component.get("podSetInfos") or [] if isinstance(i, Mapping)]
    for j, (path, _, _) in enumerate(component_pod_sets(component)):
        template, _ = pod_template_at(component, path)
        if template is None:
            continue
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), APPWRAPPER_LABEL: meta["name"]}
        info = infos[j] if j < len(infos) else {}
        _inject(template, tmeta, info)
    return obj


def _inject(template: dict[str, Any], tmeta: dict[str, Any], info: Mapping[str, Any]) -> None:
    """A ``podSetInfo``'s labels, annotations, nodeSelector, tolerations and scheduling gates."""
    spec = template["spec"]
    for key, into in (("labels", tmeta), ("annotations", tmeta), ("nodeSelector", spec)):
        field = "labels" if key == "labels" else key
        if info.get(key):
            into[field] = {**(into.get(field) or {}), **info[key]}
    for key in ("tolerations", "schedulingGates"):
        if info.get(key):
            spec[key] = list(spec.get(key) or []) + [t for t in info[key] if t not in (spec.get(key) or [])]


def set_condition(status: dict[str, Any], cond: tuple[str, str, str, str], now: float) -> None:
    """metav1.Condition as ``meta.SetStatusCondition`` sets it (False ones too); the time moves on a change."""
    type_, value, reason, message = cond
    conds: list[dict[str, Any]] = status.setdefault("conditions", [])
    for c in conds:
        if c.get("type") == type_:
            if c.get("status") != value:
                c["lastTransitionTime"] = format_time(now)
            c.update(status=value, reason=reason, message=message)
            return
    conds.append({"type": type_, "status": value, "reason": reason, "message": message,
                  "lastTransitionTime": format_time(now)})


def _expected_pods(aw: Object) -> int:
    return sum(max(0, replicas) for c in (aw.get("spec") or {}).get("components") or [] if isinstance(c, dict)
               for _, replicas, _ in component_pod_sets(c))


def _owned_by(obj: Object, name: str, uid: str | None) -> bool:
    return any(isinstance(r, dict) and r.get("controller") and r.get("kind") == KIND and r.get("name") == name
               and (uid is None or r.get("uid") == uid) for r in obj["metadata"].get("ownerReferences") or [])


class AppWrapperController:
    """Reconciles one AppWrapper at a time, on its events and on its components' and Pods'."""

    KINDS = KINDS

    def __init__(self, store: Store, clock: Clock, create: Callable[[Object], Object] | None = None) -> None:
        self.store = store
        self.clock = clock
        self.create = create or store.create

    def keys_for(self, obj: Object) -> list[Key]:
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        if obj.get("kind") == KIND:
            return [(KIND, ns, meta["name"])]
        owner = (meta.get("labels") or {}).get(APPWRAPPER_LABEL)  # a component, or one of its Pods
        return [(KIND, ns, str(owner))] if owner else []

    def all_keys(self) -> list[Key]:
        objs, _ = self.store.list(KIND)
        return [(KIND, o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objs]

    def reconcile(self, kind: str, namespace: str, name: str) -> float | None:
        for _ in range(5):  # a conflicting writer (Kueue suspending it) moved it: read again
            try:
                return self._reconcile(namespace, name)
            except NotFound:
                return None
            except Conflict:
                continue
        return None

    def _reconcile(self, namespace: str, name: str) -> float | None:
        aw = self.store.get(KIND, namespace, name)
        if aw is None or aw["metadata"].get("deletionTimestamp"):
            self._delete_components(namespace, name, None)
            return None
        managed_by = (aw.get("spec") or {}).get("managedBy")
        if managed_by and managed_by != APPWRAPPER_CONTROLLER:
            return None  # another controller's (MultiKueue's, in a manager cluster): its status is mirrored
        status: dict[str, Any] = copy.deepcopy(aw.get("status") or {})
        phase = status.get("phase")
        now = self.clock()
        uid = aw["metadata"].get("uid", "")
        if phase in (SUCCEEDED, FAILED):
            deployed = any(c.get("type") == RESOURCES_DEPLOYED and c.get("status") == "True"
                           for c in status.get("conditions") or [])
            if phase == FAILED and deployed and self._delete_components(namespace, name, uid) == 0:
                set_condition(status, (RESOURCES_DEPLOYED, "False", "DeletionComplete", "resources deleted"), now)
            self._write(aw, status)
            return None
        if (aw.get("spec") or {}).get("suspend"):
            left = self._delete_components(namespace, name, uid)
            status["phase"] = "Suspending" if left else SUSPENDED
            set_condition(status, (QUOTA_RESERVED, "False", SUSPENDED, "suspended by Kueue"), now)
            set_condition(status, (RESOURCES_DEPLOYED, "False", SUSPENDED, "resources deleted") if not left
                          else (RESOURCES_DEPLOYED, "True", "Suspending", "deleting resources"), now)
            set_condition(status, (PODS_READY, "False", SUSPENDED, "suspended"), now)
            self._write(aw, status)
            return None
        retry: float | None = None
        set_condition(status, (QUOTA_RESERVED, "True", RUNNING, "admitted by Kueue"), now)
        for i in range(len((aw.get("spec") or {}).get("components") or [])):
            obj = component_object(aw, i)
            try:
                self.create(obj)
            except AlreadyExists:
                continue
            except InvalidObject as exc:  # refused by a webhook: tried again shortly
                log.warning("AppWrapper %s/%s: component %d refused: %s", namespace, name, i, exc)
                retry = now + RETRY_SECONDS
            except (NotFound, StoreError) as exc:  # a kind this cluster does not serve: it cannot run
                status["phase"] = FAILED
                set_condition(status, (RESOURCES_DEPLOYED, "False", "CreateFailed",
                                       f"component {i} ({obj.get('kind')}): {exc}"), now)
                set_condition(status, (PODS_READY, "False", FAILED, "failed"), now)
                self._write(aw, status)
            return None
        set_condition(status, (RESOURCES_DEPLOYED, "True", RUNNING, "resources deployed"), now)
        pods = [p for p in self.store.list("Pod", namespace, f"{APPWRAPPER_LABEL}={name}")[0]]
        phases = [(p.get("status") or {}).get("phase") for p in pods]
        expected = _expected_pods(aw)
        ready = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running" and pod_ready(p))
        if "Failed" in phases:
            status["phase"] = FAILED
            set_condition(status, (PODS_READY, "False", FAILED, "a pod failed"), now)
            self._delete_components(namespace, name, uid)
        elif expected and phases.count("Succeeded") >= expected and "Running" not in phases and "Pending" not in phases:
            status["phase"] = SUCCEEDED
            set_condition(status, (PODS_READY, "False", SUCCEEDED, "all pods succeeded"), now)
        else:
            status["phase"] = RUNNING
            set_condition(status, (PODS_READY, "True" if ready >= expected else "False",
                                   "PodsReady" if ready >= expected else "InsufficientPodsReady",
                                   f"{ready} of {expected} pods ready"), now)
        self._write(aw, status)
        return retry

    def _write(self, aw: Object, status: dict[str, Any]) -> None:
        if status != (aw.get("status") or {}):
            self.store.update_status({**aw, "status": status})

    def _delete_components(self, namespace: str, name: str, uid: str | None) -> int:
        """Delete the components the AppWrapper owns; returns how many were still there."""
        found = 0
        for kind in COMPONENT_KINDS:
            try:
                objs, _ = self.store.list(kind, namespace, f"{APPWRAPPER_LABEL}={name}")
            except StoreError:
                continue
            for obj in objs:
                if _owned_by(obj, name, uid):
                    found += 1
                    with contextlib.suppress(NotFound):
                        self.store.delete(kind, namespace, obj["metadata"]["name"])
        return found

