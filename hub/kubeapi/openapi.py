"""OpenAPI documents as kube-apiserver serves them (pure functions, cached).

- ``/openapi/v3`` — :func:`openapi_v3_index`: every group-version's document path
  with a ``serverRelativeURL`` carrying the document's hash (clients cache by URL);
- ``/openapi/v3/api/v1``, ``/openapi/v3/apis/{group}/{version}`` —
  :func:`openapi_v3_document` (or :func:`openapi_v3_bytes` to send as is): paths
  for every resource of the group-version (operations carry
  ``x-kubernetes-group-version-kind`` and list their query parameters, which is how
  kubectl decides that the server validates fields itself — ``fieldValidation`` on
  PATCH — and so needs no client-side schema), and ``components.schemas`` named as
  Kubernetes names them (``io.x-k8s.kueue.v1beta2.ClusterQueue``,
  ``io.k8s.api.batch.v1.Job``, ``io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta``)
  with ``x-kubernetes-group-version-kind`` on each kind, which ``kubectl explain`` reads;
- ``/openapi/v2`` — :func:`openapi_v2` (JSON). kubectl 1.32 asks for v2 only as
  protobuf (``Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf``)
  and only when v3 lacks what it needs; serve the JSON to clients that accept
  ``application/json`` and answer others 406, so kubectl falls back cleanly.

Kueue kinds come from the CRD schemas (:mod:`hub.api.schema`); built-in kinds from
the compact hand-written schemas in :mod:`hub.api.schema.builtin` and
:mod:`hub.api.schema.builtin_stored` (the kinds of :mod:`hub.kubeapi.stored`).
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from hub.api.conversion import KUEUE_GROUP
from hub.api.registry import KINDS
from hub.api.schema import KUEUE_KINDS, VERSIONS, has_status, kind_schema
from hub.api.schema.builtin import APIEXTENSIONS, BATCH, COORDINATION, CORE, META, builtin_definitions
from hub.api.schema.builtin_apps import apps_definitions
from hub.api.schema.builtin_dra import dra_definitions
from hub.api.schema.builtin_node import node_definitions
from hub.api.schema.builtin_pod import complete_pod
from hub.api.schema.builtin_stored import extend_pod, stored_definitions
from hub.api.schema.passive import PASSIVE_SCHEMAS

from .stored import BY_KIND as STORED_BY_KIND
from .stored import STORED_KINDS
from .validate import resolve

Schema = dict[str, Any]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


@dataclass(frozen=True, slots=True)
class Resource:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    definition: str
    status: bool
    strategic_merge: bool
    """Built-in kinds accept strategic merge patches; custom resources do not."""

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def doc_path(self) -> str:
        """The key of this resource's document in the /openapi/v3 index."""
        return f"apis/{self.group}/{self.version}" if self.group else f"api/{self.version}"


def crd_definition_name(kind: str, version: str) -> str:
    """``io.x-k8s.kueue.v1beta2.ClusterQueue``: the group reversed, as the API server names CRD schemas."""
    reversed_group = ".".join(reversed(KUEUE_GROUP.split(".")))
    return f"{reversed_group}.{version}.{kind}"


# Every Kueue kind the API serves is in the documents: one missing sends kubectl to the
# OpenAPI v2 fallback (protobuf only), which fails every object of the file.
_SERVED_KUEUE_KINDS = (*KUEUE_KINDS, *PASSIVE_SCHEMAS)


def _kueue_schema(kind: str, version: str) -> Schema:
    passive = PASSIVE_SCHEMAS.get(kind)
    return passive() if passive is not None else kind_schema(kind, version)


def _resources() -> tuple[Resource, ...]:
    builtin = (
        Resource("", "v1", "Namespace", "namespaces", False, f"{CORE}.Namespace", True, True),
        Resource("", "v1", "Pod", "pods", True, f"{CORE}.Pod", True, True),
        Resource("", "v1", "Event", "events", True, f"{CORE}.Event", False, True),
        Resource("", "v1", "Node", "nodes", False, f"{CORE}.Node", True, True),
        Resource("batch", "v1", "Job", "jobs", True, f"{BATCH}.Job", True, True),
        Resource("coordination.k8s.io", "v1", "Lease", "leases", True, f"{COORDINATION}.Lease", False, True),
        Resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False,
                 f"{APIEXTENSIONS}.CustomResourceDefinition", True, True),
        *(Resource(k.group, k.version, k.kind, k.plural, k.namespaced, k.definition, k.has_status, True)
          for k in STORED_KINDS),
    )
    kueue = tuple(
        Resource(KUEUE_GROUP, version, kind, KINDS[kind].plural, KINDS[kind].namespaced,
                 crd_definition_name(kind, version), kind in KUEUE_KINDS and has_status(kind), False)
        for version in VERSIONS
        for kind in _SERVED_KUEUE_KINDS
    )
    return builtin + kueue


RESOURCES = _resources()
"""Every resource the documents describe."""


# --------------------------------------------------------------------------- definitions


def _crd_kind_definition(kind: str, version: str) -> Schema:
    schema = copy.deepcopy(_kueue_schema(kind, version))
    schema["properties"]["metadata"] = {"$ref": f"{META}.ObjectMeta", "description": "Standard object's metadata."}
    schema["x-kubernetes-group-version-kind"] = [{"group": KUEUE_GROUP, "kind": kind, "version": version}]
    return schema


def _crd_list_definition(kind: str, version: str) -> Schema:
    return {
        "description": f"{kind}List is a list of {kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": "APIVersion defines the versioned schema of this representation of an object.",
                           "type": "string"},
            "items": {"description": f"List of {KINDS[kind].plural}.", "type": "array",
                      "items": {"$ref": crd_definition_name(kind, version)}},
            "kind": {"description": "Kind is a string value representing the REST resource this object represents.",
                     "type": "string"},
            "metadata": {"$ref": f"{META}.ListMeta", "description": "Standard list metadata."},
        },
        "x-kubernetes-group-version-kind": [{"group": KUEUE_GROUP, "kind": f"{kind}List", "version": version}],
    }


@cache
def _all_definitions() -> dict[str, Schema]:
    out = builtin_definitions()
    extend_pod(out)
    out.update(stored_definitions())
    out.update(apps_definitions())
    out.update(node_definitions())
    out.update(dra_definitions())
    complete_pod(out)
    for version in VERSIONS:
        for kind in _SERVED_KUEUE_KINDS:
            out[crd_definition_name(kind, version)] = _crd_kind_definition(kind, version)
            out[f"{crd_definition_name(kind, version)}List"] = _crd_list_definition(kind, version)
    return out


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        target = node.get("$ref")
        if isinstance(target, str):
            found.add(target)
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def _closure(names: set[str]) -> list[str]:
    defs = _all_definitions()
    todo, seen = list(names), set(names)
    while todo:
        found: set[str] = set()
        _refs(defs[todo.pop()], found)
        for name in found - seen:
            seen.add(name)
            todo.append(name)
    return sorted(seen)


def _rewrite_refs(node: Any, prefix: str, *, wrap: bool) -> Any:
    """Bare ``$ref`` names to ``prefix + name``; OpenAPI v3 wraps a described reference in
    ``allOf`` (a sibling of ``$ref`` is ignored there), as the API server does."""
    if isinstance(node, dict):
        if "$ref" in node:
            target = prefix + node["$ref"]
            rest = {k: _rewrite_refs(v, prefix, wrap=wrap) for k, v in node.items() if k != "$ref"}
            if wrap and rest:
                return {"allOf": [{"$ref": target}], **rest}
            return {"$ref": target, **rest}
        return {k: _rewrite_refs(v, prefix, wrap=wrap) for k, v in node.items()}
    if isinstance(node, list):
        return [_rewrite_refs(v, prefix, wrap=wrap) for v in node]
    return node


# --------------------------------------------------------------------------- paths

_LIST_PARAMS = (
    ("allowWatchBookmarks", "boolean", "Ask for BOOKMARK events on a watch."),
    ("continue", "string", "The continue token of the previous page."),
    ("fieldSelector", "string", "Restrict the list by fields: metadata.name, metadata.namespace."),
    ("labelSelector", "string", "Restrict the list by labels."),
    ("limit", "integer", "Most items to return; the rest come with the continue token."),
    ("resourceVersion", "string", "List or watch from this resourceVersion."),
    ("resourceVersionMatch", "string", "How resourceVersion applies to a list: Exact or NotOlderThan."),
    ("sendInitialEvents", "boolean", "Start a watch with the current objects as ADDED events."),
    ("timeoutSeconds", "integer", "End a list or watch after this many seconds."),
    ("watch", "boolean", "Watch for changes instead of listing."),
)
_WRITE_PARAMS = (
    ("dryRun", "string", "All: validate and answer without persisting."),
    ("fieldManager", "string", "Name of the actor making the change, for field ownership."),
    ("fieldValidation", "string", "Ignore, Warn or Strict handling of unknown and duplicate fields."),
)
_FORCE = ("force", "boolean", "Apply requests: take ownership of conflicting fields.")
_DELETE_PARAMS = (
    ("dryRun", "string", "All: validate and answer without persisting."),
    ("gracePeriodSeconds", "integer", "Seconds before the object is deleted."),
    ("propagationPolicy", "string", "Orphan, Background or Foreground garbage collection of dependents."),
)


def _param(name: str, type_: str, description: str, where: str, v2: bool) -> Schema:
    out: Schema = {"name": name, "in": where, "description": description}
    if where == "path":
        out["required"] = True
    if v2:
        out["type"] = type_
        out["uniqueItems"] = True
    else:
        out["schema"] = {"type": type_, "uniqueItems": True}
    return out


def _op_id(verb: str, res: Resource, suffix: str = "") -> str:
    group = "".join(p.capitalize() for p in res.group.replace("-", ".").split(".")) or "Core"
    scope = "Namespaced" if res.namespaced and verb not in ("listForAllNamespaces",) else ""
    return f"{verb}{group}{res.version.capitalize()}{scope}{res.kind}{suffix}"


class _PathBuilder:
    def __init__(self, v2: bool) -> None:
        self.v2 = v2
        self.prefix = "#/definitions/" if v2 else "#/components/schemas/"

    def ref(self, name: str) -> Schema:
        return {"$ref": self.prefix + name}

    def body(self, name: str, types: tuple[str, ...]) -> dict[str, Any]:
        if self.v2:
            return {"parameters": [{"name": "body", "in": "body", "required": True, "schema": self.ref(name)}],
                    "consumes": list(types)}
        return {"requestBody": {"content": {t: {"schema": self.ref(name)} for t in types}, "required": True}}

    def responses(self, name: str, *codes: str) -> Schema:
        out: Schema = {}
        for code in codes:
            text = {"200": "OK", "201": "Created", "202": "Accepted"}[code]
            if self.v2:
                out[code] = {"description": text, "schema": self.ref(name)}
            else:
                out[code] = {"description": text, "content": {
                    t: {"schema": self.ref(name)} for t in ("application/json", "application/yaml")}}
        out["401"] = {"description": "Unauthorized"}
        return out

    def op(self, res: Resource, action: str, op_id: str, description: str, *, params: tuple[tuple[str, str, str], ...],
           response: str, codes: tuple[str, ...], body: tuple[str, tuple[str, ...]] | None = None) -> Schema:
        out: Schema = {
            "tags": [res.doc_path.replace("/", "_")],
            "description": description,
            "operationId": op_id,
            "parameters": [_param(n, t, d, "query", self.v2) for n, t, d in params],
        }
        if body is not None:
            extra = self.body(*body)
            if self.v2:
                out["parameters"] = extra.pop("parameters") + out["parameters"]
            out.update(extra)
        out["responses"] = self.responses(response, *codes)
        out["x-kubernetes-action"] = action
        out["x-kubernetes-group-version-kind"] = {"group": res.group, "kind": res.kind, "version": res.version}
        return out

    def paths(self, res: Resource) -> dict[str, Schema]:
        base = f"/apis/{res.group}/{res.version}" if res.group else f"/api/{res.version}"
        scoped = f"{base}/namespaces/{{namespace}}/{res.plural}" if res.namespaced else f"{base}/{res.plural}"
        name_param = _param("name", "string", f"name of the {res.kind}", "path", self.v2)
        ns_param = [_param("namespace", "string", "object name and auth scope", "path", self.v2)] if res.namespaced else []
        pretty = _param("pretty", "string", "If 'true', the output is pretty printed.", "query", self.v2)
        patch_types = (JSON_PATCH, MERGE_PATCH, *((STRATEGIC_MERGE_PATCH,) if res.strategic_merge else ()), APPLY_PATCH)
        status = f"{META}.Status"
        lst = f"{res.definition}List"
        d = res.definition
        out: dict[str, Schema] = {
            scoped: {
                "get": self.op(res, "list", _op_id("list", res), f"list or watch objects of kind {res.kind}",
                               params=_LIST_PARAMS, response=lst, codes=("200",)),
                "post": self.op(res, "post", _op_id("create", res), f"create a {res.kind}", params=_WRITE_PARAMS,
                                response=d, codes=("200", "201", "202"), body=(d, ("application/json", "application/yaml"))),
                "delete": self.op(res, "deletecollection", _op_id("deleteCollection", res),
                                  f"delete collection of {res.kind}", params=_DELETE_PARAMS + _LIST_PARAMS,
                                  response=status, codes=("200",)),
                "parameters": [*ns_param, pretty],
            },
            f"{scoped}/{{name}}": {
                "get": self.op(res, "get", _op_id("read", res), f"read the specified {res.kind}", params=(),
                               response=d, codes=("200",)),
                "put": self.op(res, "put", _op_id("replace", res), f"replace the specified {res.kind}",
                               params=_WRITE_PARAMS, response=d, codes=("200", "201"),
                               body=(d, ("application/json", "application/yaml"))),
                "patch": self.op(res, "patch", _op_id("patch", res), f"partially update the specified {res.kind}",
                                 params=(*_WRITE_PARAMS, _FORCE), response=d, codes=("200", "201"),
                                 body=(f"{META}.Patch", patch_types)),
                "delete": self.op(res, "delete", _op_id("delete", res), f"delete a {res.kind}",
                                  params=_DELETE_PARAMS, response=status, codes=("200", "202"),
                                  body=(f"{META}.DeleteOptions", ("application/json", "application/yaml"))),
                "parameters": [name_param, *ns_param, pretty],
            },
        }
        if res.status:
            out[f"{scoped}/{{name}}/status"] = {
                "get": self.op(res, "get", _op_id("read", res, "Status"), f"read status of the specified {res.kind}",
                               params=(), response=d, codes=("200",)),
                "put": self.op(res, "put", _op_id("replace", res, "Status"),
                               f"replace status of the specified {res.kind}", params=_WRITE_PARAMS, response=d,
                               codes=("200", "201"), body=(d, ("application/json", "application/yaml"))),
                "patch": self.op(res, "patch", _op_id("patch", res, "Status"),
                                 f"partially update status of the specified {res.kind}",
                                 params=(*_WRITE_PARAMS, _FORCE), response=d, codes=("200", "201"),
                                 body=(f"{META}.Patch", patch_types)),
                "parameters": [name_param, *ns_param, pretty],
            }
        if res.namespaced:
            out[f"{base}/{res.plural}"] = {
                "get": self.op(res, "list", _op_id("listForAllNamespaces", res, ""),
                               f"list or watch objects of kind {res.kind} in every namespace",
                               params=_LIST_PARAMS, response=lst, codes=("200",)),
                "parameters": [pretty],
            }
        return out


def _definitions_for(resources: list[Resource]) -> list[str]:
    roots = {r.definition for r in resources} | {f"{r.definition}List" for r in resources}
    roots |= {f"{META}.Status", f"{META}.Patch", f"{META}.DeleteOptions"}
    return _closure(roots)


# --------------------------------------------------------------------------- documents


def _doc_key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def group_versions() -> list[tuple[str, str]]:
    """(group, version) of every document, core first."""
    seen: list[tuple[str, str]] = []
    for r in RESOURCES:
        if (r.group, r.version) not in seen:
            seen.append((r.group, r.version))
    return seen


@cache
def openapi_v3_bytes(group: str, version: str) -> bytes | None:
    """The document of one group-version as compact JSON, or None when mkhub serves none."""
    resources = [r for r in RESOURCES if (r.group, r.version) == (group, version)]
    if not resources:
        return None
    builder = _PathBuilder(v2=False)
    paths: dict[str, Schema] = {}
    for res in resources:
        paths.update(builder.paths(res))
    defs = _all_definitions()
    schemas = {name: _rewrite_refs(defs[name], "#/components/schemas/", wrap=True) for name in _definitions_for(resources)}
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "mkhub"},
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": schemas},
    }
    return json.dumps(doc, separators=(",", ":"), sort_keys=False).encode()


def openapi_v3_document(group: str, version: str) -> dict[str, Any] | None:
    """The document of ``/openapi/v3/apis/{group}/{version}`` (group "" for ``/openapi/v3/api/v1``)."""
    raw = openapi_v3_bytes(group, version)
    return None if raw is None else dict(json.loads(raw))


def openapi_v3_for_path(path: str) -> bytes | None:
    """The document for an index key (``api/v1``, ``apis/batch/v1``), leading slash and
    ``/openapi/v3/`` prefix allowed; None when unknown."""
    key = path.strip("/").removeprefix("openapi/v3/").split("?", 1)[0]
    parts = key.split("/")
    if len(parts) == 2 and parts[0] == "api":
        return openapi_v3_bytes("", parts[1])
    if len(parts) == 3 and parts[0] == "apis":
        return openapi_v3_bytes(parts[1], parts[2])
    return None


def document_hash(raw: bytes) -> str:
    """The hash the index puts in serverRelativeURL (and a server may send as ETag)."""
    return hashlib.sha512(raw).hexdigest().upper()


@cache
def _index_bytes() -> bytes:
    paths = {}
    for group, version in group_versions():
        raw = openapi_v3_bytes(group, version)
        assert raw is not None
        key = _doc_key(group, version)
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={document_hash(raw)}"}
    return json.dumps({"paths": paths}, separators=(",", ":")).encode()


def openapi_v3_index() -> dict[str, Any]:
    """``/openapi/v3``: ``{"paths": {"apis/kueue.x-k8s.io/v1beta2": {"serverRelativeURL": ...}}}``."""
    return dict(json.loads(_index_bytes()))


def openapi_v3_index_bytes() -> bytes:
    return _index_bytes()


@cache
def openapi_v2_bytes() -> bytes:
    builder = _PathBuilder(v2=True)
    paths: dict[str, Schema] = {}
    for res in RESOURCES:
        paths.update(builder.paths(res))
    defs = _all_definitions()
    names = _definitions_for(list(RESOURCES))
    doc = {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "mkhub"},
        "paths": dict(sorted(paths.items())),
        "definitions": {name: _rewrite_refs(defs[name], "#/definitions/", wrap=False) for name in names},
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def openapi_v2() -> dict[str, Any]:
    """``/openapi/v2`` (Swagger 2.0) with every resource and definition."""
    return dict(json.loads(openapi_v2_bytes()))


# --------------------------------------------------------------------------- for the server


def document(sub: str) -> dict[str, Any] | None:
    """The document at ``/openapi/<sub>``: ``v3`` (the index), ``v3/api/v1``,
    ``v3/apis/{group}/{version}``, ``v2``; None when there is none."""
    key = sub.strip("/").split("?", 1)[0]
    if key == "v3":
        return openapi_v3_index()
    if key == "v2":
        return openapi_v2()
    if key.startswith("v3/"):
        raw = openapi_v3_for_path(key.removeprefix("v3/"))
        return None if raw is None else dict(json.loads(raw))
    return None


# The other built-in kinds that can be written, described field by field (a Job's pod template
# by hub.api.schema.builtin_pod): writes are checked and pruned against them as against a CRD's.
_BUILTIN_WRITABLE = {
    ("batch", "v1", "Job"): f"{BATCH}.Job",
    ("", "v1", "Namespace"): f"{CORE}.Namespace",
    ("", "v1", "Event"): f"{CORE}.Event",
    ("", "v1", "Pod"): f"{CORE}.Pod",
    ("coordination.k8s.io", "v1", "Lease"): f"{COORDINATION}.Lease",
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"): f"{APIEXTENSIONS}.CustomResourceDefinition",
}


def schema_for(group: str, version: str, kind: str) -> Schema | None:
    """The structural schema a write is checked and pruned against: a Kueue kind's CRD schema,
    or a built-in kind's (:mod:`hub.kubeapi.stored` and :data:`_BUILTIN_WRITABLE`); None otherwise."""
    stored = STORED_BY_KIND.get(kind)
    if stored is not None and (stored.group, stored.version) == (group, version):
        return resolved_definition(stored.definition)
    builtin = _BUILTIN_WRITABLE.get((group, version, kind))
    if builtin is not None:
        return resolved_definition(builtin)
    if group != KUEUE_GROUP or kind not in _SERVED_KUEUE_KINDS or version not in VERSIONS:
        return None
    return _kueue_schema(kind, version)


@cache
def resolved_definition(name: str) -> Schema:
    """A definition with every reference inlined: the structural schema writes are checked against."""
    defs = _all_definitions()
    return resolve(defs[name], defs)


# --------------------------------------------------------------------------- custom resources


def custom_v3_bytes(resources: list[tuple[Resource, Schema]]) -> bytes:
    """The document of one group-version of custom resources (hub.kubeapi.crds): each
    ``(resource, definition)`` pair is a kind served from a CRD and its schema with
    ``metadata`` as a reference to ObjectMeta, named as ``resource.definition``."""
    builder = _PathBuilder(v2=False)
    paths: dict[str, Schema] = {}
    extra: dict[str, Schema] = {}
    for res, definition in resources:
        paths.update(builder.paths(res))
        extra[res.definition] = definition
        extra[f"{res.definition}List"] = {
            "description": f"{res.kind}List is a list of {res.kind}", "type": "object", "required": ["items"],
            "properties": {
                "apiVersion": {"type": "string", "description": "APIVersion of this representation of an object."},
                "items": {"type": "array", "items": {"$ref": res.definition}, "description": f"List of {res.plural}."},
                "kind": {"type": "string", "description": "Kind of the REST resource this object represents."},
                "metadata": {"$ref": f"{META}.ListMeta", "description": "Standard list metadata."},
            },
            "x-kubernetes-group-version-kind": [{"group": res.group, "kind": f"{res.kind}List", "version": res.version}],
        }
    found: set[str] = {f"{META}.ObjectMeta", f"{META}.ListMeta", f"{META}.Status", f"{META}.Patch", f"{META}.DeleteOptions"}
    defs = _all_definitions()
    schemas = {name: _rewrite_refs(defs[name], "#/components/schemas/", wrap=True) for name in _closure(found)}
    schemas.update({name: _rewrite_refs(d, "#/components/schemas/", wrap=True) for name, d in extra.items()})
    doc = {"openapi": "3.0.0", "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
           "paths": dict(sorted(paths.items())), "components": {"schemas": dict(sorted(schemas.items()))}}
    return json.dumps(doc, separators=(",", ":")).encode()
