"""A simulated KubeRay operator (``ray.io/v1`` RayCluster, RayJob, RayService), after
ray-project/kuberay's, as far as Kueue's examples and integration use it.

What it does, as KubeRay does it:

- **RayCluster**: a head pod ``<cluster>-head-<suffix>`` and, per worker group, ``replicas *
  numOfHosts`` worker pods ``<cluster>-<group>-worker-<suffix>`` made from the group's template,
  labelled ``ray.io/cluster``, ``ray.io/node-type`` (head / worker), ``ray.io/group``
  (``headgroup`` / the group's name), ``ray.io/identifier``, ``ray.io/is-ray-node`` and KubeRay's
  ``app.kubernetes.io`` labels, owned by the cluster (the garbage collector deletes them with
  it); a template without ``restartPolicy`` gets ``Always`` (the pods run until deleted). A
  group scaled down loses its highest-numbered pods (``scaleStrategy.workersToDelete`` first);
  a finished pod is replaced. ``spec.suspend`` (or a group's ``suspend``) deletes the pods;
  status ``state`` ``ready`` once every pod runs and is ready (``suspended`` while suspended),
  ``readyWorkerReplicas``, ``availableWorkerReplicas``, ``desiredWorkerReplicas``,
  ``min/maxWorkerReplicas``, ``head.podName`` / ``podIP``, ``endpoints`` (the head container's
  named ports), conditions ``HeadPodReady`` and ``RayClusterProvisioned``.
- **RayJob**: once not suspended, its RayCluster ``<job>-raycluster-<suffix>`` from
  ``rayClusterSpec`` (the RayJob's labels and KubeRay's ``ray.io/originated-from-*``), owned by
  it; ``jobDeploymentStatus`` Initializing until the cluster is ready, then Running: in
  ``K8sJobMode`` a submitter ``batch/v1`` Job named as the RayJob (``submitterPodTemplate`` or
  KubeRay's default submitter pod; the dev-cluster's Job controller runs it, for the RayJob's
  ``mkhub.dev/sim-duration`` and ``mkhub.dev/sim-exit-code``), whose end ends the RayJob; in the
  other modes the driver is a timer of that duration. Then ``jobStatus`` SUCCEEDED (or FAILED),
  ``jobDeploymentStatus`` Complete (or Failed), ``endTime``, ``message``, and the cluster is
  deleted when ``shutdownAfterJobFinishes``. ``spec.suspend`` deletes the cluster and the
  submitter Job: ``jobDeploymentStatus`` Suspended; a resume starts again with a new cluster.
  ``status.rayClusterStatus`` follows the cluster's status.
- **RayService**: a RayCluster ``<service>-raycluster-<suffix>`` from ``rayClusterConfig``, kept
  running; condition ``Ready`` (``serviceStatus`` Running) while the cluster is ready, the serve
  applications of ``serveConfigV2`` reported RUNNING; ``rayClusterConfig.suspend`` deletes it.
- An object whose ``spec.managedBy`` names another controller (MultiKueue) is left alone.

Names are derived from the owner's uid, so a restart of the dev-cluster reconciles from the store
and never makes two of one object. Not done (KubeRay does): the head Service and the Ray
processes (no dashboard, no ``ray job submit``: the driver is simulated), autoscaling (the
autoscaler sidecar and scaling by load), RayService zero-downtime upgrades and serve health,
GCS fault tolerance and its Redis cleanup, ``ttlSecondsAfterFinished``, ``activeDeadlineSeconds``,
``backoffLimit`` retries, ``clusterSelector`` (a RayJob on an existing cluster), the
``desiredCPU`` / memory / GPU sums, and KubeRay's validation webhook beyond the CRD schema
(mkhub's own checks of :mod:`hub.api.ray_kind` run on create).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
from collections.abc import Callable
from typing import Any

import yaml

from hub.api.annotations import duration_annotation
from hub.api.meta import parse_time
from hub.store.interface import AlreadyExists, Conflict, NotFound, Object, Store

from .jobs import COMPLETE, FAILED, condition_true, format_time
from .kuberay_crds import RAY_API_VERSION, RAYCLUSTER_KIND, RAYJOB_KIND, RAYSERVICE_KIND

KUBERAY = "ray.io/kuberay-operator"
CLUSTER_LABEL, NODE_TYPE_LABEL, GROUP_LABEL = "ray.io/cluster", "ray.io/node-type", "ray.io/group"
IDENTIFIER_LABEL, IS_RAY_NODE_LABEL = "ray.io/identifier", "ray.io/is-ray-node"
ORIGIN_CRD_LABEL, ORIGIN_NAME_LABEL = "ray.io/originated-from-crd", "ray.io/originated-from-cr-name"
HEAD_GROUP = "headgroup"
SIM_DURATION, SIM_EXIT_CODE = "mkhub.dev/sim-duration", "mkhub.dev/sim-exit-code"
DEFAULT_DRIVER_SECONDS = 5.0
READY = "ready"
SUBMITTER_RESOURCES = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "200Mi"}}

Clock = Callable[[], float]


def _suffix(*parts: str) -> str:
    """Five characters standing in for KubeRay's random ones, fixed by what they name."""
    return hashlib.sha1("/".join(parts).encode()).hexdigest()[:5]


def _owner_ref(obj: Object) -> dict[str, Any]:
    return {"apiVersion": str(obj.get("apiVersion") or RAY_API_VERSION), "kind": obj["kind"],
            "name": obj["metadata"]["name"], "uid": obj["metadata"].get("uid", ""), "controller": True,
            "blockOwnerDeletion": True}


def _controlled_by(obj: Object, owner: Object) -> bool:
    uid = owner["metadata"].get("uid")
    return any(r.get("uid") == uid and r.get("controller") for r in obj["metadata"].get("ownerReferences") or [])


def _foreign(obj: Object) -> bool:
    """``spec.managedBy`` names a controller other than KubeRay (MultiKueue's): not ours to run."""
    return (obj.get("spec") or {}).get("managedBy") not in (None, "", KUBERAY)


def _pod_ready(pod: Object) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and condition_true(status, "Ready")


def _ended(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _set_condition(status: dict[str, Any], type_: str, value: bool, reason: str, message: str, now: float) -> None:
    conds: list[dict[str, Any]] = status.setdefault("conditions", [])
    text = "True" if value else "False"
    for c in conds:
        if c.get("type") == type_:
            if c.get("status") != text:
                c["lastTransitionTime"] = format_time(now)
            c.update(status=text, reason=reason, message=message)
            return
    conds.append({"type": type_, "status": text, "reason": reason, "message": message,
                  "lastTransitionTime": format_time(now)})


class _Base:
    KIND = ""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    def reconcile_all(self) -> None:
        objs, _ = self.store.list(self.KIND)
        for obj in objs:
            self.reconcile(obj["metadata"].get("namespace", ""), obj["metadata"]["name"])

    def reconcile(self, namespace: str, name: str) -> float | None:
        for _ in range(5):  # a conflicting writer (Kueue, kubectl) moved the object: read again
            try:
                obj = self.store.get(self.KIND, namespace, name)
                if obj is None or obj["metadata"].get("deletionTimestamp") or _foreign(obj):
                    return None
                return self._reconcile(obj)
            except NotFound:
                return None
            except Conflict:
                continue
        return None

    def _reconcile(self, obj: Object) -> float | None:
        raise NotImplementedError

    def _write_status(self, obj: Object, status: dict[str, Any]) -> None:
        if status != (obj.get("status") or {}):
            self.store.update_status({**obj, "status": status})

    def _create(self, obj: Object) -> None:
        with contextlib.suppress(AlreadyExists):  # made before a restart: the stored one stays
            self.store.create(obj)

    def _delete(self, kind: str, namespace: str, name: str) -> None:
        with contextlib.suppress(NotFound):
            self.store.delete(kind, namespace, name)

    def _owned_cluster(self, owner: Object) -> Object | None:
        name = self.cluster_name(owner)
        cluster = self.store.get(RAYCLUSTER_KIND, owner["metadata"].get("namespace", ""), name)
        return cluster if cluster is not None and _controlled_by(cluster, owner) else None

    @staticmethod
    def cluster_name(owner: Object) -> str:
        meta = owner["metadata"]
        return f"{meta['name']}-raycluster-{_suffix(meta.get('uid', ''), 'raycluster')}"

    def _new_cluster(self, owner: Object, spec: dict[str, Any]) -> Object:
        """The RayCluster KubeRay makes for a RayJob or RayService: the owner's labels and its origin."""
        meta = owner["metadata"]
        cluster_spec = copy.deepcopy(spec)
        cluster_spec.pop("suspend", None)
        labels = {**(meta.get("labels") or {}), ORIGIN_CRD_LABEL: owner["kind"], ORIGIN_NAME_LABEL: meta["name"]}
        return {"apiVersion": RAY_API_VERSION, "kind": RAYCLUSTER_KIND,
                "metadata": {"name": self.cluster_name(owner), "namespace": meta.get("namespace", ""), "labels": labels,
                             "ownerReferences": [_owner_ref(owner)]},
                "spec": cluster_spec}


# --- RayCluster ----------------------------------------------------------------------------------------


def _groups(cluster: Object) -> list[dict[str, Any]]:
    return [g for g in (cluster.get("spec") or {}).get("workerGroupSpecs") or [] if isinstance(g, dict)]


def _group_size(group: dict[str, Any]) -> int:
    if group.get("suspend") is True:
        return 0
    return max(_int(group.get("replicas"), 0), 0) * max(_int(group.get("numOfHosts"), 1), 1)


def _ray_pod(cluster: Object, template: dict[str, Any], name: str, node_type: str, group: str) -> Object:
    meta = cluster["metadata"]
    tmeta = template.get("metadata") or {}
    identifier = f"{meta['name']}-{node_type}"
    labels = {**(tmeta.get("labels") or {}), CLUSTER_LABEL: meta["name"], NODE_TYPE_LABEL: node_type,
              GROUP_LABEL: group, IDENTIFIER_LABEL: identifier, IS_RAY_NODE_LABEL: "yes",
              "app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator"}
    spec = copy.deepcopy(template.get("spec") or {})
    spec.setdefault("restartPolicy", "Always")
    pod_meta: dict[str, Any] = {"name": name, "namespace": meta.get("namespace", ""), "labels": labels,
                                "ownerReferences": [_owner_ref(cluster)]}
    if tmeta.get("annotations"):
        pod_meta["annotations"] = dict(tmeta["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


class RayClusterController(_Base):
    """Head and worker pods of a RayCluster, and its status."""

    KIND = RAYCLUSTER_KIND

    def pods(self, cluster: Object) -> list[Object]:
        meta = cluster["metadata"]
        pods, _ = self.store.list("Pod", meta.get("namespace", ""), f"{CLUSTER_LABEL}={meta['name']}")
        return [p for p in pods if _controlled_by(p, cluster)]

    def _reconcile(self, cluster: Object) -> float | None:
        now = self.clock()
        meta, spec = cluster["metadata"], cluster.get("spec") or {}
        pods = self.pods(cluster)
        status: dict[str, Any] = copy.deepcopy(cluster.get("status") or {})
        if spec.get("suspend") is True:
            for pod in pods:
                self._delete("Pod", meta.get("namespace", ""), pod["metadata"]["name"])
            status.update(state="suspended", readyWorkerReplicas=0, availableWorkerReplicas=0, desiredWorkerReplicas=0)
            status.pop("head", None)
            _set_condition(status, "HeadPodReady", False, "HeadPodNotFound", "", now)
            status["conditions"] = [c for c in status["conditions"] if c.get("type") != "RayClusterProvisioned"]
            self._write_status(cluster, status)
            return None
        live: list[Object] = []
        for pod in pods:
            if _ended(pod):  # KubeRay replaces a Ray pod that exited
                self._delete("Pod", meta.get("namespace", ""), pod["metadata"]["name"])
            else:
                live.append(pod)
        head = [p for p in live if (p["metadata"].get("labels") or {}).get(NODE_TYPE_LABEL) == "head"]
        if not head:
            template = (spec.get("headGroupSpec") or {}).get("template") or {}
            name = f"{meta['name']}-head-{_suffix(meta.get('uid', ''), 'head', str(len(pods)))}"
            self._create(_ray_pod(cluster, template, name, "head", HEAD_GROUP))
        workers_ready = 0
        desired = 0
        for group in _groups(cluster):
            gname = str(group.get("groupName") or "")
            want = _group_size(group)
            desired += want
            mine = sorted((p for p in live if (p["metadata"].get("labels") or {}).get(GROUP_LABEL) == gname
                           and (p["metadata"].get("labels") or {}).get(NODE_TYPE_LABEL) == "worker"),
                          key=lambda p: str(p["metadata"]["name"]))
            doomed = set((group.get("scaleStrategy") or {}).get("workersToDelete") or [])
            first = [p for p in mine if p["metadata"]["name"] in doomed]
            rest = [p for p in mine if p["metadata"]["name"] not in doomed]
            extra = max(len(mine) - want, 0)
            for pod in (first + rest[::-1])[:extra]:
                self._delete("Pod", meta.get("namespace", ""), pod["metadata"]["name"])
            kept = [p for p in mine if p not in (first + rest[::-1])[:extra]]
            workers_ready += sum(1 for p in kept if _pod_ready(p))
            names = {p["metadata"]["name"] for p in pods}
            index = 0
            for _ in range(want - len(kept)):
                while True:
                    name = f"{meta['name']}-{gname}-worker-{_suffix(meta.get('uid', ''), gname, str(index))}"
                    index += 1
                    if name not in names:
                        break
                self._create(_ray_pod(cluster, group.get("template") or {}, name, "worker", gname))
        head_ready = bool(head) and _pod_ready(head[0])
        all_ready = head_ready and workers_ready >= desired
        groups = _groups(cluster)
        status.update(
            desiredWorkerReplicas=desired, readyWorkerReplicas=workers_ready, availableWorkerReplicas=workers_ready,
            minWorkerReplicas=sum(_int(g.get("minReplicas"), 0) * max(_int(g.get("numOfHosts"), 1), 1) for g in groups),
            maxWorkerReplicas=min(sum(_int(g.get("maxReplicas"), 2**31 - 1) * max(_int(g.get("numOfHosts"), 1), 1)
                                      for g in groups), 2**31 - 1),
            observedGeneration=_int(meta.get("generation"), 1))
        if all_ready and status.get("state") != READY:
            status["state"] = READY
            status.setdefault("stateTransitionTimes", {})[READY] = format_time(now)
        elif status.get("state") == "suspended":
            status.pop("state")
        if head:
            pod = head[0]
            status["head"] = {"podName": pod["metadata"]["name"], "podIP": (pod.get("status") or {}).get("podIP", "")}
            ports = [p for c in (pod.get("spec") or {}).get("containers") or [] for p in c.get("ports") or []
                     if isinstance(p, dict) and p.get("name")]
            if ports:
                status["endpoints"] = {str(p["name"]): str(p.get("containerPort", "")) for p in ports}
        _set_condition(status, "HeadPodReady", head_ready, "HeadPodRunningAndReady" if head_ready else "HeadPodNotFound"
                       if not head else "HeadPodNotReady", "", now)
        if all_ready or any(c.get("type") == "RayClusterProvisioned" for c in status.get("conditions") or []):
            _set_condition(status, "RayClusterProvisioned", True, "AllPodRunningAndReadyFirstTime",
                           "All Ray Pods are ready for the first time", now)
        self._write_status(cluster, status)
        return None


# --- RayJob ----------------------------------------------------------------------------------------------


def _submitter_job(job: Object) -> Object:
    """The ``batch/v1`` Job that runs ``ray job submit`` (K8sJobMode), named as the RayJob."""
    meta, spec = job["metadata"], job.get("spec") or {}
    template = copy.deepcopy(spec.get("submitterPodTemplate") or {})
    if not template:
        head = ((spec.get("rayClusterSpec") or {}).get("headGroupSpec") or {}).get("template") or {}
        containers = (head.get("spec") or {}).get("containers") or [{}]
        template = {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "ray-job-submitter", "image": containers[0].get("image", ""),
             "command": ["ray", "job", "submit", "--", *str(spec.get("entrypoint") or "").split()],
             "resources": copy.deepcopy(SUBMITTER_RESOURCES)}]}}
    template.setdefault("spec", {}).setdefault("restartPolicy", "Never")
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k in (SIM_DURATION, SIM_EXIT_CODE)}
    job_meta: dict[str, Any] = {"name": meta["name"], "namespace": meta.get("namespace", ""),
                                "labels": {ORIGIN_CRD_LABEL: RAYJOB_KIND, ORIGIN_NAME_LABEL: meta["name"]},
                                "ownerReferences": [_owner_ref(job)]}
    if annotations:
        job_meta["annotations"] = annotations
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta,
            "spec": {"backoffLimit": 2, "template": template}}


def _driver_seconds(job: Object) -> tuple[float, bool]:
    """The simulated driver's run time and whether it succeeds (the RayJob's sim annotations)."""
    annotations = (job["metadata"].get("annotations") or {})
    try:
        seconds = duration_annotation(annotations)
    except ValueError:
        seconds = None
    return (DEFAULT_DRIVER_SECONDS if seconds is None else seconds), annotations.get(SIM_EXIT_CODE, "0") == "0"


class RayJobController(_Base):
    """A RayJob's cluster and driver, and its status."""

    KIND = RAYJOB_KIND

    def _reconcile(self, job: Object) -> float | None:
        now = self.clock()
        meta, spec = job["metadata"], job.get("spec") or {}
        namespace = meta.get("namespace", "")
        status: dict[str, Any] = copy.deepcopy(job.get("status") or {})
        deployment = status.get("jobDeploymentStatus") or "New"
        cluster = self._owned_cluster(job)
        submitter = self.store.get("Job", namespace, meta["name"])
        submitter = submitter if submitter is not None and _controlled_by(submitter, job) else None
        if deployment in ("Complete", "Failed"):
            if spec.get("shutdownAfterJobFinishes") and cluster is not None:
                self._delete(RAYCLUSTER_KIND, namespace, cluster["metadata"]["name"])
            return None
        if spec.get("suspend") is True:
            if cluster is not None:
                self._delete(RAYCLUSTER_KIND, namespace, cluster["metadata"]["name"])
            if submitter is not None:
                self._delete("Job", namespace, meta["name"])
            if deployment != "Suspended":
                status.update(jobDeploymentStatus="Suspended", jobStatus="")
                for key in ("rayClusterStatus", "rayJobInfo", "startTime"):
                    status.pop(key, None)
            self._write_status(job, status)
            return None
        if spec.get("rayClusterSpec") is None:
            status.update(jobDeploymentStatus="ValidationFailed", reason="ValidationFailed",
                          message="the simulated operator runs only RayJobs with a rayClusterSpec")
            self._write_status(job, status)
            return None
        if cluster is None:
            self._create(self._new_cluster(job, spec["rayClusterSpec"]))
            status.update(jobDeploymentStatus="Initializing", jobStatus="", rayClusterName=self.cluster_name(job),
                          jobId=f"{meta['name']}-{_suffix(meta.get('uid', ''), 'job')}", startTime=format_time(now))
            self._write_status(job, status)
            return None
        status["rayClusterStatus"] = copy.deepcopy(cluster.get("status") or {})
        ready = (cluster.get("status") or {}).get("state") == READY
        if deployment in ("New", "Initializing", "Suspended") and ready:
            deployment = "Running"
            status.update(jobDeploymentStatus=deployment, jobStatus="RUNNING", rayJobInfo={"startTime": format_time(now)})
            if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode" and submitter is None:
                self._create(_submitter_job(job))
        due: float | None = None
        if deployment == "Running":
            outcome: bool | None = None
            if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
                submit_status = (submitter or {}).get("status") or {}
                if condition_true(submit_status, COMPLETE):
                    outcome = True
                elif condition_true(submit_status, FAILED):
                    outcome = False
            else:
                seconds, ok = _driver_seconds(job)
                started = str((status.get("rayJobInfo") or {}).get("startTime") or format_time(now))
                ends = parse_time(started) + seconds
                if now >= ends:
                    outcome = ok
                else:
                    due = ends
            if outcome is not None:
                status.update(jobStatus="SUCCEEDED" if outcome else "FAILED",
                              jobDeploymentStatus="Complete" if outcome else "Failed", endTime=format_time(now),
                              message="Job finished successfully." if outcome else "Job failed.",
                              **({} if outcome else {"reason": "AppFailed"}))
                status.setdefault("rayJobInfo", {})["endTime"] = format_time(now)
                status["succeeded" if outcome else "failed"] = 1
                if spec.get("shutdownAfterJobFinishes"):
                    self._delete(RAYCLUSTER_KIND, namespace, cluster["metadata"]["name"])
        self._write_status(job, status)
        return due


# --- RayService ------------------------------------------------------------------------------------------


def _applications(service: Object) -> dict[str, Any]:
    """``serveConfigV2``'s applications, each reported RUNNING (no Ray Serve here)."""
    try:
        config = yaml.safe_load(str((service.get("spec") or {}).get("serveConfigV2") or "")) or {}
    except yaml.YAMLError:
        return {}
    apps = config.get("applications") if isinstance(config, dict) else None
    out: dict[str, Any] = {}
    for app in apps if isinstance(apps, list) else []:
        if isinstance(app, dict) and app.get("name"):
            deployments = {str(d.get("name")): {"status": "HEALTHY"} for d in app.get("deployments") or []
                           if isinstance(d, dict) and d.get("name")}
            out[str(app["name"])] = {"status": "RUNNING", **({"serveDeploymentStatuses": deployments} if deployments else {})}
    return out


class RayServiceController(_Base):
    """A RayService's cluster, kept running, and its Ready condition."""

    KIND = RAYSERVICE_KIND

    def _reconcile(self, service: Object) -> float | None:
        now = self.clock()
        meta, spec = service["metadata"], service.get("spec") or {}
        config = spec.get("rayClusterConfig") or {}
        status: dict[str, Any] = copy.deepcopy(service.get("status") or {})
        cluster = self._owned_cluster(service)
        if config.get("suspend") is True:
            if cluster is not None:
                self._delete(RAYCLUSTER_KIND, meta.get("namespace", ""), cluster["metadata"]["name"])
            status.pop("activeServiceStatus", None)
            status.update(serviceStatus="", numServeEndpoints=0)
            _set_condition(status, "Ready", False, "Suspended", "The RayService is suspended", now)
            self._write_status(service, status)
            return None
        if cluster is None:
            self._create(self._new_cluster(service, config))
            _set_condition(status, "Ready", False, "Initializing", "The RayCluster is being created", now)
            self._write_status(service, status)
            return None
        ready = (cluster.get("status") or {}).get("state") == READY
        status["activeServiceStatus"] = {"rayClusterName": cluster["metadata"]["name"],
                                         "rayClusterStatus": copy.deepcopy(cluster.get("status") or {}),
                                         **({"applicationStatuses": _applications(service)} if ready else {})}
        status.update(serviceStatus="Running" if ready else "", numServeEndpoints=1 if ready else 0,
                      observedGeneration=_int(meta.get("generation"), 1))
        _set_condition(status, "Ready", ready, "NonZeroServeEndpoints" if ready else "Initializing",
                       "Number of serve endpoints is greater than 0" if ready else "Waiting for the RayCluster", now)
        _set_condition(status, "UpgradeInProgress", False, "NoPendingCluster", "", now)
        self._write_status(service, status)
        return None


def kuberay_controllers(store: Store, clock: Clock) -> dict[str, _Base]:
    """The simulated KubeRay operator's controllers by kind, for :class:`hub.devcluster.runtime.DevCluster`."""
    return {RAYCLUSTER_KIND: RayClusterController(store, clock), RAYJOB_KIND: RayJobController(store, clock),
            RAYSERVICE_KIND: RayServiceController(store, clock)}
