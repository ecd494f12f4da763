"""``jobset.x-k8s.io/v1alpha2`` JobSet: the typed object, its reader and its validation.

What Kueue's JobSet integration reads (replicated jobs, suspend, managedBy, status) and what
JobSet's own webhook and CRD check on create, with their messages where they have one
(``pkg/webhooks/jobset_webhook.go``: generated job and pod names, policies, coordinator).
JobSet's webhook defaults are applied as it applies them: completionMode Indexed, success
policy All, startup policy AnyOrder, failure policy restart strategy Recreate and rule names.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import FieldErrors
from .meta import Condition, ObjectMeta, read_conditions
from .others import QUEUE_NAME_LABEL
from .pods import PodSpecInfo, read_pod_template
from .reader import Reader
from .validation import (
    NOT_DNS_LABEL,
    NOT_DNS_SUBDOMAIN,
    is_dns_subdomain,
    validate_name,
    validate_pod_template_resources,
)

JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
JOBSET_CONTROLLER = "jobset.sigs.k8s.io/jobset-controller"
MAX_INT32 = 2**31 - 1
MAX_MANAGED_BY = 63

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_HTTP_PATH = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")
_RULE_NAME = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")

NOT_DNS1035 = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
               "alphabetic character, and end with an alphanumeric character")
JOB_NAME_TOO_LONG = "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
POD_NAME_TOO_LONG = "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
GROUP_NAME_TOO_LONG = ".spec.replicatedJob[].groupName is too long, must be less than 63 characters"
SUBDOMAIN_TOO_LONG = ".spec.network.subdomain is too long, must be less than 63 characters"

OPERATORS = ("All", "Any")
RESTART_STRATEGIES = ("Recreate", "BlockingRecreate", "InPlaceRestart")
FAILURE_ACTIONS = ("FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts", "RestartJob",
                   "RestartJobAndIgnoreMaxRestarts")
# The Job failure reasons a failure policy rule may name (batch/v1's JobReason*).
JOB_FAILURE_REASONS = ("BackoffLimitExceeded", "DeadlineExceeded", "FailedIndexes", "MaxFailedIndexesExceeded",
                       "PodFailurePolicy")


@dataclass(slots=True)
class ReplicatedJob:
    name: str
    replicas: int = 1
    group_name: str = "default"
    parallelism: int = 1
    completions: int | None = None
    completion_mode: str = "Indexed"
    depends_on: tuple[tuple[str, str], ...] = ()  # (replicatedJob name, Ready | Complete)
    template: dict[str, Any] = field(default_factory=dict)  # the Job template's pod template
    pod_spec: PodSpecInfo = field(default_factory=lambda: PodSpecInfo(containers=()))

    @property
    def pods_per_replica(self) -> int:
        """One Job's pods as Kueue counts them: min(parallelism, completions)."""
        if self.completions is not None and self.completions < self.parallelism:
            return self.completions
        return self.parallelism

    @property
    def pods_count(self) -> int:
        return self.replicas * self.pods_per_replica


@dataclass(slots=True)
class FailurePolicyRule:
    name: str
    action: str
    on_job_failure_reasons: tuple[str, ...] = ()
    target_replicated_jobs: tuple[str, ...] = ()


@dataclass(slots=True)
class FailurePolicy:
    max_restarts: int = 0
    restart_strategy: str = "Recreate"
    rules: tuple[FailurePolicyRule, ...] = ()


@dataclass(slots=True)
class Coordinator:
    replicated_job: str
    job_index: int = 0
    pod_index: int = 0


@dataclass(slots=True)
class ReplicatedJobStatus:
    name: str
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    active: int = 0
    suspended: int = 0


@dataclass(slots=True)
class JobSetStatus:
    conditions: list[Condition] = field(default_factory=list)
    restarts: int = 0
    restarts_count_towards_max: int = 0
    terminal_state: str = ""
    replicated_jobs_status: list[ReplicatedJobStatus] = field(default_factory=list)


@dataclass(slots=True)
class JobSet:
    """``jobset.x-k8s.io/v1alpha2`` JobSet, as far as Kueue and JobSet's webhook read it."""

    meta: ObjectMeta
    replicated_jobs: tuple[ReplicatedJob, ...] = ()
    suspend: bool = False
    managed_by: str = ""
    success_operator: str = "All"
    success_targets: tuple[str, ...] = ()
    failure_policy: FailurePolicy | None = None
    startup_policy_order: str = "AnyOrder"
    has_startup_policy: bool = False
    subdomain: str = ""
    enable_dns_hostnames: bool = True
    publish_not_ready_addresses: bool = True
    coordinator: Coordinator | None = None
    ttl_seconds_after_finished: int | None = None
    status: JobSetStatus = field(default_factory=JobSetStatus)
    # spec.replicatedJobs as written: JobSet's webhook keeps them immutable (ValidateUpdate).
    replicated_jobs_raw: list[dict[str, Any]] = field(default_factory=list, repr=False)
    # The whole spec as read (defaults applied): what a MultiKueue worker copy is made from.
    spec_raw: dict[str, Any] = field(default_factory=dict, repr=False)

    kind = "JobSet"

    @property
    def queue_name(self) -> str:
        return self.meta.labels.get(QUEUE_NAME_LABEL, "")


# --- reading ---------------------------------------------------------------------------------------------


def read_jobset(r: Reader, meta: ObjectMeta) -> JobSet:
    spec = r.child("spec")
    if spec.raw("replicatedJobs") is None or spec.raw("replicatedJobs") == []:
        r.errors.required(spec.at("replicatedJobs"))
    replicated = tuple(_read_replicated_job(rj) for rj in spec.items("replicatedJobs"))
    success = spec.child("successPolicy")
    startup = spec.opt_child("startupPolicy")
    network = spec.child("network")
    return JobSet(
        meta=meta,
        replicated_jobs=replicated,
        suspend=spec.boolean("suspend", False),
        managed_by=spec.string("managedBy"),
        success_operator=_required_enum(success, "operator", OPERATORS, "All") if spec.has("successPolicy") else "All",
        success_targets=tuple(success.strings("targetReplicatedJobs")),
        failure_policy=_read_failure_policy(spec.opt_child("failurePolicy")),
        startup_policy_order=(_required_enum(startup, "startupPolicyOrder", ("AnyOrder", "InOrder"), "AnyOrder")
                              if startup is not None else "AnyOrder"),
        has_startup_policy=startup is not None,
        subdomain=network.string("subdomain"),
        enable_dns_hostnames=network.boolean("enableDNSHostnames", True),
        publish_not_ready_addresses=network.boolean("publishNotReadyAddresses", True),
        coordinator=_read_coordinator(spec.opt_child("coordinator")),
        ttl_seconds_after_finished=spec.integer("ttlSecondsAfterFinished", None, minimum=0, bits=32),
        status=_read_status(r.child("status")),
        replicated_jobs_raw=[rj for rj in spec.raw("replicatedJobs") or [] if isinstance(rj, dict)]
        if isinstance(spec.raw("replicatedJobs"), list) else [],
        spec_raw=raw_spec if isinstance(raw_spec := r.raw("spec"), dict) else {},
    )


def _required_enum(r: Reader, key: str, allowed: tuple[str, ...], default: str) -> str:
    if not r.has(key):
        r.errors.required(r.at(key))
        return default
    return r.enum(key, allowed, default)


def _read_replicated_job(r: Reader) -> ReplicatedJob:
    name = r.string("name")
    if not r.has("name"):
        r.errors.required(r.at("name"))
    replicas = r.integer("replicas", 1, minimum=0, bits=32)
    job = r.child("template")
    job_spec = job.child("spec")
    pod = job_spec.child("template")
    if not r.has("template"):
        r.errors.required(r.at("template"))
    elif not job_spec.has("template"):
        r.errors.required(job_spec.at("template"))
    parallelism = job_spec.integer("parallelism", 1, minimum=0, bits=32)
    depends_on = tuple((d.string("name"), _required_enum(d, "status", ("Ready", "Complete"), "Ready"))
                       for d in r.items("dependsOn"))
    if len(depends_on) > 1:
        r.errors.invalid(r.at("dependsOn"), len(depends_on), "must have at most 1 item")
    return ReplicatedJob(
        name=name,
        replicas=replicas if replicas is not None else 1,
        group_name=r.string("groupName", "default"),
        parallelism=parallelism if parallelism is not None else 1,
        completions=job_spec.integer("completions", None, minimum=0, bits=32),
        completion_mode=job_spec.enum("completionMode", ("NonIndexed", "Indexed"), "Indexed"),
        depends_on=depends_on,
        template=dict(pod.data),
        pod_spec=read_pod_template(pod),
    )


def _read_failure_policy(r: Reader | None) -> FailurePolicy | None:
    if r is None:
        return None
    rules = []
    for i, rule in enumerate(r.items("rules")):
        if not rule.has("action"):
            rule.errors.required(rule.at("action"))
        rules.append(FailurePolicyRule(
            name=rule.string("name") or f"failurePolicyRule{i}",  # JobSet's webhook default
            action=rule.enum("action", FAILURE_ACTIONS, "FailJobSet"),
            on_job_failure_reasons=tuple(rule.strings("onJobFailureReasons")),
            target_replicated_jobs=tuple(rule.strings("targetReplicatedJobs")),
        ))
    max_restarts = r.integer("maxRestarts", 0, minimum=0, bits=32)
    return FailurePolicy(
        max_restarts=max_restarts or 0,
        restart_strategy=r.enum("restartStrategy", RESTART_STRATEGIES, "Recreate"),
        rules=tuple(rules),
    )


def _read_coordinator(r: Reader | None) -> Coordinator | None:
    if r is None:
        return None
    if not r.has("replicatedJob"):
        r.errors.required(r.at("replicatedJob"))
    return Coordinator(r.string("replicatedJob"), r.integer("jobIndex", 0) or 0, r.integer("podIndex", 0) or 0)


def _read_status(st: Reader) -> JobSetStatus:
    return JobSetStatus(
        conditions=read_conditions(st),
        restarts=st.integer("restarts", 0, bits=32) or 0,
        restarts_count_towards_max=st.integer("restartsCountTowardsMax", 0, bits=32) or 0,
        terminal_state=st.string("terminalState"),
        replicated_jobs_status=[
            ReplicatedJobStatus(
                name=s.string("name"),
                ready=s.integer("ready", 0, bits=32) or 0,
                succeeded=s.integer("succeeded", 0, bits=32) or 0,
                failed=s.integer("failed", 0, bits=32) or 0,
                active=s.integer("active", 0, bits=32) or 0,
                suspended=s.integer("suspended", 0, bits=32) or 0,
            )
            for s in st.items("replicatedJobsStatus")
        ],
    )


# --- validation ------------------------------------------------------------------------------------------


def validate_jobset(js: JobSet, errs: FieldErrors) -> None:
    """JobSet's webhook (ValidateCreate) and CRD rules, and what Kueue needs of its pod sets."""
    validate_name(js.meta, errs, namespaced=True)
    _validate_managed_by(js.managed_by, errs)
    _validate_subdomain(js.subdomain, errs)
    names = [rj.name for rj in js.replicated_jobs]
    seen: set[str] = set()
    for i, rj in enumerate(js.replicated_jobs):
        _validate_replicated_job(js, i, rj, seen, errs)
        seen.add(rj.name)
    for i, target in enumerate(js.success_targets):
        if target not in names:
            errs.invalid(f"spec.successPolicy.targetReplicatedJobs[{i}]", target,
                         f"invalid replicatedJob name '{target}' does not appear in .spec.ReplicatedJobs")
    if js.failure_policy is not None:
        _validate_failure_policy(js.failure_policy, names, errs)
    if js.coordinator is not None:
        _validate_coordinator(js, js.coordinator, errs)
    if js.has_startup_policy and js.startup_policy_order == "InOrder" and any(rj.depends_on for rj in js.replicated_jobs):
        errs.invalid("spec", "startupPolicy", "StartupPolicy and DependsOn APIs are mutually exclusive")


def _validate_managed_by(value: str, errs: FieldErrors) -> None:
    """apimachinery's IsDomainPrefixedPath, and at most 63 characters (JobSet's webhook)."""
    if not value:
        return
    path = "spec.managedBy"
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        errs.invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')
    else:
        if not is_dns_subdomain(host):
            errs.invalid(path, host, NOT_DNS_SUBDOMAIN)
        if not _HTTP_PATH.match(rest):
            errs.invalid(path, rest, "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')")
    if len(value) > MAX_MANAGED_BY:
        errs.invalid(path, value, f"Too long: may not be more than {MAX_MANAGED_BY} bytes")


def _validate_subdomain(subdomain: str, errs: FieldErrors) -> None:
    if not subdomain:
        return
    path = "spec.network.subdomain"
    if len(subdomain) > 63:
        errs.invalid(path, subdomain, SUBDOMAIN_TOO_LONG)
    elif not _DNS1035.match(subdomain):  # a DNS-1035 label is also an RFC 1123 subdomain
        errs.invalid(path, subdomain, NOT_DNS1035)


def _validate_replicated_job(js: JobSet, i: int, rj: ReplicatedJob, seen: set[str], errs: FieldErrors) -> None:
    path = f"spec.replicatedJobs[{i}]"
    if rj.name in seen:
        errs.add(f"{path}.name", f'Duplicate value: "{rj.name}"')
    elif rj.name and (len(rj.name) > 63 or not _DNS_LABEL.match(rj.name)):
        errs.invalid(f"{path}.name", rj.name, NOT_DNS_LABEL)  # it names the Workload's pod set
    if len(rj.group_name) > 63:
        errs.invalid(f"{path}.groupName", rj.group_name, GROUP_NAME_TOO_LONG)
    elif not _DNS1035.match(rj.group_name):
        errs.invalid(f"{path}.groupName", rj.group_name, NOT_DNS1035)
    if rj.parallelism * rj.replicas > MAX_INT32:
        errs.invalid(f"{path}.replicas", rj.replicas,
                     f"the product of replicas and parallelism must not exceed {MAX_INT32} for replicatedJob '{rj.name}'")
    if js.meta.name and rj.name:
        job_name = f"{js.meta.name}-{rj.name}-{max(rj.replicas - 1, 0)}"
        if len(job_name) > 63:
            errs.invalid("metadata.name", js.meta.name, JOB_NAME_TOO_LONG)
        elif not _DNS1035.match(job_name):
            errs.invalid("metadata.name", job_name, NOT_DNS1035)
        elif rj.completion_mode == "Indexed" and rj.completions:
            pod_name = f"{job_name}-{rj.completions - 1}-abcde"  # the pods' random suffix counts
            if len(pod_name) > 63:
                errs.invalid("metadata.name", js.meta.name, POD_NAME_TOO_LONG)
    if rj.depends_on:
        if i == 0:
            errs.invalid(f"{path}.dependsOn", rj.depends_on[0][0], "DependsOn can't be set for the first ReplicatedJob")
        elif rj.depends_on[0][0] not in seen:
            errs.invalid(f"{path}.dependsOn[0].name", rj.depends_on[0][0],
                         f"replicatedJob: {rj.name} cannot depend on replicatedJob: {rj.depends_on[0][0]}")
    if not rj.pod_spec.containers:
        errs.required(f"{path}.template.spec.template.spec.containers")
    validate_pod_template_resources(rj.pod_spec, f"{path}.template.spec.template.spec", errs)


def _validate_failure_policy(fp: FailurePolicy, names: list[str], errs: FieldErrors) -> None:
    base = "spec.failurePolicy.rules"
    first_with: dict[str, int] = {}
    for i, rule in enumerate(fp.rules):
        path = f"{base}[{i}]"
        if not 1 <= len(rule.name) <= 128:
            errs.invalid(f"{path}.name", rule.name, f"invalid failure policy rule name of length {len(rule.name)}, the rule "
                         "name must be at least 1 characters long and at most 128 characters long")
        elif not _RULE_NAME.match(rule.name):
            errs.invalid(f"{path}.name", rule.name, f"invalid failure policy rule name '{rule.name}', a failure policy rule "
                         "name must start with an alphabetic character, optionally followed by a string of alphanumeric "
                         "characters or '_,:', and must end with an alphanumeric character or '_'")
        if rule.name in first_with:
            errs.invalid(f"{path}.name", rule.name, f"rule names are not unique, rules with indices "
                         f"[{first_with[rule.name]} {i}] all have the same name '{rule.name}'")
        first_with.setdefault(rule.name, i)
        for j, target in enumerate(rule.target_replicated_jobs):
            if target not in names:
                errs.invalid(f"{path}.targetReplicatedJobs[{j}]", target, f"invalid replicatedJob name '{target}' in "
                             "failure policy does not appear in .spec.ReplicatedJobs")
        for j, reason in enumerate(rule.on_job_failure_reasons):
            if reason not in JOB_FAILURE_REASONS:
                errs.invalid(f"{path}.onJobFailureReasons[{j}]", reason, f"invalid job failure reason '{reason}' in "
                             "failure policy is not a recognized job failure reason")


def _validate_coordinator(js: JobSet, c: Coordinator, errs: FieldErrors) -> None:
    path = "spec.coordinator"
    rj = next((r for r in js.replicated_jobs if r.name == c.replicated_job), None)
    if rj is None:
        errs.invalid(f"{path}.replicatedJob", c.replicated_job, f"coordinator replicatedJob {c.replicated_job} does not exist")
    elif not 0 <= c.job_index < rj.replicas:
        errs.invalid(f"{path}.jobIndex", c.job_index,
                     f"coordinator job index {c.job_index} is invalid for replicatedJob {rj.name}")
    elif rj.completion_mode != "Indexed":
        errs.invalid(f"{path}.replicatedJob", c.replicated_job, "job for coordinator pod must be indexed completion mode")
    elif not 0 <= c.pod_index < (rj.completions if rj.completions is not None else rj.parallelism):
        errs.invalid(f"{path}.podIndex", c.pod_index, f"coordinator pod index {c.pod_index} is invalid for replicatedJob "
                     f"{c.replicated_job} job index {c.job_index}")


# What Kueue may change in a replicated job's pod template while the JobSet is (or is being)
# suspended: its admission's scheduling directives (JobSet's ValidateUpdate lets them through).
_MUTABLE_POD_META = ("labels", "annotations")
_MUTABLE_POD_SPEC = ("nodeSelector", "tolerations", "schedulingGates")


def validate_jobset_update(old: JobSet, new: JobSet, errs: FieldErrors) -> None:
    """JobSet's webhook (ValidateUpdate): replicatedJobs and managedBy are immutable; while the
    JobSet is suspended, or being suspended, its pod templates' labels, annotations, node selector,
    tolerations and scheduling gates may change (Kueue's admission goes there)."""
    if old.managed_by != new.managed_by:
        errs.invalid("spec.managedBy", new.managed_by, "field is immutable")
    before, after = old.replicated_jobs_raw, new.replicated_jobs_raw
    if old.suspend or new.suspend:
        before, after = [_without_mutable(rj) for rj in before], [_without_mutable(rj) for rj in after]
    if before != after:
        errs.add("spec.replicatedJobs", "field is immutable")


def _without_mutable(rj: dict[str, Any]) -> dict[str, Any]:
    """A copy of a replicated job without the pod-template fields Kueue may change (an emptied
    metadata counts as none)."""
    out = copy.deepcopy(rj)
    job = out.get("template")
    job_spec = job.get("spec") if isinstance(job, dict) else None
    pod = job_spec.get("template") if isinstance(job_spec, dict) else None
    if not isinstance(pod, dict):
        return out
    for part, keys in (("metadata", _MUTABLE_POD_META), ("spec", _MUTABLE_POD_SPEC)):
        section = pod.get(part)
        if isinstance(section, dict):
            for key in keys:
                section.pop(key, None)
    if pod.get("metadata") == {}:
        del pod["metadata"]
    return out
