"""The cluster-scoped objects the engine admits against, as Kueue's pkg/cache keeps them.

ClusterQueues (with their quota nodes), Cohorts, ResourceFlavors, Namespaces' labels,
AdmissionChecks and MultiKueue objects; which ClusterQueues are Active and why. State
only: it creates and drops each ClusterQueue's queue in the :class:`QueueManager` and asks
it to requeue parked workloads when capacity may have changed; workloads themselves
(their reservations, stop policies, priorities) stay with the engine.
"""

from __future__ import annotations

from collections.abc import Iterable

from hub.api.others import AdmissionCheck, MultiKueueCluster, MultiKueueConfig, Namespace
from hub.api.queues import STOP_NONE, STRICT_FIFO, ClusterQueue, Cohort, ResourceFlavor

from .checks import check_active, inactive_reason
from .clusterqueue import ClusterQueueState, quotas_of
from .queue_manager import QueueManager
from .queues import ClusterQueueQueue
from .quota import QuotaTree

# Kinds this cache owns entirely (apply and delete touch no workload directly).
CACHE_KINDS = frozenset(
    {"ClusterQueue", "ResourceFlavor", "Cohort", "Namespace", "AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster"}
)


class Cache:
    """Cluster-scoped objects and the quota tree; ClusterQueue activity."""

    def __init__(self) -> None:
        self.tree = QuotaTree()
        self.cqs: dict[str, ClusterQueueState] = {}
        self.cohorts: dict[str, Cohort] = {}
        self.flavors: dict[str, ResourceFlavor] = {}
        self.namespaces: dict[str, dict[str, str]] = {}
        self.admission_checks: dict[str, AdmissionCheck] = {}
        self.mk_configs: dict[str, MultiKueueConfig] = {}
        self.mk_clusters: dict[str, MultiKueueCluster] = {}
        # Admission check controllers running in this process (their checks count as active).
        self.check_controllers: set[str] = set()
        # Names of the Topologies that exist (a TAS flavor naming another keeps its queues inactive);
        # None: topology-aware scheduling is off.
        self.topologies: set[str] | None = set()
        # Moves with every change to an AdmissionCheck or a MultiKueue object: the MultiKueue
        # controller recomputes their Active conditions before the next cycle schedules.
        self.check_inputs = 0

    def attach(self, qm: QueueManager) -> None:
        """The queue manager sharing these ClusterQueues (it is built over this cache's dicts)."""
        self.qm = qm

    # --- apply ---------------------------------------------------------------------------

    def apply_cluster_queue(self, spec: ClusterQueue) -> tuple[ClusterQueueState, str]:
        """Create or update a ClusterQueue; returns its state and its previous stop policy."""
        name = spec.meta.name
        affected = self.tree.set_cluster_queue(
            name, spec.cohort_name, quotas_of(spec.resource_groups), float(spec.fair_sharing_weight)
        )
        node = self.tree.cqs[name]
        state = self.cqs.get(name)
        old_stop = state.spec.stop_policy if state is not None else STOP_NONE
        if state is None:
            state = ClusterQueueState(spec, node)
            self.cqs[name] = state
        else:
            state.set_spec(spec)
        queues = self.qm.queues
        queue = queues.get(name)
        strict = spec.queueing_strategy == STRICT_FIFO
        if queue is None:
            queues[name] = ClusterQueueQueue(name, strict)
        else:
            queue.strict_fifo = strict
        self.after_tree_change(affected | {name})
        return state, old_stop

    def apply_flavor(self, obj: ResourceFlavor) -> None:
        self.flavors[obj.meta.name] = obj
        self.refresh_queue_activity()
        self.qm.requeue_everything()

    def apply_cohort(self, obj: Cohort) -> None:
        self.cohorts[obj.meta.name] = obj
        affected = self.tree.set_cohort(
            obj.meta.name, obj.parent_name, quotas_of(obj.resource_groups), float(obj.fair_sharing_weight)
        )
        self.after_tree_change(affected)

    def apply_namespace(self, obj: Namespace) -> None:
        labels = dict(obj.meta.labels)
        labels.setdefault("kubernetes.io/metadata.name", obj.meta.name)
        self.namespaces[obj.meta.name] = labels
        self.qm.requeue_everything()

    def topology_changed(self, name: str, exists: bool) -> None:
        if self.topologies is not None and (name in self.topologies) != exists:
            (self.topologies.add if exists else self.topologies.discard)(name)
            self.refresh_queue_activity()

    def apply_admission_check(self, obj: AdmissionCheck) -> None:
        self.admission_checks[obj.meta.name] = obj
        self.check_inputs += 1
        self.refresh_queue_activity()
        self.qm.requeue_everything()

    def apply_multikueue(self, obj: MultiKueueConfig | MultiKueueCluster) -> None:
        if isinstance(obj, MultiKueueConfig):
            self.mk_configs[obj.meta.name] = obj
        else:
            self.mk_clusters[obj.meta.name] = obj
        self.check_inputs += 1

    # --- delete --------------------------------------------------------------------------

    def delete(self, kind: str, name: str) -> None:
        """Delete one of :data:`CACHE_KINDS`."""
        if kind in ("AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster"):
            self.check_inputs += 1
        if kind == "ClusterQueue":
            self.delete_cluster_queue(name)
        elif kind == "ResourceFlavor":
            self.flavors.pop(name, None)
            self.refresh_queue_activity()
        elif kind == "Cohort":
            if self.cohorts.pop(name, None) is not None:
                self.after_tree_change(self.tree.remove_cohort(name))
        elif kind == "Namespace":
            self.namespaces.pop(name, None)
        elif kind == "AdmissionCheck":
            self.admission_checks.pop(name, None)
            self.refresh_queue_activity()
        elif kind == "MultiKueueConfig":
            self.mk_configs.pop(name, None)
        elif kind == "MultiKueueCluster":
            self.mk_clusters.pop(name, None)

    def delete_cluster_queue(self, name: str) -> None:
        state = self.cqs.pop(name, None)
        if state is None:
            return
        qm = self.qm
        queue = qm.queues.pop(name, None)
        qm.ready_queues.discard(name)
        affected = self.tree.remove_cluster_queue(name)
        if queue is not None:
            for info in list(queue.peek_active()) + list(queue.inadmissible.values()):
                info.cluster_queue = None
                qm.orphans[info.key] = info
                qm.set_blocker_condition(info)
        self.after_tree_change(affected)

    # --- capacity and activity -----------------------------------------------------------

    def after_tree_change(self, affected: set[str]) -> None:
        """Capacity may have changed in these ClusterQueues' trees."""
        names = [n for n in affected if n in self.cqs]
        for name in names:
            self.cqs[name].generation += 1
        self.refresh_queue_activity(names)
        self.qm.requeue_cqs.update(names)

    def refresh_queue_activity(self, names: Iterable[str] | None = None) -> None:
        """Kueue's ClusterQueue Active condition: missing flavors or checks, stop policy, cycles."""
        states = self.cqs.values() if names is None else [self.cqs[n] for n in names if n in self.cqs]
        for state in states:
            reason, message = inactive_reason(state, self.flavors, self.admission_checks, self.check_controllers,
                                              self.topologies)
            was_active = state.active
            state.active = not reason
            state.inactive_reason, state.inactive_message = reason, message
            if state.active != was_active:
                self.qm.requeue_cqs.add(state.name)
                queue = self.qm.queues.get(state.name)
                if queue is not None:
                    for info in list(queue.peek_active()) + list(queue.inadmissible.values()):
                        self.qm.set_blocker_condition(info)

    def check_active(self, check: AdmissionCheck) -> bool:
        return check_active(check, self.check_controllers)

    def register_check_controller(self, controller_name: str) -> None:
        """A controller for these checks runs here, so its AdmissionChecks are active."""
        self.check_controllers.add(controller_name)
        self.refresh_queue_activity()
        self.qm.requeue_everything()
