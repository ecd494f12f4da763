"""TAS node failure: Kueue's node controller and the scheduler's node replacement (TASFailedNodeReplacement,
with TASFailedNodeReplacementFailFast, TASReplaceNodeOnPodTermination and TASReplaceNodeOnNodeTaints, all
on by default since Kueue v0.14/v0.17).

A Node assigned to a reserving TAS workload that is deleted, not Ready, or carries a NoSchedule or
NoExecute taint one of the workload's pod sets does not tolerate is unhealthy for that workload; Kueue waits
for the workload's pods there to terminate, and the engine sees no pods, so it acts at once. The first such
node is listed in ``status.unhealthyNodes``; a second one evicts the workload (NodeFailures). At the next
scheduling cycle an admitted workload with an unhealthy node gets the pods of that node placed again within
the domain its request requires (``TASInventory.replace``), its other pods staying where they are; with no
replacement it is evicted (fail fast). A node healthy again is taken off the list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hub.api.queues import ResourceFlavor
from hub.api.tas_kinds import Node
from hub.api.workload import EVICTED, Admission, PodSetAssignment

from .events import EVICTED_BY_NODE_FAILURES
from .tas import PodSetPlacement, TASInventory, explicitly_requested
from .workload_info import WorkloadInfo

Evict = Callable[[str, str, str], None]
MULTIPLE_FAILURES = "Workload eviction triggered due to multiple TAS assigned node failures, including: {}"
NO_REPLACEMENT = "Workload was evicted as there was no replacement for unhealthy node(s): {}"
_SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")


def assigned_nodes(admission: Admission | None) -> set[str]:
    """The lowest-level values (node names) of the workload's topology assignments."""
    if admission is None:
        return set()
    return {values[-1] for psa in admission.pod_set_assignments if psa.topology_assignment is not None
            for values, _ in psa.topology_assignment.domains}


def _flavors(psa: PodSetAssignment, flavors: dict[str, ResourceFlavor]) -> list[ResourceFlavor]:
    return [flavors[f] for f in sorted({f for _, f in psa.flavors}) if f in flavors]


def unhealthy_for(node: Node | None, info: WorkloadInfo, flavors: dict[str, ResourceFlavor]) -> bool:
    """Kueue's getWorkloadStatus with no pods left on the node: gone, not Ready, or an untolerated taint."""
    if node is None or not node.ready:
        return True
    admission = info.wl.status.admission
    if admission is None:
        return False
    pod_sets = {ps.name: ps for ps in info.wl.pod_sets}
    for taint in node.taints:
        if taint.effect not in _SCHEDULING_EFFECTS:
            continue
        for psa in admission.pod_set_assignments:
            ps = pod_sets.get(psa.name)
            if ps is None:
                continue
            tolerations = ps.spec.tolerations + tuple(t for f in _flavors(psa, flavors) for t in f.tolerations)
            if not any(t.tolerates(taint) for t in tolerations):
                return True
    return False


class NodeFailures:
    """Owned by the engine; ``touch`` marks a workload's status changed, ``evict`` is the engine's."""

    def __init__(self, tas: TASInventory, infos: dict[str, WorkloadInfo], touch: Callable[[str], None],
                 evict: Evict, gate: Callable[[str], bool]) -> None:
        self.tas = tas
        self.infos = infos
        self.touch = touch
        self.evict = evict
        self.gate = gate
        self.to_replace: set[str] = set()  # workloads with an unhealthy node, for the next cycle
        self.listed: set[str] = set()  # workloads whose status.unhealthyNodes may list a node

    def restored(self, key: str) -> None:
        """A workload arrived holding quota with ``status.unhealthyNodes`` (a restart before its replacement)."""
        self.to_replace.add(key)
        self.listed.add(key)

    def node_changed(self, name: str, old: Node | None, new: Node | None) -> None:
        """Kueue's node controller predicates: created, deleted, Ready flipped or taints changed."""
        if not self.gate("TASFailedNodeReplacement"):
            return
        if old is not None and new is not None and old.ready == new.ready and old.taints == new.taints:
            return
        # A healthy-looking node can only come off lists; else only workloads holding TAS nodes may be on it
        # (Node updates are frequent on a real cluster: no pass over every workload for them).
        suspect = new is None or not new.ready or any(t.effect in _SCHEDULING_EFFECTS for t in new.taints)
        keys = set(self.tas.held) if suspect else self.listed
        for key in sorted(keys):
            info = self.infos.get(key)
            if info is None:
                self.listed.discard(key)
                continue
            wl = info.wl
            if not wl.is_quota_reserved or wl.is_finished or wl.status.is_true(EVICTED):
                continue
            if name not in assigned_nodes(wl.status.admission):
                continue
            listed = wl.status.unhealthy_nodes
            if not unhealthy_for(new, info, self.tas.flavors):
                if name in listed:
                    listed.remove(name)
                    self.touch(key)
                if not listed:
                    self.listed.discard(key)
                continue
            if name in listed:
                continue
            if listed:
                self.evict(key, EVICTED_BY_NODE_FAILURES, MULTIPLE_FAILURES.format(", ".join(listed + [name])))
                continue
            listed.append(name)
            self.listed.add(key)
            self.to_replace.add(key)
            self.touch(key)

    def replace_nodes(self) -> bool:
        """The scheduler's second pass for admitted workloads with an unhealthy node. True if any changed."""
        changed = False
        for key in sorted(self.to_replace):
            info = self.infos.get(key)
            wl = info.wl if info is not None else None
            if info is None or wl is None or not wl.status.unhealthy_nodes or wl.status.is_true(EVICTED):
                self.to_replace.discard(key)
                continue
            if not wl.is_admitted:
                continue  # Kueue's second pass waits for admission
            admission = wl.status.admission
            assert admission is not None
            node = wl.status.unhealthy_nodes[0]
            assignments: list[PodSetAssignment] = []
            failed = False
            for psa in admission.pod_set_assignments:
                ta = psa.topology_assignment
                if ta is None or all(values[-1] != node for values, _ in ta.domains):
                    assignments.append(psa)
                    continue
                placement = self._placement(info, psa)
                new = self.tas.replace(placement, ta, node)[0] if placement is not None else None
                if new is None:
                    failed = True
                    break
                assignments.append(replace(psa, topology_assignment=new))
            if failed and not self.gate("TASFailedNodeReplacementFailFast"):
                continue  # tried again at the next cycle a change starts
            self.to_replace.discard(key)
            changed = True
            if failed:
                self.evict(key, EVICTED_BY_NODE_FAILURES, NO_REPLACEMENT.format(",".join(wl.status.unhealthy_nodes)))
                continue
            wl.status.admission = replace(admission, pod_set_assignments=tuple(assignments))
            wl.status.unhealthy_nodes = []
            self.tas.account(key, wl.status.admission)
            self.touch(key)
        return changed

    def _placement(self, info: WorkloadInfo, psa: PodSetAssignment) -> PodSetPlacement | None:
        index = next((i for i, ps in enumerate(info.wl.pod_sets) if ps.name == psa.name), None)
        flavor = next((f.meta.name for f in _flavors(psa, self.tas.flavors) if f.topology_name), None)
        if index is None or flavor is None:
            return None
        ps = info.wl.pod_sets[index]
        per_pod = dict(info.requests[index].per_pod)
        per_pod["pods"] = 1
        request = ps.topology_request or {}
        return PodSetPlacement(psa.name, flavor, psa.count, tuple(sorted(per_pod.items())), ps.spec, request,
                               not explicitly_requested(request), self.gate("TASProfileMixed"))
