"""A won copy of a Pod / pod group Workload (Kueue's pod integration) run as Pods in the worker.

The hub sends the manager's Pods (``Dispatch.pod_jsons``; the agent keeps them as one ``v1``
``List``, the copy's object). As Kueue's MultiKueue pod adapter does, each is created in the worker
with the manager's name, namespace, labels and annotations and its spec; here the agent is the
worker's Kueue, so it also admits them: Kueue's gate removed with the local admission's
nodeSelector and tolerations merged in (the Pod's pod set: ``main`` for a single Pod, its role for
a group's), the origin and prebuilt-workload labels added. A pod set the local admission placed by
TAS keeps Kueue's topology gate, with the Workload's and pod set's names, as Kueue's ``prepare``
keeps it; :mod:`worker_agent.kube.tas` ungates each Pod with its domain's nodeSelector. Their statuses say how the group runs
(:func:`pods_phase`) and go back to the hub whole (``{"pods": {name: status}}``), which mirrors
them into the manager's Pods (:mod:`hub.controllers.pod_mirror`).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from hub.api.errors import ValidationError
from hub.api.jobkinds.framework import TOPOLOGY_GATE, PodSetInfo, topology_info
from hub.api.jobkinds.pod import POD, ungate
from hub.api.jobkinds.pod import read_pod as read_pod_manifest
from hub.api.jobkinds.pod_group import group_finished, role_of
from hub.api.others import MULTIKUEUE_ORIGIN_LABEL
from hub.api.workload import DEFAULT_POD_SET_NAME, Workload

log = logging.getLogger(__name__)

POD_LIST = "List"  # the kind of a copy's object that holds its Pods
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"


def is_pod_list(job: Mapping[str, Any] | None) -> bool:
    return job is not None and job.get("kind") == POD_LIST and isinstance(job.get("items"), list)


def pod_items(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [item for item in job.get("items") or [] if isinstance(item, dict) and (item.get("metadata") or {}).get("name")]


def worker_pods(job: Mapping[str, Any], wl: Workload, origin: str,
                placement: Mapping[str, tuple[dict[str, str], list[Any]]]) -> list[dict[str, Any]]:
    """The Pods to create in the worker from the hub's manifests (see the module docstring)."""
    out: list[dict[str, Any]] = []
    for item in pod_items(job):
        pod = copy.deepcopy(item)
        meta = pod.setdefault("metadata", {})
        meta.setdefault("namespace", wl.meta.namespace)
        grouped = bool((meta.get("labels") or {}).get(GROUP_NAME_LABEL))
        try:
            pod_set = role_of(read_pod_manifest(pod)) if grouped else DEFAULT_POD_SET_NAME
        except ValidationError as exc:
            log.error("copy %s: %s", wl.meta.key, exc)
            pod_set = DEFAULT_POD_SET_NAME
        selector, tolerations = placement.get(pod_set, ({}, []))
        info = PodSetInfo(pod_set, 1, dict(selector), list(tolerations))
        topology_info(info, wl)  # placed by TAS: the Workload's and pod set's names, the topology gate
        problem = ungate(pod, info)
        if problem is not None:  # run it as the manager wrote it, without the flavors' placement
            log.error("copy %s: %s", wl.meta.key, problem)
        pod = POD.worker_copy(pod)  # the manager's name, namespace, labels, annotations; no gate
        if problem is None and TOPOLOGY_GATE in info.scheduling_gates:
            # Kueue's prepare keeps the topology gate the admission asks for (the worker's pod webhook
            # put it at creation); worker_agent.kube.tas ungates each Pod into its domain.
            spec = pod.setdefault("spec", {})
            gates = list(spec.get("schedulingGates") or [])
            if not any(isinstance(g, dict) and g.get("name") == TOPOLOGY_GATE for g in gates):
                spec["schedulingGates"] = [*gates, {"name": TOPOLOGY_GATE}]
        meta = pod["metadata"]
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != QUEUE_NAME_LABEL}
        labels[MULTIKUEUE_ORIGIN_LABEL] = origin
        labels[PREBUILT_WORKLOAD_LABEL] = wl.meta.name
        meta["labels"] = labels
        out.append(pod)
    return out


def pods_phase(statuses: Mapping[str, Mapping[str, Any]], pods: Mapping[str, Mapping[str, Any]], expected: int) -> tuple[str, str]:
    """("succeeded" | "failed" | "ready" | "", message) of a copy's Pods: ``statuses`` and
    ``pods`` (the Pod objects last seen) by name, ``expected`` how many it has. A single Pod ends
    with its phase; a group as Kueue ends it (:func:`~hub.api.jobkinds.pod_group.group_finished`);
    ready once every Pod runs (or is done)."""
    if len(statuses) < expected or not statuses:
        return "", ""
    grouped = any(((p.get("metadata") or {}).get("labels") or {}).get(GROUP_NAME_LABEL) for p in pods.values())
    if not grouped:
        outcome = POD.status_outcome(dict(next(iter(statuses.values()))))
    else:
        try:
            outcome = group_finished([read_pod_manifest(dict(p)) for p in pods.values()])
        except ValidationError as exc:
            log.error("cannot read a worker Pod: %s", exc)
            outcome = None
    if outcome is not None:
        return outcome
    if all(POD.status_running(dict(s)) or s.get("phase") == "Succeeded" for s in statuses.values()):
        return "ready", ""
    return "", ""
