"""CustomResourceDefinitions served for real: the apiextensions-apiserver of mkhub's Kubernetes API.

A stored CRD (``apiextensions.k8s.io/v1``) makes its kinds served: discovery, the REST
paths (the generic reads, writes and watches, through :class:`CustomResource`), the
``status`` and ``scale`` subresources, ``additionalPrinterColumns`` in Tables, short
names and categories, and an ``/openapi/v3`` document per group-version (``kubectl
explain``). Writes are pruned, defaulted and validated against the version's structural
schema (:mod:`hub.kubeapi.structural`). Every served version shares one stored form
(conversion strategy None: only ``apiVersion`` changes). Deleting a CRD deletes its objects.

The registry (:class:`CustomResources`) follows the store: rebuilt right after a CRD is
written through this API, and by a watch on CRDs for other writers. It marks each served
CRD ``NamesAccepted`` and ``Established`` as kube-apiserver's controllers do (Kueue's own
CRDs too: their kinds are served, by the typed model).

Not served, only recorded (as before): a CRD whose kind is one of the built-in kinds (Kueue's
own CRDs above all: Kueue's kinds are served by the typed model, :mod:`hub.kubeapi.resources`),
because the store keys objects by kind alone; for the same reason, of two CRDs with the same
kind only the older is served. Not supported: conversion webhooks, CEL rules, selectable fields.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import logging
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hub.api.errors import FieldError
from hub.api.meta import format_time
from hub.api.schema.builtin import META
from hub.api.schema.columns import AGE_COLUMN, NAME_COLUMN, PrinterColumn
from hub.api.selectors import format_label_selector
from hub.store.interface import Conflict, EventType, Gone, NotFound, Object, Store

from . import errors, openapi, structural
from .discovery import BUILTIN_SCALABLE, ExtraGroup
from .resources import ALL_VERBS, BY_KIND, Resource, lookup

log = logging.getLogger("mkhub.kubeapi.crds")

Schema = dict[str, Any]
CRD_KIND = "CustomResourceDefinition"
SCALE_KIND = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes' version order, highest first when sorted: GA > beta > alpha, then by number."""
    m = _VERSION.match(version)
    if m is None:
        return (3, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (stage, -int(m.group(1)), -int(m.group(3) or 0), version)


@dataclass(frozen=True, slots=True)
class Scale:
    spec_replicas: str  # JSON paths as the CRD gives them: .spec.replicas
    status_replicas: str
    label_selector: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class CustomResource(Resource):
    """A kind served from a CRD. The store keeps it in the storage version."""

    crd: str = ""
    storage: str = ""
    schemas: Mapping[str, Schema] = field(default_factory=dict)  # version -> openAPIV3Schema
    columns: Mapping[str, tuple[PrinterColumn, ...]] = field(default_factory=dict)
    scale: Scale | None = None

    def to_external(self, obj: Object, version: str) -> Object:
        return {**obj, "apiVersion": self.api_version(version)}

    def to_storage(self, obj: Object) -> Object:
        out = copy.deepcopy(obj)
        out["apiVersion"] = self.api_version(self.storage)
        return out

    def table_columns(self, version: str) -> tuple[PrinterColumn, ...]:
        return (NAME_COLUMN, *(self.columns.get(version) or (AGE_COLUMN,)))

    def schema(self, version: str) -> Schema | None:
        return self.schemas.get(version)


# --------------------------------------------------------------------------- reading a CRD


def _names(spec: Mapping[str, Any]) -> dict[str, Any]:
    names = dict(spec.get("names") or {})
    kind = str(names.get("kind") or "")
    names.setdefault("singular", kind.lower())
    names.setdefault("listKind", f"{kind}List")
    return names


def _columns(entries: Any) -> tuple[PrinterColumn, ...]:
    out = []
    for c in entries or ():
        if isinstance(c, dict) and c.get("name") and c.get("jsonPath"):
            out.append(PrinterColumn(str(c["name"]), str(c.get("type") or "string"), str(c["jsonPath"]),
                                     str(c.get("description") or ""), int(c.get("priority") or 0), str(c.get("format") or "")))
    return tuple(out)


def resource_of(crd: Object) -> CustomResource | None:
    """The resource a CRD serves, or None when it serves none (no served version, built-in kind)."""
    spec = crd.get("spec") or {}
    names = _names(spec)
    group, kind, plural = str(spec.get("group") or ""), str(names.get("kind") or ""), str(names.get("plural") or "")
    if not (group and kind and plural) or kind in BY_KIND:
        return None
    versions = [v for v in spec.get("versions") or () if isinstance(v, dict) and v.get("served") and v.get("name")]
    storage = next((str(v["name"]) for v in spec.get("versions") or () if isinstance(v, dict) and v.get("storage")), "")
    if not versions or not storage:
        return None
    versions.sort(key=lambda v: version_priority(str(v["name"])))
    schemas = {str(v["name"]): dict((v.get("schema") or {}).get("openAPIV3Schema") or {}) for v in versions}
    columns = {str(v["name"]): _columns(v.get("additionalPrinterColumns")) for v in versions}
    subs = [v.get("subresources") or {} for v in versions]
    scale_spec = next((s["scale"] for s in subs if isinstance(s.get("scale"), dict)), None)
    scale = None
    if scale_spec is not None:
        scale = Scale(str(scale_spec.get("specReplicasPath") or ".spec.replicas"),
                      str(scale_spec.get("statusReplicasPath") or ".status.replicas"),
                      str(scale_spec.get("labelSelectorPath") or ""))
    return CustomResource(
        kind, group, tuple(str(v["name"]) for v in versions), plural, spec.get("scope") == "Namespaced",
        tuple(str(s) for s in names.get("shortNames") or ()), ALL_VERBS, tuple(str(c) for c in names.get("categories") or ()),
        any("status" in s for s in subs), crd=str(crd["metadata"]["name"]), storage=storage, schemas=schemas,
        columns=columns, scale=scale,
    )


def _shape_errors(spec: Any) -> list[FieldError]:
    """Wrong types in the parts of a CRD this server reads (spec.names, spec.versions[*])."""
    def typed(value: Any, path: str, kind: type, word: str) -> list[FieldError]:
        if value is None or (isinstance(value, kind) and not (isinstance(value, bool) and kind is int)):
            return []
        return [FieldError(path, f"must be of type {word}", value, True)]

    if not isinstance(spec, dict):
        return typed(spec, "spec", dict, "object")
    out = typed(spec.get("names"), "spec.names", dict, "object") + typed(spec.get("versions"), "spec.versions", list, "array")
    for key in ("group", "scope"):
        out += typed(spec.get(key), f"spec.{key}", str, "string")
    names = spec.get("names")
    if isinstance(names, dict):
        for key in ("plural", "singular", "kind", "listKind"):
            out += typed(names.get(key), f"spec.names.{key}", str, "string")
        for key in ("shortNames", "categories"):
            out += typed(names.get(key), f"spec.names.{key}", list, "array")
            items = names.get(key)
            for i, item in enumerate(items if isinstance(items, list) else []):
                out += typed(item, f"spec.names.{key}[{i}]", str, "string")
    versions = spec.get("versions")
    for i, v in enumerate(versions if isinstance(versions, list) else []):
        at = f"spec.versions[{i}]"
        if not isinstance(v, dict):
            out += typed(v, at, dict, "object")
            continue
        out += typed(v.get("name"), f"{at}.name", str, "string")
        out += typed(v.get("served"), f"{at}.served", bool, "boolean") + typed(v.get("storage"), f"{at}.storage", bool, "boolean")
        out += typed(v.get("schema"), f"{at}.schema", dict, "object")
        subs = v.get("subresources")
        out += typed(subs, f"{at}.subresources", dict, "object")
        if isinstance(subs, dict):
            out += typed(subs.get("status"), f"{at}.subresources.status", dict, "object")
            scale = subs.get("scale")
            out += typed(scale, f"{at}.subresources.scale", dict, "object")
            for key in ("specReplicasPath", "statusReplicasPath", "labelSelectorPath"):
                out += typed(scale.get(key) if isinstance(scale, dict) else None, f"{at}.subresources.scale.{key}", str, "string")
        columns = v.get("additionalPrinterColumns")
        out += typed(columns, f"{at}.additionalPrinterColumns", list, "array")
        for j, c in enumerate(columns if isinstance(columns, list) else ()):
            where = f"{at}.additionalPrinterColumns[{j}]"
            if not isinstance(c, dict):
                out += typed(c, where, dict, "object")
                continue
            for key in ("name", "type", "jsonPath", "description", "format"):
                out += typed(c.get(key), f"{where}.{key}", str, "string")
            out += typed(c.get("priority"), f"{where}.priority", int, "integer")
    return out


def crd_errors(crd: Object) -> list[FieldError]:
    """The refusals of kube-apiserver's CRD validation that matter for serving it."""
    shape = _shape_errors(crd.get("spec"))
    if shape:
        return shape
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    out: list[FieldError] = []
    name = str((crd.get("metadata") or {}).get("name") or "")
    group, plural = spec.get("group"), names.get("plural")
    if not group:
        out.append(FieldError("spec.group", "Required value"))
    if not plural:
        out.append(FieldError("spec.names.plural", "Required value"))
    if not names.get("kind"):
        out.append(FieldError("spec.names.kind", "Required value"))
    if group and plural and name != f"{plural}.{group}":
        out.append(FieldError("metadata.name", 'must be spec.names.plural+"."+spec.group', name, True))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        shown = json.dumps(spec.get("scope") or "")
        out.append(FieldError("spec.scope", f'Unsupported value: {shown}: supported values: "Cluster", "Namespaced"'))
    versions = [v for v in spec.get("versions") or () if isinstance(v, dict)]
    if not versions:
        out.append(FieldError("spec.versions", "Invalid value: null: must have exactly one version marked as storage version"))
    elif sum(1 for v in versions if v.get("storage")) != 1:
        out.append(FieldError("spec.versions", "must have exactly one version marked as storage version",
                              [v.get("name") for v in versions], True))
    for i, v in enumerate(versions):
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if schema is not None:  # schema_problems refuses a non-object
            out += structural.schema_problems(schema, f"spec.versions[{i}].schema.openAPIV3Schema")
    return out


# --------------------------------------------------------------------------- the registry


class CustomResources:
    """The kinds the stored CRDs serve, for one store."""

    def __init__(self, store: Store, clock: Any) -> None:
        self.store = store
        self.clock = clock
        self._lock = threading.RLock()
        self._fingerprint: tuple[tuple[str, str, int, bool], ...] = ()
        self._crds: dict[str, Object] = {}  # the stored CRDs by name, as last seen
        self._by_path: dict[tuple[str, str, str], CustomResource] = {}
        self._by_kind: dict[str, CustomResource] = {}
        self._docs: dict[tuple[str, str], bytes] = {}
        self._merged: dict[tuple[str, str], bytes] = {}
        self._watch: Any = None

    # -------------------------------------------------------------- lookups

    def lookup(self, group: str, version: str, plural: str) -> CustomResource | None:
        return self._by_path.get((group, version, plural))

    def resources(self) -> list[CustomResource]:
        return list(self._by_kind.values())

    def of_kind(self, kind: str) -> CustomResource | None:
        """The served custom kind named ``kind`` (a controller creating one through the API)."""
        return self._by_kind.get(kind)

    def schema(self, group: str, version: str, kind: str) -> Schema | None:
        res = self._by_kind.get(kind)
        return res.schema(version) if res is not None and res.group == group else None

    def extra_groups(self) -> list[ExtraGroup]:
        """Discovery of the served kinds, grouped as APIResourceLists."""
        by_group: dict[str, dict[str, list[Any]]] = {}
        for res in self._by_kind.values():
            for version in res.versions:
                by_group.setdefault(res.group, {}).setdefault(version, []).extend(_discovery_entries(res))
        out = []
        for group, per_version in by_group.items():
            versions = tuple(sorted(per_version, key=version_priority))
            out.append(ExtraGroup(group, versions, per_version))
        return out

    def openapi_document(self, group: str, version: str, builtin: bytes | None) -> bytes | None:
        """The ``/openapi/v3`` document of a group-version: ``builtin`` (mkhub's own, or None) with
        the custom kinds of that group-version added (kubectl finds a kind's schema only in the
        document of its group-version)."""
        custom = self._docs.get((group, version))
        if custom is None or builtin is None:
            return custom or builtin
        docs = self._docs
        merged = self._merged.get((group, version))
        if merged is None:
            both, extra = json.loads(builtin), json.loads(custom)
            both["paths"] = dict(sorted({**both["paths"], **extra["paths"]}.items()))
            both["components"]["schemas"] = {**extra["components"]["schemas"], **both["components"]["schemas"]}
            merged = json.dumps(both, separators=(",", ":")).encode()
            if docs is self._docs:  # not rebuilt meanwhile
                self._merged[(group, version)] = merged
        return merged

    def openapi_index(self, builtin: bytes) -> bytes:
        """The built-in ``/openapi/v3`` index with the path (and hash) of every custom group-version."""
        if not self._docs:
            return builtin
        index = json.loads(builtin)
        for group, version in sorted(self._docs):
            key = f"apis/{group}/{version}"
            raw = self.openapi_document(group, version, openapi.openapi_v3_bytes(group, version))
            assert raw is not None
            index["paths"][key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={openapi.document_hash(raw)}"}
        return json.dumps(index, separators=(",", ":")).encode()

    # -------------------------------------------------------------- following the store

    def sync(self) -> None:
        """Rebuild from all the stored CRDs (at start, and when the watch fell behind)."""
        with self._lock:
            crds, _ = self.store.list(CRD_KIND, "")
            self._crds = {str(c["metadata"]["name"]): c for c in crds}
            self._refresh()
            for crd in crds:
                self._establish(crd)

    def observe(self, crd: Object, deleted: bool = False) -> None:
        """One CRD as just written (or deleted): cheaper than :meth:`sync`, which reads them all
        (Kueue's CRDs alone are hundreds of kilobytes)."""
        with self._lock:
            name = str(crd["metadata"]["name"])
            if deleted:
                self._crds.pop(name, None)
            else:
                self._crds[name] = crd
            self._refresh()
            if not deleted:
                self._establish(crd)

    def _refresh(self) -> None:
        """Rebuild the served kinds when a CRD's spec changed (generation), or one came or went."""
        fingerprint = tuple(sorted((name, str(c["metadata"].get("uid", "")), int(c["metadata"].get("generation") or 0),
                                    bool(c["metadata"].get("deletionTimestamp"))) for name, c in self._crds.items()))
        if fingerprint != self._fingerprint:
            self._rebuild(list(self._crds.values()))
            self._fingerprint = fingerprint

    def _rebuild(self, crds: list[Object]) -> None:
        by_kind: dict[str, CustomResource] = {}
        ordered = sorted(crds, key=lambda c: (str(c["metadata"].get("creationTimestamp", "")), c["metadata"]["name"]))
        for crd in ordered:
            if crd["metadata"].get("deletionTimestamp") or crd_errors(crd):  # e.g. written around this API
                continue
            res = resource_of(crd)
            if res is None or res.kind in by_kind or any(lookup(res.group, v, res.plural) for v in res.versions):
                continue
            by_kind[res.kind] = res
        self._by_kind = by_kind
        self._by_path = {(r.group, v, r.plural): r for r in by_kind.values() for v in r.versions}
        self._docs = _documents(list(by_kind.values()))
        self._merged = {}  # after the documents: a reader still merging the old ones cannot keep its result

    def _establish(self, crd: Object) -> None:
        served = crd["metadata"]["name"] in {r.crd for r in self._by_kind.values()} or _built_in(crd)
        if not served or crd["metadata"].get("deletionTimestamp"):
            return
        status = dict(crd.get("status") or {})
        names = _names(crd.get("spec") or {})
        storage = next((str(v["name"]) for v in (crd.get("spec") or {}).get("versions") or () if v.get("storage")), "")
        conditions = {c.get("type"): c for c in status.get("conditions") or () if isinstance(c, dict)}
        stored_versions = list(status.get("storedVersions") or [])
        wanted_versions = stored_versions + ([storage] if storage not in stored_versions else [])
        if (status.get("acceptedNames") == names and stored_versions == wanted_versions
                and all((conditions.get(t) or {}).get("status") == "True" for t in ("NamesAccepted", "Established"))):
            return
        now = format_time(int(self.clock()))
        status["conditions"] = [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now, "reason": "NoConflicts",
             "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now, "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted"},
        ]
        status["acceptedNames"] = names
        status["storedVersions"] = wanted_versions
        with contextlib.suppress(Conflict, NotFound):
            self.store.update_status({**crd, "status": status})

    def delete_objects(self, crd: Object) -> None:
        """Deleting a CRD deletes every object of its kind (the CRD's finalizer, done at once)."""
        res = resource_of(crd)
        if res is None:  # a built-in kind's CRD (Kueue's): its objects are not the CRD's
            return
        with self._lock:
            other = self._by_kind.get(res.kind)
            if other is not None and other.crd != res.crd:  # the kind is another CRD's
                return
            objects, _ = self.store.list(res.kind, None)
            for obj in objects:
                meta = obj["metadata"]
                with contextlib.suppress(NotFound, Conflict):
                    self.store.delete(res.kind, meta.get("namespace") or "", meta["name"])

    def follow(self) -> None:
        """Keep up with CRDs written by others than this API (a thread; :meth:`stop` ends it)."""
        try:
            self._watch = self._rewatch()
        except Exception:  # a store that cannot watch: CRD writes through this API still count
            log.exception("cannot watch CustomResourceDefinitions")
            return
        thread = threading.Thread(target=self._follow, name="kubeapi-crds", daemon=True)
        thread.start()

    def _rewatch(self) -> Any:
        _, rv = self.store.list(CRD_KIND, "")
        watch = self.store.watch([CRD_KIND], since=rv)
        self.sync()
        return watch

    def _follow(self) -> None:
        while self._watch is not None:
            watch = self._watch
            try:
                event = watch.next(timeout=None)
                if event is None:
                    return  # closed: stop()
            except Gone:  # fell behind the change log: start over from the current CRDs
                with contextlib.suppress(Exception):
                    watch.close()
                try:
                    if self._watch is watch:
                        self._watch = self._rewatch()
                except Exception:
                    log.exception("the watch on CustomResourceDefinitions ended")
                    return
                continue
            except Exception:  # the store closed under it
                log.exception("the watch on CustomResourceDefinitions ended")
                return
            try:
                self.observe(event.object, deleted=event.type == EventType.DELETED)
            except Exception:
                log.exception("serving the stored CustomResourceDefinitions failed")

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None


def _built_in(crd: Object) -> bool:
    """Whether the typed model serves what the CRD describes (Kueue's own CRDs): scripts that wait
    for such a CRD to be Established go on as on a cluster."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    versions = [str(v.get("name")) for v in spec.get("versions") or () if isinstance(v, dict) and v.get("served")]
    found = [lookup(str(spec.get("group") or ""), v, str(names.get("plural") or "")) for v in versions]
    return bool(found) and all(r is not None and r.kind == names.get("kind") for r in found)


def _discovery_entries(res: CustomResource) -> list[dict[str, Any]]:
    entry: dict[str, Any] = {
        "name": res.plural, "singularName": res.singular, "namespaced": res.namespaced, "kind": res.kind,
        "verbs": list(res.verbs),
        "storageVersionHash": hashlib.sha256(f"{res.group}/{res.storage}/{res.kind}".encode()).hexdigest()[:16],
    }
    if res.short_names:
        entry["shortNames"] = list(res.short_names)
    if res.categories:
        entry["categories"] = list(res.categories)
    out = [entry]
    if res.has_status:
        out.append({"name": f"{res.plural}/status", "singularName": "", "namespaced": res.namespaced, "kind": res.kind,
                    "verbs": ["get", "patch", "update"]})
    if res.scale is not None:
        out.append({"name": f"{res.plural}/scale", "singularName": "", "namespaced": res.namespaced, "kind": "Scale",
                    "group": "autoscaling", "version": "v1", "verbs": ["get", "patch", "update"]})
    return out


def definition_name(group: str, version: str, kind: str) -> str:
    """``com.example.stable.v1.CronTab``: the group reversed, as kube-apiserver names CRD schemas."""
    return f"{'.'.join(reversed(group.split('.')))}.{version}.{kind}"


def _documents(resources: list[CustomResource]) -> dict[tuple[str, str], bytes]:
    per_gv: dict[tuple[str, str], list[tuple[openapi.Resource, Schema]]] = {}
    for res in resources:
        for version in res.versions:
            name = definition_name(res.group, version, res.kind)
            schema = copy.deepcopy(res.schema(version) or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
            props = schema.setdefault("properties", {})
            props.setdefault("apiVersion", {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."})
            props.setdefault("kind", {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."})
            props["metadata"] = {"$ref": f"{META}.ObjectMeta", "description": "Standard object's metadata."}
            schema.setdefault("type", "object")
            schema["x-kubernetes-group-version-kind"] = [{"group": res.group, "kind": res.kind, "version": version}]
            described = openapi.Resource(res.group, version, res.kind, res.plural, res.namespaced, name, res.has_status, False)
            per_gv.setdefault((res.group, version), []).append((described, schema))
    return {gv: openapi.custom_v3_bytes(members) for gv, members in per_gv.items()}


# --------------------------------------------------------------------------- writes


def admit(res: CustomResource, obj: Object, version: str) -> Object:
    """Defaults, then validation against the schema of the request's ``version`` (the object may be in
    stored form: with conversion strategy None only its apiVersion differs)."""
    schema = res.schema(version) if version in res.schemas else res.schema(res.storage)
    if not schema:
        return obj
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    structural.apply_defaults({**schema, "properties": {k: v for k, v in (schema.get("properties") or {}).items()
                                                          if k not in ("apiVersion", "kind", "metadata")}}, body)
    out = {**body, "apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": obj["metadata"]}
    found = structural.validate(schema, out)
    if found:
        raise errors.invalid(res, str(obj["metadata"].get("name", "")), found)
    return out


def _path_steps(path: str) -> list[str]:
    return [p for p in path.strip().lstrip(".").split(".") if p]


def _get_path(obj: Any, path: str) -> Any:
    for step in _path_steps(path):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(step)
    return obj


# The built-in kinds with a scale subresource (kubectl scale); their selector is spec.selector.
BUILTIN_SCALE = {key: Scale(".spec.replicas", ".status.replicas") for key in BUILTIN_SCALABLE}


def scale_spec(res: Resource) -> Scale | None:
    """How ``res``'s scale subresource reads and writes replicas, or None when it has none."""
    if isinstance(res, CustomResource):
        return res.scale
    return BUILTIN_SCALE.get((res.group, res.kind))


def scale_of(res: Resource, obj: Object) -> Object:
    """An ``autoscaling/v1`` Scale of a custom or built-in resource, as the scale subresource reads it."""
    scale = scale_spec(res)
    assert scale is not None
    meta = obj["metadata"]
    status: dict[str, Any] = {"replicas": int(_get_path(obj, scale.status_replicas) or 0)}
    if scale.label_selector:
        selector = _get_path(obj, scale.label_selector)
        if isinstance(selector, str):
            status["selector"] = selector
    elif not isinstance(res, CustomResource):
        text = format_label_selector(_get_path(obj, ".spec.selector"))
        if text is not None:
            status["selector"] = text
    replicas = _get_path(obj, scale.spec_replicas)
    return {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta},
        "spec": {"replicas": int(replicas) if isinstance(replicas, int) else 0},
        "status": status,
    }


def with_replicas(res: Resource, obj: Object, scale: Any) -> Object:
    """``obj`` with the replicas a written Scale asks for at ``specReplicasPath``."""
    spec = scale_spec(res)
    assert spec is not None
    replicas = (scale.get("spec") or {}).get("replicas") if isinstance(scale, dict) else None
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise errors.invalid(res, str(obj["metadata"]["name"]), [FieldError("spec.replicas", "Required value")])
    if replicas < 0:
        raise errors.invalid(res, str(obj["metadata"]["name"]), [
            FieldError("spec.replicas", "must be greater than or equal to 0", replicas, True)])
    out = copy.deepcopy(obj)
    node = out
    steps = _path_steps(spec.spec_replicas)
    for step in steps[:-1]:
        node = node.setdefault(step, {})
    node[steps[-1]] = replicas
    rv = (scale.get("metadata") or {}).get("resourceVersion") if isinstance(scale, dict) else None
    if rv:
        out["metadata"]["resourceVersion"] = rv
    return out


def table_columns_for(res: Resource, version: str) -> tuple[PrinterColumn, ...] | None:
    return res.table_columns(version) if isinstance(res, CustomResource) else None


def all_namespaced(registry: CustomResources | None) -> Sequence[Resource]:
    return [r for r in registry.resources() if r.namespaced] if registry is not None else []
