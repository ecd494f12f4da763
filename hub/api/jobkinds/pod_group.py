"""Pod groups: many plain Pods queued as one Workload (Kueue's ``pkg/controller/jobs/pod``, group half).

Pods labelled ``kueue.x-k8s.io/pod-group-name`` with the ``kueue.x-k8s.io/pod-group-total-count``
annotation form a group. Its Workload is named after the group, has one pod set per *role* (pods
of the same shape, named by their role hash) and is owned by every Pod. Kueue composes it once
``total-count`` runnable Pods exist, deleting the newest beyond that count; the group finishes when
``total-count`` Pods succeeded, or, once one Pod says ``kueue.x-k8s.io/retriable-in-group: "false"``,
when none is still running. A failed Pod is not re-created by Kueue: whoever made the group makes
a replacement of the same role, and Kueue lets go of the failed one (:func:`match_to_workload`).

Functions take the group's Pods (:func:`~.pod.read_pod`) and return what to do; nothing here
reads a clock or the API: the controllers pass ``now`` and apply the result.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from ..errors import FieldError, FieldErrors, ValidationError
from ..meta import ObjectMeta
from ..others import MAX_EXEC_TIME_LABEL, QUEUE_NAME_LABEL
from ..validation import MAX_POD_SETS, NOT_DNS_LABEL
from ..workload import EVICTED, FINISHED, PodSet, Workload
from .framework import Manifest, Outcome, PodSetInfo, priority_class_ref
from .pod import (
    FAST_ADMISSION_ANNOTATION,
    GROUP_NAME_LABEL,
    GROUP_TOTAL_COUNT_ANNOTATION,
    POD,
    POD_FINALIZER,
    PREBUILT_WORKLOAD_LABEL,
    RETRIABLE_IN_GROUP_ANNOTATION,
    ROLE_HASH_ANNOTATION,
    SERVING_ANNOTATION,
    Pod,
    atoi,
    group_metadata_errors,
    pod_set_of,
    read_pod,
    role_hash,
    ungate,
)

IS_GROUP_WORKLOAD_ANNOTATION = "kueue.x-k8s.io/is-group-workload"
MAX_ROLES = MAX_POD_SETS  # Kueue's MaxPodSets
WAITING_FOR_REPLACEMENT = "WaitingForReplacementPods"  # the group Workload's condition type

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUEUE_PATH = f"metadata.labels[{QUEUE_NAME_LABEL}]"
_COUNT_PATH = f"metadata.annotations[{GROUP_TOTAL_COUNT_ANNOTATION}]"
_ROLE_PATH = f"metadata.annotations[{ROLE_HASH_ANNOTATION}]"


# --- roles ---------------------------------------------------------------------------------------------


def role_of(pod: Pod) -> str:
    """The Pod's role: the hash Kueue's webhook wrote at creation, else computed from its spec."""
    written = pod.meta.annotations.get(ROLE_HASH_ANNOTATION)
    return written if written is not None else role_hash(pod.spec)


# --- the group's state ---------------------------------------------------------------------------------


def ordered(pods: Iterable[Pod]) -> list[Pod]:
    """The group's Pods oldest first, then by name."""
    return sorted(pods, key=lambda p: (p.meta.creation_timestamp or 0.0, p.meta.name))


def reference(pods: Sequence[Pod]) -> Pod:
    """The Pod group-wide values (total count, queue, priority, ...) are read from: the oldest not
    failed, else the oldest. Kueue reads whichever Pod its cache lists first and skips failed
    Pods when comparing the others to it; mkhub makes that choice deterministic."""
    alive = [p for p in pods if p.phase != "Failed"]
    return ordered(alive or pods)[0]


def runnable_or_succeeded(pod: Pod) -> bool:
    """Kueue's ``isPodRunnableOrSucceeded``: not failed, and not deleted before it reached a node."""
    if pod.deleting and not pod.node_name:
        return False
    return pod.phase != "Failed"


def total_count(pod: Pod) -> int | None:
    value = atoi(pod.meta.annotations.get(GROUP_TOTAL_COUNT_ANNOTATION, ""))
    return value if value is not None and value > 0 else None


def fast_admission(pod: Pod) -> bool:
    return pod.meta.annotations.get(FAST_ADMISSION_ANNOTATION) == "true"


def serving(pod: Pod) -> bool:
    return pod.meta.annotations.get(SERVING_ANNOTATION) == "true"


def unretriable(pods: Iterable[Pod]) -> bool:
    """A Pod of the group says ``retriable-in-group: "false"``: the group ends once none runs."""
    return any(p.meta.annotations.get(RETRIABLE_IN_GROUP_ANNOTATION) == "false" for p in pods)


def validate_group(pods: Sequence[Pod]) -> ValidationError | None:
    """The group's Pods agree: each has the group name and a positive total count (Kueue's webhook
    rules), all in one namespace and group, and every Pod not failed has the first Pod's queue name
    and total count (Kueue's ``validatePodGroupMetadata``); roles are valid pod-set names and at
    most 18. The first problem found, naming the Pod and the field."""
    if not pods:
        return None
    first = reference(pods)
    group = first.meta.labels.get(GROUP_NAME_LABEL, "")
    for pod in ordered(pods):
        errs = FieldErrors()
        group_metadata_errors(pod.meta.labels, pod.meta.annotations, errs)
        if not errs and not pod.meta.labels.get(GROUP_NAME_LABEL):
            errs.add(f"metadata.labels[{GROUP_NAME_LABEL}]", "Required value: a pod group's Pod names its group")
        if errs:
            return _refuse(pod, errs.items[0])
        if pod.meta.namespace != first.meta.namespace:
            return _refuse(pod, FieldError("metadata.namespace", f"differs from pod '{first.meta.name}''s "
                                           f"{first.meta.namespace!r} in group {group!r}", pod.meta.namespace, True))
        if pod.meta.labels.get(GROUP_NAME_LABEL) != group:
            return _refuse(pod, FieldError(f"metadata.labels[{GROUP_NAME_LABEL}]", f"differs from pod "
                                           f"'{first.meta.name}''s {group!r}", pod.meta.labels.get(GROUP_NAME_LABEL), True))
        role = role_of(pod)
        if len(role) > 63 or not _DNS_LABEL.match(role):
            return _refuse(pod, FieldError(_ROLE_PATH, f"names the Pod's pod set: {NOT_DNS_LABEL}", role, True))
        if pod.phase == "Failed":
            continue
        queue = pod.meta.labels.get(QUEUE_NAME_LABEL, "")
        if queue != first.meta.labels.get(QUEUE_NAME_LABEL, ""):
            return _refuse(pod, FieldError(_QUEUE_PATH, f"differs from pod '{first.meta.name}''s "
                                           f"{first.meta.labels.get(QUEUE_NAME_LABEL, '')!r}", queue, True))
        if total_count(pod) != total_count(first):
            return _refuse(pod, FieldError(_COUNT_PATH, f"differs from pod '{first.meta.name}''s "
                                           f"{first.meta.annotations.get(GROUP_TOTAL_COUNT_ANNOTATION)!r}",
                                           pod.meta.annotations.get(GROUP_TOTAL_COUNT_ANNOTATION), True))
    roles = {role_of(p) for p in pods if runnable_or_succeeded(p)}
    if len(roles) > MAX_ROLES:
        return _refuse(first, FieldError(_ROLE_PATH, f"pod group can't include more than {MAX_ROLES} roles",
                                         len(roles), True))
    return None


def _refuse(pod: Pod, error: FieldError) -> ValidationError:
    return ValidationError("Pod", pod.meta.name, pod.meta.namespace, [error])


# --- composing the Workload ----------------------------------------------------------------------------


@dataclass(slots=True)
class GroupPlan:
    """What to do with a group that has no Workload yet (Kueue's ``ConstructComposableWorkload``).

    ``workload`` is the Workload to create, ``None`` while ``waiting`` (fewer runnable Pods than the
    total) or when ``error`` refuses the group (a one-line reason naming a Pod and its field).
    ``to_delete``: runnable Pods beyond the total, the newest (Kueue deletes them);
    ``to_finalize``: failed Pods, and Pods deleted before they ran (Kueue drops its finalizer)."""

    workload: Workload | None = None
    to_delete: list[Pod] = field(default_factory=list)
    to_finalize: list[Pod] = field(default_factory=list)
    waiting: str = ""
    error: ValidationError | None = None


def compose_group(pods: Sequence[Pod]) -> GroupPlan:
    """The Workload of a complete group, or why not yet."""
    if not pods:
        return GroupPlan(waiting="the group has no pods")
    active = ordered(p for p in pods if runnable_or_succeeded(p))
    plan = GroupPlan(to_finalize=[p for p in ordered(pods) if not runnable_or_succeeded(p)])
    error = validate_group(pods)
    if error is not None:
        plan.error = error
        return plan
    first = reference(pods)
    total = total_count(first)
    assert total is not None  # validate_group refused the group otherwise
    group = first.meta.labels[GROUP_NAME_LABEL]
    if not fast_admission(first) and len(active) < total:
        plan.waiting = f"'{group}' group has fewer runnable pods than expected"
        return plan
    if not active:
        plan.waiting = f"'{group}' group has no runnable pod"
        return plan
    if len(active) > total:
        active = _keep_order(active)
        plan.to_delete = active[total:]
        active = active[:total]
    plan.workload = group_workload(first, active, total)
    return plan


def _keep_order(pods: Sequence[Pod]) -> list[Pod]:
    """Kueue's ``sortActivePods``: those keeping Kueue's finalizer first, then ungated ones, then oldest."""
    return sorted(pods, key=lambda p: (POD_FINALIZER not in p.meta.finalizers, p.gated,
                                       p.meta.creation_timestamp or 0.0, p.meta.name))


def group_pod_sets(pods: Sequence[Pod], total: int, fast: bool = False) -> list[PodSet]:
    """One pod set per role, named by its hash, counting its runnable Pods, in name order (Kueue's
    ``constructGroupPodSets``); with fast admission, the first runnable Pod's role for the total."""
    active = [p for p in ordered(pods) if runnable_or_succeeded(p)]
    if fast:
        return [pod_set_of(active[0], role_of(active[0]), total)] if active else []
    counts: dict[str, int] = {}
    first_of: dict[str, Pod] = {}
    for pod in active:
        role = role_of(pod)
        counts[role] = counts.get(role, 0) + 1
        first_of.setdefault(role, pod)
    return [pod_set_of(first_of[role], role, counts[role]) for role in sorted(counts)]


def group_workload(first: Pod, members: Sequence[Pod], total: int) -> Workload:
    """The group's Workload: named as the group (or its prebuilt workload), one pod set per role,
    owned (not controlled) by every member, marked ``is-group-workload``; the queue, priority and
    maximum execution time are the first Pod's."""
    name = first.meta.labels.get(PREBUILT_WORKLOAD_LABEL) or first.meta.labels[GROUP_NAME_LABEL]
    max_exec = first.meta.labels.get(MAX_EXEC_TIME_LABEL)
    return Workload(
        meta=ObjectMeta(
            name=name,
            namespace=first.meta.namespace,
            annotations={IS_GROUP_WORKLOAD_ANNOTATION: "true"},
            creation_timestamp=first.meta.creation_timestamp,
            owner_references=[{"apiVersion": "v1", "kind": "Pod", "name": p.meta.name, "uid": p.meta.uid}
                              for p in ordered(members)],
        ),
        pod_sets=tuple(group_pod_sets(members, total, fast_admission(first))),
        queue_name=first.meta.labels.get(QUEUE_NAME_LABEL, ""),
        priority_class_ref=priority_class_ref(POD, first),
        active=True,
        maximum_execution_time_seconds=int(max_exec) if max_exec and max_exec.isdigit() else None,
    )


# --- a group with its Workload: replacements, admission, end -------------------------------------------


@dataclass(slots=True)
class Replacement:
    """The group matched to its Workload's pod sets (Kueue's ``FindMatchingWorkloads``).

    ``kept``: the Pods that are the Workload's now (the Workload should be owned by each);
    ``to_delete``: runnable Pods beyond their role's count, the newest; ``to_finalize``: failed Pods
    a replacement has taken the place of (Kueue drops its finalizer so they can go);
    ``absent``: Pods still missing (WaitingForReplacementPods is True while above 0);
    ``equivalent``: False when the Pods no longer fit the Workload (none kept, or the group renamed),
    which Kueue then replaces. Pods of a role the Workload lacks are in none of the lists, as in Kueue."""

    kept: list[Pod] = field(default_factory=list)
    to_delete: list[Pod] = field(default_factory=list)
    to_finalize: list[Pod] = field(default_factory=list)
    absent: int = 0
    equivalent: bool = True


def match_to_workload(pods: Sequence[Pod], wl: Workload, now: float) -> Replacement:
    out = Replacement()
    first = reference(pods) if pods else None
    fast = first is not None and fast_admission(first)
    for ps in wl.pod_sets:
        mine = [p for p in pods if role_of(p) == ps.name]
        active = [p for p in mine if runnable_or_succeeded(p)]
        inactive = [p for p in mine if not runnable_or_succeeded(p)]
        out.absent += (1 if ps.count > 0 and not active else 0) if fast else max(0, ps.count - len(active))
        # As Kueue counts them: the role's runnable Pods before the excess goes.
        finalizable = min(len(inactive), len(inactive) + len(active) - ps.count)
        if len(active) > ps.count:
            ranked = _keep_order(active)
            out.to_delete += ranked[ps.count:]
            out.kept += ranked[:ps.count]
        else:
            out.kept += active
        if finalizable > 0:
            ranked = _inactive_order(inactive, now)
            out.to_finalize += ranked[len(ranked) - finalizable:]
            out.kept += ranked[:len(ranked) - finalizable]
        else:
            out.kept += inactive
    out.kept = ordered(out.kept)
    name = (first.meta.labels.get(PREBUILT_WORKLOAD_LABEL) or first.meta.labels.get(GROUP_NAME_LABEL)) if first else None
    out.equivalent = bool(out.kept) and wl.meta.name == name and _fits(wl, out.kept)
    return out


def _inactive_order(pods: Sequence[Pod], now: float) -> list[Pod]:
    """Kueue's ``sortInactivePods``: those keeping Kueue's finalizer first, the last active first,
    then the oldest first (its comment says newest; its code compares oldest first); the tail is let go."""
    def last_active(p: Pod) -> float:
        failed = p.failed_at if p.failed_at is not None else now
        deleted = p.meta.deletion_timestamp if p.meta.deletion_timestamp is not None else now
        return min(failed, deleted)

    return sorted(pods, key=lambda p: (POD_FINALIZER not in p.meta.finalizers, -last_active(p),
                                       p.meta.creation_timestamp or 0.0, p.meta.name))


def _fits(wl: Workload, kept: Sequence[Pod]) -> bool:
    """Kueue's ``equivalentToWorkload``: every role of the kept Pods is a pod set, with no more Pods
    than its count (counts are not checked once the Workload finished)."""
    done = wl.status.is_true(FINISHED)
    counts = {ps.name: ps.count for ps in wl.pod_sets}
    for ps in group_pod_sets(kept, 0):
        if ps.name not in counts or (not done and counts[ps.name] < ps.count):
            return False
    return True


def waiting_for_replacement(absent: int, wl: Workload) -> tuple[str, str, str] | None:
    """The Workload's ``WaitingForReplacementPods`` condition as (status, reason, message), or None
    to leave it as it is: True while Pods are absent, with the eviction's reason and message when
    the Workload is evicted, else ``PodsFailed`` (an already True one keeps its reason); False
    (``PodsReady``) once none is missing, where the condition was set before."""
    current = wl.status.condition(WAITING_FOR_REPLACEMENT)
    if absent <= 0:
        return None if current is None else ("False", "PodsReady", "No pods need replacement")
    evicted = wl.status.condition(EVICTED)
    if evicted is not None and evicted.is_true:
        return "True", evicted.reason, evicted.message
    if current is not None and current.is_true:
        return "True", current.reason, current.message
    return "True", "PodsFailed", "Some Failed pods need replacement"


@dataclass(slots=True)
class _Room:
    selector: dict[str, str]
    left: int


def ungate_group(manifests: Sequence[Manifest], infos: Sequence[PodSetInfo]) -> tuple[list[Manifest], str | None]:
    """Kueue's ``Run`` for an admitted group: its gated Pods ungated with their role's pod-set info
    (changed copies, oldest first), at most the info's count per role counting the role's runnable
    Pods already ungated; or a one-line error naming the Pod that cannot be read, whose role the
    admission has no pod set for, or whose labels, annotations or nodeSelector conflict with it."""
    by_role = {info.name: info for info in infos}
    running: dict[str, int] = {}
    gated: list[tuple[Pod, Manifest]] = []
    # Per role, the topology domains' room left once the running Pods' selectors are counted.
    room = {info.name: [_Room(sel, n) for sel, n in info.topology_domains] for info in infos if info.topology_domains}
    for m in manifests:
        try:
            pod = read_pod(m)
        except ValidationError as exc:
            return [], str(exc)
        if pod.gated:
            gated.append((pod, m))
        elif runnable_or_succeeded(pod):
            running[role_of(pod)] = running.get(role_of(pod), 0) + 1
            selector = (m.get("spec") or {}).get("nodeSelector") or {}
            for held in room.get(role_of(pod), []):
                if held.left > 0 and all(selector.get(k) == v for k, v in held.selector.items()):
                    held.left -= 1
                    break
    gated.sort(key=lambda pm: (pm[0].meta.creation_timestamp or 0.0, pm[0].meta.name))
    out: list[Manifest] = []
    for pod, m in gated:
        role = role_of(pod)
        info = by_role.get(role)
        if info is None:
            return [], f'Pod "{pod.meta.key}": the admission has no pod set for its role {role!r}'
        if running.get(role, 0) >= info.count:
            continue
        changed = copy.deepcopy(m)
        domain = next((d for d in room.get(role, []) if d.left > 0), None)
        if domain is not None:  # Kueue's topology ungater: this Pod goes to the next domain with room
            domain.left -= 1
            info = replace(info, node_selector={**info.node_selector, **domain.selector})
        problem = ungate(changed, info)
        if problem is not None:
            return [], problem
        running[role] = running.get(role, 0) + 1
        out.append(changed)
    return out, None


def group_suspended(pods: Iterable[Pod]) -> bool:
    """Kueue's ``IsSuspended`` for a group: a Pod of it is gated or finished."""
    return any(p.gated or p.terminated for p in pods)


def group_finished(pods: Sequence[Pod]) -> Outcome | None:
    """Kueue's ``Finished`` for a group: ``total`` Pods succeeded, or the group is unretriable and no
    Pod is still running. Kueue reports both as success, with "Pods succeeded: s/t." (a failed
    unretriable group is finished, not failed); a serving group never finishes."""
    if not pods:
        return None
    first = reference(pods)
    total = total_count(first)
    if total is None or serving(first):
        return None
    succeeded = sum(1 for p in pods if p.phase == "Succeeded")
    still_active = any(not p.terminated for p in pods)
    if succeeded == total or (not still_active and unretriable(pods)):
        return "succeeded", f"Pods succeeded: {succeeded}/{total}."
    return None


def group_pods_ready(pods: Sequence[Pod]) -> bool:
    """Every one of the group's ``total`` Pods exists and is Ready (Kueue's ``PodsReady``)."""
    if not pods:
        return False
    total = total_count(reference(pods))
    return total is not None and len(pods) >= total and all(p.ready for p in pods)


def reclaimable_pods(pods: Sequence[Pod]) -> dict[str, int]:
    """Succeeded Pods per role: quota the Workload gives back before the group ends (not serving)."""
    if not pods or serving(reference(pods)):
        return {}
    out: dict[str, int] = {}
    for pod in pods:
        if pod.phase == "Succeeded":
            role = role_of(pod)
            out[role] = out.get(role, 0) + 1
    return out
