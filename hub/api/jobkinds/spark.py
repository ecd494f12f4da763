"""SparkApplication (``sparkoperator.k8s.io/v1beta2``) on the job framework (Kueue's
``pkg/controller/jobs/sparkapplication``, alpha: the SparkApplicationIntegration gate).

Two pod sets, ``driver`` (1) and ``executor`` (``spec.executor.instances``), their templates built
from the roles' fields as the Spark operator builds the pods (:func:`hub.api.spark_kind.build_template`).
``spec.suspend`` holds it. The admission goes where Kueue puts it: the roles' ``labels``,
``annotations``, ``nodeSelector`` (a global ``spec.nodeSelector`` moved into both), ``tolerations``
and the role template's scheduling gates; restore puts the pod sets' back and the executor count.
Finished from ``status.applicationState.state`` (COMPLETED; FAILED or SUBMISSION_FAILED), pods ready
when RUNNING with as many executors RUNNING or COMPLETED as asked. Kueue has no ``managedBy`` nor a
MultiKueue adapter for it: it is not dispatched to workers.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from ..spark_kind import SPARK_API_VERSION, SPARK_CONTROLLER, SparkApplication
from ..workload import ADMITTED, EVICTED, FINISHED, PodSet, Workload
from .framework import Manifest, Outcome, PodSetInfo, clean_template, identity, info_for, topology_request

COMPLETED, FAILED, SUBMISSION_FAILED, RUNNING = "COMPLETED", "FAILED", "SUBMISSION_FAILED", "RUNNING"
ROLES = ("driver", "executor")


def _outcome(state: str, message: str) -> Outcome | None:
    if state == COMPLETED:
        return "succeeded", message or "SparkApplication completed"
    if state in (FAILED, SUBMISSION_FAILED):
        return "failed", message or f"SparkApplication {state.lower().replace('_', ' ')}"
    return None


def _role(manifest: Manifest, role: str) -> dict[str, Any]:
    return manifest.setdefault("spec", {}).setdefault(role, {})  # type: ignore[no-any-return]


def _executors_ready(state: str, instances: int, executors: Sequence[str]) -> bool:
    return state == RUNNING and sum(1 for s in executors if s in (RUNNING, COMPLETED)) >= instances


class SparkApplicationAdapter:
    framework = "sparkoperator.k8s.io/sparkapplication"
    api_version = SPARK_API_VERSION
    kind = "SparkApplication"
    controller_template_labels: frozenset[str] = frozenset()
    managed_by_path: tuple[str, ...] = ()  # none in its API
    controller_name = SPARK_CONTROLLER
    mirrored_status_fields: tuple[str, ...] = ("applicationState", "driverInfo", "executorState", "sparkApplicationId",
                                               "submissionID", "lastSubmissionAttemptTime", "terminationTime",
                                               "executionAttempts", "submissionAttempts")

    def pod_sets(self, job: SparkApplication) -> list[PodSet]:
        out = []
        for role, count in (("driver", 1), ("executor", job.executor.instances)):
            r = job.driver if role == "driver" else job.executor
            template = clean_template(r.template, self.controller_template_labels)
            out.append(PodSet(name=role, count=count, template=template, spec=r.spec,
                              topology_request=topology_request(template)))
        return out

    def pod_spec_priority_class(self, job: SparkApplication) -> str:
        return job.driver.spec.priority_class_name or job.executor.spec.priority_class_name

    def is_suspended(self, job: SparkApplication) -> bool:
        return job.suspend

    def managed_by(self, job: SparkApplication) -> str:
        return ""

    def finished(self, job: SparkApplication) -> Outcome | None:
        return _outcome(job.status.state, job.status.error_message)

    def pods_ready(self, job: SparkApplication) -> bool:
        return _executors_ready(job.status.state, job.executor.instances, list(job.status.executor_state.values()))

    def suspend(self, manifest: Manifest) -> None:
        manifest.setdefault("spec", {})["suspend"] = True

    def run_with_pod_sets_info(self, manifest: Manifest, infos: Sequence[PodSetInfo], pod_sets: Sequence[PodSet]) -> None:
        spec = manifest.setdefault("spec", {})
        spec["suspend"] = False
        global_selector = spec.pop("nodeSelector", None)
        for i, role in enumerate(ROLES):
            info = info_for(infos, role, i)
            rs = _role(manifest, role)
            if global_selector is not None:  # Kueue moves it into each role, then drops it
                rs["nodeSelector"] = dict(global_selector)
            if info is None:
                continue
            for key, value in (("labels", info.labels), ("annotations", info.annotations),
                               ("nodeSelector", info.node_selector)):
                if value:
                    rs[key] = {**(rs.get(key) or {}), **value}
            if info.tolerations:
                current = list(rs.get("tolerations") or [])
                rs["tolerations"] = current + [t for t in info.tolerations if t not in current]

    def restore_pod_sets_info(self, manifest: Manifest, pod_sets: Sequence[PodSet]) -> None:
        if len(pod_sets) != len(ROLES):  # Kueue skips a restore of another shape
            return
        manifest.setdefault("spec", {}).pop("nodeSelector", None)
        for role, ps in zip(ROLES, pod_sets, strict=True):
            rs = _role(manifest, role)
            template = ps.template or {}
            for key, source in (("labels", template.get("metadata")), ("annotations", template.get("metadata")),
                                ("nodeSelector", template.get("spec")), ("tolerations", template.get("spec"))):
                value = copy.deepcopy((source or {}).get(key))
                if value:
                    rs[key] = value
                else:
                    rs.pop(key, None)
            if role == "executor":
                rs["instances"] = ps.count

    def manifest(self, job: SparkApplication) -> Manifest:
        meta = identity(job.meta)
        spec = copy.deepcopy(job.spec_raw)
        spec["suspend"] = job.suspend
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": meta, "spec": spec}

    def worker_copy(self, manifest: Manifest) -> Manifest:
        manifest.setdefault("spec", {})["suspend"] = False
        return manifest

    def status_outcome(self, status: Manifest) -> Outcome | None:
        app = status.get("applicationState") or {}
        return _outcome(str(app.get("state") or ""), str(app.get("errorMessage") or ""))

    def status_running(self, status: Manifest) -> bool:
        return (status.get("applicationState") or {}).get("state") == RUNNING

    def status_terminal(self, status: Manifest) -> bool:
        return self.status_outcome(status) is not None

    def simulated_status(self, wl: Workload, job: SparkApplication, previous: Manifest | None, ready_at: float | None) -> Manifest:
        """The status the Spark operator would write for the simulated pods (embedded mode)."""
        name = job.meta.name
        admitted = wl.status.condition(ADMITTED)
        finished = wl.status.condition(FINISHED)
        executors = [f"{name}-exec-{i + 1}" for i in range(job.executor.instances)]
        if finished is not None and finished.is_true:
            ok = finished.reason == "Succeeded"
            return {"applicationState": {"state": COMPLETED if ok else FAILED,
                                         **({} if ok else {"errorMessage": finished.message or "driver pod failed"})},
                    "executorState": {e: COMPLETED if ok else FAILED for e in executors}}
        if admitted is None or not admitted.is_true or wl.status.is_true(EVICTED):
            return {}
        ready = ready_at is not None
        return {"applicationState": {"state": RUNNING}, "driverInfo": {"podName": f"{name}-driver"},
                "executorState": {e: RUNNING if ready else "PENDING" for e in executors}}


SPARK_APPLICATION = SparkApplicationAdapter()
