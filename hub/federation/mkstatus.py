"""The ``Active`` conditions of MultiKueueClusters and MultiKueue AdmissionChecks.

Pure functions of what the hub knows (which agents are connected, which objects
exist), worded as Kueue words them (semantics §9.4): a cluster is Active while
its agent is connected; a MultiKueue check is Active while at least one of its
config's clusters is, ``SomeActiveClusters`` when only some are, and inactive
(``NoUsableClusters`` / ``BadConfig``) otherwise — which makes ClusterQueues
using it inactive, as in Kueue.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from hub.api.meta import CONDITION_FALSE, CONDITION_TRUE, Condition
from hub.api.others import AdmissionCheck, MultiKueueCluster, MultiKueueConfig
from hub.api.workload import AdmissionCheckState, Workload

ACTIVE = "Active"
MK_CONFIG_KIND = "MultiKueueConfig"


@dataclass(frozen=True, slots=True)
class Verdict:
    status: str
    reason: str
    message: str

    @property
    def active(self) -> bool:
        return self.status == CONDITION_TRUE


def cluster_verdict(connected: bool, ever_connected: bool) -> Verdict:
    if connected:
        return Verdict(CONDITION_TRUE, "Active", "Connected")
    if ever_connected:
        return Verdict(CONDITION_FALSE, "ClientConnectionFailed", "The agent of this cluster is not connected")
    return Verdict(CONDITION_FALSE, "ClientConnectionFailed", "No agent has connected for this cluster yet")


def config_of(check: AdmissionCheck, configs: Mapping[str, MultiKueueConfig]) -> MultiKueueConfig | None:
    if check.parameters_kind != MK_CONFIG_KIND:
        return None
    return configs.get(check.parameters_name)


def check_verdict(
    check: AdmissionCheck,
    configs: Mapping[str, MultiKueueConfig],
    clusters: Mapping[str, MultiKueueCluster],
    is_active: Callable[[str], bool],
) -> Verdict:
    if check.parameters_kind != MK_CONFIG_KIND or not check.parameters_name:
        return Verdict(
            CONDITION_FALSE,
            "BadConfig",
            f"Cannot load the AdmissionChecks parameters: expected a {MK_CONFIG_KIND} reference",
        )
    config = configs.get(check.parameters_name)
    if config is None:
        return Verdict(
            CONDITION_FALSE,
            "BadConfig",
            f'Cannot load the AdmissionChecks parameters: MultiKueueConfig.kueue.x-k8s.io "{check.parameters_name}" not found',
        )
    missing = [name for name in config.clusters if name not in clusters]
    inactive = [name for name in config.clusters if name in clusters and not is_active(name)]
    if not missing and not inactive:
        return Verdict(CONDITION_TRUE, "Active", "The admission check is active")
    parts = []
    if missing:
        parts.append(f"Missing clusters: [{' '.join(missing)}]")
    if inactive:
        parts.append(f"Inactive clusters: [{' '.join(inactive)}]")
    usable = len(missing) + len(inactive) < len(config.clusters)
    return Verdict(
        CONDITION_TRUE if usable else CONDITION_FALSE,
        "SomeActiveClusters" if usable else "NoUsableClusters",
        ", ".join(parts),
    )


def apply_verdict(conditions: list[Condition], verdict: Verdict, now: float) -> bool:
    """Set the Active condition in place (``meta.SetStatusCondition``); True if it changed."""
    for cond in conditions:
        if cond.type != ACTIVE:
            continue
        if (cond.status, cond.reason, cond.message) == (verdict.status, verdict.reason, verdict.message):
            return False
        if cond.status != verdict.status:
            cond.last_transition_time = now
        cond.status, cond.reason, cond.message = verdict.status, verdict.reason, verdict.message
        return True
    conditions.append(Condition(ACTIVE, verdict.status, verdict.reason, verdict.message, now))
    return True


class _Engine(Protocol):
    admission_checks: Mapping[str, AdmissionCheck]
    mk_configs: Mapping[str, MultiKueueConfig]
    mk_clusters: Mapping[str, MultiKueueCluster]

    def apply(self, obj: AdmissionCheck, now: float | None = None) -> None: ...


def refresh_check_statuses(
    engine: _Engine, is_active: Callable[[str], bool], changes: set[tuple[str, str]], now: float
) -> bool:
    """Recompute every MultiKueue AdmissionCheck's Active condition; re-apply those that changed
    (ClusterQueues using them may change activity). True if any did."""
    changed = False
    for name, check in engine.admission_checks.items():
        if not check.is_multikueue:
            continue
        if apply_verdict(check.conditions, check_verdict(check, engine.mk_configs, engine.mk_clusters, is_active), now):
            changes.add(("AdmissionCheck", name))
            engine.apply(check, now)
            changed = True
    return changed


def previously(message: str, state: str) -> str:
    """Kueue's wording of a check-state change (its updateACS)."""
    return f'{message}, Previously: "{state}"'


def multikueue_check(engine: _Engine, wl: Workload) -> tuple[AdmissionCheckState, tuple[str, ...]] | None:
    """The workload's MultiKueue check and its config's clusters (None: not a MultiKueue workload)."""
    for state in wl.status.admission_checks:
        check = engine.admission_checks.get(state.name)
        if check is None or not check.is_multikueue:
            continue
        config = config_of(check, engine.mk_configs)
        return state, (config.clusters if config is not None else ())
    return None
