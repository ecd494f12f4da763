"""A simulated Spark operator (``sparkoperator.k8s.io/v1beta2`` SparkApplication), after
kubeflow/spark-operator, as far as Kueue's example uses it.

Unsuspended, it "submits" the application: the driver pod ``<app>-driver`` (owned by the
SparkApplication), then, once the driver runs, ``spec.executor.instances`` executor pods
``<app>-exec-<i>`` (owned by the driver pod, so they go with it), each built from its role's fields as
Kueue builds the pod sets (:func:`hub.api.spark_kind.build_template`) with the image, the global
``nodeSelector`` and the operator's labels (``spark-role``, ``sparkoperator.k8s.io/app-name``,
``spark-app-selector``). They are created through ``create`` (mkhub dev-cluster passes its API).
Status as the operator keeps it: ``applicationState.state`` SUBMITTED, RUNNING, then COMPLETED or
FAILED as the driver pod ends (executors deleted then, unless ``deleteOnTermination: false``),
``driverInfo.podName``, ``executorState`` per executor pod, ``submissionAttempts`` and the times.
Suspended (Kueue evicted it), its pods are deleted and the state is SUSPENDED.

Not done (the real operator does): spark-submit itself and the driver creating the executors
(here the operator does), the driver's Service and UI, retries (``restartPolicy``), dynamic
allocation, the application's labels on the pods, the mutating webhook for pod fields the role
template carries.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from typing import Any

from hub.api.spark_kind import SPARK_API_VERSION, build_template
from hub.store.interface import AlreadyExists, Conflict, InvalidObject, NotFound, Object, Store

from .apps import RETRY_SECONDS, Key
from .kubelet import format_time

KIND = "SparkApplication"
KINDS = (KIND,)
APP_NAME = "sparkoperator.k8s.io/app-name"
ROLE, SELECTOR = "spark-role", "spark-app-selector"
SUBMITTED, RUNNING, COMPLETED, FAILED, SUSPENDED = "SUBMITTED", "RUNNING", "COMPLETED", "FAILED", "SUSPENDED"
_EXECUTOR_STATE = {"Pending": "PENDING", "Running": RUNNING, "Succeeded": COMPLETED, "Failed": FAILED}
Clock = Callable[[], float]


def pod_for(app: Object, role: str, index: int = 0, owner: Object | None = None) -> Object:
    """The driver (``owner`` None) or executor ``index`` pod of ``app``."""
    meta, spec = app["metadata"], app.get("spec") or {}
    template = build_template(spec, role)
    rs = spec.get(role) or {}
    pod_spec = copy.deepcopy(template["spec"])
    pod_spec["restartPolicy"] = "Never"
    container = pod_spec["containers"][0]
    container["image"] = rs.get("image") or spec.get("image") or "spark"
    if spec.get("nodeSelector"):
        pod_spec["nodeSelector"] = {**spec["nodeSelector"], **(pod_spec.get("nodeSelector") or {})}
    if rs.get("serviceAccount"):
        pod_spec["serviceAccountName"] = rs["serviceAccount"]
    name = f"{meta['name']}-driver" if role == "driver" else f"{meta['name']}-exec-{index}"
    tmeta = template.get("metadata") or {}
    labels = {**(tmeta.get("labels") or {}), ROLE: role, APP_NAME: meta["name"], SELECTOR: meta.get("uid", ""),
              "sparkoperator.k8s.io/launched-by-spark-operator": "true"}
    parent = owner or app
    ref = {"apiVersion": parent.get("apiVersion", "v1"), "kind": parent["kind"], "name": parent["metadata"]["name"],
           "uid": parent["metadata"].get("uid", ""), "controller": True, "blockOwnerDeletion": True}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": meta.get("namespace", ""), "labels": labels,
                         **({"annotations": tmeta["annotations"]} if tmeta.get("annotations") else {}),
                         "ownerReferences": [ref]},
            "spec": pod_spec, "status": {"phase": "Pending"}}


class SparkOperator:
    """Reconciles one SparkApplication at a time, on its events and its pods'."""

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
        app = (meta.get("labels") or {}).get(APP_NAME) if obj.get("kind") == "Pod" else None
        return [(KIND, ns, str(app))] if app else []

    def all_keys(self) -> list[Key]:
        objs, _ = self.store.list(KIND)
        return [(KIND, o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objs]

    def reconcile(self, kind: str, namespace: str, name: str) -> float | None:
        for _ in range(5):
            try:
                return self._reconcile(namespace, name)
            except NotFound:
                return None
            except Conflict:
                continue
        return None

    def _reconcile(self, namespace: str, name: str) -> float | None:
        app = self.store.get(KIND, namespace, name)
        if app is None or app["metadata"].get("deletionTimestamp"):
            return None  # its pods go with it (the garbage collector)
        status: dict[str, Any] = copy.deepcopy(app.get("status") or {})
        state = (status.get("applicationState") or {}).get("state", "")
        now = format_time(self.clock())
        pods = {p["metadata"]["name"]: p for p in self.store.list("Pod", namespace, f"{APP_NAME}={name}")[0]}
        driver = pods.pop(f"{name}-driver", None)
        if state in (COMPLETED, FAILED):
            return None
        if (app.get("spec") or {}).get("suspend"):
            self._delete([*([driver] if driver else []), *pods.values()])
            status["applicationState"] = {"state": SUSPENDED}
            status.pop("executorState", None)
            self._write(app, status)
            return None
        if driver is None:
            try:
                self.create(pod_for(app, "driver"))
            except AlreadyExists:
                return None
            except InvalidObject:
                return self.clock() + RETRY_SECONDS
            status.update(applicationState={"state": SUBMITTED}, driverInfo={"podName": f"{name}-driver"},
                          submissionAttempts=int(status.get("submissionAttempts") or 0) + 1,
                          lastSubmissionAttemptTime=now)
            self._write(app, status)
            return None
        phase = (driver.get("status") or {}).get("phase")
        retry = None
        if phase == "Running":
            instances = int(((app.get("spec") or {}).get("executor") or {}).get("instances", 1))
            for i in range(1, instances + 1):
                if f"{name}-exec-{i}" not in pods:
                    with contextlib.suppress(AlreadyExists):
                        try:
                            pods[f"{name}-exec-{i}"] = self.create(pod_for(app, "executor", i, driver))
                        except InvalidObject:
                            retry = self.clock() + RETRY_SECONDS
            status["applicationState"] = {"state": RUNNING}
        elif phase in ("Succeeded", "Failed"):
            ok = phase == "Succeeded"
            status["applicationState"] = {"state": COMPLETED} if ok else {
                "state": FAILED, "errorMessage": "driver container failed"}
            status["terminationTime"] = now
            if ((app.get("spec") or {}).get("executor") or {}).get("deleteOnTermination", True) is not False:
                self._delete(list(pods.values()))
        status["executorState"] = {n: _EXECUTOR_STATE.get(str((p.get("status") or {}).get("phase")), "UNKNOWN")
                                   for n, p in sorted(pods.items())}
        if phase in ("Succeeded", "Failed"):
            status["executorState"] = {n: s if s in (COMPLETED, FAILED) else COMPLETED
                                       for n, s in status["executorState"].items()}
        self._write(app, status)
        return retry

    def _write(self, app: Object, status: dict[str, Any]) -> None:
        if status != (app.get("status") or {}):
            self.store.update_status({**app, "status": status})

    def _delete(self, pods: list[Object]) -> None:
        for pod in pods:
            with contextlib.suppress(NotFound):
                self.store.delete("Pod", pod["metadata"].get("namespace", ""), pod["metadata"]["name"])


__all__ = ["SPARK_API_VERSION", "SparkOperator", "pod_for"]
