"""kube-apiserver's write rules for the built-in kinds the API server serves, in tables by kind:
update rules (old object against new), the few checks every create and update meets beyond the
kind's schema, and what a kind's strategy does to a write before it is validated.

A write the dev-cluster accepts and a real API server refuses passes every test here and
fails on a cluster, so each rule below is kube-apiserver's (pkg/apis/core/validation,
pkg/apis/apps/validation, pkg/registry/.../strategy.go), with its field paths and words:

- ``v1`` Pod (ValidatePodUpdate): the spec is immutable except ``containers[*].image`` and
  ``initContainers[*].image`` (never empty, no surrounding spaces; containers may not be added
  or removed), ``activeDeadlineSeconds`` (set once, then only lowered, never unset),
  ``tolerations`` (additions; an existing one may change only its ``tolerationSeconds``),
  ``schedulingGates`` (removals only), ``terminationGracePeriodSeconds`` (to 1 when it was
  negative) and, while the pod is gated, additions to ``nodeSelector`` and to its required node
  affinity's terms (or any node affinity where it had no required terms). Status writes
  (ValidatePodStatusUpdate): ``status.qosClass`` is immutable and a terminated container of a
  pod that will not restart it stays terminated.
- ``v1`` ConfigMap and Secret, on every write: data keys are valid file names, in one bag only,
  with at most 1 MiB of values. With ``immutable: true``: ``data``/``binaryData`` are frozen and
  ``immutable`` may not be unset; a Secret's ``type`` never changes, and its ``stringData`` is
  merged into ``data`` on every write (:func:`prepare_write`), so it cannot slip past the freeze.
- ``v1`` Service: once set, the primary cluster IP and IP family never change (unless the
  Service is or becomes ExternalName), nor a LoadBalancer's ``loadBalancerClass``; an update
  that omits ``clusterIP``/``clusterIPs`` keeps them, as the Service strategy copies allocated
  values before validating (:func:`prepare_update`).
- ``apps/v1`` Deployment: ``spec.selector`` is immutable; on every write (:func:`object_errors`)
  the rules it shares with ReplicaSets and StatefulSets (:mod:`hub.kubeapi.appsrules`, which
  also holds CronJob, PriorityClass and Pod-create rules).
- ``coordination.k8s.io/v1`` Lease: on every write, ``leaseDurationSeconds`` above 0 and
  ``leaseTransitions`` not negative.
- ``v1`` Event with an ``eventTime`` (a new-style Event): only ``series`` may change.
- ``v1`` Namespace status: ``phase`` is ``Active`` unless the Namespace is being deleted,
  then ``Terminating``.
- ``batch/v1`` Job: :mod:`hub.kubeapi.jobrules`.
- Every kind's metadata (:func:`meta_errors`): the uid never changes; a terminating object gains no
  finalizer.

Each refusal is a :class:`FieldError`; the caller answers 422 Invalid.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from hub.api.errors import FieldError

from . import appsrules, jobrules
from .jobrules import IMMUTABLE

Obj = Mapping[str, Any]
Rule = Callable[[Obj, Obj], list[FieldError]]

_POD_UPDATABLE = ",".join((
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
))
_FROZEN = "Forbidden: field is immutable when `immutable` is set"
_MAX_INT32 = 2**31 - 1


def _map(obj: Obj, key: str) -> dict[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _items(node: Mapping[str, Any], key: str) -> list[Any]:
    value = node.get(key)
    return value if isinstance(value, list) else []


_normal = jobrules._normal  # Go's zero values (empty, null, absent) compare equal


# ------------------------------------------------------------------ Pod


def _container_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any], key: str) -> tuple[list[FieldError], bool]:
    """ValidateContainerUpdates: images only; True when a container was added or removed (stop there)."""
    news = _items(new_spec, key)
    if len(news) != len(_items(old_spec, key)):
        return [FieldError(f"spec.{key}", "Forbidden: pod updates may not add or remove containers")], True
    errs: list[FieldError] = []
    for i, container in enumerate(news):
        image = container.get("image") if isinstance(container, dict) else None
        if not image:
            errs.append(FieldError(f"spec.{key}[{i}].image", "Required value"))
        elif isinstance(image, str) and image.strip() != image:
            errs.append(FieldError(f"spec.{key}[{i}].image", "must not have leading or trailing whitespace", image, True))
    return errs, False


def _deadline_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> list[FieldError]:
    path = "spec.activeDeadlineSeconds"
    old, new = old_spec.get("activeDeadlineSeconds"), new_spec.get("activeDeadlineSeconds")
    if new is None:
        return [] if old is None else [FieldError(path, "must not update from a positive integer to nil value", None, True)]
    if not isinstance(new, int) or isinstance(new, bool) or not 0 <= new <= _MAX_INT32:
        return [FieldError(path, f"must be between 0 and {_MAX_INT32}, inclusive", new, True)]
    if isinstance(old, int) and old < new:
        return [FieldError(path, "must be less than or equal to previous value", new, True)]
    return []


def _toleration_key(toleration: Any) -> Any:
    if not isinstance(toleration, dict):
        return toleration
    return _normal({k: v for k, v in toleration.items() if k != "tolerationSeconds"})


def _toleration_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> list[FieldError]:
    new = [_toleration_key(t) for t in _items(new_spec, "tolerations")]
    for old in _items(old_spec, "tolerations"):
        if _toleration_key(old) not in new:
            return [FieldError("spec.tolerations", "Forbidden: existing toleration can not be modified except its tolerationSeconds")]
    return []


def _gate_names(spec: Mapping[str, Any]) -> list[Any]:
    return [g.get("name") if isinstance(g, dict) else g for g in _items(spec, "schedulingGates")]


def _gate_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> list[FieldError]:
    old = set(map(str, _gate_names(old_spec)))
    return [
        FieldError(f"spec.schedulingGates[{i}].name", f"Forbidden: only deletion is allowed, but found new scheduling gate '{name}'")
        for i, name in enumerate(_gate_names(new_spec)) if str(name) not in old
    ]


def _node_selector_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> list[FieldError]:
    old, new = _map(old_spec, "nodeSelector"), _map(new_spec, "nodeSelector")
    if any(key not in new or new[key] != value for key, value in old.items()):
        return [FieldError("spec.nodeSelector", "only additions to spec.nodeSelector are allowed (no mutations or deletions)", new, True)]
    return []


def _only_additions(old_term: Any, new_term: Any) -> bool:
    """validateNodeSelectorTermHasOnlyAdditions: the old requirements are a prefix of the new ones."""
    old_term = old_term if isinstance(old_term, dict) else {}
    new_term = new_term if isinstance(new_term, dict) else {}
    pairs = [(_items(old_term, k), _items(new_term, k)) for k in ("matchExpressions", "matchFields")]
    if not any(old for old, _ in pairs) and any(new for _, new in pairs):
        return False
    return all(not old or (len(new) >= len(old) and _normal(new[:len(old)]) == _normal(old)) for old, new in pairs)


def _node_affinity_errors(old_spec: Mapping[str, Any], munged: dict[str, Any]) -> list[FieldError]:
    """validateNodeAffinityMutation for a gated pod; ``munged`` then takes the old node affinity."""
    old_affinity, new_affinity = _map(old_spec, "affinity"), _map(munged, "affinity")
    old_na, new_na = _map(old_affinity, "nodeAffinity"), _map(new_affinity, "nodeAffinity")
    if _normal(old_na) == _normal(new_na):
        return []
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    path = f"spec.affinity.nodeAffinity.{required}.nodeSelectorTerms"
    errs: list[FieldError] = []
    if isinstance(old_na.get(required), dict):
        old_terms, new_terms = _items(old_na[required], "nodeSelectorTerms"), _items(_map(new_na, required), "nodeSelectorTerms")
        if old_terms and len(old_terms) != len(new_terms):
            errs.append(FieldError(path, "no additions/deletions to non-empty NodeSelectorTerms list are allowed", new_terms, True))
        else:
            errs.extend(
                FieldError(f"{path}[{i}]", "only additions are allowed (no mutations or deletions)", new, True)
                for i, (old, new) in enumerate(zip(old_terms, new_terms, strict=True)) if not _only_additions(old, new)
            )
    rest = {k: v for k, v in new_affinity.items() if k != "nodeAffinity"}
    if "nodeAffinity" in old_affinity:
        rest["nodeAffinity"] = copy.deepcopy(old_affinity["nodeAffinity"])
    munged["affinity"] = rest
    return errs


def pod_update_errors(stored: Obj, new: Obj) -> list[FieldError]:
    """ValidatePodUpdate's spec rules."""
    old_spec, new_spec = _map(stored, "spec"), _map(new, "spec")
    errs: list[FieldError] = []
    for key in ("containers", "initContainers"):
        found, stop = _container_errors(old_spec, new_spec, key)
        errs.extend(found)
        if stop:
            return errs
    deadline = _deadline_errors(old_spec, new_spec)
    errs.extend(deadline)
    if deadline and new_spec.get("activeDeadlineSeconds") is not None:
        return errs  # kube-apiserver stops at a bad deadline value
    errs.extend(_toleration_errors(old_spec, new_spec))
    errs.extend(_gate_errors(old_spec, new_spec))
    if _normal(old_spec) == _normal(new_spec):
        return errs
    # The updatable fields take their old values; whatever differs after that is forbidden.
    munged = copy.deepcopy(dict(new_spec))
    for key in ("containers", "initContainers"):
        for old_c, new_c in zip(_items(old_spec, key), _items(munged, key), strict=False):
            if isinstance(old_c, dict) and isinstance(new_c, dict):
                _copy_key(old_c, new_c, "image")
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        _copy_key(old_spec, munged, key)
    old_grace = old_spec.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if _gate_names(old_spec):  # a gated pod may gain node selectors and node affinity requirements
        if _normal(_map(old_spec, "nodeSelector")) != _normal(_map(munged, "nodeSelector")):
            errs.extend(_node_selector_errors(old_spec, munged))
            _copy_key(old_spec, munged, "nodeSelector")
        errs.extend(_node_affinity_errors(old_spec, munged))
    old_n, new_n = _normal(dict(old_spec)), _normal(munged)
    if old_n != new_n:
        changed = sorted(k for k in set(old_n) | set(new_n) if old_n.get(k) != new_n.get(k))
        errs.append(FieldError(
            "spec",
            f"Forbidden: pod updates may not change fields other than {_POD_UPDATABLE} "
            f"(changed: {', '.join('spec.' + k for k in changed)})",
        ))
    return errs


def _copy_key(source: Mapping[str, Any], target: dict[str, Any], key: str) -> None:
    if key in source:
        target[key] = copy.deepcopy(source[key])
    else:
        target.pop(key, None)


def pod_status_update_errors(stored: Obj, new: Obj) -> list[FieldError]:
    """ValidatePodStatusUpdate: the QoS class is fixed; a container that will not restart stays terminated."""
    old_status, new_status = _map(stored, "status"), _map(new, "status")
    errs: list[FieldError] = []
    if old_status.get("qosClass") != new_status.get("qosClass"):
        errs.append(FieldError("status.qosClass", IMMUTABLE, new_status.get("qosClass"), True))
    policy = _map(stored, "spec").get("restartPolicy") or "Always"
    restartable_init = {
        c.get("name") for c in _items(_map(stored, "spec"), "initContainers")
        if isinstance(c, dict) and c.get("restartPolicy") == "Always"
    }
    for key in ("containerStatuses", "initContainerStatuses"):
        if policy == "Always" and key == "containerStatuses":
            continue
        new_by_name = {s.get("name"): s for s in _items(new_status, key) if isinstance(s, dict)}
        for i, old in enumerate(_items(old_status, key)):
            if not isinstance(old, dict) or (key == "initContainerStatuses" and policy == "Always"):
                continue
            terminated = _map(_map(old, "state"), "terminated")
            if not terminated or old.get("name") in (restartable_init if key == "initContainerStatuses" else ()):
                continue
            if terminated.get("exitCode") not in (0, None) and policy == "OnFailure":
                continue
            now = new_by_name.get(old.get("name"))
            if now is not None and not _map(_map(now, "state"), "terminated"):
                errs.append(FieldError(f"status.{key}[{i}].state", "Forbidden: may not be transitioned to non-terminated state"))
    return errs


# ------------------------------------------------------------------ ConfigMap, Secret


def _frozen_errors(stored: Obj, new: Obj, keys: tuple[str, ...]) -> list[FieldError]:
    if stored.get("immutable") is not True:
        return []
    errs = [FieldError("immutable", _FROZEN)] if new.get("immutable") is not True else []
    errs.extend(FieldError(key, _FROZEN) for key in keys if _normal(_map(stored, key)) != _normal(_map(new, key)))
    return errs


def configmap_update_errors(stored: Obj, new: Obj) -> list[FieldError]:
    return _frozen_errors(stored, new, ("data", "binaryData"))


def secret_update_errors(stored: Obj, new: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    old_type, new_type = stored.get("type") or "Opaque", new.get("type") or "Opaque"
    if old_type != new_type:
        errs.append(FieldError("type", IMMUTABLE, new_type, True))
    return errs + _frozen_errors(stored, new, ("data",))


# ------------------------------------------------------------------ Service


def _needs_cluster_ip(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") != "ExternalName"


def _cluster_ips(spec: Mapping[str, Any]) -> list[Any]:
    """``clusterIPs``, or ``[clusterIP]`` as the API server normalizes a Service that sets only that."""
    ips = _items(spec, "clusterIPs")
    if ips:
        return ips
    return [spec["clusterIP"]] if spec.get("clusterIP") else []


def _prepare_service(current: Obj, new: dict[str, Any]) -> None:
    """The Service strategy's patchAllocatedValues: an update that omits the cluster IPs keeps them."""
    old_spec, new_spec = _map(current, "spec"), new.get("spec")
    if not isinstance(new_spec, dict) or not (_needs_cluster_ip(old_spec) and _needs_cluster_ip(new_spec)):
        return
    if not new_spec.get("clusterIP") and old_spec.get("clusterIP"):
        new_spec["clusterIP"] = old_spec["clusterIP"]
    if not new_spec.get("clusterIPs") and old_spec.get("clusterIPs") and new_spec.get("clusterIP") == old_spec.get("clusterIP"):
        new_spec["clusterIPs"] = copy.deepcopy(old_spec["clusterIPs"])


def service_update_errors(stored: Obj, new: Obj) -> list[FieldError]:
    """ValidateServiceUpdate's cluster IP, IP family and load balancer class rules."""
    old_spec, new_spec = _map(stored, "spec"), _map(new, "spec")
    errs: list[FieldError] = []
    if old_spec.get("type") == new_spec.get("type") == "LoadBalancer" and old_spec.get("loadBalancerClass") != new_spec.get("loadBalancerClass"):
        errs.append(FieldError("spec.loadBalancerClass", "may not change once set", new_spec.get("loadBalancerClass"), True))
    if not (_needs_cluster_ip(old_spec) and _needs_cluster_ip(new_spec)):
        return errs
    return errs + _cluster_ip_errors(old_spec, new_spec) + _ip_family_errors(old_spec, new_spec)


def _ip_family_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> list[FieldError]:
    """validateUpgradeDowngradeIPFamilies: the primary family stays; headless Services may change theirs."""
    if _cluster_ips(old_spec)[:1] == ["None"] or _cluster_ips(new_spec)[:1] == ["None"]:
        return []
    old, now = _items(old_spec, "ipFamilies"), _items(new_spec, "ipFamilies")
    path = "spec.ipFamilies[0]"
    if len(old) == len(now):
        return [FieldError(path, "may not change once set", now, True) for i, family in enumerate(old) if family != now[i]]
    if len(old) > len(now):
        errs = [FieldError(path, "primary ipFamily can not be unset", now, True)] if not _cluster_ips(new_spec) else []
        if now and now[0] != old[0]:
            errs.append(FieldError(path, "may not change once set", _cluster_ips(new_spec), True))
        policy = new_spec.get("ipFamilyPolicy")
        if len(now) == 1 and policy != "SingleStack":
            errs.append(FieldError("spec.ipFamilyPolicy", "must be set to 'SingleStack' when releasing the secondary ipFamily", policy, True))
        return errs
    if old and now[0] != old[0]:
        return [FieldError(path, "may not change once set", _cluster_ips(new_spec), True)]
    return []


def _cluster_ip_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> list[FieldError]:
    """validateUpgradeDowngradeClusterIPs: the primary IP never changes or goes; a secondary may come or go."""
    old, now = _cluster_ips(old_spec), _cluster_ips(new_spec)
    if old[:1] == ["None"] and now[:1] == ["None"]:
        return []  # headless stays headless
    path = "spec.clusterIPs[0]"
    if len(old) == len(now):
        return [FieldError(f"spec.clusterIPs[{i}]", "may not change once set", now, True) for i, ip in enumerate(old) if ip != now[i]]
    if len(old) > len(now):
        if not now:
            return [FieldError(path, "primary clusterIP can not be unset", now, True)]
        errs = [FieldError(path, "may not change once set", now, True)] if now[0] != old[0] else []
        policy = new_spec.get("ipFamilyPolicy")
        if len(now) == 1 and policy != "SingleStack":
            errs.append(FieldError("spec.ipFamilyPolicy", "must be set to 'SingleStack' when releasing the secondary clusterIP", policy, True))
        return errs
    if old and now[0] != old[0]:
        return [FieldError(path, "may not change once set", now, True)]
    return []


# ------------------------------------------------------------------ Deployment, Event, Namespace


def deployment_update_errors(stored: Obj, new: Obj) -> list[FieldError]:
    old, now = _map(stored, "spec").get("selector"), _map(new, "spec").get("selector")
    return [] if _normal(old) == _normal(now) else [FieldError("spec.selector", IMMUTABLE, now, True)]


_EVENT_FIXED = (
    "involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count", "type",
    "eventTime", "action", "related", "reportingComponent", "reportingInstance",
)


def event_update_errors(stored: Obj, new: Obj) -> list[FieldError]:
    """ValidateEventUpdate: an Event with an eventTime may change only its series (older Events anything)."""
    if not stored.get("eventTime"):
        return []
    return [
        FieldError(key, IMMUTABLE, new.get(key), True)
        for key in _EVENT_FIXED if _normal(stored.get(key)) != _normal(new.get(key))
    ]


def namespace_status_update_errors(stored: Obj, new: Obj) -> list[FieldError]:
    """ValidateNamespaceStatusUpdate: the phase follows the deletionTimestamp."""
    phase = _map(new, "status").get("phase")
    if _map(new, "metadata").get("deletionTimestamp"):
        if phase != "Terminating":
            return [FieldError("status.Phase", "may only be 'Terminating' if `deletionTimestamp` is not empty", phase, True)]
    elif phase not in (None, "", "Active"):
        return [FieldError("status.Phase", "may only be 'Active' if `deletionTimestamp` is empty", phase, True)]
    return []


# ------------------------------------------------------------------ metadata, every kind


def meta_errors(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
    """ValidateObjectMetaUpdate: a given uid must be the object's; an object being deleted gains no
    finalizer. (Other server-set fields an update sends are replaced by the stored ones.)"""
    errs: list[FieldError] = []
    uid = new.get("uid")
    if uid and uid != old.get("uid"):
        errs.append(FieldError("metadata.uid", IMMUTABLE, uid, True))
    if old.get("deletionTimestamp"):
        known = set(map(str, old.get("finalizers") or []))
        added = [str(f) for f in new.get("finalizers") or [] if str(f) not in known]
        if added:
            errs.append(FieldError(
                "metadata.finalizers",
                f"Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {json.dumps(added)}",
            ))
    return errs


# ------------------------------------------------------------------ the tables

UPDATE_RULES: dict[tuple[str, str], Rule] = {
    ("", "Pod"): pod_update_errors,
    ("", "ConfigMap"): configmap_update_errors,
    ("", "Secret"): secret_update_errors,
    ("", "Service"): service_update_errors,
    ("", "Event"): event_update_errors,
    ("apps", "Deployment"): deployment_update_errors,
    ("batch", "Job"): jobrules.update_errors,
    **appsrules.UPDATE_RULES,
}
STATUS_RULES: dict[tuple[str, str], Rule] = {
    ("", "Pod"): pod_status_update_errors,
    ("", "Namespace"): namespace_status_update_errors,
    ("batch", "Job"): jobrules.status_update_errors,
}


def prepare_write(group: str, kind: str, obj: dict[str, Any]) -> None:
    """What the kind's strategy does to every create and update (in place): a Secret's
    ``stringData`` is merged into ``data``, base64-encoded, and never stored; the defaults of
    :mod:`hub.kubeapi.appsrules`."""
    appsrules.prepare(group, kind, obj)
    if (group, kind) != ("", "Secret") or "stringData" not in obj:
        return
    plain = obj["stringData"]
    if plain is None:
        obj.pop("stringData")
        return
    if not isinstance(plain, dict) or not all(isinstance(v, str) for v in plain.values()):
        return  # the schema check names the field
    data = _map(obj, "data")
    obj["data"] = {**data, **{k: base64.b64encode(v.encode()).decode() for k, v in plain.items()}}
    obj.pop("stringData")


_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_CONFIG_KEY_MESSAGE = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
                       "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")
MAX_DATA_SIZE = 1024 * 1024  # core.MaxSecretSize, also a ConfigMap's limit


def _config_key_problems(key: str) -> list[str]:
    """IsConfigMapKey: the keys a ConfigMap's or Secret's data may have (they become file names)."""
    problems = []
    if len(key) > 253:
        problems.append("must be no more than 253 characters")
    if not _CONFIG_KEY.fullmatch(key):
        problems.append(_CONFIG_KEY_MESSAGE)
    if key in (".", ".."):
        problems.append(f"must not be '{key}'")
    elif key.startswith(".."):
        problems.append("must not start with '..'")
    return problems


def _data_errors(obj: Obj, bags: tuple[str, ...]) -> list[FieldError]:
    """ValidateConfigMap / ValidateSecret: valid keys, none in two bags, at most 1 MiB of values."""
    errs: list[FieldError] = []
    size = 0
    for bag in bags:
        others = [_map(obj, other) for other in bags if other != bag]
        for key, value in _map(obj, bag).items():
            errs.extend(FieldError(f"{bag}[{key}]", problem, key, True) for problem in _config_key_problems(str(key)))
            for other_name, other in zip((b for b in bags if b != bag), others, strict=True):
                if key in other:
                    errs.append(FieldError(f"{bag}[{key}]", f"duplicate of key present in {other_name}", key, True))
            size += len(value) if isinstance(value, str) else 0
    if size > MAX_DATA_SIZE:
        errs.append(FieldError("", f"Too long: may not be more than {MAX_DATA_SIZE} bytes"))
    return errs


def lease_errors(obj: Obj) -> list[FieldError]:
    """ValidateLeaseSpec on every create and update."""
    spec = _map(obj, "spec")
    duration, transitions = spec.get("leaseDurationSeconds"), spec.get("leaseTransitions")
    errs: list[FieldError] = []
    if isinstance(duration, int) and duration <= 0:
        errs.append(FieldError("spec.leaseDurationSeconds", "must be greater than 0", duration, True))
    if isinstance(transitions, int) and transitions < 0:
        errs.append(FieldError("spec.leaseTransitions", "must be greater than or equal to 0", transitions, True))
    return errs


OBJECT_RULES: dict[tuple[str, str], Callable[[Obj], list[FieldError]]] = {
    ("coordination.k8s.io", "Lease"): lease_errors,
    ("", "ConfigMap"): lambda obj: _data_errors(obj, ("data", "binaryData")),
    ("", "Secret"): lambda obj: _data_errors(obj, ("data",)),
    **appsrules.OBJECT_RULES,
}


def object_errors(group: str, kind: str, obj: Obj) -> list[FieldError]:
    """What kube-apiserver refuses in any create or update of ``obj``, beyond its schema."""
    rule = OBJECT_RULES.get((group, kind))
    return rule(obj) if rule is not None else []


def prepare_update(group: str, kind: str, current: Obj, new: dict[str, Any]) -> None:
    """What the kind's strategy does to an update before validation (in place)."""
    if (group, kind) == ("", "Service"):
        _prepare_service(current, new)


def update_errors(group: str, kind: str, stored: Obj, new: Obj, *, status: bool = False) -> list[FieldError]:
    """What kube-apiserver refuses in an update of ``stored`` to ``new`` (a status write when ``status``)."""
    rule = (STATUS_RULES if status else UPDATE_RULES).get((group, kind))
    return rule(stored, new) if rule is not None else []
