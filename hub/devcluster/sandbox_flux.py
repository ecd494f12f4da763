"""Simulated agent-sandbox and Flux Operator controllers, as far as Kueue's docs use them.

- **Sandbox** (``agents.x-k8s.io/v1alpha1``, site/static/examples/pod-based-workloads/
  sample-sandbox.yaml): one Pod named as the Sandbox from ``spec.podTemplate`` (its labels carry the
  queue name, so Kueue's plain-Pod integration gates and admits it), labelled
  ``agents.x-k8s.io/sandbox-name-hash``, owned by the Sandbox; a Pod that is gone is created again.
  Status: condition ``Ready`` (True while the Pod runs and is ready, else False with the Pod's phase
  as reason).
- **MiniCluster** (``flux-framework.org/v1alpha1``, Kueue's "Run A Flux MiniCluster"): the Flux
  Operator runs a MiniCluster as a ``batch/v1`` Job named as it, so Kueue's Job integration queues
  it: ``completions`` = ``parallelism`` = ``spec.size``, ``spec.jobLabels`` on the Job (the queue
  name), one container per ``spec.containers`` entry (its ``command`` string run by ``/bin/sh -c``,
  its ``resources``), owned by the MiniCluster. Status: ``size``, conditions ``MiniClusterReady``
  (every pod of the Job ready) and ``JobFinished`` (the Job complete or failed).

Not done (the real operators do): a Sandbox's Service, volume claims, ``shutdownTime`` and
``replicas``; a MiniCluster's indexed Job (the dev-cluster's Job controller has no Indexed Jobs: the
pods are one NonIndexed Job's), its headless Service, ConfigMaps and the Flux broker itself,
``tasks``, ``interactive``, ``logging``. Events.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from hub.store.interface import Object

from .jobs import COMPLETE, FAILED, condition_true, pod_ready, set_condition
from .podbased import OwnerObjectController, owner_ref
from .podbased_crds import FLUX_API_VERSION, SANDBOX_API_VERSION

SANDBOX_HASH = "agents.x-k8s.io/sandbox-name-hash"


class SandboxController(OwnerObjectController):
    KIND = "Sandbox"

    def _reconcile(self, sandbox: Object) -> float | None:
        meta = sandbox["metadata"]
        ns, name, now = meta.get("namespace", ""), meta["name"], self.clock()
        pod = self.store.get("Pod", ns, name)
        retry = None
        if pod is None:
            pod, retry = self._make(self._pod(sandbox), f"Sandbox {ns}/{name}")
        status: dict[str, Any] = copy.deepcopy(sandbox.get("status") or {})
        phase = ((pod or {}).get("status") or {}).get("phase", "Pending")
        if phase == "Running" and pod is not None and pod_ready(pod):
            set_condition(status, "Ready", "True", "DependenciesReady", "Pod is Ready", now)
        else:
            set_condition(status, "Ready", "False", f"Pod{phase}", f"Pod is {phase}", now)
        for cond in status.get("conditions") or []:
            cond.pop("lastProbeTime", None)  # a metav1.Condition, not a JobCondition
        self._write_status(sandbox, status)
        return retry

    def _pod(self, sandbox: Object) -> Object:
        meta = sandbox["metadata"]
        template = (sandbox.get("spec") or {}).get("podTemplate") or {}
        tmeta = template.get("metadata") or {}
        labels = {**(tmeta.get("labels") or {}), SANDBOX_HASH: hashlib.sha256(meta["name"].encode()).hexdigest()[:8]}
        return {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": meta["name"], "namespace": meta.get("namespace", ""), "labels": labels,
                         "annotations": dict(tmeta.get("annotations") or {}),
                         "ownerReferences": [owner_ref(sandbox, SANDBOX_API_VERSION, "Sandbox")]},
            "spec": copy.deepcopy(template.get("spec") or {}),
        }


class MiniClusterController(OwnerObjectController):
    KIND = "MiniCluster"

    def _reconcile(self, mc: Object) -> float | None:
        meta = mc["metadata"]
        ns, name, now = meta.get("namespace", ""), meta["name"], self.clock()
        job = self.store.get("Job", ns, name)
        retry = None
        if job is None:
            job, retry = self._make(self._job(mc), f"MiniCluster {ns}/{name}")
        size = int((mc.get("spec") or {}).get("size") or 1)
        status: dict[str, Any] = copy.deepcopy(mc.get("status") or {})
        status["size"] = size
        jstatus = (job or {}).get("status") or {}
        ready = int(jstatus.get("ready") or 0)
        if ready >= size:
            set_condition(status, "MiniClusterReady", "True", "MiniClusterReady", "The MiniCluster is ready", now)
        else:
            set_condition(status, "MiniClusterReady", "False", "MiniClusterNotReady", "The MiniCluster is not ready", now)
        if condition_true(jstatus, COMPLETE) or condition_true(jstatus, FAILED):
            set_condition(status, "JobFinished", "True", "JobFinished", "The MiniCluster job has finished", now)
        for cond in status.get("conditions") or []:
            cond.pop("lastProbeTime", None)
        self._write_status(mc, status)
        return retry

    def _job(self, mc: Object) -> Object:
        meta, spec = mc["metadata"], mc.get("spec") or {}
        size = int(spec.get("size") or 1)
        containers = []
        for i, c in enumerate(spec.get("containers") or []):
            container: dict[str, Any] = {"name": c.get("name") or (meta["name"] if i == 0 else f"{meta['name']}-{i}"),
                                         "image": c.get("image", "ghcr.io/flux-framework/flux-restful-api:latest")}
            if c.get("command"):
                container["command"] = ["/bin/sh", "-c", str(c["command"])]
            if c.get("resources"):
                container["resources"] = copy.deepcopy(c["resources"])
            containers.append(container)
        return {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": meta["name"], "namespace": meta.get("namespace", ""),
                         "labels": dict(spec.get("jobLabels") or {}),
                         "ownerReferences": [owner_ref(mc, FLUX_API_VERSION, "MiniCluster")]},
            "spec": {"completions": size, "parallelism": size, "backoffLimit": 100,
                     "template": {"metadata": {"labels": {"app.kubernetes.io/name": meta["name"]}},
                                  "spec": {"containers": containers, "restartPolicy": "OnFailure",
                                           "subdomain": "flux-service", "setHostnameAsFQDN": True}}},
        }


__all__ = ["MiniClusterController", "SandboxController"]
