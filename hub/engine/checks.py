"""Admission checks and a ClusterQueue's Active condition, as pure functions of the objects.

Kueue's pkg/workload admission-check helpers and the ClusterQueue cache's "is this
queue active" rules: which checks a queue requires for the flavors a workload got,
whether a workload carries them all, and why a queue cannot admit (missing flavors or
checks, stop policy, cohort cycle).
"""

from __future__ import annotations

from hub.api.others import MULTIKUEUE_CONTROLLER, AdmissionCheck
from hub.api.queues import STOP_NONE, ResourceFlavor
from hub.api.workload import CHECK_PENDING, AdmissionCheckState, RequeueState, Workload

from .clusterqueue import ClusterQueueState


def inactive_reason(
    state: ClusterQueueState,
    flavors: dict[str, ResourceFlavor],
    admission_checks: dict[str, AdmissionCheck],
    check_controllers: set[str],
    topologies: set[str] | None = None,
) -> tuple[str, str]:
    """Why a ClusterQueue is not Active ("" when it is): Kueue's reasons and messages."""
    spec = state.spec
    if spec.stop_policy != STOP_NONE:
        return "Stopped", "ClusterQueue is stopped"
    if state.node.in_cycle:
        # Kueue's ClusterQueueActiveReasonCohortCycleDetected, naming the queue's own cohort.
        return "CohortCycleDetected", f'Can\'t admit new workloads: Cohort "{spec.cohort_name}" has a cycle in hierarchy.'
    missing = sorted(f for f in state.flavors if f not in flavors)
    if missing:
        return "FlavorNotFound", f"Can't admit new workloads: references missing ResourceFlavor(s): {', '.join(missing)}."
    mk_checks = 0
    for rule in spec.admission_checks:
        check = admission_checks.get(rule.name)
        if check is None:
            return "AdmissionCheckNotFound", f"Can't admit new workloads: references missing AdmissionCheck(s): {rule.name}."
        if not check_active(check, check_controllers):
            return "AdmissionCheckInactive", f"Can't admit new workloads: references inactive AdmissionCheck(s): {rule.name}."
        if check.controller_name == MULTIKUEUE_CONTROLLER:
            mk_checks += 1
            if rule.on_flavors:
                return (
                    "MultiKueueAdmissionCheckAppliedPerFlavor",
                    f"Can't admit new workloads: the MultiKueue AdmissionCheck {rule.name} cannot be applied per flavor.",
                )
    if mk_checks > 1:
        return "MultipleMultiKueueAdmissionChecks", "Can't admit new workloads: multiple MultiKueue AdmissionChecks."
    if topologies is not None and not mk_checks:  # through MultiKueue the workers place (Kueue skips it too)
        for name in sorted(state.flavors):
            topology = flavors[name].topology_name
            if topology and topology not in topologies:
                return ("TopologyNotFound",
                        f'Can\'t admit new workloads: there is no Topology "{topology}" for TAS flavor "{name}".')
    return "", ""


def check_active(check: AdmissionCheck, check_controllers: set[str]) -> bool:
    """Whether an AdmissionCheck counts as Active here."""
    cond = next((c for c in check.conditions if c.type == "Active"), None)
    if check.controller_name in check_controllers:
        # Our own controller writes Active (e.g. MultiKueue: False with no usable cluster);
        # until it has, the check counts as active.
        return cond is None or cond.is_true
    return cond is not None and cond.is_true


def required_checks(state: ClusterQueueState, flavors: set[str] | None) -> list[str]:
    """A queue's admission checks that apply to these assigned flavors (None: before reservation)."""
    out = []
    for rule in state.spec.admission_checks:
        if not rule.on_flavors or (flavors is not None and flavors.intersection(rule.on_flavors)):
            out.append(rule.name)
    return sorted(set(out))


def assigned_flavors(wl: Workload) -> set[str] | None:
    if wl.status.admission is None:
        return None
    return {f for psa in wl.status.admission.pod_set_assignments for _, f in psa.flavors}


def sync_checks(wl: Workload, state: ClusterQueueState, now: float) -> bool:
    """Make ``status.admissionChecks`` list exactly the checks the queue requires (new ones Pending)."""
    if not state.spec.admission_checks and not wl.status.admission_checks:
        return False
    wanted = required_checks(state, assigned_flavors(wl))
    have = {c.name: c for c in wl.status.admission_checks}
    if sorted(have) == wanted:
        return False
    wl.status.admission_checks = [
        have.get(name) or AdmissionCheckState(name, CHECK_PENDING, now) for name in wanted
    ]
    return True


def has_all_checks(wl: Workload, state: ClusterQueueState) -> bool:
    if not state.spec.admission_checks:
        return True
    names = {c.name for c in wl.status.admission_checks}
    return all(n in names for n in required_checks(state, assigned_flavors(wl)))


def write_check_states(wl: Workload, states: dict[str, tuple[str, str, int | None]], now: float) -> None:
    """Write admission check verdicts (state, message, requeueAfterSeconds) into the workload's status."""
    for check, (state, message, requeue_after) in states.items():
        current = wl.status.check(check)
        if current is None:
            current = AdmissionCheckState(check, CHECK_PENDING, now)
            wl.status.admission_checks.append(current)
            wl.status.admission_checks.sort(key=lambda c: c.name)
        if current.state != state:
            current.state = state
            current.last_transition_time = now
        current.message = message
        current.requeue_after_seconds = requeue_after


def set_retry_requeue_at(wl: Workload, retry: list[AdmissionCheckState]) -> None:
    """Checks in Retry with ``requeueAfterSeconds`` hold the workload back until the latest of them."""
    after = [c.last_transition_time + c.requeue_after_seconds for c in retry if c.requeue_after_seconds is not None]
    if after:
        rs = wl.status.requeue_state or RequeueState()
        rs.requeue_at = max(after)
        wl.status.requeue_state = rs
