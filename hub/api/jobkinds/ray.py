"""KubeRay's RayCluster, RayJob and RayService on the job framework (Kueue's
``pkg/controller/jobs/raycluster``, ``rayjob``, ``rayservice``).

All three ask for their cluster's pod sets: ``head`` (one pod) then one per worker group, named
as the group, of ``replicas * numOfHosts`` pods; a RayJob in ``K8sJobMode`` (the default) adds the
``submitter`` pod set (its ``submitterPodTemplate``, else KubeRay's default submitter pod), and in
``SidecarMode`` the submitter container is counted in the head pod. The admission goes into the
head and worker templates (and the submitter's, written into ``submitterPodTemplate`` when the
RayJob had none, as Kueue does). A RayJob finishes by its ``jobDeploymentStatus`` (Complete or
Failed; succeeded when ``jobStatus`` is SUCCEEDED); a RayCluster and a RayService never finish:
their Workloads hold quota while they exist (``finishes = False``: the simulated runners keep
them running). A RayService is suspended through ``spec.rayClusterConfig.suspend``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, TypeVar

from ..errors import FieldErrors
from ..meta import format_time
from ..pods import read_pod_template
from ..ray_kind import (
    HEAD,
    K8S_JOB_MODE,
    KUBERAY_CONTROLLER,
    RAY_API_VERSION,
    SIDECAR_MODE,
    SUBMITTER,
    SUBMITTER_CONTAINER,
    SUBMITTER_RESOURCES,
    RayCluster,
    RayClusterSpec,
    RayJob,
    RayService,
)
from ..reader import Reader
from ..workload import ADMITTED, EVICTED, FINISHED, PodSet, Workload
from .framework import (
    Manifest,
    Outcome,
    PodSetInfo,
    clean_template,
    identity,
    merge_into_template,
    restore_template,
    topology_request,
)

# Labels KubeRay puts on the pods it makes from these templates: never the Workload's.
_KUBERAY_LABELS = frozenset(("ray.io/cluster", "ray.io/node-type", "ray.io/group", "ray.io/identifier",
                             "ray.io/is-ray-node", "ray.io/originated-from-crd", "ray.io/originated-from-cr-name",
                             "app.kubernetes.io/created-by", "app.kubernetes.io/name"))
READY = "ready"  # RayCluster status.state
COMPLETE, FAILED_DEPLOYMENT, RUNNING_DEPLOYMENT, SUSPENDED_DEPLOYMENT = "Complete", "Failed", "Running", "Suspended"
SUCCEEDED, FAILED, RUNNING = "SUCCEEDED", "FAILED", "RUNNING"
SERVICE_READY = "Ready"  # RayService condition

K = TypeVar("K", RayCluster, RayJob, RayService)


def pod_set_name(group_name: str) -> str:
    """Kueue's NewPodSetReference: a worker group's name as a pod set's."""
    return group_name.lower()


def _node(manifest: Manifest, path: tuple[str, ...]) -> dict[str, Any]:
    node: dict[str, Any] = manifest
    for step in path:
        node = node.setdefault(step, {})
    return node


def _cluster_templates(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    """The head's then each worker group's pod template in a manifest's cluster spec, in pod-set order."""
    head: dict[str, Any] = cluster.setdefault("headGroupSpec", {}).setdefault("template", {})
    groups = [g for g in cluster.get("workerGroupSpecs") or [] if isinstance(g, dict)]
    return [head, *(g.setdefault("template", {}) for g in groups)]


def _template_pod_set(name: str, count: int, template: dict[str, Any], path: str) -> PodSet:
    cleaned = clean_template(template, _KUBERAY_LABELS)
    return PodSet(name=name, count=count, template=cleaned,
                  spec=read_pod_template(Reader(cleaned, path, FieldErrors())), topology_request=topology_request(cleaned))


def cluster_pod_sets(spec: RayClusterSpec, path: str, *, sidecar_submitter: bool = False) -> list[PodSet]:
    """Kueue's BuildPodSets: ``head`` then the worker groups."""
    head = copy.deepcopy(spec.head_template)
    if sidecar_submitter:
        pod = head.setdefault("spec", {})
        pod["containers"] = [*pod.get("containers", []), {"name": SUBMITTER_CONTAINER,
                                                          "resources": copy.deepcopy(SUBMITTER_RESOURCES)}]
    out = [_template_pod_set(HEAD, 1, head, f"{path}.headGroupSpec.template")]
    for i, g in enumerate(spec.worker_groups):
        out.append(_template_pod_set(pod_set_name(g.group_name), g.pods_count, g.template,
                                     f"{path}.workerGroupSpecs[{i}].template"))
    return out


def default_submitter_template(head_template: dict[str, Any]) -> dict[str, Any]:
    """KubeRay's submitter pod when the RayJob names none: the head's image, fixed resources."""
    containers = (head_template.get("spec") or {}).get("containers") or [{}]
    image = containers[0].get("image", "") if isinstance(containers[0], dict) else ""
    return {"spec": {"containers": [{"name": SUBMITTER_CONTAINER, "image": image,
                                     "resources": copy.deepcopy(SUBMITTER_RESOURCES)}],
                     "restartPolicy": "Never"}}


class _RayAdapter:
    """What the three kinds share; ``cluster_path`` says where the cluster spec is in a manifest."""

    api_version = RAY_API_VERSION
    controller_template_labels = _KUBERAY_LABELS
    managed_by_path: tuple[str, ...] = ("spec", "managedBy")
    controller_name = KUBERAY_CONTROLLER
    cluster_path: tuple[str, ...] = ("spec",)
    suspend_path: tuple[str, ...] = ("spec", "suspend")
    finishes = False

    def _templates(self, manifest: Manifest) -> list[dict[str, Any]]:
        return _cluster_templates(_node(manifest, self.cluster_path))

    def suspend(self, manifest: Manifest) -> None:
        _node(manifest, self.suspend_path[:-1])[self.suspend_path[-1]] = True

    def _unsuspend(self, manifest: Manifest) -> None:
        _node(manifest, self.suspend_path[:-1])[self.suspend_path[-1]] = False

    def run_with_pod_sets_info(self, manifest: Manifest, infos: Sequence[PodSetInfo], pod_sets: Sequence[PodSet]) -> None:
        self._unsuspend(manifest)
        # By position, as Kueue's UpdateRayClusterSpecToRunWithPodSetsInfo: head first, then the groups.
        for template, info in zip(self._templates(manifest), infos, strict=False):
            merge_into_template(template, info)

    def restore_pod_sets_info(self, manifest: Manifest, pod_sets: Sequence[PodSet]) -> None:
        templates = self._templates(manifest)
        if len(pod_sets) < len(templates):
            return  # Kueue skips a restore whose pod-set count does not match
        for template, ps in zip(templates, pod_sets, strict=False):
            restore_template(template, ps.template or {}, self.controller_template_labels)

    def _manifest(self, kind: str, job: RayCluster | RayJob | RayService) -> Manifest:
        meta = identity(job.meta)
        return {"apiVersion": self.api_version, "kind": kind, "metadata": meta, "spec": copy.deepcopy(job.spec_raw)}

    def worker_copy(self, manifest: Manifest) -> Manifest:
        manifest.setdefault("spec", {}).pop("managedBy", None)  # the worker's KubeRay operator takes it over
        self._unsuspend(manifest)
        return manifest

    def managed_by(self, job: RayCluster | RayJob | RayService) -> str:
        return job.managed_by

    def _priority_class(self, spec: RayClusterSpec | None) -> str:
        """The first pod set's with one, as Kueue's ExtractPriority reads them in order."""
        if spec is None:
            return ""
        for pod_spec in (spec.head_pod_spec, *(g.pod_spec for g in spec.worker_groups)):
            if pod_spec.priority_class_name:
                return pod_spec.priority_class_name
        return ""


class RayClusterAdapter(_RayAdapter):
    framework = "ray.io/raycluster"
    kind = "RayCluster"
    mirrored_status_fields: tuple[str, ...] = (
        "state", "reason", "conditions", "readyWorkerReplicas", "availableWorkerReplicas", "desiredWorkerReplicas",
        "minWorkerReplicas", "maxWorkerReplicas", "desiredCPU", "desiredMemory", "desiredGPU", "desiredTPU",
        "lastUpdateTime", "stateTransitionTimes", "endpoints", "head", "observedGeneration")

    def pod_sets(self, job: RayCluster) -> list[PodSet]:
        return cluster_pod_sets(job.spec, "spec")

    def pod_spec_priority_class(self, job: RayCluster) -> str:
        return self._priority_class(job.spec)

    def is_suspended(self, job: RayCluster) -> bool:
        return job.spec.suspend

    def finished(self, job: RayCluster) -> Outcome | None:
        return None  # Kueue: "Technically a RayCluster is never finished"

    def pods_ready(self, job: RayCluster) -> bool:
        return job.state == READY

    def manifest(self, job: RayCluster) -> Manifest:
        return self._manifest(self.kind, job)

    def status_outcome(self, status: Manifest) -> Outcome | None:
        return None

    def status_running(self, status: Manifest) -> bool:
        return status.get("state") == READY

    def status_terminal(self, status: Manifest) -> bool:
        return False

    def simulated_status(self, wl: Workload, job: RayCluster, previous: Manifest | None, ready_at: float | None) -> Manifest:
        running, ready = _running(wl, ready_at)
        workers = sum(g.pods_count for g in job.spec.worker_groups)
        return {**_cluster_status(job.spec, running, ready), "desiredWorkerReplicas": workers if running else 0}


class RayJobAdapter(_RayAdapter):
    framework = "ray.io/rayjob"
    kind = "RayJob"
    cluster_path = ("spec", "rayClusterSpec")
    finishes = True
    # Kueue's MultiKueue adapter copies the worker's whole status.
    mirrored_status_fields: tuple[str, ...] = (
        "jobId", "rayClusterName", "dashboardURL", "jobStatus", "jobDeploymentStatus", "reason", "message",
        "startTime", "endTime", "succeeded", "failed", "rayClusterStatus", "observedGeneration", "rayJobInfo")

    def pod_sets(self, job: RayJob) -> list[PodSet]:
        if job.cluster is None:
            return []
        out = cluster_pod_sets(job.cluster, "spec.rayClusterSpec", sidecar_submitter=job.submission_mode == SIDECAR_MODE)
        if job.submission_mode == K8S_JOB_MODE:
            template = job.submitter_template if job.submitter_template is not None else \
                default_submitter_template(job.cluster.head_template)
            out.append(_template_pod_set(SUBMITTER, 1, template, "spec.submitterPodTemplate"))
        return out

    def pod_spec_priority_class(self, job: RayJob) -> str:
        return self._priority_class(job.cluster)

    def skip(self, job: RayJob) -> bool:
        """Kueue's Skip: a RayJob on an existing cluster (``clusterSelector``) is not queued."""
        return bool(job.cluster_selector)

    def is_suspended(self, job: RayJob) -> bool:
        return job.suspend

    def finished(self, job: RayJob) -> Outcome | None:
        return _job_outcome(job.job_deployment_status, job.job_status, job.message)

    def pods_ready(self, job: RayJob) -> bool:
        return job.cluster_state == READY

    def _submitter(self, manifest: Manifest) -> dict[str, Any] | None:
        spec = manifest.setdefault("spec", {})
        if spec.get("submissionMode", K8S_JOB_MODE) != K8S_JOB_MODE:
            return None
        if not isinstance(spec.get("submitterPodTemplate"), dict):
            head = ((spec.get("rayClusterSpec") or {}).get("headGroupSpec") or {}).get("template") or {}
            spec["submitterPodTemplate"] = default_submitter_template(head)
        return spec["submitterPodTemplate"]  # type: ignore[no-any-return]

    def run_with_pod_sets_info(self, manifest: Manifest, infos: Sequence[PodSetInfo], pod_sets: Sequence[PodSet]) -> None:
        super().run_with_pod_sets_info(manifest, infos, pod_sets)
        submitter = self._submitter(manifest)
        info = next((i for i in infos if i.name == SUBMITTER), None)
        if submitter is not None and info is not None:
            merge_into_template(submitter, info)

    def restore_pod_sets_info(self, manifest: Manifest, pod_sets: Sequence[PodSet]) -> None:
        super().restore_pod_sets_info(manifest, pod_sets)
        spec = manifest.get("spec") or {}
        original = next((ps for ps in pod_sets if ps.name == SUBMITTER), None)
        if original is not None and isinstance(spec.get("submitterPodTemplate"), dict):
            restore_template(spec["submitterPodTemplate"], original.template or {}, self.controller_template_labels)

    def manifest(self, job: RayJob) -> Manifest:
        out = self._manifest(self.kind, job)
        out["spec"]["suspend"] = job.suspend
        return out

    def status_outcome(self, status: Manifest) -> Outcome | None:
        return _job_outcome(str(status.get("jobDeploymentStatus") or ""), str(status.get("jobStatus") or ""),
                            str(status.get("message") or ""))

    def status_running(self, status: Manifest) -> bool:
        cluster = status.get("rayClusterStatus")
        return status.get("jobDeploymentStatus") == RUNNING_DEPLOYMENT or (
            isinstance(cluster, dict) and cluster.get("state") == READY)

    def status_terminal(self, status: Manifest) -> bool:
        return self.status_outcome(status) is not None

    def simulated_status(self, wl: Workload, job: RayJob, previous: Manifest | None, ready_at: float | None) -> Manifest:
        """What KubeRay writes for the simulated run (embedded mode)."""
        running, ready = _running(wl, ready_at)
        finished = wl.status.condition(FINISHED)
        cluster = _cluster_status(job.cluster or RayClusterSpec(), running, ready)
        name = f"{job.meta.name}-raycluster"
        if finished is not None and finished.is_true:
            ok = finished.reason == "Succeeded"
            return {"jobDeploymentStatus": COMPLETE if ok else FAILED_DEPLOYMENT, "jobStatus": SUCCEEDED if ok else FAILED,
                    "message": finished.message or _default_message(ok), "rayClusterName": name,
                    "rayClusterStatus": cluster, "endTime": format_time(finished.last_transition_time),
                    **({"startTime": (previous or {})["startTime"]} if (previous or {}).get("startTime") else {})}
        if not running:
            return {"jobDeploymentStatus": SUSPENDED_DEPLOYMENT, "jobStatus": "", "rayClusterStatus": cluster}
        admitted = wl.status.condition(ADMITTED)
        started = format_time(admitted.last_transition_time) if admitted is not None else ""
        return {"jobDeploymentStatus": RUNNING_DEPLOYMENT, "jobStatus": RUNNING if ready else "PENDING",
                "rayClusterName": name, "rayClusterStatus": cluster, "startTime": started}


class RayServiceAdapter(_RayAdapter):
    framework = "ray.io/rayservice"
    kind = "RayService"
    cluster_path = ("spec", "rayClusterConfig")
    suspend_path = ("spec", "rayClusterConfig", "suspend")
    mirrored_status_fields: tuple[str, ...] = (
        "conditions", "serviceStatus", "activeServiceStatus", "pendingServiceStatus", "numServeEndpoints",
        "observedGeneration", "lastUpdateTime")

    def pod_sets(self, job: RayService) -> list[PodSet]:
        return cluster_pod_sets(job.cluster, "spec.rayClusterConfig")

    def pod_spec_priority_class(self, job: RayService) -> str:
        return self._priority_class(job.cluster)

    def is_suspended(self, job: RayService) -> bool:
        return job.cluster.suspend

    def finished(self, job: RayService) -> Outcome | None:
        return None  # a long-running service (Kueue's Finished is always false)

    def pods_ready(self, job: RayService) -> bool:
        return any(c.type == SERVICE_READY and c.is_true for c in job.conditions)

    def manifest(self, job: RayService) -> Manifest:
        return self._manifest(self.kind, job)

    def status_outcome(self, status: Manifest) -> Outcome | None:
        return None

    def status_running(self, status: Manifest) -> bool:
        return any(isinstance(c, dict) and c.get("type") == SERVICE_READY and c.get("status") == "True"
                   for c in status.get("conditions") or [])

    def status_terminal(self, status: Manifest) -> bool:
        return False

    def simulated_status(self, wl: Workload, job: RayService, previous: Manifest | None, ready_at: float | None) -> Manifest:
        running, ready = _running(wl, ready_at)
        prev = [c for c in (previous or {}).get("conditions") or [] if isinstance(c, dict) and c.get("type") == SERVICE_READY]
        since = str(prev[0].get("lastTransitionTime")) if prev and prev[0].get("status") == ("True" if ready else "False") \
            else format_time(wl.meta.creation_timestamp or 0.0)
        cond = {"type": SERVICE_READY, "status": "True" if ready else "False",
                "reason": "RunningServeDeployments" if ready else "Initializing",
                "message": "" if ready else "Waiting for the RayCluster to be ready", "lastTransitionTime": since}
        status: Manifest = {"conditions": [cond], "serviceStatus": "Running" if ready else ""}
        if running:
            status["activeServiceStatus"] = {"rayClusterName": f"{job.meta.name}-raycluster",
                                             "rayClusterStatus": _cluster_status(job.cluster, running, ready)}
        return status


def _running(wl: Workload, ready_at: float | None) -> tuple[bool, bool]:
    admitted = wl.status.condition(ADMITTED)
    running = admitted is not None and admitted.is_true and not wl.status.is_true(EVICTED)
    return running, running and ready_at is not None


def _cluster_status(spec: RayClusterSpec, running: bool, ready: bool) -> Manifest:
    workers = sum(g.pods_count for g in spec.worker_groups)
    status: Manifest = {"state": READY if ready else ("" if running else "suspended"),
                        "readyWorkerReplicas": workers if ready else 0,
                        "availableWorkerReplicas": workers if ready else 0,
                        "minWorkerReplicas": sum(g.min_replicas * max(g.num_of_hosts, 1) for g in spec.worker_groups),
                        "maxWorkerReplicas": sum(g.max_replicas * max(g.num_of_hosts, 1) for g in spec.worker_groups)}
    if not status["state"]:
        del status["state"]
    return status


def _default_message(ok: bool) -> str:
    return "Job finished successfully." if ok else "Job failed."


def _job_outcome(deployment: str, job_status: str, message: str) -> Outcome | None:
    """Kueue's RayJob Finished: a Complete or Failed deployment; succeeded when the job SUCCEEDED."""
    if deployment not in (COMPLETE, FAILED_DEPLOYMENT):
        return None
    ok = job_status == SUCCEEDED
    return ("succeeded" if ok else "failed"), message or _default_message(ok)


RAYCLUSTER = RayClusterAdapter()
RAYJOB = RayJobAdapter()
RAYSERVICE = RayServiceAdapter()
