"""Concurrent admission (Kueue v0.18+, the ``ConcurrentAdmission`` feature gate; KEP-8691).

A workload submitted to a ClusterQueue with ``spec.concurrentAdmissionPolicy`` becomes a
*parent*: labelled ``kueue.x-k8s.io/concurrent-admission-parent: "true"``, never queued
nor accounted. One *variant* Workload per flavor of the queue's single resource group is
created, owned by the parent and restricted to its flavor by the
``kueue.x-k8s.io/workload-allowed-resource-flavors`` annotation; variants are scheduled as
ordinary workloads. This module is Kueue's variant controller
(pkg/controller/concurrentadmission) and the scheduler's sibling rules (pkg/scheduler):

- the first variant admitted makes the parent admitted (its admission copied; the job runs);
- ``RetainFirstAdmission`` deactivates every other variant; ``TryPreferredFlavors`` deactivates
  the less preferred ones (and those after ``lastAcceptableFlavorName``) and keeps the more
  preferred pursuing quota: one that fits evicts its admitted sibling (reason
  ``FlavorMigration``), the parent is evicted with it, and the preferred variant is admitted
  once the sibling's quota is free: the workload migrates;
- an evicted admitted variant evicts the parent; once the parent lost its quota every variant
  is active again; a finished parent finishes its variants; a deleted one deletes them; a flavor
  added to the queue gets a variant, a removed one loses its variant;
- every variant is created behind the ``kueue.x-k8s.io/concurrent-admission`` preemption gate:
  only the most preferred variant blocked on it may preempt, the next one no sooner than
  PREEMPTION_TIMEOUT later (so one parent does not preempt on every flavor at once);
- in a ClusterQueue with a MultiKueue check, Kueue rejects every variant's check (its MultiKueue
  controller has no adapter for a Workload owner: :func:`hub.federation.mkwire.dispatch_rejection`);
  the variant is deactivated with that message and, here, stays so while the queue has the check
  (:meth:`ConcurrentAdmission._multikueue`).

Pure and deterministic, as the rest of the engine: the reconciliation runs from
:meth:`Engine.tick` for the parents whose family changed.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from typing import Protocol

from hub.api.config import Configuration
from hub.api.meta import ObjectMeta
from hub.api.others import AdmissionCheck
from hub.api.queues import CONCURRENT_RETAIN_FIRST, ClusterQueue
from hub.api.workload import (
    ALLOWED_FLAVORS_ANNOTATION,
    BLOCKED_ON_PREEMPTION_GATES,
    CONCURRENT_PARENT_LABEL,
    EVICTED,
    GATE_CLOSED,
    GATE_OPEN,
    PODS_READY,
    QUOTA_RESERVED,
    PreemptionGateState,
    Workload,
    WorkloadStatus,
)

from .clusterqueue import ClusterQueueState
from .conditions import set_condition, set_quota_reservation
from .queue_manager import QueueManager
from .workload_info import WorkloadInfo

GATE = "ConcurrentAdmission"
WORKLOAD_API = "kueue.x-k8s.io/v1beta2"
EVICTED_BY_FLAVOR_MIGRATION = "FlavorMigration"
PREEMPTION_GATE = "kueue.x-k8s.io/concurrent-admission"  # one variant of a parent preempts at a time
DEACTIVATED_BY_CHECK = "DeactivatedDueToAdmissionCheck"  # the engine's eviction reason for a rejected check
PREEMPTION_TIMEOUT = 300.0  # Kueue's wait before opening the next variant's gate
_MAX_NAME = 253
_HASH = 5


class Host(Protocol):
    """What the controller reads and calls on the engine that owns it."""

    config: Configuration
    now: float
    admission_checks: dict[str, AdmissionCheck]
    workloads: dict[str, Workload]
    infos: dict[str, WorkloadInfo]
    cqs: dict[str, ClusterQueueState]
    qm: QueueManager
    not_ready: set[str]
    ready_pods: dict[str, float]

    def apply(self, obj: Workload, now: float | None = None) -> None: ...
    def delete(self, kind: str, namespace: str, name: str, now: float | None = None) -> None: ...
    def evict(self, key: str, reason: str, message: str, underlying_cause: str = "", now: float | None = None) -> None: ...
    def workload_stopped(self, key: str, now: float | None = None) -> None: ...
    def finish(self, key: str, succeeded: bool = True, message: str = "", now: float | None = None) -> None: ...
    def _touch(self, key: str) -> None: ...
    def _emit(self, type_: str, key: str, reason: str = "", message: str = "") -> None: ...
    def _deactivate(self, info: WorkloadInfo) -> None: ...
    def _set_requeued(self, wl: Workload, status: bool, reason: str, message: str) -> None: ...


def parent_name(wl: Workload) -> str:
    """The parent's name when ``wl`` is a variant (Kueue's GetParentWorkloadName), else ""."""
    for ref in wl.meta.owner_references:
        if ref.get("kind") == "Workload" and ref.get("apiVersion") == WORKLOAD_API:
            return str(ref.get("name") or "")
    return ""


def is_variant(wl: Workload) -> bool:
    return bool(parent_name(wl))


def is_parent(wl: Workload) -> bool:
    return wl.meta.labels.get(CONCURRENT_PARENT_LABEL) == "true"


def variant_flavor(wl: Workload) -> str:
    return allowed_flavor_list(wl)[0] if allowed_flavor_list(wl) else ""


def allowed_flavor_list(wl: Workload) -> list[str]:
    raw = wl.meta.annotations.get(ALLOWED_FLAVORS_ANNOTATION)
    return [] if raw is None else [f.strip() for f in raw.split(",") if f.strip()]


def variant_name(parent: str, parent_uid: str, flavor: str) -> str:
    """Kueue's GetWorkloadNameForVariant: the parent's name without its hash suffix, the flavor,
    and a hash of the parent and the flavor."""
    base = parent[: parent.rfind("-")] if "-" in parent else parent
    digest = hashlib.sha1("\n".join(("Workload", "kueue.x-k8s.io", parent, parent_uid, flavor)).encode()).hexdigest()
    return f"{base}-variant-{flavor}"[: _MAX_NAME - 1 - _HASH] + "-" + digest[:_HASH]


class ConcurrentAdmission:
    """Parents, their variants, and the reconciliation of each family that changed."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.enabled = host.config.gate(GATE)
        self.variants: dict[str, set[str]] = {}  # parent key -> variant keys
        self.parent_of: dict[str, str] = {}  # variant key -> parent key
        self.parents: dict[str, str] = {}  # parent key -> its ClusterQueue
        self.dirty: set[str] = set()
        self.deleted: set[str] = set()  # variants removed, for the store to delete
        # Parents not yet created in the store: a variant's owner reference needs the parent's uid.
        self.awaiting_uid: set[str] = set()
        self.gate_due: dict[str, float] = {}  # parent -> when its next variant's gate may open
        self.gates_enforced = self.enabled or host.config.gate("MultiKueueOrchestratedPreemption")

    # --- membership (called by the engine) ---------------------------------------------------

    def holds(self, info: WorkloadInfo) -> bool:
        """Queue-time check (Kueue's queue manager): True keeps a parent out of the heaps."""
        if not self.enabled:
            return False
        wl = info.wl
        if self._register_variant(wl):
            return False
        state = self.host.cqs.get(info.cluster_queue or "")
        if state is None or state.spec.concurrent_admission is None:
            return False
        if not is_parent(wl):
            wl.meta.labels = {**wl.meta.labels, CONCURRENT_PARENT_LABEL: "true"}
            self.host._touch(wl.meta.key)
        self.parents[wl.meta.key] = state.name
        self.dirty.add(wl.meta.key)
        return True

    def restored(self, info: WorkloadInfo) -> bool:
        """A workload arriving with quota (a restart): True for a parent, which is not accounted."""
        if not self.enabled:
            return False
        wl = info.wl
        if self._register_variant(wl) or not is_parent(wl) or wl.status.admission is None:
            return False
        self.host.qm.resolve_queue(info)
        info.cluster_queue = wl.status.admission.cluster_queue
        self.parents[wl.meta.key] = info.cluster_queue
        self.dirty.add(wl.meta.key)
        return True

    def _register_variant(self, wl: Workload) -> bool:
        name = parent_name(wl)
        if not name:
            return False
        parent = f"{wl.meta.namespace}/{name}"
        self.parent_of[wl.meta.key] = parent
        self.variants.setdefault(parent, set()).add(wl.meta.key)
        self.dirty.add(parent)
        return True

    def touched(self, key: str) -> None:
        if key in self.parents:
            self.dirty.add(key)
        elif (parent := self.parent_of.get(key)) is not None:
            self.dirty.add(parent)

    def forget(self, key: str) -> None:
        """A workload was deleted."""
        if key in self.parents:
            self.dirty.add(key)
            self.parents.pop(key, None)
        parent = self.parent_of.pop(key, None)
        if parent is not None:
            self.variants.get(parent, set()).discard(key)
            self.dirty.add(parent)

    def queue_changed(self, name: str) -> None:
        """A ClusterQueue was created or updated: its parents see its flavors again (Kueue's
        controller reconciles a queue's parents when its flavors change)."""
        self.dirty.update(k for k, cq in self.parents.items() if cq == name)

    def drain_deleted(self) -> set[str]:
        out, self.deleted = self.deleted, set()
        return out

    # --- the scheduler's sibling rules ---------------------------------------------------------

    def allowed(self, info: WorkloadInfo) -> frozenset[str] | None:
        """The flavors the annotation allows (None: any), as Kueue's flavor assigner reads it."""
        if not self.enabled or ALLOWED_FLAVORS_ANNOTATION not in info.wl.meta.annotations:
            return None
        return frozenset(allowed_flavor_list(info.wl))

    def admitted_sibling(self, info: WorkloadInfo, state: ClusterQueueState, more_preferred: bool) -> WorkloadInfo | None:
        """An admitted variant of the same parent on a more (or less) preferred flavor."""
        parent = self.parent_of.get(info.key) if self.enabled else None
        if parent is None:
            return None
        order = _flavor_order(state.spec)
        mine = order.get(variant_flavor(info.wl))
        if mine is None:
            return None
        for key in sorted(self.variants.get(parent, ())):
            other = self.host.infos.get(key)
            if other is None or key == info.key or not other.wl.is_admitted:
                continue
            theirs = order.get(variant_flavor(other.wl))
            if theirs is not None and (theirs < mine if more_preferred else theirs > mine):
                return other
        return None

    def migration_allowed(self, info: WorkloadInfo, state: ClusterQueueState) -> bool:
        policy = state.spec.concurrent_admission
        if policy is None or not policy.last_acceptable_flavor:
            return True
        order = _flavor_order(state.spec)
        return order.get(variant_flavor(info.wl), len(order)) <= order.get(policy.last_acceptable_flavor, -1)

    def preemption_gated(self, info: WorkloadInfo) -> bool:
        """Kueue's HasClosedPreemptionGate: a gate in the spec that the status does not say is Open."""
        if not self.gates_enforced or not info.wl.preemption_gates:
            return False
        open_ = {g.name for g in info.wl.status.preemption_gates if g.position == GATE_OPEN}
        return any(name not in open_ for name in info.wl.preemption_gates)

    def mark_gated(self, info: WorkloadInfo, message: str) -> None:
        if set_condition(info.wl, BLOCKED_ON_PREEMPTION_GATES, "True", "PreemptionGated", message, self.host.now):
            self.host._touch(info.key)

    def migrate(self, info: WorkloadInfo, victim: WorkloadInfo) -> None:
        """Kueue's issueMigration: evict the admitted less preferred sibling."""
        self.host.evict(
            victim.key, EVICTED_BY_FLAVOR_MIGRATION,
            f"Evicted to accommodate a workload (UID: {info.wl.meta.uid}) due to migration to more favorable resource flavor",
        )

    # --- the variant controller ----------------------------------------------------------------

    def uid_arrived(self) -> bool:
        """Some parent waiting for its uid has it now (the hub created it): reconcile it."""
        arrived = {k for k in self.awaiting_uid if (wl := self.host.workloads.get(k)) is None or wl.meta.uid}
        self.awaiting_uid -= arrived
        self.dirty |= arrived
        return bool(arrived)

    def next_due(self) -> float | None:
        return min(self.gate_due.values(), default=None)

    def reconcile(self) -> bool:
        """Reconcile every family that changed since the last call. True if anything did."""
        self.uid_arrived()
        for pkey, at in sorted(self.gate_due.items()):
            if at <= self.host.now:
                del self.gate_due[pkey]
                self.dirty.add(pkey)
        changed = False
        rounds = 0
        while self.dirty and rounds < 64:  # each pass settles a family; a bound, never reached
            rounds += 1
            batch, self.dirty = sorted(self.dirty), set()
            for key in batch:
                changed = self._reconcile(key) or changed
        return changed

    def _record(self, key: str, reason: str, message: str) -> None:
        """A Kubernetes Event on the Workload, as Kueue's controller records it."""
        self.host._emit("Recorded", key, reason, message)

    def _reconcile(self, pkey: str) -> bool:
        host = self.host
        parent = host.workloads.get(pkey)
        vkeys = sorted(self.variants.get(pkey, ()))
        if parent is not None and pkey not in self.parents and not self._adopt(parent):
            return False  # not (or no longer) a parent: Kueue's controller leaves its family alone
        if parent is None:
            for vkey in vkeys:  # Kubernetes' garbage collector deletes the owned variants
                ns, _, name = vkey.partition("/")
                host.delete("Workload", ns, name)
                self.deleted.add(vkey)
            self.variants.pop(pkey, None)
            return bool(vkeys)
        state = host.cqs.get(self.parents[pkey])
        if state is None or state.spec.concurrent_admission is None or len(state.spec.resource_groups) != 1:
            return False
        spec = state.spec
        order = _flavor_order(spec)
        if parent.is_finished:
            return self._finish_variants(parent, vkeys)
        changed = self._create_variants(parent, spec, vkeys)
        changed = self._delete_stale(parent, order) or changed
        variants = sorted((host.workloads[k] for k in self.variants.get(pkey, ()) if k in host.workloads),
                          key=lambda v: (order.get(variant_flavor(v), len(order)), v.meta.name))
        evicted, progressed = self._sync_evictions(parent, variants)
        if evicted:
            return True
        changed = progressed or changed
        changed = self._deactivate_variants(parent, variants, spec, order) or changed
        changed = self._activate_variants(parent, variants, spec, order) or changed
        changed = self._sync_admission(parent, variants) or changed
        return self._open_preemption_gate(pkey, variants) or changed

    def _open_preemption_gate(self, pkey: str, variants: list[Workload]) -> bool:
        """Kueue's selectVariantToOpenPreemptionGate: the first variant (in flavor order) blocked on
        its gate may preempt; the next one only once PREEMPTION_TIMEOUT has passed since."""
        now = self.host.now
        admissible = [v for v in variants if v.active and not v.is_finished and not v.is_quota_reserved]
        candidate = None
        for v in admissible:
            state = _gate(v)
            if state is not None and state.position == GATE_OPEN:
                continue
            if not v.status.is_true(BLOCKED_ON_PREEMPTION_GATES):
                if v.status.condition(QUOTA_RESERVED) is None:
                    return False  # not evaluated for admission yet
                continue  # needs no preemption
            candidate = v
            break
        if candidate is None:
            return False
        opened = [s.last_transition_time for v in admissible if (s := _gate(v)) is not None and s.position == GATE_OPEN]
        if opened and max(opened) + PREEMPTION_TIMEOUT > now:
            self.gate_due[pkey] = max(opened) + PREEMPTION_TIMEOUT
            return False
        state = _gate(candidate)
        if state is None:
            candidate.status.preemption_gates += (PreemptionGateState(PREEMPTION_GATE, GATE_OPEN, now),)
        else:
            state.position, state.last_transition_time = GATE_OPEN, now
        self.gate_due[pkey] = now + PREEMPTION_TIMEOUT
        self.host._touch(candidate.meta.key)
        info = self.host.infos.get(candidate.meta.key)
        if info is not None:  # back in the heap: it may preempt now
            self.host.qm.dequeue(info)
            info.last_assignment = None
            self.host.qm.enqueue(info)
        self._record(candidate.meta.key, "PreemptionUngatedVariant",
                     f'Opened preemption gate for variant workload "{candidate.meta.key}"')
        return True

    def _adopt(self, parent: Workload) -> bool:
        """A labelled parent the queues never saw (restored inactive): it is a parent again."""
        info = self.host.infos.get(parent.meta.key)
        if not is_parent(parent) or info is None:
            return False
        self.host.qm.resolve_queue(info)
        if info.cluster_queue is None:
            return False
        self.parents[parent.meta.key] = info.cluster_queue
        return True

    def _create_variants(self, parent: Workload, spec: ClusterQueue, vkeys: list[str]) -> bool:
        if not parent.meta.uid:
            self.awaiting_uid.add(parent.meta.key)  # Kueue's controller sees the parent once the API server made it
            return False
        have = {variant_flavor(self.host.workloads[k]) for k in vkeys if k in self.host.workloads}
        created = False
        for flavor in (f.name for f in spec.resource_groups[0].flavors):
            if flavor in have:
                continue
            variant = _make_variant(parent, flavor, self.host.now)
            existing = self.host.workloads.get(variant.meta.key)
            if existing is not None:  # already exists (Kueue: AlreadyExists): e.g. restored inactive, never queued
                self._register_variant(existing)
                continue
            self._register_variant(variant)
            self.host.apply(variant)
            self.deleted.discard(variant.meta.key)
            self._record(parent.meta.key, "CreatedVariant", f'Variant Workload "{variant.meta.key}" created')
            created = True
        return created

    def _delete_stale(self, parent: Workload, order: dict[str, int]) -> bool:
        deleted = False
        for vkey in sorted(self.variants.get(parent.meta.key, ())):
            wl = self.host.workloads.get(vkey)
            flavor = variant_flavor(wl) if wl is not None else ""
            if wl is None or flavor in order:
                continue
            self.forget(vkey)
            self.host.delete("Workload", wl.meta.namespace, wl.meta.name)
            self.deleted.add(vkey)
            self._record(parent.meta.key, "DeletedVariant",
                         f'Variant Workload "{vkey}" deleted; flavor "{flavor}" no longer in ClusterQueue')
            deleted = True
        return deleted

    def _sync_evictions(self, parent: Workload, variants: list[Workload]) -> tuple[bool, bool]:
        """Kueue's syncVariantEvictionStatus: (parent evicted, something changed)."""
        for v in variants:
            if not (v.status.is_true(EVICTED) and v.is_quota_reserved):
                continue
            if parent.is_quota_reserved:
                if not parent.status.is_true(EVICTED):
                    self.host.evict(parent.meta.key, "VariantEvicted", "Admitted variant was evicted")
                return True, True
            self.host.workload_stopped(v.meta.key)  # clears the variant's admission and requeues it
            return False, True
        return False, False

    def _deactivate_variants(self, parent: Workload, variants: list[Workload], spec: ClusterQueue,
                             order: dict[str, int]) -> bool:
        if not parent.active:
            return self._deactivate_matching(variants, f'Parent Workload "{parent.meta.key}" not active', lambda v: True)
        admitted = next((v for v in variants if v.is_admitted), None)
        policy = spec.concurrent_admission
        if admitted is None or policy is None:
            return False
        akey = admitted.meta.key
        if policy.mode == CONCURRENT_RETAIN_FIRST:
            return self._deactivate_matching(variants, f'RetainFirstAdmission: another Variant "{akey}" is admitted',
                                             lambda v: v is not admitted)
        changed = False
        last = policy.last_acceptable_flavor
        if last:
            changed = self._deactivate_matching(
                variants, f'being below lastAcceptableFlavor: "{last}" and another Variant admitted "{akey}"',
                lambda v: v is not admitted and _rank(order, v) > order.get(last, -1))
        mine = _rank(order, admitted)
        return self._deactivate_matching(variants, f'being lower priority than admitted Variant "{akey}"',
                                         lambda v: _rank(order, v) > mine) or changed

    def _deactivate_matching(self, variants: list[Workload], why: str, match: Callable[[Workload], bool]) -> bool:
        changed = False
        for v in variants:
            if not match(v) or not v.active:
                continue
            info = self.host.infos.get(v.meta.key)
            v.active = False
            if info is not None:
                self.host._deactivate(info)
            self._record(v.meta.key, "DeactivatedVariant", f"Variant Workload deactivated due to {why}")
            if v.status.is_true(EVICTED) and v.is_quota_reserved:
                self.host.workload_stopped(v.meta.key)  # no pods to wait for: clear the admission
            self.host._touch(v.meta.key)
            changed = True
        return changed

    def _activate_variants(self, parent: Workload, variants: list[Workload], spec: ClusterQueue,
                           order: dict[str, int]) -> bool:
        if not parent.active:
            return False
        if self._multikueue(spec):
            variants = [v for v in variants if not _rejected_by_check(v)]
        admitted = next((v for v in variants if v.is_admitted), None)
        policy = spec.concurrent_admission
        if admitted is None:
            return self._activate(variants, "no other Variant being admitted")
        if policy is None or policy.mode == CONCURRENT_RETAIN_FIRST:
            return False
        mine, akey, last = _rank(order, admitted), admitted.meta.key, policy.last_acceptable_flavor
        if last:
            bound = order.get(last, -1)
            return self._activate(
                [v for v in variants if _rank(order, v) <= bound and _rank(order, v) < mine],
                f'being at least lastAcceptableFlavor: "{last}" and higher priority than admitted Variant "{akey}"')
        return self._activate([v for v in variants if _rank(order, v) < mine],
                              f'being higher priority than admitted Variant "{akey}"')

    def _activate(self, variants: list[Workload], why: str) -> bool:
        changed = False
        for v in variants:
            if v.active:
                continue
            v.active = True
            self.host._set_requeued(v, True, "Reactivated", "The workload was reactivated")
            info = self.host.infos.get(v.meta.key)
            if info is not None and not v.is_quota_reserved:
                self.host.qm.dequeue(info)
                info.last_assignment = None
                self.host.qm.enqueue(info)
            self._record(v.meta.key, "ActivatedVariant", f"Variant Workload activated due to {why}")
            changed = True
        return changed

    def _multikueue(self, spec: ClusterQueue) -> bool:
        """The queue has a MultiKueue check: Kueue's MultiKueue controller finds no adapter for a
        variant's owner (a Workload) and rejects every reservation of every variant. Kueue re-activates
        a variant so deactivated and the cycle repeats at the API server's pace; here it would repeat
        within one round, so such a variant stays deactivated (Kueue's message on its check and its
        Evicted condition) while the queue has the check."""
        checks = self.host.admission_checks
        return any(r.name in checks and checks[r.name].is_multikueue for r in spec.admission_checks)

    def _sync_admission(self, parent: Workload, variants: list[Workload]) -> bool:
        """Kueue's syncAdmissionStatus: the parent follows its admitted variant."""
        host = self.host
        admitted = next((v for v in variants if v.is_admitted), None)
        if admitted is None:
            if parent.is_admitted and not parent.status.is_true(EVICTED):
                host.evict(parent.meta.key, "ConcurrentAdmission", "No variant is running")
                return True
            return False
        ready = parent.status.condition(PODS_READY)  # the parent's pods are the variant's
        if ready is not None and set_condition(admitted, PODS_READY, ready.status, ready.reason, ready.message, host.now):
            host._touch(admitted.meta.key)
            if ready.is_true:
                host.not_ready.discard(admitted.meta.key)
        since = host.ready_pods.get(parent.meta.key)
        if since is not None and admitted.meta.key not in host.ready_pods:
            host.ready_pods[admitted.meta.key] = since  # no condition without waitForPodsReady: the runner's word
            host._touch(admitted.meta.key)
        if parent.is_admitted or admitted.status.admission is None:
            return False
        set_quota_reservation(parent, admitted.status.admission, host.now)
        set_condition(parent, "Admitted", "True", "Admitted", f"The variant {admitted.meta.name} is admitted", host.now)
        host._touch(parent.meta.key)
        host._emit("Admitted", parent.meta.key, "Admitted", f"The variant {admitted.meta.name} is admitted")
        return True

    def _finish_variants(self, parent: Workload, vkeys: list[str]) -> bool:
        cond = parent.status.condition("Finished")
        changed = False
        for vkey in vkeys:
            v = self.host.workloads.get(vkey)
            if v is None or v.is_finished:
                continue
            self.host.finish(vkey, cond is None or cond.reason != "Failed", cond.message if cond is not None else "")
            changed = True
        return changed


def _rejected_by_check(v: Workload) -> bool:
    evicted = v.status.condition(EVICTED)
    return evicted is not None and evicted.is_true and evicted.reason == DEACTIVATED_BY_CHECK


def _gate(wl: Workload) -> PreemptionGateState | None:
    return next((g for g in wl.status.preemption_gates if g.name == PREEMPTION_GATE), None)


def _flavor_order(spec: ClusterQueue) -> dict[str, int]:
    """Flavor preference: the order of the single resource group's flavors (first: most preferred)."""
    if not spec.resource_groups:
        return {}
    return {f.name: i for i, f in enumerate(spec.resource_groups[0].flavors)}


def _rank(order: dict[str, int], wl: Workload) -> int:
    return order.get(variant_flavor(wl), len(order))


def _make_variant(parent: Workload, flavor: str, now: float) -> Workload:
    """Kueue's generateVariant: the parent's spec, labels (less the parent label) and annotations,
    restricted to one flavor, owned by the parent, behind concurrent admission's preemption gate
    (Closed, as Kueue's workload controller first records it)."""
    labels = {k: v for k, v in parent.meta.labels.items() if k != CONCURRENT_PARENT_LABEL}
    meta = ObjectMeta(
        name=variant_name(parent.meta.name, parent.meta.uid, flavor),
        namespace=parent.meta.namespace,
        labels=labels,
        annotations={**parent.meta.annotations, ALLOWED_FLAVORS_ANNOTATION: flavor},
        owner_references=[{
            "apiVersion": WORKLOAD_API, "kind": "Workload", "name": parent.meta.name, "uid": parent.meta.uid,
            "controller": True, "blockOwnerDeletion": True,
        }],
    )
    variant = copy.copy(parent)
    variant.meta = meta
    variant.pod_sets = parent.pod_sets
    variant.active = True
    gates = parent.preemption_gates if PREEMPTION_GATE in parent.preemption_gates else (
        *parent.preemption_gates, PREEMPTION_GATE)
    variant.preemption_gates = gates
    variant.status = WorkloadStatus(preemption_gates=tuple(PreemptionGateState(g, GATE_CLOSED, now) for g in gates))
    return copy.deepcopy(variant)
