"""Kueue's manager Configuration (``config.kueue.x-k8s.io``), the parts mkhub honours.

Accepts v1beta1 (``enable: true`` switches, older defaults) and v1beta2
(presence of a section enables it) alike, as a dict, e.g. a scenario's
``config:`` or the hub's ``--config`` file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .dra import DeviceClassMapping, read_device_class_mappings
from .errors import FieldErrors
from .gvk import parse_gvk
from .meta import read_label_selector
from .reader import Reader
from .selectors import LabelSelector, Requirement

ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
_STRATEGY_SETS = (
    (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,),
    (LESS_THAN_INITIAL_SHARE,),
    (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE),
)

# Feature gates whose value changes engine behaviour, with Kueue v0.20 defaults.
DEFAULT_FEATURE_GATES: dict[str, bool] = {
    "PartialAdmission": True,
    "FlavorFungibility": True,
    "FlavorFungibilityPreserveScanProgress": True,
    "PrioritySortingWithinCohort": True,
    "FairSharingPreemptWithinNominal": True,
    "FairSharingPrioritizeNonBorrowing": True,
    "RecomputeAssignmentUponPreemptionTargetsOverlap": True,
    "MultiKueue": True,
    "PrioritizePreemptorWorkloads": False,
    "ManagedJobsNamespaceSelectorAlwaysRespected": True,  # beta, on, since Kueue v0.15
    "TopologyAwareScheduling": True,  # beta, on, since Kueue v0.14 (hub.engine.tas)
    "TASProfileMixed": True,  # beta, on, since Kueue v0.15: unconstrained pod sets placed LeastFreeCapacity
    "TASFailedNodeReplacement": True,  # beta, on, since Kueue v0.14 (hub.engine.tas_node_failure)
    "TASFailedNodeReplacementFailFast": True,  # beta, on, since Kueue v0.14: no replacement evicts
    "TASBalancedPlacement": False,  # alpha, off, since Kueue v0.15 (hub.engine.tas.balanced)
}

# Kueue's integrations.frameworks names (v0.20). Any of them is accepted; those mkhub has an
# adapter for (hub.api.jobkinds) are managed, the others are kinds mkhub does not serve yet.
KNOWN_FRAMEWORKS = (
    "batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice",
    "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "kubeflow.org/paddlejob", "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob", "kubeflow.org/xgboostjob", "kubeflow.org/jaxjob", "workload.codeflare.dev/appwrapper",
    "pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset",
    "sparkoperator.k8s.io/sparkapplication",  # alpha: needs the SparkApplicationIntegration gate, as in Kueue
)
DEFAULT_FRAMEWORKS: tuple[str, ...] = ("batch/job",)
DEFAULT_KUEUE_NAMESPACE = "kueue-system"


def default_managed_namespaces(kueue_namespace: str) -> LabelSelector:
    """Kueue's default managedJobsNamespaceSelector: every namespace but kube-system and Kueue's own."""
    return LabelSelector((Requirement("kubernetes.io/metadata.name", "NotIn", ("kube-system", kueue_namespace)),))

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str | int | float) -> float:
    """Go duration text (``90s``, ``5m``, ``1h30m``, ``250ms``) to seconds."""
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a duration")
    if isinstance(text, int | float):
        return float(text)
    return _duration_text(text) if type(text) is str else _parse_duration_text(text)


@lru_cache(maxsize=1024)  # a restore reads every Workload's same few duration annotations
def _duration_text(text: str) -> float:
    return _parse_duration_text(text)


def _parse_duration_text(text: str) -> float:
    value = text.strip()
    if value in ("0", ""):
        return 0.0
    pos = 0
    total = 0.0
    for match in _DURATION_PART.finditer(value):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(value) or pos == 0:
        raise ValueError(f"{text!r} is not a duration such as 90s, 5m or 1h30m")
    return total


@dataclass(frozen=True, slots=True)
class WaitForPodsReady:
    enabled: bool = False
    timeout: float = 300.0
    block_admission: bool = False
    recovery_timeout: float | None = None
    requeue_by_eviction_time: bool = True
    backoff_limit_count: int | None = None
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 3600


@dataclass(frozen=True, slots=True)
class FairSharing:
    enabled: bool = False
    strategies: tuple[str, ...] = (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)


@dataclass(frozen=True, slots=True)
class MultiKueueOptions:
    gc_interval: float = 60.0
    origin: str = "multikueue"
    worker_lost_timeout: float = 900.0
    dispatcher_name: str = ALL_AT_ONCE
    incremental_step_size: int = 3
    # mkhub.dev/capacity-aware (capacityAwareDispatcherConfig): how long a nominee has to admit
    # its copy, how often a workload no worker can hold is retried, and when it is given up.
    nomination_timeout: float = 30.0
    refusal_retry: float = 60.0
    give_up_timeout: float = 600.0
    # externalFrameworks' names (Kind.version.group): MultiKueue's generic adapter (hub.api.jobkinds.external).
    external_frameworks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """``clientConnection``: the rate limit of the hub's Kubernetes client (Kueue's defaults, v0.20:
    300 QPS, burst 500). ``qps`` None: no limit (a negative ``qps`` in the file, as in Kueue)."""

    qps: float | None = 300.0
    burst: int = 500


@dataclass(frozen=True, slots=True)
class Configuration:
    wait_for_pods_ready: WaitForPodsReady = WaitForPodsReady()
    fair_sharing: FairSharing = FairSharing()
    multikueue: MultiKueueOptions = MultiKueueOptions()
    feature_gates: dict[str, bool] = field(default_factory=lambda: dict(DEFAULT_FEATURE_GATES))
    manage_jobs_without_queue_name: bool = False
    ignore_undeclared_resources: bool = False
    # resources.deviceClassMappings: DRA devices counted against these quota resources (hub.api.dra).
    device_class_mappings: tuple[DeviceClassMapping, ...] = ()
    frameworks: tuple[str, ...] = DEFAULT_FRAMEWORKS  # integrations.frameworks
    managed_jobs_namespace_selector: LabelSelector = field(
        default_factory=lambda: default_managed_namespaces(DEFAULT_KUEUE_NAMESPACE)
    )
    # None: the file has no clientConnection (mkhub serve's --kube-qps/--kube-burst defaults apply).
    client_connection: ClientConnection | None = None

    def gate(self, name: str) -> bool:
        return self.feature_gates.get(name, DEFAULT_FEATURE_GATES.get(name, False))


def _duration(r: Reader, key: str, default: float) -> float:
    raw = r.raw(key)
    if raw is None:
        return default
    try:
        value = parse_duration(raw)
    except ValueError as exc:
        r.errors.invalid(r.at(key), raw, str(exc))
        return default
    if value < 0:
        r.errors.invalid(r.at(key), raw, "must not be negative")
    return value


def _external_frameworks(m: Reader) -> tuple[str, ...]:
    """``multiKueue.externalFrameworks[].name``, checked as Kueue's config validation checks them
    (conflicts with built-in adapters: :func:`hub.api.jobkinds.register_external_frameworks`)."""
    names: list[str] = []
    seen: set[tuple[str, str]] = set()
    raw = m.raw("externalFrameworks")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        m.errors.invalid(m.at("externalFrameworks"), raw, "must be a list")
        return ()
    for i, entry in enumerate(raw):
        path = f"{m.at('externalFrameworks')}[{i}].name"
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            m.errors.required(path)
            continue
        try:
            gvk = parse_gvk(name)
        except ValueError as exc:
            m.errors.invalid(path, name, str(exc))
            continue
        if gvk in seen:
            m.errors.add(path, f'Duplicate value: "{name}"')
            continue
        seen.add(gvk)
        names.append(name)
    return tuple(names)


def _client_connection(c: Reader) -> ClientConnection:
    """Kueue defaults each field alone; a negative qps turns its rate limiter off. A qps of 0, or a burst
    of 0 under a positive qps, would stop the client for good after its first requests (Kueue's token
    bucket never refills): refused here."""
    raw = c.raw("qps")
    qps: float | None = 300.0
    if raw is not None:
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            c.errors.invalid(c.at("qps"), raw, "must be a number")
        elif raw == 0:
            c.errors.invalid(c.at("qps"), raw, "must not be 0: the client would stop after its burst "
                             "(a negative value turns the rate limit off)")
        else:
            qps = float(raw) if raw > 0 else None
    burst = c.integer("burst", 500, bits=32) or 0
    if qps is not None and burst < 1 and c.has("burst"):
        c.errors.invalid(c.at("burst"), c.raw("burst"), "must be at least 1 while qps is positive")
    return ClientConnection(qps=qps, burst=max(burst, 1))


def parse_configuration(data: dict[str, Any] | None) -> Configuration:
    """Parse a Configuration dict; raises ValidationError naming bad fields."""
    errs = FieldErrors()
    r = Reader(data or {}, "", errs)
    gates = dict(DEFAULT_FEATURE_GATES)
    for name, value in (r.raw("featureGates") or {}).items():
        if not isinstance(value, bool):
            errs.invalid(f"featureGates.{name}", value, "must be true or false")
            continue
        gates[str(name)] = value

    wfpr = WaitForPodsReady()
    w = r.opt_child("waitForPodsReady")
    if w is None and r.string("apiVersion") == "config.kueue.x-k8s.io/v1beta2" and not gates.get(
        "DisableWaitForPodsReady", False
    ):
        # v1beta2 defaulting always creates the section: enabled, 30 minutes.
        wfpr = WaitForPodsReady(enabled=True, timeout=1800.0, recovery_timeout=1800.0)
    if w is not None:
        v1beta1 = w.has("enable")
        enabled = w.boolean("enable", False) if v1beta1 else True
        timeout = _duration(w, "timeout", 300.0 if v1beta1 else 1800.0)
        rs = w.child("requeuingStrategy")
        recovery = w.raw("recoveryTimeout")
        wfpr = WaitForPodsReady(
            enabled=enabled,
            timeout=timeout,
            block_admission=w.boolean("blockAdmission", enabled if v1beta1 else False),
            recovery_timeout=_duration(w, "recoveryTimeout", 0.0) if recovery is not None else (None if v1beta1 else timeout),
            requeue_by_eviction_time=rs.enum("timestamp", ("Eviction", "Creation"), "Eviction") == "Eviction",
            backoff_limit_count=rs.integer("backoffLimitCount", None, minimum=0),
            backoff_base_seconds=rs.integer("backoffBaseSeconds", 60, minimum=0) or 0,
            backoff_max_seconds=rs.integer("backoffMaxSeconds", 3600, minimum=0) or 0,
        )

    fs = FairSharing()
    f = r.opt_child("fairSharing")
    if f is not None:
        enabled = f.boolean("enable", False) if f.has("enable") else True
        strategies = tuple(f.strings("preemptionStrategies")) or fs.strategies
        if strategies not in _STRATEGY_SETS:
            errs.invalid(
                f.at("preemptionStrategies"),
                list(strategies),
                "must be one of [LessThanOrEqualToFinalShare], [LessThanInitialShare] "
                "or [LessThanOrEqualToFinalShare, LessThanInitialShare]",
            )
            strategies = fs.strategies
        fs = FairSharing(enabled, strategies)

    mk = MultiKueueOptions()
    m = r.opt_child("multiKueue")
    if m is not None:
        step = m.child("incrementalDispatcherConfig").integer("stepSize", 3, minimum=1)
        ca = m.child("capacityAwareDispatcherConfig")
        mk = MultiKueueOptions(
            nomination_timeout=_duration(ca, "nominationTimeout", 30.0),
            refusal_retry=_duration(ca, "retryInterval", 60.0),
            give_up_timeout=_duration(ca, "giveUpTimeout", 600.0),
            gc_interval=_duration(m, "gcInterval", 60.0),
            origin=m.string("origin", "multikueue"),
            worker_lost_timeout=_duration(m, "workerLostTimeout", 900.0),
            dispatcher_name=m.string("dispatcherName", ALL_AT_ONCE),
            incremental_step_size=step or 3,
            external_frameworks=_external_frameworks(m),
        )

    frameworks = DEFAULT_FRAMEWORKS
    integrations = r.opt_child("integrations")
    if integrations is not None and integrations.has("frameworks"):
        frameworks = tuple(integrations.strings("frameworks"))
        for i, name in enumerate(frameworks):
            if name not in KNOWN_FRAMEWORKS:
                errs.add(f"{integrations.at('frameworks')}[{i}]", f'Unsupported value: "{name}": supported values: '
                         + ", ".join(f'"{k}"' for k in KNOWN_FRAMEWORKS))
            elif name in frameworks[:i]:
                errs.add(f"{integrations.at('frameworks')}[{i}]", f'Duplicate value: "{name}"')
            elif name == "sparkoperator.k8s.io/sparkapplication" and not gates.get("SparkApplicationIntegration"):
                errs.add(f"{integrations.at('frameworks')}[{i}]", f"{name} integration is alpha feature. please "
                         "enable SparkApplicationIntegration featuregate")  # Kueue's CanSupportIntegration
    selector = default_managed_namespaces(r.string("namespace") or DEFAULT_KUEUE_NAMESPACE)
    if r.raw("managedJobsNamespaceSelector") is not None:
        selector = read_label_selector(r.child("managedJobsNamespaceSelector"))

    resources = r.child("resources")
    connection = r.opt_child("clientConnection")
    config = Configuration(
        client_connection=None if connection is None else _client_connection(connection),
        wait_for_pods_ready=wfpr,
        fair_sharing=fs,
        multikueue=mk,
        feature_gates=gates,
        manage_jobs_without_queue_name=r.boolean("manageJobsWithoutQueueName", False),
        ignore_undeclared_resources=resources.string("quotaCheckStrategy") == "IgnoreUndeclared",
        device_class_mappings=read_device_class_mappings(resources),
        frameworks=frameworks,
        managed_jobs_namespace_selector=selector,
    )
    errs.raise_for("Configuration", "config")
    return config

