"""``mkhub apply`` and ``mkhub create``: every object on its own, as kubectl does.

What an API server plus Kueue's webhooks would check happens here, per object,
before it is stored: the schema and Kueue's rules (``hub.api``), immutable
fields on update, and that a namespaced object's Namespace exists. An invalid
object is reported and left out; the valid ones of the same request are stored
together (one transaction). References Kueue tolerates are accepted with a
warning: a Workload or queued Job naming a missing LocalQueue waits with
QuotaReserved=False "LocalQueue NAME doesn't exist" until the queue appears (so
``apply -f dir/`` works in any file order), a LocalQueue naming a missing
ClusterQueue or a ClusterQueue naming a missing flavor stays inactive.

Objects named in the same request count as existing, whatever their order (an
invalid one does not). ``create`` refuses existing objects and fills in
``metadata.generateName``; ``apply`` refuses an object with only a
generateName, as ``kubectl apply`` does. Kinds mkhub stores without acting on
them (hub.api.passive) are kept with a warning.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from hub.api.annotations import SIM_DURATION_ANNOTATION, duration_annotation
from hub.api.config import Configuration
from hub.api.conversion import json_copy
from hub.api.errors import FieldError, FieldErrors, ValidationError
from hub.api.jobkinds import adapter_of_kind, owner_managed
from hub.api.jobkinds.framework import get_path, queue_name, set_path, suspend_path
from hub.api.jobkinds.pod import (
    MANAGED_LABEL,
    ROLE_HASH_ANNOTATION,
    Pod,
    default_at_creation,
    manages_pod,
    read_pod,
)
from hub.api.jobkinds.serving import manages_pod_of, parent_framework
from hub.api.meta import format_time, read_meta
from hub.api.others import QUEUE_NAME_LABEL
from hub.api.queues import RESOURCE_IN_USE_FINALIZER, ClusterQueue, LocalQueue
from hub.api.reader import Reader
from hub.api.registry import KINDS, ApiObject, object_ref, parse_object, resolve_kind, validate_update
from hub.api.workload import Workload
from hub.controllers.handoff import ParsedObjects
from hub.controllers.jobs import is_job_kind
from hub.store.interface import (
    GENERATE_NAME_ATTEMPTS,
    Conflict,
    NotFound,
    Object,
    ObjectKey,
    Store,
    create_each,
    generated_name,
    needs_generated_name,
)
from hub.store.sqlite_reads import KindReads

from .field_check import STRICT, check_unknown_fields
from .manifests import ManifestError, read_documents
from .naming import resource_name
from .parent_marks import FRAMEWORK_OF, mark_parent, unmanaged_warning

DEFAULT_NAMESPACE = "default"
# Metadata the server owns; a manifest's values are ignored, as the API server does.
_SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "deletionTimestamp", "managedFields")

CREATED, CONFIGURED, UNCHANGED = "created", "configured", "unchanged"


@dataclass(slots=True)
class Result:
    kind: str
    namespace: str
    name: str
    action: str = ""
    error: str = ""
    warning: str = ""
    invalid: ValidationError | None = None  # the error as fields (for the Kubernetes API's causes)


@dataclass(slots=True)
class Outcome:
    results: list[Result] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    rejected: bool = False  # at least one object failed (the others were stored)


class _DryRun(Exception):
    """Raised inside a savepoint to undo a dry run's writes."""


@dataclass(slots=True)
class _Planned:
    key: ObjectKey
    obj: ApiObject
    manifest: Object  # what will be stored
    result: Result
    stored: Object | None = None  # what the store returned for a create


def _ref(kind: str, namespace: str, name: str) -> str:
    return f'{kind} "{namespace}/{name}"' if namespace else f'{kind} "{name}"'


def _field_error(obj: ApiObject, path: str, value: object, reason: str) -> ValidationError:
    return ValidationError(obj.kind, obj.meta.name, obj.meta.namespace, [FieldError(path, reason, value, True)])


class Applier:
    """Validates and stores manifests; safe to call from any thread (the store serialises writers)."""

    def __init__(
        self,
        store: Store,
        *,
        partial_admission: bool = True,
        clock: Callable[[], float] = time.time,
        suspend_queued_jobs: bool = True,
        handoff: ParsedObjects | None = None,
        pod_webhook: Configuration | None = None,
    ) -> None:
        self.store = store
        # Kueue's pod webhook, with the hub's Configuration: a managed Pod is created gated (the
        # framework "pod" enabled). None where a real webhook does it (the dev-cluster).
        self.pod_webhook = pod_webhook
        # Kueue's webhook mutation (a queued Job is created suspended, then the hub owns the flag).
        # Off where a real webhook does it (mkhub dev-cluster calls the hub's, hub.service.webhook).
        self.suspend_queued_jobs = suspend_queued_jobs
        self.handoff = handoff  # the reconciler's: new Workloads' parses, so it need not parse them again
        self._known: dict[ObjectKey, bool] = {}  # existence looked up during one request (under the store's lock)
        self._namespaces = KindReads(store, "Namespace")  # read again only after a Namespace changed
        self.partial_admission = partial_admission
        self.clock = clock

    def apply(
        self,
        text: str,
        *,
        default_namespace: str = "",
        source: str = "",
        dry_run: bool = False,
        create: bool = False,
        received: float | None = None,
        field_validation: str = STRICT,
    ) -> Outcome:
        """``received``: when the request arrived; new objects' creationTimestamp (default: now).
        Stamping at receipt keeps queue order equal to arrival order however long parsing waits.
        ``field_validation``: Strict, Warn or Ignore, for unknown fields (hub.service.field_check)."""
        outcome = Outcome()
        created_at = self.clock() if received is None else received
        try:
            docs = read_documents(text, source)
        except ManifestError as exc:
            outcome.results.append(Result("", "", "", error=str(exc)))
            outcome.rejected = True
            return outcome
        # Checks against the store and the writes share one transaction: nobody can
        # delete a Namespace between our check and our write.
        with self.store.batch():
            self._known = {}
            planned: dict[ObjectKey, _Planned] = {}
            for doc in docs:
                # read_documents refused the request if any of it was nested too deep
                item = self._parse(doc.manifest, default_namespace or DEFAULT_NAMESPACE, outcome, create, planned, True,
                                   field_validation)
                if item is not None:
                    if item.key in planned and not create:
                        planned[item.key].result.action = "superseded"  # a later document wins, as with kubectl
                    planned[item.key] = item
            outcome.results = [r for r in outcome.results if r.action != "superseded"]
            existing = {key: self.store.get(*key) for key in planned}
            # Namespaces first: whether one is valid decides for the objects inside it.
            for namespaces in (True, False):
                valid = {k: v for k, v in planned.items() if not v.result.error}
                for item in planned.values():
                    if (item.key.kind == "Namespace") == namespaces:
                        self._check(item, valid, existing.get(item.key), outcome, create, source, created_at)
            good = [item for item in planned.values() if not item.result.error]
            try:
                with self.store.batch():  # a savepoint: a dry run writes, sees what changed, and undoes it
                    self._write_all(good, existing)
                    if dry_run:
                        raise _DryRun
            except _DryRun:
                for item in good:
                    item.result.action = f"{item.result.action} (dry run)"
                good = []
        if self.handoff is not None:  # committed: the resourceVersions are final
            leave_parsed(self.handoff, good)
        outcome.rejected = any(r.error for r in outcome.results)
        return outcome

    def admit(self, manifest: Object, current: Object | None, *, owned: bool = False) -> tuple[Object, list[str]]:
        """One object written through the Kubernetes API (hub.kubeapi): the checks of ``apply``
        (schema, Kueue's rules, immutable fields, the namespace) and its mutations (a queued Job is
        suspended, a new ClusterQueue gets its finalizer, generateName is filled in). Returns what to
        store and the warnings; raises :class:`ValidationError`. The caller runs it inside the store
        batch that writes. ``owned``: the caller gives ``manifest`` up, to be edited in place and
        returned (hub.kubeapi's writer, on its own copy: a deep copy less per write)."""
        self._known = {}
        outcome = Outcome()
        # _parse edits in place (apply's documents are its own); the caller's manifest is not, unless
        # owned. The parsed object is only checked, never kept: what is stored may share its maps.
        item = self._parse(manifest if owned else json_copy(manifest), DEFAULT_NAMESPACE, outcome, current is None, {}, keep_parsed=False)
        result = outcome.results[-1]
        if item is None:
            raise result.invalid or ValidationError(result.kind, result.name, result.namespace, [])
        self._check(item, {}, current, outcome, False, "", self.clock(), keep_server_meta=False)
        if result.invalid is not None:
            raise result.invalid
        return item.manifest, outcome.warnings

    # --- step 1: each document on its own

    def _parse(
        self,
        manifest: Any,
        namespace: str,
        outcome: Outcome,
        create: bool,
        planned: dict[ObjectKey, _Planned],
        depth_checked: bool = False,
        field_validation: str = "",  # empty: checked by the caller (hub.kubeapi)
        keep_parsed: bool = True,  # False: the parsed object is dropped after the checks (admit)
    ) -> _Planned | None:
        kind, ns, name = object_ref(manifest) if isinstance(manifest, dict) else ("<unknown>", "", "<unnamed>")
        result = Result(kind, ns, name)
        outcome.results.append(result)
        if isinstance(manifest, dict):
            # The documents were parsed for this request alone: edited in place, not copied.
            if manifest.get("kind") != "Node":  # a Node is created with its status, as a kubelet registers it
                manifest.pop("status", None)  # status belongs to the hub (a subresource in Kubernetes)
            meta = manifest.get("metadata")
            if isinstance(meta, dict):
                for f in _SERVER_FIELDS:
                    meta.pop(f, None)
            if field_validation:
                error, warnings = check_unknown_fields(manifest, field_validation, _ref(kind, ns, name))
                outcome.warnings.extend(warnings)
                if error:
                    result.error = error
                    return None
            if needs_generated_name(manifest):
                base = str(manifest["metadata"]["generateName"])
                if not create:
                    result.name = base
                    result.error = f"from {base}: cannot use generate name with apply"
                    return None
                result.name = manifest["metadata"]["name"] = self._free_name(manifest, base, namespace, planned)
        try:
            obj = parse_object(
                manifest,
                default_namespace=namespace,
                partial_admission=self.partial_admission,
                depth_checked=depth_checked,
                owned=True,  # converted in place: the one copy is what gets stored, below
            )
        except ValidationError as exc:
            result.invalid = exc
            result.error = str(exc)
            return None
        info = KINDS[obj.kind]
        # In v1beta2 form now. apply hands obj on (leave_parsed): a copy that shares nothing with it.
        stored = json_copy(manifest) if keep_parsed else manifest
        meta = stored.setdefault("metadata", {})
        if info.namespaced:
            meta["namespace"] = obj.meta.namespace
        else:
            meta.pop("namespace", None)  # ignored for cluster-scoped objects, as Kubernetes does
        result.namespace = obj.meta.namespace
        result.name = obj.meta.name
        key = ObjectKey(obj.kind, obj.meta.namespace, obj.meta.name)
        return _Planned(key, obj, stored, result)

    def _free_name(self, manifest: dict[str, Any], base: str, namespace: str, planned: dict[ObjectKey, _Planned]) -> str:
        """Kubernetes' generateName: base plus 5 random characters, retried while the name is taken."""
        info = resolve_kind(str(manifest.get("kind") or ""))
        ns = (str(manifest["metadata"].get("namespace") or namespace)) if info is not None and info.namespaced else ""
        kind = info.kind if info is not None else str(manifest.get("kind"))
        name = generated_name(base)
        for _ in range(GENERATE_NAME_ATTEMPTS):
            key = ObjectKey(kind, ns, name)
            if key not in planned and self.store.get(*key) is None:
                break
            name = generated_name(base)
        return name

    # --- step 2: against what exists (in the store or in this request)

    def _exists(self, key: ObjectKey, planned: dict[ObjectKey, _Planned]) -> bool:
        if key in planned:
            return True
        # A batch of workloads names the same few Namespaces and LocalQueues: look each up once
        # (the answer cannot change inside the request's transaction).
        known = self._known.get(key)
        if known is None:
            found = self._namespaces.get("", key.name) if key.kind == "Namespace" else self.store.get(*key)
            known = self._known[key] = found is not None
        return known

    def _check(
        self,
        item: _Planned,
        planned: dict[ObjectKey, _Planned],
        current: Object | None,
        outcome: Outcome,
        create: bool,
        source: str,
        created_at: float,
        keep_server_meta: bool = True,
    ) -> None:
        obj, result = item.obj, item.result
        ns = obj.meta.namespace
        info = KINDS[obj.kind]
        if create and current is not None:
            where = f' when creating "{source}"' if source and source != "<stdin>" else " when creating"
            result.error = f'Error from server (AlreadyExists): error{where}: {resource_name(info)} "{obj.meta.name}" already exists'
            return
        if info.namespaced and not self._exists(ObjectKey("Namespace", "", ns), planned):
            result.invalid = _field_error(obj, "metadata.namespace", ns, f'namespace "{ns}" not found')
            result.error = str(result.invalid)
            return
        error = self._check_references(obj, planned, outcome.warnings)
        if error is not None:
            result.invalid = error
            result.error = str(error)
            return
        if info.passive_note:
            outcome.warnings.append(
                f"{_ref(obj.kind, ns, obj.meta.name)} is stored, but mkhub does not act on {obj.kind} ({info.passive_note})"
            )
        meta = item.manifest.setdefault("metadata", {})
        if current is not None:
            # Only the new object is validated, as kube-apiserver does; the stored one is parsed only
            # for a kind with update rules (not a Job, an Event...): a copy and a parse less per write.
            try:
                if info.validate_update is not None:
                    old = parse_object(current, partial_admission=self.partial_admission)
                    if isinstance(old, Workload) and isinstance(obj, Workload):
                        obj.status = old.status
                    validate_update(old, obj)
            except ValidationError as exc:
                result.invalid = exc
                result.error = str(exc)
                return
            meta["resourceVersion"] = current["metadata"]["resourceVersion"]
            # What the server and controllers put on the object stays unless the manifest says otherwise
            # (as kubectl apply's merge; a Kubernetes API update replaces the whole object instead).
            for kept in ("finalizers", "ownerReferences") if keep_server_meta else ():
                if kept not in meta and current["metadata"].get(kept):
                    meta[kept] = list(current["metadata"][kept])
            if current["metadata"].get("deletionTimestamp"):
                meta["deletionTimestamp"] = current["metadata"]["deletionTimestamp"]
        else:
            # Sub-second creation times keep the queue order of a restarted hub equal to arrival order.
            meta["creationTimestamp"] = format_time(created_at)
            # Kueue's controller puts the finalizer on; here the hub's apply does. Through the Kubernetes API
            # (admit) it is left out: a store without the hub's engine (dev-cluster) would never remove it.
            if isinstance(obj, ClusterQueue) and keep_server_meta:
                finalizers = list(meta.get("finalizers") or [])
                if RESOURCE_IN_USE_FINALIZER not in finalizers:
                    meta["finalizers"] = [*finalizers, RESOURCE_IN_USE_FINALIZER]
        if is_job_kind(obj) and queue_name(obj) and self.suspend_queued_jobs:
            # Kueue's webhook suspends a queued Job (JobSet...); from then on the hub owns the flag.
            path = suspend_path(adapter_of_kind(obj.kind))  # spec.suspend, a Kubeflow job's spec.runPolicy.suspend...
            stored = get_path(current, path) if current is not None else None
            set_path(item.manifest, path, True if stored is None else stored)
        if self.pod_webhook is not None and obj.kind in FRAMEWORK_OF:
            self._mark_parent(item, outcome.warnings)
        if isinstance(obj, Pod) and current is not None and keep_server_meta:
            keep_kueue_marks(item.manifest, current)
            item.obj = read_pod(item.manifest)
        if isinstance(obj, Pod) and current is None and self._webhook_manages(obj):
            # Kueue's pod webhook: the managed label and finalizer, the scheduling gate, the role hash.
            item.manifest = default_at_creation(item.manifest)
            item.obj = read_pod(item.manifest)

    def _mark_parent(self, item: _Planned, warnings: list[str]) -> None:
        """Kueue's Deployment, StatefulSet and LeaderWorkerSet webhooks, for the embedded hub
        (hub.service.parent_marks); a warning when its Pods will never run."""
        config = self.pod_webhook
        assert config is not None
        manifest, ns = item.manifest, item.obj.meta.namespace
        item.manifest = mark_parent(config, manifest, self._namespace_labels(ns))
        if item.manifest is manifest:
            warning = unmanaged_warning(config, manifest, _ref(item.obj.kind, ns, item.obj.meta.name))
            if warning is not None:
                warnings.append(warning)

    def _namespace_labels(self, namespace: str) -> dict[str, str] | None:
        ns = self.store.get("Namespace", "", namespace)
        return ((ns or {}).get("metadata") or {}).get("labels") or {} if ns is not None else None

    def _webhook_manages(self, pod: Pod) -> bool:
        config = self.pod_webhook
        if config is None:
            return False
        if parent_framework(pod.meta.annotations) is not None:  # its parent's webhook decided (Kueue's pod webhook)
            return manages_pod_of(config, pod.meta.annotations)
        ns = self.store.get("Namespace", "", pod.meta.namespace)
        labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
        return manages_pod(config, pod, labels if ns is not None else None, owner_managed(config, pod.meta.owner_references))

    def _check_references(
        self, obj: ApiObject, planned: dict[ObjectKey, _Planned], warnings: list[str]
    ) -> ValidationError | None:
        ns = obj.meta.namespace
        ref = _ref(obj.kind, ns, obj.meta.name)
        is_job = is_job_kind(obj)
        if isinstance(obj, Workload) or is_job:
            try:
                duration_annotation(obj.meta.annotations)
            except ValueError as exc:
                raw = obj.meta.annotations.get(SIM_DURATION_ANNOTATION)
                return _field_error(obj, f"metadata.annotations[{SIM_DURATION_ANNOTATION}]", raw, f"not a duration: {exc}")
        if isinstance(obj, Workload) or is_job:
            queue = obj.queue_name if isinstance(obj, Workload) else queue_name(obj)
            if not queue:
                if isinstance(obj, Workload):
                    warnings.append(f"{ref} has no spec.queueName: no ClusterQueue will ever admit it")
                else:
                    warnings.append(f"{ref} has no {QUEUE_NAME_LABEL} label: Kueue does not manage it and mkhub will not run it")
            elif not self._exists(ObjectKey("LocalQueue", ns, queue), planned):
                warnings.append(
                    f'{ref}: LocalQueue "{ns}/{queue}" not found; it waits '
                    f"(QuotaReserved=False, \"LocalQueue {queue} doesn't exist\") until the LocalQueue exists"
                )
        elif isinstance(obj, LocalQueue):
            if not self._exists(ObjectKey("ClusterQueue", "", obj.cluster_queue), planned):
                warnings.append(f'{ref}: ClusterQueue "{obj.cluster_queue}" not found; the LocalQueue stays inactive until it exists')
        elif isinstance(obj, ClusterQueue):
            flavors = sorted({f.name for g in obj.resource_groups for f in g.flavors})
            missing = [f for f in flavors if not self._exists(ObjectKey("ResourceFlavor", "", f), planned)]
            if missing:
                warnings.append(f"{ref}: ResourceFlavor(s) {', '.join(missing)} not found; the ClusterQueue stays inactive until they exist")
        return None

    # --- step 3: write

    def _write_all(self, items: list[_Planned], existing: dict[ObjectKey, Object | None]) -> None:
        """Every write in request order; each run of new objects in one call (create_each)."""
        for is_new, group in groupby(items, key=lambda item: existing.get(item.key) is None):
            run = list(group)
            if not is_new:
                for item in run:
                    current = existing[item.key]
                    assert current is not None  # what the group is keyed on
                    self._update(item, current)
                continue
            for made, out in zip(run, create_each(self.store, [m.manifest for m in run]), strict=True):
                if isinstance(out, BaseException):
                    made.result.error = str(out)
                    raise out  # cannot happen inside our transaction (the checks saw no such object)
                made.stored = out
                made.result.name = out["metadata"]["name"]
                made.result.action = CREATED

    def _update(self, item: _Planned, current: Object) -> None:
        try:
            out = self.store.update(item.manifest)
            status = item.manifest.get("status")
            if item.manifest.get("kind") == "Node" and status is not None and status != out.get("status"):
                # The embedded hub has no kubelet: an applied Node's status (Ready, allocatable) is what it reports.
                out = self.store.update_status({**out, "status": status})
        except (NotFound, Conflict) as exc:  # cannot happen inside our transaction; say so if it does
            item.result.error = str(exc)
            raise
        same = out["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]
        item.result.action = UNCHANGED if same else CONFIGURED


def keep_kueue_marks(manifest: Object, current: Object) -> None:
    """What Kueue's pod webhook and controller put on a stored Pod stays when a user re-applies its
    manifest (kubectl apply's merge keeps fields it did not set): the managed label, the role hash
    and the scheduling gates, unless the manifest says otherwise."""
    meta, old_meta = manifest.setdefault("metadata", {}), current.get("metadata") or {}
    for part, key in (("labels", MANAGED_LABEL), ("annotations", ROLE_HASH_ANNOTATION)):
        value = (old_meta.get(part) or {}).get(key)
        if value is not None and key not in (meta.get(part) or {}):
            meta[part] = {**(meta.get(part) or {}), key: value}
    gates = (current.get("spec") or {}).get("schedulingGates")
    spec = manifest.setdefault("spec", {})
    if gates and "schedulingGates" not in spec:
        spec["schedulingGates"] = gates


def leave_parsed(handoff: ParsedObjects, items: list[_Planned]) -> None:
    """New Workloads, parsed, with the metadata the store set (uid, creationTimestamp,
    resourceVersion, generation) read from what it stored: the reconciler's own parse of the
    stored manifest would give exactly this object."""
    for item in items:
        obj, out = item.obj, item.stored
        if out is None or not isinstance(obj, Workload):
            continue
        errors = FieldErrors()
        meta = read_meta(Reader(out, "", errors), namespaced=True)
        if errors:
            continue
        obj.meta = meta
        handoff.leave(int(meta.resource_version), item.key, obj)


def ensure_namespace(store: Store, name: str = DEFAULT_NAMESPACE) -> bool:
    """Create a Namespace unless it exists (the hub's ``default``, as every cluster has one)."""
    if store.get("Namespace", "", name) is not None:
        return False
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return True
