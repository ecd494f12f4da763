"""Kueue's webhook and CRD validation rules, with Kueue's messages where it has them.

Each ``validate_*`` adds :class:`~hub.api.errors.FieldError` items to a
:class:`~hub.api.errors.FieldErrors`; callers raise once with every problem.
"""

from __future__ import annotations

import re
from fractions import Fraction

from .errors import FieldErrors
from .meta import ObjectMeta
from .others import AdmissionCheck, Job, MultiKueueCluster, MultiKueueConfig, WorkloadPriorityClass
from .pods import PodSpecInfo
from .quantity import format_quantity
from .queues import (
    CONCURRENT_TRY_PREFERRED,
    NEVER,
    STRICT_FIFO,
    TRY_NEXT_FLAVOR,
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    ResourceGroup,
)
from .workload import Workload

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_RESOURCE_NAME = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")

NEGATIVE = "must be greater than or equal to 0"
NOT_DNS_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
NOT_DNS_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
MAX_POD_SETS = 18
JOB_NAME_MAX = 63


def is_dns_subdomain(text: str) -> bool:
    """An RFC 1123 subdomain of at most 253 characters (names, queue names, label prefixes)."""
    return len(text) <= 253 and bool(_DNS_SUBDOMAIN.match(text))


def validate_dns_label_name(meta: ObjectMeta, errs: FieldErrors) -> None:
    """Names that must be RFC 1123 labels (Namespaces): at most 63 characters."""
    if meta.name and len(meta.name) > 63:
        errs.invalid("metadata.name", meta.name, "must be no more than 63 characters")
    elif meta.name and not _DNS_LABEL.match(meta.name):
        errs.invalid("metadata.name", meta.name, NOT_DNS_LABEL)


def validate_name(meta: ObjectMeta, errs: FieldErrors, namespaced: bool) -> None:
    if meta.name and (len(meta.name) > 253 or not _DNS_SUBDOMAIN.match(meta.name)):
        errs.invalid("metadata.name", meta.name, NOT_DNS_SUBDOMAIN)
    if namespaced:
        if not meta.namespace:
            errs.required("metadata.namespace")
        elif len(meta.namespace) > 63 or not _DNS_LABEL.match(meta.namespace):
            errs.invalid("metadata.namespace", meta.namespace, NOT_DNS_LABEL)


def _validate_resource_groups(
    groups: tuple[ResourceGroup, ...], errs: FieldErrors, *, has_parent: bool, is_cohort: bool
) -> None:
    base = "spec.resourceGroups"
    if len(groups) > 16:
        errs.invalid(base, len(groups), "must have at most 16 items")
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    total_flavors = total_covered = 0
    limit_reason = f"must be nil when {'parent' if is_cohort else 'cohort'} is empty"
    for i, group in enumerate(groups):
        gpath = f"{base}[{i}]"
        total_covered += len(group.covered_resources)
        total_flavors += len(group.flavors)
        if not 1 <= len(group.covered_resources) <= 64:
            errs.invalid(f"{gpath}.coveredResources", len(group.covered_resources), "must have 1 to 64 items")
        if not 1 <= len(group.flavors) <= 64:
            errs.invalid(f"{gpath}.flavors", len(group.flavors), "must have 1 to 64 items")
        for j, name in enumerate(group.covered_resources):
            path = f"{gpath}.coveredResources[{j}]"
            if not _RESOURCE_NAME.match(name):
                errs.invalid(path, name, "must be a valid resource name")
            if name in seen_resources:
                errs.add(path, f'Duplicate value: "{name}"')
            seen_resources.add(name)
        combos = 0
        for j, flavor in enumerate(group.flavors):
            fpath = f"{gpath}.flavors[{j}]"
            combos += len(flavor.resources)
            if flavor.name in seen_flavors:
                errs.add(f"{fpath}.name", f'Duplicate value: "{flavor.name}"')
            seen_flavors.add(flavor.name)
            if len(flavor.resources) != len(group.covered_resources):
                errs.invalid(
                    f"{fpath}.resources",
                    len(flavor.resources),
                    "flavors must have the same number of resources as the coveredResources",
                )
            for k, quota in enumerate(flavor.resources):
                if k >= len(group.covered_resources):
                    break
                rpath = f"{fpath}.resources[{k}]"
                if quota.name != group.covered_resources[k]:
                    errs.invalid(f"{rpath}.name", quota.name, "must match the name in coveredResources")
                show = format_quantity
                if quota.nominal_quota < 0:
                    errs.invalid(f"{rpath}.nominalQuota", show(quota.name, quota.nominal_quota), NEGATIVE)
                if quota.borrowing_limit is not None:
                    if not has_parent:
                        errs.invalid(f"{rpath}.borrowingLimit", show(quota.name, quota.borrowing_limit), limit_reason)
                    if quota.borrowing_limit < 0:
                        errs.invalid(f"{rpath}.borrowingLimit", show(quota.name, quota.borrowing_limit), NEGATIVE)
                if quota.lending_limit is not None:
                    value = show(quota.name, quota.lending_limit)
                    if quota.lending_limit < 0:
                        errs.invalid(f"{rpath}.lendingLimit", value, NEGATIVE)
                    if not has_parent:
                        errs.invalid(f"{rpath}.lendingLimit", value, limit_reason)
                    if not is_cohort and quota.lending_limit > quota.nominal_quota:
                        errs.invalid(
                            f"{rpath}.lendingLimit", value, "must be less than or equal to the nominalQuota"
                        )
        if combos > 512:
            errs.invalid(gpath, combos, f"number of flavor-resource combinations in a resourceGroup must be ≤ 512, got {combos}")
    if total_flavors > 256:
        errs.invalid(base, total_flavors, f"total number of flavors across all resourceGroups must be ≤ 256, got {total_flavors}")
    if total_covered > 256:
        errs.invalid(base, total_covered, f"total number of covered resources across all resourceGroups must be ≤ 256, got {total_covered}")


def _validate_weight(weight: Fraction, errs: FieldErrors) -> None:
    if weight < 0:
        errs.invalid("spec.fairSharing.weight", float(weight), NEGATIVE)
    elif 0 < weight <= Fraction(1, 10**9):
        errs.invalid("spec.fairSharing.weight", float(weight), "When not 0, weight must be > 10e-9")


def validate_cluster_queue(cq: ClusterQueue, errs: FieldErrors) -> None:
    validate_name(cq.meta, errs, namespaced=False)
    _validate_resource_groups(cq.resource_groups, errs, has_parent=bool(cq.cohort_name), is_cohort=False)
    pre = cq.preemption
    if pre.reclaim_within_cohort == NEVER and pre.borrow_within_cohort.policy != NEVER:
        errs.invalid("spec.preemption", pre.borrow_within_cohort.policy, "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")
    ff = cq.flavor_fungibility
    if ff.preference and (ff.when_can_borrow != TRY_NEXT_FLAVOR or ff.when_can_preempt != TRY_NEXT_FLAVOR):
        errs.invalid(
            "spec.flavorFungibility.preference",
            ff.preference,
            f'preference "{ff.preference}" requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor',
        )
    _validate_weight(cq.fair_sharing_weight, errs)
    flavors = {f.name for g in cq.resource_groups for f in g.flavors}
    for i, rule in enumerate(cq.admission_checks):
        if not rule.name:
            errs.required(f"spec.admissionChecksStrategy.admissionChecks[{i}].name")
        for j, flavor in enumerate(rule.on_flavors):
            if flavor not in flavors:
                errs.invalid(
                    f"spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}]",
                    flavor,
                    f"supported values: {', '.join(sorted(flavors)) or '(none)'}",
                )
    if len(cq.admission_checks) > 64:
        errs.invalid("spec.admissionChecksStrategy.admissionChecks", len(cq.admission_checks), "must have at most 64 items")
    _validate_concurrent_admission(cq, flavors, errs)


def _validate_concurrent_admission(cq: ClusterQueue, flavors: set[str], errs: FieldErrors) -> None:
    """Kueue's webhook rules for spec.concurrentAdmissionPolicy (validateConcurrentAdmissionPolicy)."""
    policy = cq.concurrent_admission
    if policy is None:
        return
    groups = cq.resource_groups
    if len(groups) != 1:
        errs.invalid("spec.resourceGroups", len(groups),
                     "must have exactly one ResourceGroup when ConcurrentAdmissionPolicy is defined")
    elif len(groups[0].flavors) > 16:
        errs.invalid("spec.resourceGroups[0].flavors", len(groups[0].flavors),
                     "cannot have more than 16 resource flavors in the ResourceGroup when ConcurrentAdmissionPolicy is defined")
    path = "spec.concurrentAdmissionPolicy.migration.constraints"
    if policy.has_constraints and policy.mode != CONCURRENT_TRY_PREFERRED:
        errs.add(path, f'Forbidden: may only be set when migration.mode is "{CONCURRENT_TRY_PREFERRED}" (got "{policy.mode}")')
    elif policy.last_acceptable_flavor and policy.last_acceptable_flavor not in flavors:
        errs.invalid(f"{path}.lastAcceptableFlavorName", policy.last_acceptable_flavor,
                     f"must be one of the flavors defined in the ClusterQueue: {', '.join(sorted(flavors))}")
    if cq.queueing_strategy == STRICT_FIFO:
        errs.invalid("spec.queueingStrategy", cq.queueing_strategy,
                     "StrictFIFO queueing strategy cannot be used when ConcurrentAdmissionPolicy is defined")


def validate_cluster_queue_update(old: ClusterQueue, new: ClusterQueue, errs: FieldErrors) -> None:
    if old.concurrent_admission != new.concurrent_admission:
        errs.add("spec.concurrentAdmissionPolicy", "Invalid value: field is immutable")


def validate_cohort(cohort: Cohort, errs: FieldErrors) -> None:
    validate_name(cohort.meta, errs, namespaced=False)
    _validate_resource_groups(cohort.resource_groups, errs, has_parent=bool(cohort.parent_name), is_cohort=True)
    if cohort.parent_name == cohort.meta.name and cohort.meta.name:
        errs.invalid("spec.parentName", cohort.parent_name, "cannot point to itself")
    _validate_weight(cohort.fair_sharing_weight, errs)


def validate_flavor(rf: ResourceFlavor, errs: FieldErrors) -> None:
    validate_name(rf.meta, errs, namespaced=False)
    if len(rf.node_labels) > 8:
        errs.invalid("spec.nodeLabels", len(rf.node_labels), "must have at most 8 items")
    if len(rf.node_taints) > 8:
        errs.invalid("spec.nodeTaints", len(rf.node_taints), "must have at most 8 items")
    if len(rf.tolerations) > 8:
        errs.invalid("spec.tolerations", len(rf.tolerations), "must have at most 8 items")
    seen = set()
    for i, taint in enumerate(rf.node_taints):
        if (taint.key, taint.effect) in seen:
            errs.add(f"spec.nodeTaints[{i}]", f'Duplicate value: "{taint.key}:{taint.effect}"')
        seen.add((taint.key, taint.effect))
    if rf.topology_name and not rf.node_labels:
        errs.add("spec.nodeLabels", "at least one nodeLabel is required when topology is set")


def validate_local_queue(lq: LocalQueue, errs: FieldErrors) -> None:
    validate_name(lq.meta, errs, namespaced=True)
    if lq.cluster_queue and not _DNS_SUBDOMAIN.match(lq.cluster_queue):
        errs.invalid("spec.clusterQueue", lq.cluster_queue, NOT_DNS_SUBDOMAIN)
    _validate_weight(lq.fair_sharing_weight, errs)


def _validate_pod_resources(spec: PodSpecInfo, path: str, errs: FieldErrors, *, kueue_reserved: bool) -> None:
    """Requests, limits and overhead: never negative (Kubernetes); ``pods`` reserved in Workloads (Kueue)."""
    for group, key in ((spec.containers, "containers"), (spec.init_containers, "initContainers")):
        for j, c in enumerate(group):
            for kind, values in (("requests", c.requests), ("limits", c.limits)):
                for res, value in values:
                    rpath = f"{path}.{key}[{j}].resources.{kind}[{res}]"
                    if kueue_reserved and res == "pods":
                        errs.invalid(rpath, "pods", "the key is reserved for internal kueue use")
                    if value < 0:
                        errs.invalid(rpath, format_quantity(res, value), NEGATIVE)
    for kind, pod_values in (("requests", spec.pod_requests), ("limits", spec.pod_limits), ("overhead", spec.overhead)):
        for res, value in pod_values:
            rpath = f"{path}.overhead[{res}]" if kind == "overhead" else f"{path}.resources.{kind}[{res}]"
            if kueue_reserved and res == "pods" and kind != "overhead":
                errs.invalid(rpath, "pods", "the key is reserved for internal kueue use")
            if value < 0:
                errs.invalid(rpath, format_quantity(res, value), NEGATIVE)


def validate_pod_template_resources(spec: PodSpecInfo, path: str, errs: FieldErrors) -> None:
    """A job kind's pod template: requests, limits and overhead never negative (Kubernetes)."""
    _validate_pod_resources(spec, path, errs, kueue_reserved=False)


def validate_workload(wl: Workload, errs: FieldErrors) -> None:
    validate_name(wl.meta, errs, namespaced=True)
    if not 1 <= len(wl.pod_sets) <= MAX_POD_SETS:
        errs.invalid("spec.podSets", len(wl.pod_sets), f"must have 1 to {MAX_POD_SETS} items")
    names: set[str] = set()
    with_min = 0
    for i, ps in enumerate(wl.pod_sets):
        path = f"spec.podSets[{i}]"
        if not _DNS_LABEL.match(ps.name) or len(ps.name) > 63:
            errs.invalid(f"{path}.name", ps.name, NOT_DNS_LABEL)
        if ps.name in names:
            errs.add(f"{path}.name", f'Duplicate value: "{ps.name}"')
        names.add(ps.name)
        if ps.count < 0:
            errs.invalid(f"{path}.count", ps.count, NEGATIVE)
        if ps.min_count is not None:
            with_min += 1
            if ps.min_count < 1:
                errs.invalid(f"{path}.minCount", ps.min_count, "must be greater than or equal to 1")
            elif ps.min_count > ps.count:
                errs.invalid(f"{path}.minCount", ps.min_count, "should be less than or equal to count")
        _validate_pod_resources(ps.spec, f"{path}.template.spec", errs, kueue_reserved=True)
    if with_min > 1:
        errs.invalid("spec.podSets", with_min, "at most one podSet can use minCount")
    if wl.priority_class_ref is not None and wl.priority is None:
        errs.required("spec.priority")
    if wl.maximum_execution_time_seconds is not None and wl.maximum_execution_time_seconds < 1:
        errs.invalid("spec.maximumExecutionTimeSeconds", wl.maximum_execution_time_seconds, "must be greater than or equal to 1")
    adm = wl.status.admission
    if adm is not None and wl.is_quota_reserved and len(adm.pod_set_assignments) != len(wl.pod_sets):
        errs.invalid(
            "status.admission.podSetAssignments",
            len(adm.pod_set_assignments),
            "podSetAssignments must have the same number of podSets as the spec",
        )


def validate_workload_update(old: Workload, new: Workload, errs: FieldErrors) -> None:
    if not old.is_quota_reserved:
        return
    if _pod_sets_shape(old) != _pod_sets_shape(new):
        errs.add("spec.podSets", "field is immutable while the workload holds quota")
    if old.queue_name != new.queue_name:
        errs.add("spec.queueName", "field is immutable while the workload holds quota")
    if old.priority_class_ref != new.priority_class_ref and (
        old.priority_class_ref is None
        or new.priority_class_ref is None
        or (old.priority_class_ref.group, old.priority_class_ref.kind)
        != (new.priority_class_ref.group, new.priority_class_ref.kind)
        or not new.priority_class_ref.is_workload_priority_class
    ):
        errs.add("spec.priorityClassRef", "field is immutable while the workload holds quota")


def _pod_sets_shape(wl: Workload) -> list[tuple[str, int, int | None, object]]:
    return [(ps.name, ps.count, ps.min_count, ps.template) for ps in wl.pod_sets]


def validate_local_queue_update(old: LocalQueue, new: LocalQueue, errs: FieldErrors) -> None:
    if old.cluster_queue and old.cluster_queue != new.cluster_queue:
        errs.invalid("spec.clusterQueue", new.cluster_queue, "field is immutable")


def validate_priority_class(wpc: WorkloadPriorityClass, errs: FieldErrors) -> None:
    validate_name(wpc.meta, errs, namespaced=False)
    if not -(2**31) <= wpc.value < 2**31:
        errs.invalid("value", wpc.value, "must fit in a 32-bit signed integer")
    if len(wpc.description) > 2048:
        errs.invalid("description", len(wpc.description), "must have at most 2048 characters")


def validate_admission_check(ac: AdmissionCheck, errs: FieldErrors) -> None:
    validate_name(ac.meta, errs, namespaced=False)
    if len(ac.controller_name) > 253:
        errs.invalid("spec.controllerName", ac.controller_name, "must have at most 253 characters")


def validate_admission_check_update(old: AdmissionCheck, new: AdmissionCheck, errs: FieldErrors) -> None:
    if old.controller_name != new.controller_name:
        errs.invalid("spec.controllerName", new.controller_name, "field is immutable")


def validate_flavor_update(old: ResourceFlavor, new: ResourceFlavor, errs: FieldErrors) -> None:
    if old.topology_name and old.topology_name != new.topology_name:
        errs.invalid("spec.topologyName", new.topology_name, "field is immutable")


def validate_mk_config(cfg: MultiKueueConfig, errs: FieldErrors) -> None:
    validate_name(cfg.meta, errs, namespaced=False)
    if not 1 <= len(cfg.clusters) <= 20:
        errs.invalid("spec.clusters", len(cfg.clusters), "must have 1 to 20 items")
    if len(set(cfg.clusters)) != len(cfg.clusters):
        errs.add("spec.clusters", "must not contain duplicates")


def validate_mk_cluster(mkc: MultiKueueCluster, errs: FieldErrors) -> None:
    validate_name(mkc.meta, errs, namespaced=False)
    has_kubeconfig = bool(mkc.kubeconfig_location)
    if has_kubeconfig == bool(mkc.cluster_profile):
        errs.add("spec.clusterSource", "exactly one of kubeConfig or clusterProfileRef must be set")
    if len(mkc.kubeconfig_location) > 256:
        errs.invalid("spec.clusterSource.kubeConfig.location", mkc.kubeconfig_location, "must have at most 256 characters")


def validate_job(job: Job, errs: FieldErrors) -> None:
    """batch/v1 ValidateJob, as far as a queued Job goes: the name must leave room for its pods'."""
    validate_name(job.meta, errs, namespaced=True)
    name = job.meta.name
    if len(name) > JOB_NAME_MAX:
        # The Job controller copies the name into the pods' batch.kubernetes.io/job-name label value.
        errs.invalid("metadata.name", name, f"must be no more than {JOB_NAME_MAX} characters (it is the pods' job-name label value)")
    elif job.completion_mode == "Indexed" and job.completions:
        hostname = f"{name}-{job.completions - 1}"
        if len(hostname) > 63 or not _DNS_LABEL.match(hostname):
            errs.invalid("metadata.name", name, f"will not able to create pod with invalid DNS label: {hostname}")
    if job.completion_mode == "Indexed" and job.completions is None:
        errs.required("spec.completions")
    if not job.pod_spec.containers:
        errs.required("spec.template.spec.containers")
    _validate_pod_resources(job.pod_spec, "spec.template.spec", errs, kueue_reserved=False)
