"""``mkhub apply``: validate every document, then store all of them or none.

What an API server plus Kueue's webhooks would check happens here, before
anything is stored: the schema and Kueue's rules (``hub.api``), immutable
fields on update, that a namespaced object's Namespace exists, and, stricter
than Kueue, that a Workload's (or queued Job's) LocalQueue exists: with a
single hub there is no controller to create it later, and a typo there would
otherwise leave the workload pending forever. References Kueue tolerates
(a LocalQueue naming a missing ClusterQueue, a ClusterQueue naming a missing
flavor) are accepted with a warning, as the queue then reports itself inactive.

Objects named in the same request count as existing, whatever their order.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hub.api.annotations import SIM_DURATION_ANNOTATION, duration_annotation
from hub.api.conversion import to_internal
from hub.api.errors import FieldError, ValidationError
from hub.api.meta import format_time
from hub.api.others import QUEUE_NAME_LABEL, Job
from hub.api.queues import ClusterQueue, LocalQueue
from hub.api.registry import KINDS, ApiObject, object_ref, parse_object, validate_update
from hub.api.workload import Workload
from hub.store.interface import Conflict, NotFound, Object, ObjectKey, Store

from .manifests import ManifestError, read_documents

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
    invalid: ValidationError | None = None  # the error as fields (for the Kubernetes API's causes)


@dataclass(slots=True)
class Outcome:
    results: list[Result] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    rejected: bool = False


@dataclass(slots=True)
class _Planned:
    key: ObjectKey
    obj: ApiObject
    manifest: Object  # what will be stored
    result: Result


def _ref(kind: str, namespace: str, name: str) -> str:
    return f'{kind} "{namespace}/{name}"' if namespace else f'{kind} "{name}"'


def _field_error(obj: ApiObject, path: str, value: object, reason: str) -> ValidationError:
    return ValidationError(obj.kind, obj.meta.name, obj.meta.namespace, [FieldError(path, reason, value, True)])


class Applier:
    """Validates and stores manifests; safe to call from any thread (the store serialises writers)."""

    def __init__(
        self, store: Store, *, partial_admission: bool = True, clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self._known: dict[ObjectKey, bool] = {}  # existence looked up during one request (under the store's lock)
        self.partial_admission = partial_admission
        self.clock = clock

    def apply(
        self, text: str, *, default_namespace: str = "", source: str = "", dry_run: bool = False, received: float | None = None
    ) -> Outcome:
        """``received``: when the request arrived; new objects' creationTimestamp (default: now).
        Stamping at receipt keeps queue order equal to arrival order however long parsing waits."""
        outcome = Outcome()
        created_at = self.clock() if received is None else received
        try:
            docs = read_documents(text, source)
        except ManifestError as exc:
            outcome.results.append(Result("", "", "", error=str(exc)))
            outcome.rejected = True
            return outcome
        planned: dict[ObjectKey, _Planned] = {}
        for doc in docs:
            item = self._parse(doc.manifest, default_namespace or DEFAULT_NAMESPACE, outcome)
            if item is not None:
                planned[item.key] = item  # a later document for the same object wins, as with kubectl
        # Checks against the store and the writes share one transaction: nobody can
        # delete a Namespace between our check and our write.
        with self.store.batch():
            self._known = {}
            existing = {key: self.store.get(*key) for key in planned}
            for item in planned.values():
                self._check(item, planned, existing.get(item.key), outcome, created_at)
            outcome.rejected = any(r.error for r in outcome.results)
            if outcome.rejected or dry_run:
                for item in planned.values():
                    if not item.result.error:
                        item.result.action = "" if outcome.rejected else _dry_action(existing.get(item.key))
                return outcome
            for item in planned.values():
                self._write(item, existing.get(item.key))
        return outcome

    def admit(self, manifest: Object, current: Object | None) -> tuple[Object, list[str]]:
        """One object written through the Kubernetes API (hub.kubeapi): the checks of ``apply``
        (schema, Kueue's rules, immutable fields, namespace and LocalQueue references) and its
        mutations (a queued Job is suspended). Returns what to store and the warnings; raises
        :class:`ValidationError`. The caller runs it inside the store batch that writes."""
        outcome = Outcome()
        item = self._parse(manifest, DEFAULT_NAMESPACE, outcome)
        result = outcome.results[-1]
        if item is None:
            raise result.invalid or ValidationError(result.kind, result.name, result.namespace, [])
        self._check(item, {}, current, outcome)
        if result.invalid is not None:
            raise result.invalid
        return item.manifest, outcome.warnings

    # --- step 1: each document on its own

    def _parse(self, manifest: Any, namespace: str, outcome: Outcome) -> _Planned | None:
        kind, ns, name = object_ref(manifest) if isinstance(manifest, dict) else ("<unknown>", "", "<unnamed>")
        result = Result(kind, ns, name)
        outcome.results.append(result)
        if isinstance(manifest, dict):
            # The documents were parsed for this request alone: edited in place, not copied.
            manifest.pop("status", None)  # status belongs to the hub (a subresource in Kubernetes)
            meta = manifest.get("metadata")
            if isinstance(meta, dict):
                for f in _SERVER_FIELDS:
                    meta.pop(f, None)
        try:
            obj = parse_object(manifest, default_namespace=namespace, partial_admission=self.partial_admission)
        except ValidationError as exc:
            result.invalid = exc
            result.error = str(exc)
            return None
        info = KINDS[obj.kind]
        stored = to_internal(manifest)
        meta = stored.setdefault("metadata", {})
        if info.namespaced:
            meta["namespace"] = obj.meta.namespace
        else:
            meta.pop("namespace", None)  # ignored for cluster-scoped objects, as Kubernetes does
        result.namespace = obj.meta.namespace
        result.name = obj.meta.name
        key = ObjectKey(obj.kind, obj.meta.namespace, obj.meta.name)
        return _Planned(key, obj, stored, result)

    # --- step 2: against what exists (in the store or in this request)

    def _exists(self, key: ObjectKey, planned: dict[ObjectKey, _Planned]) -> bool:
        if key in planned:
            return True
        # A batch of workloads names the same few Namespaces and LocalQueues: look each up once
        # (the answer cannot change inside the request's transaction).
        known = self._known.get(key)
        if known is None:
            known = self._known[key] = self.store.get(*key) is not None
        return known

    def _check(
        self, item: _Planned, planned: dict[ObjectKey, _Planned], current: Object | None, outcome: Outcome, created_at: float
    ) -> None:
        obj, result = item.obj, item.result
        ns = obj.meta.namespace
        if KINDS[obj.kind].namespaced and not self._exists(ObjectKey("Namespace", "", ns), planned):
            result.invalid = _field_error(obj, "metadata.namespace", ns, f'namespace "{ns}" not found')
            result.error = str(result.invalid)
            return
        error = self._check_references(obj, planned, outcome.warnings)
        if error is not None:
            result.invalid = error
            result.error = str(error)
            return
        if current is not None:
            try:
                old = parse_object(current, partial_admission=self.partial_admission)
                if isinstance(old, Workload) and isinstance(obj, Workload):
                    obj.status = old.status
                validate_update(old, obj)
            except ValidationError as exc:
                result.invalid = exc
                result.error = str(exc)
                return
            item.manifest.setdefault("metadata", {})["resourceVersion"] = current["metadata"]["resourceVersion"]
        else:
            # Sub-second creation times keep the queue order of a restarted hub equal to arrival order.
            item.manifest["metadata"]["creationTimestamp"] = format_time(created_at)
        if isinstance(obj, Job) and obj.queue_name:
            # Kueue's webhook suspends a queued Job; from then on the hub owns the flag.
            spec = item.manifest.setdefault("spec", {})
            spec["suspend"] = (current.get("spec") or {}).get("suspend", True) if current is not None else True

    def _check_references(
        self, obj: ApiObject, planned: dict[ObjectKey, _Planned], warnings: list[str]
    ) -> ValidationError | None:
        ns = obj.meta.namespace
        ref = _ref(obj.kind, ns, obj.meta.name)
        if isinstance(obj, Workload | Job):
            try:
                duration_annotation(obj.meta.annotations)
            except ValueError as exc:
                raw = obj.meta.annotations.get(SIM_DURATION_ANNOTATION)
                return _field_error(obj, f"metadata.annotations[{SIM_DURATION_ANNOTATION}]", raw, f"not a duration: {exc}")
        if isinstance(obj, Workload):
            if not obj.queue_name:
                warnings.append(f"{ref} has no spec.queueName: no ClusterQueue will ever admit it")
            elif not self._exists(ObjectKey("LocalQueue", ns, obj.queue_name), planned):
                return _field_error(obj, "spec.queueName", obj.queue_name, f'LocalQueue "{ns}/{obj.queue_name}" not found')
        elif isinstance(obj, Job):
            if not obj.queue_name:
                warnings.append(f"{ref} has no {QUEUE_NAME_LABEL} label: Kueue does not manage it and mkhub will not run it")
            elif not self._exists(ObjectKey("LocalQueue", ns, obj.queue_name), planned):
                return _field_error(
                    obj, f"metadata.labels[{QUEUE_NAME_LABEL}]", obj.queue_name, f'LocalQueue "{ns}/{obj.queue_name}" not found'
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

    def _write(self, item: _Planned, current: Object | None) -> None:
        if current is None:
            self.store.create(item.manifest)
            item.result.action = CREATED
            return
        try:
            out = self.store.update(item.manifest)
        except (NotFound, Conflict) as exc:  # cannot happen inside our transaction; say so if it does
            item.result.error = str(exc)
            raise
        same = out["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]
        item.result.action = UNCHANGED if same else CONFIGURED


def _dry_action(current: Object | None) -> str:
    return f"{CREATED} (dry run)" if current is None else f"{CONFIGURED} (dry run)"


def ensure_namespace(store: Store, name: str = DEFAULT_NAMESPACE) -> bool:
    """Create a Namespace unless it exists (the hub's ``default``, as every cluster has one)."""
    if store.get("Namespace", "", name) is not None:
        return False
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return True
