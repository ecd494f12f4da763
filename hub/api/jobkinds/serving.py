"""Serving workloads: Kueue's Deployment and StatefulSet integrations (``pkg/controller/jobs/deployment``,
``.../statefulset``), on top of the pod integration.

Neither kind is suspended: Kueue's webhook marks the pod template so that every Pod the kind's
controller creates is gated by the pod webhook and queued by the pod integration.

- A Deployment's template gets the ``kueue.x-k8s.io/pod-suspending-parent: deployment`` annotation,
  the ``kueue.x-k8s.io/managed`` label and the Deployment's queue-name and priority-class labels:
  each of its Pods is then a single-Pod Workload, running until the Deployment deletes it.
- A StatefulSet is one Workload for all its Pods: its template also makes them a serving pod group
  (group name ``statefulset-<name>-<hash>`` as Kueue names it, total count = replicas, fast admission,
  one role ``main``), admitted whole and never finished while the set wants its Pods. Replicas can
  only go to zero and back (Kueue's rule); at zero the Pods, then the Workload, are gone. A new Pod's
  group counts the set's current replicas (:func:`with_current_total_count`: ``kubectl scale`` leaves
  the template's count as it was).

mkhub follows Kueue's webhook before v0.14 (the group written into the template); Kueue now writes it
into each Pod from a StatefulSet reconciler and names the Workload with the StatefulSet's uid. The
name here hashes an empty uid: Kueue's "legacy" name, which its reconciler still finds. As in Kueue,
the Workload is owned by the StatefulSet (:func:`own_by_statefulset`), not by its Pods.

Pure: functions take manifests and return changed copies or a one-line :class:`ValidationError`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..config import Configuration
from ..errors import FieldErrors, ValidationError
from ..others import QUEUE_NAME_LABEL
from ..workload import DEFAULT_POD_SET_NAME, Workload
from .framework import Manifest, workload_name
from .leaderworkerset import FRAMEWORK as LWS_FRAMEWORK
from .leaderworkerset import index_pods_by_worker_index, own_by_leaderworkerset
from .management import framework_enabled, manages
from .parents import check_labels, mark_template, object_labels, own_by
from .pod import (
    FAST_ADMISSION_ANNOTATION,
    GROUP_NAME_LABEL,
    GROUP_TOTAL_COUNT_ANNOTATION,
    ROLE_HASH_ANNOTATION,
    SERVING_ANNOTATION,
    SUSPENDED_BY_PARENT_ANNOTATION,
    Pod,
    role_hash,
)
from .pod import (
    FRAMEWORK as POD_FRAMEWORK,
)

DEPLOYMENT = "deployment"
STATEFULSET = "statefulset"
PARENT_FRAMEWORKS = (DEPLOYMENT, STATEFULSET)
_KIND = {DEPLOYMENT: "Deployment", STATEFULSET: "StatefulSet"}
POD_INDEX_LABEL_ANNOTATION = "kueue.x-k8s.io/pod-group-pod-index-label"
STATEFULSET_POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def pod_integration_enabled(config: Configuration) -> bool:
    """Kueue's pod integration runs: enabled itself, or implicitly by Deployment, StatefulSet or
    LeaderWorkerSet."""
    return any(framework_enabled(config, f) for f in (POD_FRAMEWORK, *PARENT_FRAMEWORKS, LWS_FRAMEWORK))


def parent_framework(annotations: Mapping[str, Any]) -> str | None:
    """The framework named by a Pod's ``pod-suspending-parent`` annotation (None when absent)."""
    value = annotations.get(SUSPENDED_BY_PARENT_ANNOTATION)
    return None if value is None else str(value)


def manages_pod_of(config: Configuration, annotations: Mapping[str, Any]) -> bool:
    """The pod integration handles a Pod Kueue's webhook marked: every such Pod when ``pod`` is
    enabled; only those of an enabled parent when the integration is merely implicit (Kueue skips
    a Pod without the parent annotation then)."""
    if framework_enabled(config, POD_FRAMEWORK):
        return True
    parent = parent_framework(annotations)
    return parent is not None and framework_enabled(config, parent)


def statefulset_workload_name(name: str) -> str:
    """The Workload (and pod group) of a StatefulSet: Kueue's name for the kind, with an empty uid."""
    return workload_name("StatefulSet", "apps", name, "")


def own_by_statefulset(wl: Workload, pod: Pod) -> None:
    """A StatefulSet's group Workload is the StatefulSet's, as Kueue's reconciler makes it (owner
    reference, job-uid label, owner annotations), not its Pods': the garbage collector then keeps
    it while the set lives, whichever of its Pods comes and goes. Other Workloads are left alone."""
    if parent_framework(pod.meta.annotations) != STATEFULSET:
        return
    for ref in pod.meta.owner_references:
        if ref.get("controller") and ref.get("kind") == "StatefulSet" and ref.get("apiVersion") == "apps/v1":
            own_by(wl, ref)
            return


def own_by_parent(wl: Workload, pod: Pod) -> None:
    """A group Workload made the StatefulSet's or the LeaderWorkerSet's that made its Pods (and, for
    a LeaderWorkerSet's, its pod sets indexed as Kueue's reconciler indexes them)."""
    own_by_statefulset(wl, pod)
    own_by_leaderworkerset(wl, pod)
    index_pods_by_worker_index(wl, pod)


def statefulset_owner(pod: Manifest) -> str | None:
    """The name of the StatefulSet controlling a Pod its (marked) template made, else None."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    notes = meta.get("annotations")
    if not isinstance(notes, dict) or notes.get(SUSPENDED_BY_PARENT_ANNOTATION) != STATEFULSET:
        return None
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") and ref.get("kind") == "StatefulSet" \
                and ref.get("apiVersion") == "apps/v1" and ref.get("name"):
            return str(ref["name"])
    return None


def with_current_total_count(pod: Manifest, statefulset: Manifest | None) -> Manifest:
    """A StatefulSet's new Pod with its group's total count from the set's current replicas (on a
    copy), as Kueue's StatefulSet pod reconciler writes it: a scale through the ``scale``
    subresource (``kubectl scale``) passes no webhook, so the template's count may be stale."""
    if statefulset is None or statefulset_owner(pod) is None:
        return pod
    count = str(replicas(statefulset))
    notes = pod["metadata"].get("annotations") or {}
    if notes.get(GROUP_TOTAL_COUNT_ANNOTATION) == count:
        return pod
    out = copy.deepcopy(pod)
    out["metadata"]["annotations"][GROUP_TOTAL_COUNT_ANNOTATION] = count
    return out


def replicas(manifest: Manifest) -> int:
    """``spec.replicas``, 1 when unset (the API server's default)."""
    spec = manifest.get("spec")
    value = spec.get("replicas") if isinstance(spec, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _pod_spec(manifest: Manifest) -> dict[str, Any]:
    spec = manifest.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    pod = template.get("spec") if isinstance(template, dict) else None
    return pod if isinstance(pod, dict) else {}


def managed(config: Configuration, framework: str, manifest: Manifest, namespace_labels: Mapping[str, str] | None) -> bool:
    """Kueue's ``WorkloadShouldBeSuspended`` for a Deployment or StatefulSet."""
    meta = manifest.get("metadata")
    namespace = str(meta.get("namespace") or "") if isinstance(meta, dict) else ""
    return manages(config, framework, object_labels(manifest).get(QUEUE_NAME_LABEL, ""), namespace, namespace_labels)


def default(framework: str, manifest: Manifest) -> Manifest:
    """The kind's webhook defaults on a copy of a managed Deployment or StatefulSet: its pod
    template marked so the pod webhook gates its Pods and the pod integration queues them."""
    out = copy.deepcopy(manifest)
    spec = out.get("spec")
    if not isinstance(spec, dict):
        spec = out["spec"] = {}
    template = spec.get("template")
    if not isinstance(template, dict):
        template = spec["template"] = {}
    labels, annotations = mark_template(template, object_labels(manifest), framework)
    if framework == STATEFULSET:
        name = str((out.get("metadata") or {}).get("name") or "")
        labels[GROUP_NAME_LABEL] = statefulset_workload_name(name)
        annotations[GROUP_TOTAL_COUNT_ANNOTATION] = str(replicas(manifest))
        annotations[FAST_ADMISSION_ANNOTATION] = "true"
        annotations[SERVING_ANNOTATION] = "true"
        annotations[POD_INDEX_LABEL_ANNOTATION] = STATEFULSET_POD_INDEX_LABEL
        annotations[ROLE_HASH_ANNOTATION] = DEFAULT_POD_SET_NAME  # one pod set, named as Kueue names it
    return out


def validate(framework: str, manifest: Manifest, old: Manifest | None, is_managed: bool) -> ValidationError | None:
    """Kueue's validating webhook of a Deployment or StatefulSet (create, or update from ``old``):
    the queue name a DNS subdomain; on update it cannot change while a replica is ready, nor be
    removed; the priority-class label cannot be removed, nor added while a replica is ready; a
    managed StatefulSet keeps its replicas unless scaling to zero, or from zero once the last
    scale-down's Pods are gone (the scale subresource, ``kubectl scale``, passes no webhook), and
    its Pods' shape (what Kueue's ``ValidateImmutablePodGroupPodSpec`` compares: the fields of the
    role hash; an image may change)."""
    errs = FieldErrors()
    check_labels(manifest, old, errs)
    if old is not None and framework == STATEFULSET and is_managed:
        new_n, old_n = replicas(manifest), replicas(old)
        if new_n != 0 and old_n != 0 and new_n != old_n:
            errs.invalid("spec.replicas", new_n, "field is immutable")
        if role_hash(_pod_spec(manifest)) != role_hash(_pod_spec(old)):
            errs.add("spec.template.spec", "Invalid value: the Pods' shape (containers' requests and ports, "
                     "nodeSelector, affinity, tolerations, ...) is immutable: the group's pod set")
        status = manifest.get("status")
        left = status.get("replicas") if isinstance(status, dict) else None
        if old_n == 0 and new_n > 0 and isinstance(left, int) and left > 0:
            errs.add("spec.replicas", "Forbidden: scaling down is still in progress")  # the old group's Pods remain
    if not errs:
        return None
    meta = manifest.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return ValidationError(_KIND[framework], str(meta.get("name") or "<unnamed>"), str(meta.get("namespace") or ""),
                           errs.items)
