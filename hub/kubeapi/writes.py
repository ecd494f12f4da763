"""create, update, patch and delete over a Store, with the API server's semantics.

Each write runs inside one store batch: read the current object, build the new
one (PUT body, patched object or server-side apply), check it (``fieldValidation``,
then :class:`Admission` — for Kueue kinds, Jobs and Namespaces the checks of
``mkhub apply``), record managedFields, and write it with the request's
resourceVersion as precondition (409 Conflict when stale). ``dryRun=All`` does
everything but the write. Spec writes keep the stored status and status writes
(the ``status`` subresource) keep everything else, as the store does.
"""

from __future__ import annotations

import copy
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hub.api.conversion import KUEUE_GROUP, json_copy
from hub.api.dra import DRA_KINDS
from hub.api.errors import FieldError, ValidationError
from hub.api.meta import format_time
from hub.api.registry import KINDS
from hub.store.interface import (
    GENERATE_NAME_ATTEMPTS,
    AlreadyExists,
    Conflict,
    NotFound,
    Object,
    Store,
    needs_generated_name,
    with_generated_name,
)
from hub.store.sqlite_reads import KindReads

from . import appsrules, crds, errors, managed, namespaces, updaterules, validate
from .errors import ApiError, bad_request
from .fields import SchemaSource, check_fields
from .patch import (
    APPLY_PATCH_YAML,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_PATCH,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from .reads import Target, external, get_stored
from .resources import Resource
from .stored import BY_KIND as STORED


class Admission(Protocol):
    """Validation (and mutation) of an object about to be written, in stored form.

    Returns what to store and warnings; raises :class:`hub.api.errors.ValidationError`."""

    def __call__(self, manifest: Object, current: Object | None, *, owned: bool = False) -> tuple[Object, list[str]]:
        """``owned``: the caller gives ``manifest`` up (it may be edited and returned, not copied)."""
        ...


class Webhooks(Protocol):
    """Admission webhooks (hub.kubeapi.webhooks.WebhookCaller): the object in the request's
    version, ``old`` None on a create; returns the object as they leave it or raises ApiError."""

    def __call__(
        self, res: Resource, version: str, obj: Object, user: str = "", *, old: Object | None = None,
        subresource: str = "",
    ) -> Object: ...

    def configured(self) -> bool:
        """Whether any webhook configuration is stored (else a write need not be converted for them)."""
        ...

    def may_call(self, res: Resource, version: str, operation: str, subresource: str = "") -> bool:
        """Whether a webhook's rules name such a request (``CREATE`` or ``UPDATE``), selectors aside."""
        ...


_ABSENT: Any = object()
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public")


@dataclass(slots=True)
class Options:
    """Query parameters of a write."""

    dry_run: bool = False
    field_validation: str = ""
    field_manager: str = ""
    force: bool = False
    manager_given: bool = False
    duplicates: list[str] = field(default_factory=list)  # keys the body repeated within one object

    @classmethod
    def of(cls, query: Mapping[str, str], user_agent: str) -> Options:
        dry = query.get("dryRun", "")
        if dry not in ("", "All"):
            raise bad_request(f'dryRun: Unsupported value: "{dry}": supported values: "All"')
        given = query.get("fieldManager", "")
        manager = given or user_agent.split("/", 1)[0] or "unknown"
        force = query.get("force", "").lower() in ("true", "1")
        return cls(dry == "All", query.get("fieldValidation", ""), manager[:128], force, bool(given))


@dataclass(slots=True)
class Written:
    obj: Object  # stored form
    created: bool = False
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Creation:
    """A create between its checks and its store write (Writer.prepare_create)."""

    obj: Object  # client form
    warnings: list[str]


def _decode_apply(body: Any) -> Object:
    if not isinstance(body, dict):
        raise bad_request("the body of an apply patch must be an object")
    return body


class Writer:
    def __init__(
        self,
        store: Store,
        admission: Admission,
        *,
        schemas: SchemaSource | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.namespaces = KindReads(store, "Namespace")  # read again only after a Namespace changed
        self.admission = admission
        self.schemas = schemas
        self.clock = clock
        # Admission webhooks (hub.kubeapi.webhooks; mkhub dev-cluster sets them), as the API server
        # runs them: mutating before validation, validating on the object about to be stored.
        self.mutating: Webhooks | None = None
        self.validating: Webhooks | None = None
        # The namespaced kinds served from CRDs (hub.kubeapi.crds), emptied with their namespace.
        self.custom_resources: Callable[[], Sequence[Resource]] = tuple

    # ------------------------------------------------------------------ helpers

    def _now(self) -> str:
        return format_time(int(self.clock()))

    def _check_type(self, target: Target, obj: Any) -> Object:
        if not isinstance(obj, dict):
            raise bad_request("the body of the request must be a JSON object")
        res = target.res
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        if kind not in (None, "", res.kind):
            raise bad_request(f"the kind in the data ({kind}) does not match the expected kind ({res.kind})")
        accepted = {res.api_version(v) for v in res.versions}
        if api_version not in (None, "") and api_version not in accepted:
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version ({target.api_version})"
            )
        out: Object = dict(obj)
        out["apiVersion"] = api_version or target.api_version
        out["kind"] = res.kind
        meta = out.get("metadata")
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        out["metadata"] = dict(meta)
        return out

    def _scope(self, target: Target, obj: Object) -> None:
        meta = obj["metadata"]
        if target.res.namespaced:
            given = meta.get("namespace")
            if given and target.namespace and given != target.namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = target.namespace or given or ""
        else:
            meta.pop("namespace", None)
        if target.name and meta.get("name") and meta["name"] != target.name:
            raise bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({target.name})"
            )
        if target.name and not meta.get("name"):
            meta["name"] = target.name

    def _fields(self, target: Target, obj: Object, opts: Options) -> list[str]:
        res = target.res
        version = str(obj["apiVersion"]).rsplit("/", 1)[-1]
        schema = self.schemas(res.group, version, res.kind) if self.schemas is not None else None
        return check_fields(res.kind, obj, schema, opts.field_validation, opts.duplicates)

    def _admit(self, target: Target, obj: Object, current: Object | None, *, owned: bool = False) -> tuple[Object, list[str]]:
        """Validation of ``mkhub apply`` (stored form in, stored form out); keeps server metadata.
        ``owned``: ``obj`` is this write's own copy, which admission may edit and return: a deep copy
        less per write (the caller reads nothing of it afterwards but what is kept here first)."""
        res = target.res
        name = str(obj["metadata"].get("name", ""))
        keep = {k: obj["metadata"][k] for k in ("resourceVersion", "managedFields", "finalizers") if k in obj["metadata"]}
        status = obj.get("status", _ABSENT)  # admission drops it (apply's documents carry none)
        custom = isinstance(res, crds.CustomResource)
        # A Pod is the API server's (its rules below); Kueue's pod webhook is the hub's (hub.service.webhook).
        # Deployments, StatefulSets, CronJobs... too (hub.kubeapi.stored: kube-apiserver's rules).
        if res.kind in KINDS and res.kind != "Pod" and res.kind not in STORED and not custom:
            if res.group != KUEUE_GROUP:
                self._schema_checks(res, obj)  # a Job's pod template: types as Kubernetes decodes them
            try:
                out, warnings = self.admission(obj, current, owned=owned)
            except ValidationError as exc:
                raise errors.from_validation(res, name, exc) from None
        else:
            # An update's status is current's own (compared with the new one below): copied, as before.
            out, warnings = self._basic_checks(res, obj, owned and (current is None or status is _ABSENT)), []
            updaterules.prepare_write(res.group, res.kind, out)
            if isinstance(res, crds.CustomResource):
                out = crds.admit(res, out, target.version)  # its CRD's schema: defaults, then validation
            else:
                self._schema_checks(res, out)
            refused = updaterules.object_errors(res.group, res.kind, out)
            if current is None:
                refused = refused + appsrules.create_errors(res.group, res.kind, out)
            if res.kind == crds.CRD_KIND:
                refused = refused + crds.crd_errors(out)
            if refused:
                raise errors.invalid(res, name, refused)
            if (custom or res.kind in DRA_KINDS) and res.kind in KINDS:
                # A kind mkhub knows served by its CRD (a JobSet, with the dev-cluster's simulated
                # operator): the CRD's schema first, then the operator's webhook, as on a cluster.
                # DRA's kinds: the schema, then kube-apiserver's rules on device requests (hub.api.dra).
                try:
                    out, warnings = self.admission(out, current)
                except ValidationError as exc:
                    raise errors.from_validation(res, name, exc) from None
        meta = out.setdefault("metadata", {})
        meta.pop("resourceVersion", None)
        meta.update(keep)
        if current is not None:
            meta["creationTimestamp"] = current["metadata"].get("creationTimestamp")
        if status is not _ABSENT:
            out["status"] = status
        return out, warnings

    def _schema_checks(self, res: Resource, obj: Object) -> None:
        """A built-in kind (hub.kubeapi.stored, Jobs, Namespaces, ...): types and required fields as
        its schema says, where kube-apiserver's decoding or validation refuses them."""
        if res.group == KUEUE_GROUP or self.schemas is None:
            return
        schema = self.schemas(res.group, res.preferred, res.kind)
        if schema is None:
            return
        found = validate.problems(schema, obj, undeclared=False)  # unknown fields: field validation's (fields.py)
        if found:
            errs = [FieldError(path, reason) for path, reason in (p.split(": ", 1) for p in found)]
            raise errors.invalid(res, str(obj["metadata"].get("name", "")), errs)

    def _basic_checks(self, res: Resource, obj: Object, owned: bool = False) -> Object:
        meta = obj["metadata"]
        errs: list[FieldError] = []
        name = str(meta.get("name", ""))
        if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
            errs.append(FieldError("metadata.name", "a lowercase RFC 1123 subdomain must consist of lower case "
                                   "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
                                   name, True))
        ns = str(meta.get("namespace") or "")
        if res.namespaced and self.namespaces.get("", ns) is None:
            errs.append(FieldError("metadata.namespace", f'namespace "{ns}" not found', ns, True))
        if errs:
            raise errors.invalid(res, name, errs)
        copied: Object = obj if owned else json_copy(obj)
        return copied

    def _store_form(self, target: Target, obj: Object) -> Object:
        stored = target.res.to_storage(obj)
        return json_copy(obj) if stored is obj else stored  # JSON: json_copy, several times copy.deepcopy's speed

    def _mutate(self, target: Target, stored: Object, current: Object | None) -> Object:
        """The mutating webhooks on a stored-form object (also on dry run: they declare sideEffects None)."""
        if self.mutating is None or not self.mutating.configured():
            return stored
        client = external(target, stored)
        old = external(target, current) if current is not None else None
        mutated = self.mutating(target.res, target.version, client, old=old, subresource=target.subresource)
        return stored if mutated is client else self._store_form(target, mutated)

    def _validate_webhooks(self, target: Target, stored: Object, current: Object | None) -> None:
        if self.validating is not None and self.validating.configured():
            old = external(target, current) if current is not None else None
            self.validating(target.res, target.version, external(target, stored), old=old, subresource=target.subresource)

    # ------------------------------------------------------------------ create

    def create(self, target: Target, body: Any, opts: Options) -> Written:
        creation = self.prepare_create(target, body, opts)
        return self.finish_create(target, self.mutate_create(target, creation), opts)

    def prepare_create(self, target: Target, body: Any, opts: Options) -> Creation:
        """A create's checks before its mutating webhooks: the object they are sent, and warnings."""
        res = target.res
        obj = self._check_type(target, body)
        self._scope(target, obj)
        warnings = self._fields(target, obj, opts)
        if res.has_status:
            obj.pop("status", None)  # a status subresource: create ignores status
        if res.kind == "Namespace":
            obj["status"] = {"phase": "Active"}
            namespaces.prepare_create(obj)
        elif (res.group, res.kind) == ("", "Pod"):
            appsrules.default_pod(obj)
            obj["status"] = appsrules.new_pod_status(obj)
        meta = obj["metadata"]
        for key in ("uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp"):
            meta.pop(key, None)
        if not meta.get("name") and not needs_generated_name(obj):
            raise errors.invalid(res, "", [FieldError("metadata.name", "name or generateName is required")])
        return Creation(obj, warnings)

    def mutate_create(self, target: Target, creation: Creation) -> Creation:
        """The mutating webhooks of a create (also on dry run: webhooks declare sideEffects None).
        Apart from the store's write: the dev-cluster calls them in a worker thread, then stores
        the object on its event loop with the turn's other writes (hub.kubeapi.server)."""
        if self.mutating is None:
            return creation
        return Creation(self.mutating(target.res, target.version, creation.obj), creation.warnings)

    def finish_create(self, target: Target, creation: Creation, opts: Options) -> Written:
        """The rest of a create: admission, the validating webhooks, the store's write."""
        obj, warnings = creation.obj, creation.warnings
        api_version = obj["apiVersion"]
        stored = self._store_form(target, obj)
        attempts = GENERATE_NAME_ATTEMPTS if needs_generated_name(stored) else 1
        for attempt in range(attempts):
            candidate = with_generated_name(stored) if needs_generated_name(stored) else stored
            try:
                # A generated name's candidate shares all but its metadata with the next one's.
                return self._create_one(target, candidate, api_version, opts, warnings, owned=candidate is stored)
            except ApiError as exc:
                if exc.reason != "AlreadyExists" or attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")

    def _create_one(
        self, target: Target, stored: Object, api_version: str, opts: Options, warnings: list[str], *, owned: bool = False
    ) -> Written:
        res = target.res
        name = stored["metadata"]["name"]
        fields = stored["metadata"]["managedFields"] = managed.record_update(
            None, stored, opts.field_manager, api_version, self._now()
        )
        with self.store.batch():
            if self.store.get(res.kind, target.store_namespace, name) is not None:
                raise errors.already_exists(res, name)
            self._check_not_terminating(target, name)
            out, more = self._admit(target, stored, None, owned=owned)
            out["metadata"]["managedFields"] = fields
            self._validate_webhooks(target, out, None)
            if opts.dry_run:
                out["metadata"].setdefault("creationTimestamp", self._now())
                out["metadata"]["generation"] = 1
                return Written(out, True, warnings + more)
            try:
                created = self.store.create(out)
            except AlreadyExists:
                raise errors.already_exists(res, name) from None
        return Written(created, True, warnings + more)

    # ------------------------------------------------------------------ update (PUT) and patch

    def update(self, target: Target, body: Any, opts: Options) -> Written:
        obj = self._check_type(target, body)
        self._scope(target, obj)
        warnings = self._fields(target, obj, opts)
        given_rv = obj["metadata"].get("resourceVersion")
        if not given_rv and target.res.group == "kueue.x-k8s.io":
            raise errors.invalid(target.res, target.name, [FieldError(
                "metadata.resourceVersion", "must be specified for an update", 0, True)])
        with self.store.batch():
            current = get_stored(self.store, target)
            written = self._replace(target, current, obj, opts, str(given_rv or ""))
        written.warnings[:0] = warnings
        return written

    def patch(self, target: Target, content_type: str, body: Any, opts: Options) -> Written:
        res = target.res
        with self.store.batch():
            current = self.store.get(res.kind, target.store_namespace, target.name)
            if content_type == APPLY_PATCH_YAML:
                return self._apply(target, current, _decode_apply(body), opts)
            if current is None:
                raise errors.not_found(res, target.name)
            live = external(target, current)
            if content_type == JSON_PATCH:
                patched = json_patch(live, body)
            elif content_type == MERGE_PATCH:
                if not isinstance(body, dict):
                    raise bad_request("a merge patch must be a JSON object")
                patched = merge_patch(live, body)
            elif content_type == STRATEGIC_PATCH:
                if res.group == "kueue.x-k8s.io":
                    raise errors.unsupported_media_type(content_type)
                patched = strategic_merge_patch(live, body)
            else:
                raise errors.unsupported_media_type(content_type)
            obj = self._check_type(target, patched)
            self._scope(target, obj)
            warnings = self._fields(target, obj, opts)
            rv = str(obj["metadata"].get("resourceVersion") or "")
            written = self._replace(target, current, obj, opts, rv or str(current["metadata"]["resourceVersion"]))
        written.warnings[:0] = warnings
        return written

    def _apply(self, target: Target, current: Object | None, body: Object, opts: Options) -> Written:
        res = target.res
        if not body.get("apiVersion") or not body.get("kind"):
            raise bad_request("apiVersion and kind must be set in an apply patch")
        if not opts.manager_given:
            raise bad_request("PATCH, application/apply-patch+yaml: fieldManager is required")
        obj = self._check_type(target, body)
        self._scope(target, obj)
        warnings = self._fields(target, obj, opts)
        applied = self._store_form(target, obj)
        rv = str(applied["metadata"].pop("resourceVersion", "") or "")
        merged = managed.server_side_apply(
            current, applied, opts.field_manager, obj["apiVersion"], self._now(), force=opts.force,
            subresource=target.subresource, resource_kind=res.kind, group=res.group,
            last_applied=self._last_applied(target, current),
        )
        if current is not None and self._last_applied(target, current) is not None and not target.subresource:
            # As the API server: an object kubectl once applied client-side keeps its
            # last-applied-configuration in step with what is applied server-side.
            config = copy.deepcopy(body)
            notes = (config.get("metadata") or {}).get("annotations") or {}
            notes.pop(managed.LAST_APPLIED, None)
            merged["metadata"].setdefault("annotations", {})[managed.LAST_APPLIED] = json.dumps(config, separators=(",", ":"))
        if current is None:
            if target.subresource:
                raise errors.not_found(res, target.name)
            return self._create_one_applied(target, merged, opts, warnings)
        written = self._replace(target, current, merged, opts, rv or str(current["metadata"]["resourceVersion"]), applied_fields=True)
        written.warnings[:0] = warnings
        return written

    def _last_applied(self, target: Target, current: Object | None) -> Object | None:
        text = ((current or {}).get("metadata") or {}).get("annotations", {}).get(managed.LAST_APPLIED)
        if not isinstance(text, str):
            return None
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return self._store_form(target, value) if isinstance(value, dict) else None

    def _create_one_applied(self, target: Target, merged: Object, opts: Options, warnings: list[str]) -> Written:
        res = target.res
        name = merged["metadata"]["name"]
        self._check_not_terminating(target, name)
        fields = merged["metadata"]["managedFields"]
        if res.has_status:
            merged.pop("status", None)
        merged = self._mutate(target, merged, None)
        out, more = self._admit(target, merged, None)
        out["metadata"]["managedFields"] = fields
        self._validate_webhooks(target, out, None)
        if opts.dry_run:
            return Written(out, True, warnings + more)
        try:
            return Written(self.store.create(out), True, warnings + more)
        except AlreadyExists:
            raise errors.already_exists(res, name) from None

    def _replace(
        self, target: Target, current: Object, obj: Object, opts: Options, rv: str, *, applied_fields: bool = False
    ) -> Written:
        """Write ``obj`` (client form, or stored form when ``applied_fields``) over ``current``."""
        res = target.res
        stored = self._mutate(target, obj if applied_fields else self._store_form(target, obj), current)
        if res.kind == "Namespace":
            stored = namespaces.prepare_update(current, stored, target.subresource)
        if target.subresource != "status":
            updaterules.prepare_update(res.group, res.kind, current, stored)
        refused = updaterules.meta_errors(current["metadata"], stored["metadata"])
        if refused:  # ValidateObjectMetaUpdate, for every kind
            raise errors.invalid(res, target.name, refused)
        meta = stored["metadata"]
        for key in ("uid", "creationTimestamp", "generation", "deletionTimestamp"):
            if key in current["metadata"]:
                meta[key] = current["metadata"][key]
            else:
                meta.pop(key, None)
        if rv and rv != str(current["metadata"].get("resourceVersion")):
            raise errors.conflict(res, target.name)
        api_version = obj["apiVersion"] if not applied_fields else obj.get("apiVersion", target.api_version)
        status_write = target.subresource == "status"
        if status_write:
            new = {**current, "metadata": dict(current["metadata"])}  # the store's own copy: no deep copy needed
            if "status" in stored:
                new["status"] = stored["status"]
            else:
                new.pop("status", None)
            if not applied_fields and opts.dry_run:
                # Only the dry run's answer shows them: a store's update_status takes status alone.
                new["metadata"]["managedFields"] = managed.record_update(
                    current, new, opts.field_manager, api_version, self._now(), "status"
                )
            elif applied_fields:
                new["metadata"]["managedFields"] = meta.get("managedFields", [])
            if isinstance(res, crds.CustomResource):  # the status is checked against the schema too
                new = crds.admit(res, new, target.version)
            warnings: list[str] = []
        else:
            if res.has_status:
                if "status" in current:
                    stored["status"] = current["status"]
                else:
                    stored.pop("status", None)
            if "managedFields" not in meta:
                meta["managedFields"] = current["metadata"].get("managedFields", [])
            if not applied_fields:
                meta["managedFields"] = managed.record_update(current, stored, opts.field_manager, api_version, self._now())
            # Its own copy unless applied (server-side apply's merge may share values with current).
            new, warnings = self._admit(target, stored, current, owned=not applied_fields)
        refused = updaterules.update_errors(res.group, res.kind, current, new, status=status_write)
        if refused:  # kube-apiserver's update rules for the kind, checked before validating admission as there
            raise errors.invalid(res, target.name, refused)
        self._validate_webhooks(target, new, current)
        new["metadata"]["resourceVersion"] = str(current["metadata"]["resourceVersion"])
        if opts.dry_run:
            return Written(new, False, warnings)
        try:
            if status_write:
                out = self.store.update_status(new)
            else:
                out = self.store.update(new)
        except Conflict:
            raise errors.conflict(res, target.name) from None
        except NotFound:
            raise errors.not_found(res, target.name) from None
        return Written(out, False, warnings)

    # ------------------------------------------------------------------ delete

    def delete(self, target: Target, body: Any, opts: Options) -> tuple[Object, bool]:
        """The object (terminating, or its last state) and whether it is gone."""
        res = target.res
        preconditions = (body or {}).get("preconditions") if isinstance(body, dict) else None
        rv = uid = None
        if isinstance(preconditions, dict):
            rv, uid = preconditions.get("resourceVersion"), preconditions.get("uid")
        if res.kind == "Namespace" and target.name in PROTECTED_NAMESPACES:
            raise errors.forbidden_object(res, target.name, "this namespace may not be deleted")
        with self.store.batch():
            current = get_stored(self.store, target)
            if uid and uid != current["metadata"].get("uid"):
                raise errors.conflict(res, target.name, f"Precondition failed: UID in precondition: {uid}, UID in object meta: {current['metadata'].get('uid')}")
            if rv and str(rv) != str(current["metadata"].get("resourceVersion")):
                raise errors.conflict(res, target.name, f"Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {current['metadata'].get('resourceVersion')}")
            if opts.dry_run:
                return current, not current["metadata"].get("finalizers") and res.kind != "Namespace"
            if res.kind == "Namespace":
                return namespaces.terminate(self.store, current)
            try:
                out = self.store.delete(res.kind, target.store_namespace, target.name, resource_version=rv)
            except Conflict:
                raise errors.conflict(res, target.name) from None
        gone = self.store.get(res.kind, target.store_namespace, target.name) is None
        return out, gone

    def terminating_namespaces(self) -> list[str]:
        items, _ = self.store.list("Namespace")
        return [o["metadata"]["name"] for o in items if o["metadata"].get("deletionTimestamp")]

    def finalize_namespace(self, name: str) -> bool:
        """One pass of the namespace controller (hub.kubeapi.namespaces); True when done."""
        with self.store.batch():
            return namespaces.finalize(self.store, name, self._now(), self.custom_resources())

    def _check_not_terminating(self, target: Target, name: str) -> None:
        if not target.res.namespaced:
            return
        ns = self.namespaces.get("", target.namespace)
        if ns is not None and ns["metadata"].get("deletionTimestamp"):
            raise errors.forbidden_object(
                target.res, name,
                f"unable to create new content in namespace {target.namespace} because it is being terminated",
            )
