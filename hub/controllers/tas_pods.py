"""Topology-aware scheduling's pods in the hub: Kueue's topology ungater and its non-TAS pod usage.

- **Ungater** (Kueue's ``pkg/controller/tas/topology_ungater.go``): an admission that places a pod
  set by TAS puts the ``kueue.x-k8s.io/topology`` gate, the Workload's name and the pod set's name
  into the kind's pod templates (:func:`hub.api.jobkinds.framework.pod_set_infos`), so the pods its
  controller creates (a Job's, a JobSet's...) wait. Here each gated pod gets its domain's
  nodeSelector and loses the gate (:func:`hub.api.jobkinds.tas_ungate.assign_gated_pods`), once its
  Workload is admitted. Pods of Kueue's pod integration are ungated by it (:mod:`.pods`), not here.
- **Usage of pods Kueue does not place** (Kueue's ``pod_usage_controller.go``): a bound, live pod
  without TAS annotations takes its requests (and one ``pods``) from its node's free capacity. Each
  node's total goes into the engine's inventory as it changes, as Kueue's non-TAS usage cache does
  (:meth:`hub.engine.tas.inventory.TASInventory.set_non_tas_usage`): no Node is re-applied, no tree
  rebuilt, nothing requeued but, batched, the queues whose TAS flavors a freed node serves
  (:mod:`hub.engine.tas.nontas`).

Nothing here does I/O but :func:`write_tas_pods` (the hub's round) and :func:`ungate_pod` (its
write, also an agent's: :mod:`worker_agent.kube.tas`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from hub.api.errors import ValidationError
from hub.api.jobkinds.framework import PODSET_LABEL, TOPOLOGY_GATE, WORKLOAD_ANNOTATION
from hub.api.jobkinds.pod import Pod, read_pod
from hub.api.jobkinds.tas_ungate import TasPod, assign_gated_pods, rank_offsets, with_offset_annotation
from hub.api.meta import format_time
from hub.api.tas_kinds import HOSTNAME_LABEL, Node
from hub.api.workload import EVICTED
from hub.engine.engine import Engine
from hub.engine.events import EngineEvent
from hub.engine.tas_node_failure import assigned_nodes
from hub.store.interface import Conflict, InvalidObject, NotFound, Object, ObjectKey, Store, modify

log = logging.getLogger(__name__)

TERMINATED_BY_KUEUE = "TerminatedByKueue"
UNSCHEDULABLE_ON_ASSIGNED_NODE = "UnschedulableOnAssignedNode"
_TAS = "kueue.x-k8s.io/podset-"
# Kueue's IsTAS: the annotations that make a pod's placement TAS's (its usage is its Workload's).
_TAS_ANNOTATIONS = (f"{_TAS}required-topology", f"{_TAS}preferred-topology", f"{_TAS}slice-required-topology",
                    f"{_TAS}slice-required-topology-constraints", f"{_TAS}unconstrained-topology")


def same_for_scheduling(old: Node | None, new: Node) -> bool:
    """Kueue's checkNodeSchedulingPropertiesChanged found nothing: labels, annotations, allocatable,
    taints, unschedulable and readiness as before (a kubelet's status heartbeat)."""
    return (old is not None and old.meta.labels == new.meta.labels and old.meta.annotations == new.meta.annotations
            and old.allocatable == new.allocatable and old.taints == new.taints
            and old.unschedulable == new.unschedulable and old.ready == new.ready)


def is_tas(pod: Pod) -> bool:
    return any(a in pod.meta.annotations for a in _TAS_ANNOTATIONS)


def _version(text: str) -> int:
    return int(text) if text.isdigit() else 0


def _rv(pod: Pod) -> int:
    return _version(pod.meta.resource_version)


def _key(pod: Pod) -> ObjectKey:
    return ObjectKey("Pod", pod.meta.namespace, pod.meta.name)


@dataclass(slots=True)
class TasPods:
    engine: Engine
    members: dict[str, dict[ObjectKey, Pod]] = field(default_factory=dict)  # Workload key -> its TAS pods
    workload_of: dict[ObjectKey, str] = field(default_factory=dict)
    to_ungate: set[str] = field(default_factory=set)
    usage: dict[ObjectKey, tuple[str, dict[str, int]]] = field(default_factory=dict)  # pod -> (node, requests)
    node_usage: dict[str, dict[str, int]] = field(default_factory=dict)
    versions: dict[ObjectKey, int] = field(default_factory=dict)  # each Pod's resourceVersion as last seen
    # An agent's worker: its pod-integration copies are TAS's to ungate too (no pod integration runs there).
    ungates_managed: bool = False
    # Members ungated onto a node and not bound there yet (Pending): few at a time, checked each round
    # for a node their Workload no longer has or that failed (Kueue's node controller, :func:`due_failures`).
    unbound: dict[ObjectKey, str] = field(default_factory=dict)  # pod -> the hostname its nodeSelector names

    # --- inputs

    def apply_pod(self, pod: Pod, now: float | None = None) -> None:
        """Record a Pod (its usage of its node goes into the engine's inventory at ``now``, the
        engine's clock by default). A version older than the one held (an event from before our own
        ungating write) is ignored: taken as gated again, its slot would go to a second pod."""
        key = _key(pod)
        rv = _rv(pod)
        if rv < self.versions.get(key, 0):
            return
        self.versions[key] = rv
        self._forget_member(key)
        wl_name = pod.meta.annotations.get(WORKLOAD_ANNOTATION)
        if wl_name and is_tas(pod) and (self.ungates_managed or not pod.kueue_managed) and not pod.terminated:
            wl_key = f"{pod.meta.namespace}/{wl_name}"
            self.members.setdefault(wl_key, {})[key] = pod
            self.workload_of[key] = wl_key
            if TOPOLOGY_GATE in pod.scheduling_gates and self._admitted(wl_key):
                self.to_ungate.add(wl_key)
            host = (pod.spec.get("nodeSelector") or {}).get(HOSTNAME_LABEL)
            if (TOPOLOGY_GATE not in pod.scheduling_gates and not pod.node_name and isinstance(host, str) and host
                    and pod.phase in ("", "Pending") and not pod.deleting):
                self.unbound[key] = host
        counted = bool(pod.node_name) and not pod.terminated and not is_tas(pod)
        wanted = (pod.node_name, {**dict(pod.pod_spec.per_pod_requests), "pods": 1}) if counted else None
        if self.usage.get(key) != wanted:
            self._set_usage(key, wanted, now)

    def delete_pod(self, key: ObjectKey, now: float | None = None) -> None:
        self.versions.pop(key, None)
        self._forget_member(key)
        self._set_usage(key, None, now)

    def on_events(self, events: Iterable[EngineEvent]) -> None:
        for ev in events:
            if ev.type == "Admitted" and ev.key in self.members:
                self.to_ungate.add(ev.key)

    def after_load(self) -> None:
        """A restarted hub ungates what the last one left gated."""
        self.to_ungate.update(k for k in self.members if self._admitted(k))

    # --- helpers

    def _admitted(self, wl_key: str) -> bool:
        wl = self.engine.workloads.get(wl_key)
        return (wl is not None and wl.is_admitted and not wl.status.is_true(EVICTED) and not wl.is_finished
                and wl.status.cluster_name is None)  # MultiKueue: the worker's pods run it

    def _forget_member(self, key: ObjectKey) -> None:
        self.unbound.pop(key, None)
        wl_key = self.workload_of.pop(key, None)
        if wl_key is not None:
            left = self.members.get(wl_key, {})
            left.pop(key, None)
            if not left:
                self.members.pop(wl_key, None)

    def _set_usage(self, key: ObjectKey, wanted: tuple[str, dict[str, int]] | None, now: float | None) -> None:
        old = self.usage.pop(key, None)
        touched = set()
        for entry, sign in ((old, -1), (wanted, 1)):
            if entry is None:
                continue
            node, requests = entry
            totals = self.node_usage.setdefault(node, {})
            for r, v in requests.items():
                totals[r] = totals.get(r, 0) + sign * v
            if not any(totals.values()):
                del self.node_usage[node]
            touched.add(node)
        if wanted is not None:
            self.usage[key] = wanted
        at = self.engine.now if now is None else now
        for node in sorted(touched):
            self.engine.tas.set_non_tas_usage(node, self.node_usage.get(node, {}), at)


# --- the round's writes ---------------------------------------------------------------------------------


def write_tas_pods(store: Store, tas: TasPods) -> None:
    """Ungate what the round found due (:func:`due_ungates`); each pod's echo then comes back as
    input, and is applied at once so the next round counts it ungated. One pod never fails the round.
    An answer at version 0 (the Kubernetes store's cache already holds a newer one: the kubelet
    bound the pod first) would be ignored as older than the gated version held, and the pod's slot
    given to a second pod: the store's newer version is applied instead. Then the pods Kueue's node
    controller fails (:func:`due_failures`)."""
    for key, selector in due_ungates(tas):
        out = ungate_pod(store, key, selector)
        if out is not None and not _version(str((out.get("metadata") or {}).get("resourceVersion") or "")):
            out = store.get("Pod", key.namespace, key.name)
        if out is None:
            continue
        try:
            tas.apply_pod(read_pod(out))
        except ValidationError as exc:  # the API server stored it: never expected
            log.error("cannot read back %s", exc)
    for key in due_failures(tas):
        tas.unbound.pop(key, None)  # its echo (Failed) forgets it; written once meanwhile
        if fail_pod(store, key, tas.engine.now) is not None:
            log.info("failed Pod %s/%s: %s (its node is no longer its Workload's, or is unhealthy)",
                     key.namespace, key.name, UNSCHEDULABLE_ON_ASSIGNED_NODE)


def due_failures(tas: TasPods) -> list[ObjectKey]:
    """Kueue's node controller (``getPodsToTerminate``, TASReplaceNodeOnPodTermination): a pod of an
    admitted TAS Workload ungated onto a node and still Pending there is failed when that node is no
    longer in the Workload's topology assignment (a replacement moved its slot: a pod ungated before
    the failure was seen) or is listed unhealthy; its Job makes a new pod, gated, that goes to the
    replacement. Also when the node is gone, where Kueue reconciles no pods: there PodGC deletes a
    deleted node's pods 40 s later, after Kueue has moved the slot; the dev-cluster's at once."""
    out: list[ObjectKey] = []
    for key, host in sorted(tas.unbound.items()):
        wl_key = tas.workload_of.get(key)
        if wl_key is None or not tas._admitted(wl_key):
            continue
        wl = tas.engine.workloads[wl_key]
        admission = wl.status.admission
        assignments = [psa.topology_assignment for psa in admission.pod_set_assignments] if admission else []
        if not assignments or any(ta is None or ta.levels[-1:] != (HOSTNAME_LABEL,) for ta in assignments):
            continue  # domains above the node (a rack): a hostname in the pod's selector is the user's own
        if host not in assigned_nodes(admission) or host in wl.status.unhealthy_nodes:
            out.append(key)
    return out


def fail_pod(store: Store, key: ObjectKey, now: float) -> Object | None:
    """Mark a Pending pod Failed as Kueue's node controller does (condition TerminatedByKueue, reason
    UnschedulableOnAssignedNode); the Pod written, or None (bound, finished or gone meanwhile: logged)."""
    def change(obj: Object) -> bool:
        status = obj.setdefault("status", {})
        if (obj.get("spec") or {}).get("nodeName") or status.get("phase") not in (None, "", "Pending"):
            return False
        status["phase"] = "Failed"
        status["conditions"] = [*(status.get("conditions") or []), {
            "type": TERMINATED_BY_KUEUE, "status": "True", "reason": UNSCHEDULABLE_ON_ASSIGNED_NODE,
            "message": "Pod terminated by Kueue NodeController due to node taint",
            "lastTransitionTime": format_time(now)}]
        return True

    try:
        return modify(store, "Pod", key.namespace, key.name, change, status=True)
    except (Conflict, InvalidObject, NotFound) as exc:
        log.warning("cannot fail Pod %s/%s: %s", key.namespace, key.name, exc)
        return None


def due_ungates(tas: TasPods) -> list[tuple[ObjectKey, dict[str, str]]]:
    """Per admitted TAS pod set found due, its gated pods each with its domain's nodeSelector (pure:
    the hub writes them in its round, an agent on its writer threads)."""
    due, tas.to_ungate = tas.to_ungate, set()
    out: list[tuple[ObjectKey, dict[str, str]]] = []
    for wl_key in sorted(due):
        if not tas._admitted(wl_key):
            continue
        wl = tas.engine.workloads[wl_key]
        admission = wl.status.admission
        pods = tas.members.get(wl_key, {})
        requests = {ps.name: ps.topology_request or {} for ps in wl.pod_sets}
        bounds = rank_offsets([(psa.name, psa.count, requests.get(psa.name, {}).get("podSetGroupName"))
                               for psa in admission.pod_set_assignments] if admission is not None else [])
        found: list[tuple[ObjectKey, dict[str, str]]] = []
        for psa in admission.pod_set_assignments if admission is not None else ():
            ta = psa.topology_assignment
            if ta is None:
                continue
            members = [(k, p) for k, p in sorted(pods.items()) if p.meta.labels.get(PODSET_LABEL) == psa.name]
            view = [TasPod(k.name, TOPOLOGY_GATE in p.scheduling_gates,
                           dict(p.spec.get("nodeSelector") or {}), p.meta.labels, p.meta.creation_timestamp or 0.0)
                    for k, p in members]
            ranks = with_offset_annotation(bounds[psa.name], members[0][1].meta.annotations if members else {})
            if isinstance(ranks, str):  # Kueue's ungater gives up on the Workload until a pod changes
                log.error("cannot ungate the pods of Workload %s: Pod %s: %s", wl_key, members[0][0].name, ranks)
                found = []
                break
            # Kueue leaves a pod gated while its domain is a node listed unhealthy: the replacement comes.
            unhealthy = set(wl.status.unhealthy_nodes) if ta.levels[-1:] == (HOSTNAME_LABEL,) else set()
            found.extend((ObjectKey("Pod", wl.meta.namespace, name), selector)
                         for name, selector in assign_gated_pods(ta, psa.count, view, requests.get(psa.name), ranks)
                         if selector.get(HOSTNAME_LABEL) not in unhealthy)
        out.extend(found)
    return out


def ungate_pod(store: Store, key: ObjectKey, selector: dict[str, str]) -> Object | None:
    """Give a gated Pod its domain's nodeSelector and drop the topology gate; the Pod written, or
    None (no longer gated, gone, or refused: logged)."""
    def change(obj: Object) -> bool:
        spec = obj.setdefault("spec", {})
        gates = spec.get("schedulingGates") or []
        if not any(isinstance(g, dict) and g.get("name") == TOPOLOGY_GATE for g in gates):
            return False  # ungated meanwhile: kube-apiserver lets no nodeSelector change now
        kept = [g for g in gates if not (isinstance(g, dict) and g.get("name") == TOPOLOGY_GATE)]
        if kept:
            spec["schedulingGates"] = kept
        else:
            spec.pop("schedulingGates", None)
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **selector}
        return True

    try:
        return modify(store, "Pod", key.namespace, key.name, change)
    except (Conflict, InvalidObject, NotFound) as exc:
        log.warning("cannot ungate Pod %s/%s: %s", key.namespace, key.name, exc)
        return None


__all__ = ["TasPods", "due_failures", "due_ungates", "fail_pod", "is_tas", "same_for_scheduling", "ungate_pod",
           "write_tas_pods"]
