"""Kubernetes API requests as data: verb, path, query, body, content type.

Every function here is pure: it turns a kind and an object (or a name) into a
:class:`Request`, and :mod:`.transport` sends it. Tests assert exact URLs and
bodies with no server (the lightkube way).

Which group, version, plural and scope a kind has comes from
:data:`hub.api.registry.KINDS`; the coordination.k8s.io Lease used for leader
election is the one kind added here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import orjson

from hub.api.conversion import V1BETA2
from hub.api.registry import KINDS

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"

DEFAULT_FIELD_MANAGER = "mkhub"


@dataclass(frozen=True, slots=True)
class Resource:
    """Where a kind lives in the API: ``/apis/{group}/{version}/[namespaces/{ns}/]{plural}``."""

    kind: str
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection(self, namespace: str | None) -> str:
        """The collection's path; ``namespace`` None (or "" for a namespaced kind) means all namespaces."""
        known = _COLLECTIONS.get((self.plural, self.group, self.version, namespace))
        if known is not None and known[0] is self:
            return known[1]
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            path = f"{root}/namespaces/{_seg(namespace)}/{self.plural}"
        else:
            path = f"{root}/{self.plural}"
        if len(_COLLECTIONS) < 4096:  # every create asks (an Event's namespace, quoted, each time)
            _COLLECTIONS[(self.plural, self.group, self.version, namespace)] = (self, path)
        return path

    def item(self, namespace: str, name: str) -> str:
        if self.namespaced and not namespace:
            raise ValueError(f"{self.kind} {name}: a namespaced kind needs metadata.namespace")
        return f"{self.collection(namespace if self.namespaced else None)}/{_seg(name)}"


LEASE = Resource("Lease", "coordination.k8s.io", "v1", "leases", True)
_COLLECTIONS: dict[tuple[str, str, str, str | None], tuple[Resource, str]] = {}


def _seg(text: str) -> str:
    if not text or text in (".", "..") or "/" in text:
        raise ValueError(f"{text!r} is not a valid name in a URL path")
    return quote(text, safe="")


def resource_for(kind: str, api_version: str | None = None) -> Resource:
    """The API location of ``kind`` (in ``api_version`` when it is one the kind has;
    otherwise its preferred one: Kueue's v1beta2). Raises KeyError for unknown kinds."""
    if kind == LEASE.kind:
        return LEASE
    info = KINDS.get(kind)
    if info is None:
        raise KeyError(f"unknown kind {kind!r}")
    # Every write asks (a frozen dataclass is slow to build); a kind registered again is looked up anew.
    if not isinstance(api_version, str):
        api_version = None  # not one of the kind's: its preferred version, as for any other
    known = _RESOURCES.get((kind, api_version))
    if known is not None and known[0] is info:
        return known[1]
    versions = info.api_versions
    chosen = api_version if api_version in versions else V1BETA2 if V1BETA2 in versions else versions[-1]
    group, _, version = chosen.rpartition("/")
    res = Resource(kind, group, version, info.plural, info.namespaced)
    if len(_RESOURCES) < 4096:  # any apiVersion a caller names is a key: keep it bounded
        _RESOURCES[(kind, api_version)] = (info, res)
    return res


_RESOURCES: dict[tuple[str, str | None], tuple[Any, Resource]] = {}


def all_resources() -> dict[str, Resource]:
    """Every registry kind at its preferred version."""
    return {kind: resource_for(kind) for kind in KINDS}


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    content_type: str | None = None
    headers: tuple[tuple[str, str], ...] = field(default=())

    @property
    def url(self) -> str:
        """Path and query, as sent (relative to the server's address)."""
        if not self.query:
            return self.path
        text = _WRITE_QUERIES.get(self.query)  # every write's (urlencode is slow for what it does)
        if text is None and self.query[-1][0] == "timeout" and self.query[-1][1].isalnum():
            # A write bounded by the leader's lease (transport._bounded): a known write's query and
            # a timeout that needs no quoting ("1234ms"), as urlencode writes them.
            head = _WRITE_QUERIES.get(self.query[:-1])
            if head is not None:
                text = f"{head}&timeout={self.query[-1][1]}" if head else f"timeout={self.query[-1][1]}"
        return f"{self.path}?{text if text is not None else urlencode(self.query)}"

    def json(self) -> Any:
        """The body parsed (tests)."""
        return None if self.body is None else json.loads(self.body)


_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _body(obj: Any, nulls: int = 0) -> bytes:
    # orjson writes the same compact UTF-8 text several times faster; what it refuses or would
    # write differently (non-string keys, huge integers, NaN as null) goes to json, which raises.
    # ``nulls``: how many None the caller put there itself (a merge patch's removed keys): a text
    # with exactly that many holds no NaN (one with more, "null" in a string included, goes to json).
    try:
        out = orjson.dumps(obj)
    except TypeError:
        return _encoder.encode(obj).encode()
    return out if out.count(b"null") == nulls else _encoder.encode(obj).encode()


_WRITE_QUERIES: dict[tuple[tuple[str, str], ...], str] = {}  # a write's query -> its text


def _write_query(field_manager: str | None, dry_run: bool = False) -> tuple[tuple[str, str], ...]:
    known = _QUERIES.get((field_manager, dry_run))
    if known is not None:
        return known
    query: list[tuple[str, str]] = []
    if dry_run:
        query.append(("dryRun", "All"))
    if field_manager:
        query.append(("fieldManager", field_manager))
    out = tuple(query)
    if out not in _WRITE_QUERIES and len(_WRITE_QUERIES) < 64:
        _WRITE_QUERIES[out] = urlencode(out)
        _QUERIES[(field_manager, dry_run)] = out
    return out


_QUERIES: dict[tuple[str | None, bool], tuple[tuple[str, str], ...]] = {}  # (field manager, dry run) -> query


def _key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    return str(obj.get("kind") or ""), str(meta.get("namespace") or ""), str(meta.get("name") or "")


# --------------------------------------------------------------------------- reads


def get(res: Resource, namespace: str, name: str) -> Request:
    return Request("GET", res.item(namespace, name))


def list_(
    res: Resource,
    namespace: str | None = None,
    *,
    label_selector: str | None = None,
    limit: int | None = None,
    continue_: str | None = None,
    resource_version: str | None = None,
) -> Request:
    """One page of a list. ``resource_version="0"`` lets the server answer from its cache
    (not used: the informer wants a consistent, most recent list)."""
    query: list[tuple[str, str]] = []
    if label_selector:
        query.append(("labelSelector", label_selector))
    if limit:
        query.append(("limit", str(limit)))
    if continue_:
        query.append(("continue", continue_))
    if resource_version is not None:
        query.append(("resourceVersion", resource_version))
    return Request("GET", res.collection(namespace), tuple(query))


def watch(
    res: Resource,
    resource_version: str,
    *,
    namespace: str | None = None,
    timeout_seconds: int | None = None,
    bookmarks: bool = True,
) -> Request:
    """A watch from ``resource_version`` (changes after it), with bookmarks."""
    query: list[tuple[str, str]] = [("watch", "1"), ("resourceVersion", resource_version)]
    if bookmarks:
        query.append(("allowWatchBookmarks", "true"))
    if timeout_seconds is not None:
        query.append(("timeoutSeconds", str(timeout_seconds)))
    return Request("GET", res.collection(namespace), tuple(query))


# --------------------------------------------------------------------------- writes


def create(res: Resource, obj: Mapping[str, Any], *, field_manager: str | None = DEFAULT_FIELD_MANAGER) -> Request:
    """POST to the collection. The object's own apiVersion/kind go out as given; the
    collection's namespace is the object's (generateName needs no name)."""
    _, namespace, _ = _key(obj)
    if res.namespaced and not namespace:
        raise ValueError(f"{res.kind}: a namespaced kind needs metadata.namespace")
    api_version = res.api_version
    # A copy only where the object names another version or kind (the same keys, in the same order).
    body = obj if obj.get("apiVersion") == api_version and obj.get("kind") == res.kind else {
        **obj, "apiVersion": api_version, "kind": res.kind}
    return Request("POST", res.collection(namespace if res.namespaced else None), _write_query(field_manager), _body(body), JSON)


def replace(
    res: Resource, obj: Mapping[str, Any], *, status: bool = False, field_manager: str | None = DEFAULT_FIELD_MANAGER
) -> Request:
    """PUT of the whole object (``status=True``: to the status subresource). The API server
    requires metadata.resourceVersion on an update; the caller sets it."""
    _, namespace, name = _key(obj)
    path = res.item(namespace, name) + ("/status" if status else "")
    body = {**obj, "apiVersion": res.api_version, "kind": res.kind}
    return Request("PUT", path, _write_query(field_manager), _body(body), JSON)


def merge_patch(
    res: Resource,
    namespace: str,
    name: str,
    patch: Mapping[str, Any],
    *,
    status: bool = False,
    field_manager: str | None = DEFAULT_FIELD_MANAGER,
    nulls: int = 0,
) -> Request:
    """``nulls``: how many keys the patch removes (:func:`merge_diff_counted`)."""
    path = res.item(namespace, name) + ("/status" if status else "")
    return Request("PATCH", path, _write_query(field_manager), _body(patch, nulls), MERGE_PATCH)


def merge_diff(old: Any, new: Any) -> Any:
    """The RFC 7386 merge patch that turns ``old`` into ``new`` (maps merge key by key, a removed
    key is null, anything else, lists included, is replaced whole); ``{}`` when they are equal.
    The patch shares ``new``'s values (serialize it; change neither): a deep copy of each replaced
    value (a Workload's conditions and admission) was a tenth of a status write's CPU."""
    return _diff(old, new, [0])


def merge_diff_counted(old: Any, new: Any) -> tuple[Any, int]:
    """:func:`merge_diff`, and how many nulls it holds for removed keys: passed to
    :func:`merge_patch`, its body is checked by counting rather than written twice (a status
    write that drops a field was sent through ``json`` at twice orjson's cost)."""
    removed = [0]
    return _diff(old, new, removed), removed[0]


def _diff(old: Any, new: Any, removed: list[int]) -> Any:
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return new
    patch: dict[str, Any] = {}
    for key in old.keys() - new.keys():
        patch[key] = None
        removed[0] += 1
    for key, value in new.items():
        if key not in old:
            patch[key] = value
        elif old[key] != value:
            inner = _diff(old[key], value, removed)
            if isinstance(old[key], Mapping) and isinstance(value, Mapping) and inner == {}:
                continue
            patch[key] = inner
    return patch


def delete(res: Resource, namespace: str, name: str, *, resource_version: str | None = None) -> Request:
    """DELETE, with a resourceVersion precondition when given; dependents go in the background
    (what kubectl does by default)."""
    options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
    if resource_version is not None:
        options["preconditions"] = {"resourceVersion": resource_version}
    return Request("DELETE", res.item(namespace, name), (), _body(options), JSON)
