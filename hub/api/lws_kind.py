"""``leaderworkerset.x-k8s.io/v1`` LeaderWorkerSet: the typed object, its reader and its validation.

Kueue queues a LeaderWorkerSet's groups through its pod integration (a Workload per group: one
leader, ``size - 1`` workers: :mod:`hub.api.jobkinds.leaderworkerset`); here it is parsed and
checked. The checks are the LeaderWorkerSet webhook's (``pkg/webhooks``), with its messages,
and its CRD's enums; its defaults are applied as it applies them (size and replicas 1,
restartPolicy RecreateGroupOnPodRestart, ``Default`` read as ``None``, rolling updates with
maxUnavailable 1 and maxSurge 0, subdomainPolicy Shared, startupPolicy LeaderCreated).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .errors import FieldErrors
from .meta import Condition, ObjectMeta, read_conditions
from .others import QUEUE_NAME_LABEL
from .pods import PodSpecInfo, read_pod_template
from .reader import Reader
from .validation import validate_name, validate_pod_template_resources

LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
SUBGROUP_EXCLUSIVE_ANNOTATION = "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology"
MAX_INT32 = 2**31 - 1

RESTART_POLICIES = ("Default", "RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None")
STARTUP_POLICIES = ("LeaderCreated", "LeaderReady")
SUBDOMAIN_POLICIES = ("Shared", "UniquePerReplica")
SUBGROUP_TYPES = ("LeaderWorker", "LeaderExcluded")

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_PERCENT = re.compile(r"^[0-9]+%$")
NOT_DNS1035 = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
               "alphabetic character, and end with an alphanumeric character")
NOT_PERCENT = ("a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
               "regex used for validation is '[0-9]+%')")

IntOrPercent = int | str


@dataclass(slots=True)
class PodTemplate:
    """A pod template as written and the parts of it the queueing engine reads."""

    template: dict[str, Any]
    spec: PodSpecInfo


@dataclass(slots=True)
class LeaderWorkerSetStatus:
    conditions: list[Condition] = field(default_factory=list)
    ready_replicas: int = 0
    updated_replicas: int = 0
    replicas: int = 0
    hpa_pod_selector: str = ""


@dataclass(slots=True)
class LeaderWorkerSet:
    """``leaderworkerset.x-k8s.io/v1`` LeaderWorkerSet, as its webhook and Kueue read it."""

    meta: ObjectMeta
    replicas: int = 1
    size: int = 1
    leader: PodTemplate | None = None  # None: the leader runs the worker template
    worker: PodTemplate = field(default_factory=lambda: PodTemplate({}, PodSpecInfo(containers=())))
    restart_policy: str = "RecreateGroupOnPodRestart"
    sub_group_size: int | None = None
    sub_group_type: str = "LeaderWorker"
    has_sub_group_policy: bool = False
    startup_policy: str = "LeaderCreated"
    subdomain_policy: str = "Shared"
    max_unavailable: IntOrPercent = 1
    max_surge: IntOrPercent = 0
    partition: int = 0
    status: LeaderWorkerSetStatus = field(default_factory=LeaderWorkerSetStatus)

    kind = "LeaderWorkerSet"

    @property
    def queue_name(self) -> str:
        return self.meta.labels.get(QUEUE_NAME_LABEL, "")

    @property
    def leader_template(self) -> PodTemplate:
        return self.leader if self.leader is not None else self.worker


# --- reading ---------------------------------------------------------------------------------------------


def read_lws(r: Reader, meta: ObjectMeta) -> LeaderWorkerSet:
    spec = r.child("spec")
    lwt = spec.child("leaderWorkerTemplate")
    if not spec.has("leaderWorkerTemplate"):
        r.errors.required(spec.at("leaderWorkerTemplate"))
    elif not lwt.has("workerTemplate"):
        r.errors.required(lwt.at("workerTemplate"))
    sub_group = lwt.opt_child("subGroupPolicy")
    if sub_group is not None and not sub_group.has("subGroupSize"):
        r.errors.required(sub_group.at("subGroupSize"))
    rolling = spec.child("rolloutStrategy").child("rollingUpdateConfiguration")
    spec.child("rolloutStrategy").enum("type", ("RollingUpdate",), "RollingUpdate")
    restart = lwt.enum("restartPolicy", RESTART_POLICIES, "RecreateGroupOnPodRestart")
    network = spec.child("networkConfig")
    if spec.has("networkConfig") and not network.has("subdomainPolicy"):
        r.errors.required(network.at("subdomainPolicy"))
    st = r.child("status")
    return LeaderWorkerSet(
        meta=meta,
        replicas=_int(spec, "replicas", 1),
        size=_int(lwt, "size", 1),
        leader=_template(lwt, "leaderTemplate") if lwt.has("leaderTemplate") else None,
        worker=_template(lwt, "workerTemplate"),
        restart_policy="None" if restart == "Default" else restart,  # the webhook renames the deprecated one
        sub_group_size=sub_group.integer("subGroupSize", None, bits=32) if sub_group is not None else None,
        sub_group_type=(sub_group.enum("subGroupPolicyType", SUBGROUP_TYPES, "LeaderWorker")
                        if sub_group is not None else "LeaderWorker"),
        has_sub_group_policy=sub_group is not None,
        startup_policy=spec.enum("startupPolicy", STARTUP_POLICIES, "LeaderCreated"),
        subdomain_policy=network.enum("subdomainPolicy", SUBDOMAIN_POLICIES, "Shared"),
        max_unavailable=_int_or_percent(rolling, "maxUnavailable", 1),
        max_surge=_int_or_percent(rolling, "maxSurge", 0),
        partition=_int(rolling, "partition", 0),
        status=LeaderWorkerSetStatus(
            conditions=read_conditions(st),
            ready_replicas=_int(st, "readyReplicas", 0),
            updated_replicas=_int(st, "updatedReplicas", 0),
            replicas=_int(st, "replicas", 0),
            hpa_pod_selector=st.string("hpaPodSelector"),
        ),
    )


def _int(r: Reader, key: str, default: int) -> int:
    value = r.integer(key, default, bits=32)
    return value if value is not None else default


def _int_or_percent(r: Reader, key: str, default: IntOrPercent) -> IntOrPercent:
    value = r.raw(key)
    if value is None:
        return default
    if isinstance(value, str):
        return value
    return _int(r, key, 0) if isinstance(value, int) and not isinstance(value, bool) else _not_int_or_percent(r, key)


def _not_int_or_percent(r: Reader, key: str) -> int:
    r.errors.invalid(r.at(key), r.raw(key), "must be an integer or percentage (e.g '5%')")
    return 0


def _template(r: Reader, key: str) -> PodTemplate:
    raw = r.raw(key)
    return PodTemplate(dict(raw) if isinstance(raw, dict) else {}, read_pod_template(r.child(key)))


# --- validation ------------------------------------------------------------------------------------------


def validate_lws(lws: LeaderWorkerSet, errs: FieldErrors) -> None:
    """The LeaderWorkerSet webhook's ``generalValidate``, and pod templates that can run."""
    validate_name(lws.meta, errs, namespaced=True)
    if lws.meta.name and (len(lws.meta.name) > 63 or not _DNS1035.match(lws.meta.name)):
        # Its name names the headless Service too.
        errs.invalid("metadata.name", lws.meta.name, NOT_DNS1035)
    if lws.replicas < 0:
        errs.invalid("spec.replicas", lws.replicas, "replicas must be equal or greater than 0")
    if lws.size < 1:
        errs.invalid("spec.leaderWorkerTemplate.size", lws.size, "size must be equal or greater than 1")
    if lws.replicas * lws.size > MAX_INT32:
        errs.invalid("spec.replicas", lws.replicas, f"the product of replicas and worker replicas must not exceed {MAX_INT32}")
    rolling = "spec.rolloutStrategy.rollingUpdateConfiguration"
    unavailable = _scaled(lws.max_unavailable, f"{rolling}.maxUnavailable", lws.replicas, False, errs)
    surge = _scaled(lws.max_surge, f"{rolling}.maxSurge", lws.replicas, True, errs)
    if lws.partition < 0:
        errs.invalid(f"{rolling}.partition", lws.partition, "must be greater than or equal to 0")
    if unavailable == 0 and surge == 0 and lws.replicas != 0:
        errs.invalid(f"{rolling}.maxUnavailable", lws.max_unavailable, "must not be 0 when `maxSurge` is 0")
    if lws.has_sub_group_policy:
        _validate_sub_group(lws, errs)
    elif SUBGROUP_EXCLUSIVE_ANNOTATION in lws.meta.annotations:
        errs.invalid(f"metadata.annotations[{SUBGROUP_EXCLUSIVE_ANNOTATION}]", lws.meta.annotations[SUBGROUP_EXCLUSIVE_ANNOTATION],
                     "cannot have subgroup-exclusive-topology without subGroupSize set")
    for name, template in (("leaderTemplate", lws.leader), ("workerTemplate", lws.worker)):
        if template is None:
            continue
        path = f"spec.leaderWorkerTemplate.{name}.spec"
        if not template.spec.containers:
            errs.required(f"{path}.containers")
        validate_pod_template_resources(template.spec, path, errs)


def _scaled(value: IntOrPercent, path: str, total: int, round_up: bool, errs: FieldErrors) -> int | None:
    """An int-or-percent of ``total`` (a percent rounds up or down), after the webhook's checks."""
    if isinstance(value, int):
        if value < 0:
            errs.invalid(path, value, "must be greater than or equal to 0")
        return value
    if not _PERCENT.match(value):
        errs.invalid(path, value, NOT_PERCENT)
        return None
    percent = int(value[:-1])
    if percent > 100:
        errs.invalid(path, value, "must not be greater than 100%")
    scaled = percent * total
    return -(-scaled // 100) if round_up else scaled // 100


def _validate_sub_group(lws: LeaderWorkerSet, errs: FieldErrors) -> None:
    path = "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize"
    size, sub = lws.size, lws.sub_group_size
    if sub is None:
        return  # reported as required when read
    if sub < 1:
        errs.invalid(path, sub, "subGroupSize must be equal or greater than 1")
        return
    if size % sub != 0 and (size - 1) % sub != 0:
        errs.invalid(path, sub, "size or size - 1 must be divisible by subGroupSize")
    if size < sub:
        errs.invalid(path, sub, "subGroupSize cannot be larger than size")
    if lws.sub_group_type == "LeaderExcluded" and (size - 1) % sub != 0:
        errs.invalid(path, sub, "size-1 must be divisible by subGroupSize when using LeaderExcluded")


def validate_lws_update(old: LeaderWorkerSet, new: LeaderWorkerSet, errs: FieldErrors) -> None:
    """The webhook's ValidateUpdate: subGroupSize is set at creation and never changes."""
    path = "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize"
    if new.has_sub_group_policy and old.has_sub_group_policy and new.sub_group_size != old.sub_group_size:
        errs.invalid(path, new.sub_group_size, "field is immutable")
    elif new.has_sub_group_policy and not old.has_sub_group_policy:
        errs.invalid(path, new.sub_group_size, "cannot enable subGroupSize after the lws is already created")
    elif old.has_sub_group_policy and not new.has_sub_group_policy:
        errs.invalid(path, old.sub_group_size, "cannot remove subGroupSize after enabled")
