"""Kueue's LeaderWorkerSet integration (``pkg/controller/jobs/leaderworkerset``), on top of the pod
integration: each group of a LeaderWorkerSet (its leader and ``size - 1`` workers) is one Workload,
admitted whole, with a ``leader`` pod set (1) and a ``worker`` pod set (``size - 1``); one ``main``
pod set of ``size`` when the set has no ``leaderTemplate``.

Like Kueue's webhook, :func:`default` marks the leader and worker templates of a managed set (the
pod-suspending-parent annotation naming the framework, group-serving, queue and priority labels), so
the pod webhook gates every Pod the LWS controller makes. Kueue's reconciler then writes each Pod's
group (the group's Workload name, total count ``size``, role ``leader``/``worker``) and builds the
Workload itself; mkhub writes the group fields differently, from the templates and the Pod's own
labels: the templates carry the total count and the role, and the pod webhook names the group from
the ``leaderworkerset.sigs.k8s.io/name`` and ``group-index`` labels LWS puts on each Pod
(:func:`group_defaults`), with Kueue's Workload name for the group (:func:`group_workload_name`).
The pod integration then composes the group's Workload once its ``size`` Pods exist;
:func:`own_by_leaderworkerset` makes it the set's, as Kueue does, so the garbage collector removes
it with the set.

For a set with ``startupPolicy: LeaderReady`` (the LWS controller creates a group's workers only
once its leader runs) the hub creates each group's Workload from the set itself, before its Pods,
as Kueue's LeaderWorkerSet reconciler does for every set (:func:`group_workloads`,
:mod:`hub.controllers.lws`): the group is admitted on its leader alone and the workers join it.

Topology-aware scheduling as Kueue's webhook and reconciler set it up: each pod set's topology
request comes from its template's annotations; the worker (or ``main``) pod set indexes its Pods by
``leaderworkerset.sigs.k8s.io/worker-index`` (the leader's has no index label); and with a leader
template the workers' template gets ``kueue.x-k8s.io/pod-index-offset: "1"`` (the leader is index
0, the workers 1..size-1), unless it names a pod-set group (the group gives the workers their
offset): the topology ungater then places the workers by rank.

Not done (Kueue does): rolling-update surge groups, MultiKueue's
LeaderWorkerSet adapter (the set created in the worker, all its groups there; here each group goes
as a pod group), group Workloads made from the set for sets other than LeaderReady ones.

Pure: functions take manifests and return changed copies or a one-line :class:`ValidationError`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ..config import Configuration
from ..errors import FieldErrors, ValidationError
from ..lws_kind import LeaderWorkerSet, PodTemplate
from ..meta import ObjectMeta
from ..others import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from ..workload import (
    DEFAULT_POD_SET_NAME,
    POD_PRIORITY_CLASS_GROUP,
    POD_PRIORITY_CLASS_KIND,
    WORKLOAD_PRIORITY_CLASS_GROUP,
    WORKLOAD_PRIORITY_CLASS_KIND,
    PodSet,
    PriorityClassRef,
    Workload,
)
from .framework import Manifest, topology_request, workload_name
from .management import manages
from .parents import check_labels, mark_template, object_labels, own_by
from .pod import (
    GROUP_NAME_LABEL,
    GROUP_TOTAL_COUNT_ANNOTATION,
    MANAGED_LABEL,
    MANAGED_VALUE,
    ROLE_HASH_ANNOTATION,
    SERVING_ANNOTATION,
    SUSPENDED_BY_PARENT_ANNOTATION,
    Pod,
    role_hash,
)
from .pod_group import IS_GROUP_WORKLOAD_ANNOTATION
from .tas_ungate import POD_INDEX_OFFSET_ANNOTATION

FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"
KIND = "LeaderWorkerSet"
GROUP = "leaderworkerset.x-k8s.io"
API_VERSION = GROUP + "/v1"
WEBHOOK_PATH = "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset"
LEADER, WORKER = "leader", "worker"  # Kueue's pod-set names
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"  # 0 for the leader, 1..size-1 for workers
COMPONENT_INDEX_ANNOTATION = "kueue.x-k8s.io/component-workload-index"
POD_SET_GROUP_ANNOTATION = "kueue.x-k8s.io/podset-group-name"
MAX_REPLICAS = 1_000_000



def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def size(manifest: Manifest) -> int:
    """``spec.leaderWorkerTemplate.size``: Pods per group, 1 when unset (the CRD's default)."""
    return _int(_dict(_dict(manifest.get("spec")).get("leaderWorkerTemplate")).get("size"), 1)


def group_workload_name(lws_name: str, group_index: str, uid: str) -> str:
    """Kueue's ``GetWorkloadName``: the group's Workload, named for ``<lws>-<index>`` and the set's uid."""
    return workload_name(KIND, GROUP, f"{lws_name}-{group_index}", uid)


def managed(config: Configuration, manifest: Manifest, namespace_labels: Mapping[str, str] | None) -> bool:
    """Kueue's ``WorkloadShouldBeSuspended`` for a LeaderWorkerSet."""
    namespace = str(_dict(manifest.get("metadata")).get("namespace") or "")
    return manages(config, FRAMEWORK, object_labels(manifest).get(QUEUE_NAME_LABEL, ""), namespace, namespace_labels)


def _mark(template: dict[str, Any], own: Mapping[str, str], role: str, total: int) -> dict[str, str]:
    _, annotations = mark_template(template, own, FRAMEWORK)
    annotations[SERVING_ANNOTATION] = "true"
    annotations[GROUP_TOTAL_COUNT_ANNOTATION] = str(total)
    annotations[ROLE_HASH_ANNOTATION] = role  # the pod set the template's Pods belong to
    return annotations


def default(manifest: Manifest) -> Manifest:
    """Kueue's LeaderWorkerSet webhook defaults on a copy of a managed set: the leader template (if
    any) and the worker template marked so their Pods are gated and grouped per group index."""
    out = copy.deepcopy(manifest)
    spec = out.get("spec")
    if not isinstance(spec, dict):
        spec = out["spec"] = {}
    lwt = spec.get("leaderWorkerTemplate")
    if not isinstance(lwt, dict):
        lwt = spec["leaderWorkerTemplate"] = {}
    worker = lwt.get("workerTemplate")
    if not isinstance(worker, dict):
        worker = lwt["workerTemplate"] = {}
    own, total = object_labels(manifest), size(manifest)
    leader = lwt.get("leaderTemplate")
    if isinstance(leader, dict):
        _mark(leader, own, LEADER, total)
        annotations = _mark(worker, own, WORKER, total)
        if POD_SET_GROUP_ANNOTATION not in annotations:  # a group gives the workers their offset itself
            annotations[POD_INDEX_OFFSET_ANNOTATION] = "1"
    else:
        _mark(worker, own, DEFAULT_POD_SET_NAME, total)  # the leader is a worker-template Pod too
    return out


def validate(manifest: Manifest, old: Manifest | None, is_managed: bool) -> ValidationError | None:
    """Kueue's validating webhook of a LeaderWorkerSet (create, or update from ``old``): the queue
    name a DNS subdomain, replicas within 0..1,000,000; on update the queue name cannot change while a group is ready, nor be
    removed; the priority-class label cannot be removed, nor added while a group is ready; a
    managed set keeps its group size (Kueue's ``LWSImmutableGroupSize``: a group is one Workload)
    and its templates' Pods' shape."""
    errs = FieldErrors()
    _shape_errors(manifest, errs)
    check_labels(manifest, old, errs)
    replicas = _int(_dict(manifest.get("spec")).get("replicas"), 1)
    if replicas < 0:
        errs.invalid("spec.replicas", replicas, f"invalid LeaderWorkerSet replicas: must be >= 0, got {replicas}")
    elif replicas > MAX_REPLICAS:  # Kueue's bound: a Workload per group
        errs.invalid("spec.replicas", replicas,
                     f"invalid LeaderWorkerSet replicas: must be <= {MAX_REPLICAS}, got {replicas}")
    if old is not None and is_managed:
        if size(manifest) != size(old):
            errs.invalid("spec.leaderWorkerTemplate.size", size(manifest), "field is immutable")
        for key in ("leaderTemplate", "workerTemplate"):
            _immutable_template(_templates(manifest).get(key), _templates(old).get(key), key, errs)
    if not errs:
        return None
    meta = _dict(manifest.get("metadata"))
    return ValidationError(KIND, str(meta.get("name") or "<unnamed>"), str(meta.get("namespace") or ""), errs.items)


def _shape_errors(manifest: Manifest, errs: FieldErrors) -> None:
    """What Kueue could not even decode: refused here, not rewritten by the defaults."""
    spec = manifest.get("spec")
    if spec is not None and not isinstance(spec, dict):
        errs.invalid("spec", spec, "must be an object")
        return
    lwt = _dict(spec).get("leaderWorkerTemplate")
    if lwt is not None and not isinstance(lwt, dict):
        errs.invalid("spec.leaderWorkerTemplate", lwt, "must be an object")
        return
    for path, value in (("spec.replicas", _dict(spec).get("replicas")),
                        ("spec.leaderWorkerTemplate.size", _dict(lwt).get("size"))):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            errs.invalid(path, value, "must be an integer")
    for key in ("leaderTemplate", "workerTemplate"):
        template = _dict(lwt).get(key)
        if template is not None and not isinstance(template, dict):
            errs.invalid(f"spec.leaderWorkerTemplate.{key}", template, "must be an object")
        elif isinstance(template, dict) and template.get("metadata") is not None \
                and not isinstance(template["metadata"], dict):
            errs.invalid(f"spec.leaderWorkerTemplate.{key}.metadata", template["metadata"], "must be an object")


def _templates(manifest: Manifest) -> dict[str, Any]:
    return _dict(_dict(manifest.get("spec")).get("leaderWorkerTemplate"))


def _immutable_template(new: Any, old: Any, key: str, errs: FieldErrors) -> None:
    """Kueue's ``validateImmutablePodTemplateSpec``: a template cannot come or go, and its Pods'
    shape (the fields of the role hash, as ``ValidateImmutablePodGroupPodSpec``; an image may
    change) stays: it is the groups' pod set."""
    path = f"spec.leaderWorkerTemplate.{key}"
    if isinstance(new, dict) != isinstance(old, dict):
        errs.add(path, "Invalid value: field is immutable")
    elif isinstance(new, dict) and role_hash(_dict(new.get("spec"))) != role_hash(_dict(_dict(old).get("spec"))):
        errs.add(f"{path}.spec", "Invalid value: the Pods' shape (containers' requests and ports, nodeSelector, "
                 "affinity, tolerations, ...) is immutable: the groups' pod set")


def _lws_owner(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") and ref.get("kind") == KIND and ref.get("apiVersion") == API_VERSION:
            return ref
    return None


def group_defaults(manifest: Manifest, set_uid: Callable[[str, str], str] | None = None) -> Manifest:
    """A LeaderWorkerSet's Pod (the pod-suspending-parent annotation naming the framework) with its
    group named after its set and group index, on a copy; any other Pod unchanged. The set's uid
    is its owner reference's (the dev-cluster's LWS owns its Pods), else ``set_uid(namespace,
    name)``'s (a real LWS's Pods are its StatefulSets': the set as the hub knows it), else empty,
    as Kueue's legacy names are. The uid names the group as :func:`group_workloads` names it."""
    meta = _dict(manifest.get("metadata"))
    labels = _dict(meta.get("labels"))
    annotations = _dict(meta.get("annotations"))
    if annotations.get(SUSPENDED_BY_PARENT_ANNOTATION) != FRAMEWORK or GROUP_NAME_LABEL in labels:
        return manifest
    lws, index = labels.get(NAME_LABEL), labels.get(GROUP_INDEX_LABEL)
    if not lws or index is None:
        return manifest
    owner = _lws_owner(meta)
    if owner is not None and owner.get("name") == lws:
        uid = str(owner.get("uid") or "")
    else:
        uid = set_uid(str(meta.get("namespace") or ""), str(lws)) if set_uid is not None else ""
    out = copy.deepcopy(manifest)
    out["metadata"]["labels"][GROUP_NAME_LABEL] = group_workload_name(str(lws), str(index), uid)
    return out


def own_by_leaderworkerset(wl: Workload, pod: Pod) -> None:
    """A group's Workload is its LeaderWorkerSet's, as Kueue's reconciler makes it (owner reference,
    job-uid label, owner and group-index annotations), not its Pods': it stays while the set
    re-creates a group's Pods, and goes with the set. Other Workloads, and a Pod no set owns, are
    left alone."""
    if pod.meta.annotations.get(SUSPENDED_BY_PARENT_ANNOTATION) != FRAMEWORK:
        return
    ref = _lws_owner({"ownerReferences": pod.meta.owner_references})
    if ref is None:
        return
    own_by(wl, ref, {COMPONENT_INDEX_ANNOTATION: pod.meta.labels.get(GROUP_INDEX_LABEL, "")})


# --- the group Workloads, from the set (Kueue's LeaderWorkerSet reconciler) ---------------------------

def marked(lws: LeaderWorkerSet) -> bool:
    """The set's webhook marked it (its worker template carries Kueue's managed label): Kueue's
    webhook decided it is managed, so its groups are queued."""
    labels = _dict(_dict(lws.worker.template.get("metadata")).get("labels"))
    return labels.get(MANAGED_LABEL) == MANAGED_VALUE


def _pod_set(name: str, count: int, template: PodTemplate) -> PodSet:
    index_label = None if name == LEADER else WORKER_INDEX_LABEL
    return PodSet(name=name, count=count, template=copy.deepcopy(template.template), spec=template.spec,
                  topology_request=topology_request(template.template, index_label))


def index_pods_by_worker_index(wl: Workload, pod: Pod) -> None:
    """A group's Workload composed from a LeaderWorkerSet's Pods indexes them as Kueue's reconciler's
    does: the worker (or ``main``) pod set's topology request by ``worker-index``, the leader's by
    none. Other Workloads are left alone."""
    if pod.meta.annotations.get(SUSPENDED_BY_PARENT_ANNOTATION) != FRAMEWORK:
        return
    pod_sets = []
    for ps in wl.pod_sets:
        request = ps.topology_request
        if request is not None:
            request = {k: v for k, v in request.items() if k != "podIndexLabel"}
            if ps.name != LEADER:
                request["podIndexLabel"] = WORKER_INDEX_LABEL
            ps = replace(ps, topology_request=request)
        pod_sets.append(ps)
    wl.pod_sets = tuple(pod_sets)


def group_pod_sets(lws: LeaderWorkerSet) -> list[PodSet]:
    """Kueue's ``podSets``: ``leader`` (1) and ``worker`` (size - 1), or ``main`` (size) without a
    leader template; the names the webhook wrote as each template's role."""
    if lws.leader is None:
        return [_pod_set(DEFAULT_POD_SET_NAME, lws.size, lws.worker)]
    return [_pod_set(LEADER, 1, lws.leader), _pod_set(WORKER, lws.size - 1, lws.worker)]


def _priority(lws: LeaderWorkerSet) -> PriorityClassRef | None:
    """The set's ``kueue.x-k8s.io/priority-class`` label, else the first template's PriorityClass."""
    wpc = lws.meta.labels.get(PRIORITY_CLASS_LABEL)
    if wpc:
        return PriorityClassRef(WORKLOAD_PRIORITY_CLASS_GROUP, WORKLOAD_PRIORITY_CLASS_KIND, wpc)
    for template in (lws.leader, lws.worker):
        if template is not None and template.spec.priority_class_name:
            return PriorityClassRef(POD_PRIORITY_CLASS_GROUP, POD_PRIORITY_CLASS_KIND, template.spec.priority_class_name)
    return None


def group_workloads(lws: LeaderWorkerSet, now: float) -> list[Workload]:
    """The Workload of each group ``0 <= i < replicas`` of a marked set, named as its Pods' group
    (:func:`group_defaults`, the set's uid: the dev-cluster's LWS owns its Pods), owned by the set
    with the group index annotation, queued in the set's queue."""
    ref = {"apiVersion": API_VERSION, "kind": KIND, "name": lws.meta.name, "uid": lws.meta.uid}
    out = []
    for i in range(lws.replicas):
        wl = Workload(
            meta=ObjectMeta(name=group_workload_name(lws.meta.name, str(i), lws.meta.uid), namespace=lws.meta.namespace,
                            annotations={IS_GROUP_WORKLOAD_ANNOTATION: "true"}, creation_timestamp=now),
            pod_sets=tuple(group_pod_sets(lws)),
            queue_name=lws.meta.labels.get(QUEUE_NAME_LABEL, ""),
            priority_class_ref=_priority(lws),
            active=True,
        )
        own_by(wl, ref, {COMPONENT_INDEX_ANNOTATION: str(i)})
        out.append(wl)
    return out
