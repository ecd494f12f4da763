"""get and list: versions, label and field selectors, ``limit``/``continue`` pagination.

Lists follow kube-apiserver's resourceVersion rules (:func:`list_page`). Pagination:
the continue token names the last key served and the first page's resourceVersion;
every later page shows the objects as they were then (:mod:`.history` takes them
back through the change log), until that version leaves the watch window.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hub.api.selectors import LabelSelector, LabelSelectorError, parse_label_selector
from hub.store.interface import Object, ObjectList, Store
from hub.store.sqlite_pages import TooOld as PageTooOld

from . import namespaces
from .errors import ApiError, bad_request, expired, not_found
from .history import TooOld, objects_at
from .resources import Resource


@dataclass(frozen=True, slots=True)
class Target:
    """What a request names: a resource in one version, a namespace ("" = cluster scope or all), a name."""

    res: Resource
    version: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""

    @property
    def api_version(self) -> str:
        return self.res.api_version(self.version)

    @property
    def store_namespace(self) -> str:
        return self.namespace if self.res.namespaced else ""


def external(target: Target, stored: Object) -> Object:
    """A stored object as the client's version shows it (shares nested values with ``stored``
    when no conversion is needed: the store hands out private copies)."""
    if target.res.api_version(target.version) == stored.get("apiVersion") or not target.res.group.startswith("kueue"):
        out = dict(stored)
    else:
        out = target.res.to_external(stored, target.version)
    out["apiVersion"] = target.api_version
    out["kind"] = target.res.kind
    if target.res.kind == "Namespace":
        out = namespaces.without_hold(out)
    if target.res.kind == "Namespace" and not (out.get("status") or {}).get("phase"):
        # Namespaces written straight to the store (the hub's "default") read as the API server defaults them.
        terminating = (out.get("metadata") or {}).get("deletionTimestamp")
        out["status"] = {**(out.get("status") or {}), "phase": "Terminating" if terminating else "Active"}
    return out


# --------------------------------------------------------------------------- selectors

FieldRequirement = tuple[str, bool, str]  # field, equal?, value
_FIELDS = ("metadata.name", "metadata.namespace")
# The extra field labels the API server supports for some kinds (kubectl describe lists an
# object's Events by involvedObject; node views list Pods by spec.nodeName).
_KIND_FIELDS = {
    "Event": (
        "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
        "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
        "reason", "reportingComponent", "source", "type",
    ),
    "Pod": ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "status.phase"),
}


def parse_field_selector(text: str, kind: str = "") -> list[FieldRequirement]:
    out: list[FieldRequirement] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        op = next((o for o in ("!=", "==", "=") if o in part), "")
        if not op:
            raise bad_request(f'invalid field selector: "{part}": no operator')
        equal = op != "!="
        field, value = (s.strip() for s in part.split(op, 1))
        if field not in _FIELDS and field not in _KIND_FIELDS.get(kind, ()):
            raise bad_request(f'"{field}" is not a known field selector: only "{", ".join((*_FIELDS, *_KIND_FIELDS.get(kind, ())))}"')
        out.append((field, equal, value))
    return out


def _field_value(obj: Object, field: str) -> str:
    if field == "source":
        source = obj.get("source") or {}
        return str(source.get("component") or "") if isinstance(source, dict) else ""
    node: Any = obj
    for step in field.split("."):
        node = node.get(step) if isinstance(node, dict) else None
    return "" if node is None else str(node)


def fields_match(obj: Object, reqs: list[FieldRequirement]) -> bool:
    return all((_field_value(obj, field) == value) == equal for field, equal, value in reqs)


def parse_labels(text: str) -> LabelSelector | None:
    if not text:
        return None
    try:
        return parse_label_selector(text)
    except LabelSelectorError as exc:
        raise bad_request(f"unable to parse requirement: {exc}") from None


@dataclass(frozen=True, slots=True)
class Selection:
    labels: LabelSelector | None
    fields: list[FieldRequirement]

    @classmethod
    def of(cls, query: Mapping[str, str], kind: str = "") -> Selection:
        fields = parse_field_selector(query.get("fieldSelector", ""), kind)
        return cls(parse_labels(query.get("labelSelector", "")), fields)

    def matches(self, obj: Object) -> bool:
        if self.labels is not None and not self.labels.matches((obj.get("metadata") or {}).get("labels")):
            return False
        return fields_match(obj, self.fields)

    def namespace_for(self, target: Target) -> str | None:
        """The namespace to list (None: all), narrowed by a metadata.namespace= field selector."""
        if target.res.namespaced and target.namespace:
            return target.namespace
        if not target.res.namespaced:
            return ""
        for field, equal, value in self.fields:
            if field == "metadata.namespace" and equal:
                return value
        return None


# --------------------------------------------------------------------------- get / list


def get_stored(store: Store, target: Target) -> Object:
    obj = store.get(target.res.kind, target.store_namespace, target.name)
    if obj is None:
        raise not_found(target.res, target.name)
    return obj


def _encode_token(rv: int, after: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": after}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_token(token: str) -> tuple[int, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise bad_request(f'continue key is not valid: "{token}"') from None


def _key(obj: Object) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or ''}\x00{meta['name']}"


@dataclass(slots=True)
class Page:
    items: ObjectList  # stored form
    resource_version: int
    continue_token: str = ""
    remaining: int | None = None


# kube-apiserver's watch cache waits this long for a resourceVersion it has not seen yet
# before it answers "Too large resource version".
TOO_LARGE_WAIT = 3.0

_LIST_EXPIRED = "The resourceVersion for the provided list is too old."
_CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
    "that were created, modified, or deleted between the time the first chunk was returned and now may show "
    "up in the list."
)


def _list_options_invalid(message: str) -> ApiError:
    field, _, reason = message.partition(": ")
    cause = {"reason": "FieldValueNotSupported" if reason.startswith("Unsupported") else "FieldValueForbidden",
             "message": reason, "field": field}
    details = {"group": "meta.k8s.io", "kind": "ListOptions", "causes": [cause]}
    return ApiError(422, "Invalid", f'ListOptions.meta.k8s.io "" is invalid: {message}', details)


def too_large(wanted: int, current: int) -> ApiError:
    """kube-apiserver's answer to a resourceVersion it has not reached (storage.NewTooLargeResourceVersionError)."""
    details = {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}
    return ApiError(504, "Timeout", f"Too large resource version: {wanted}, current: {current}", details)


def _parse_rv(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise bad_request(f'invalid resource version "{text}"')  # hub-specific wording
    return value


@dataclass(frozen=True, slots=True)
class ListRequest:
    """What a list asks for, validated as kube-apiserver validates ListOptions."""

    at: int | None  # None: the most recent state
    exact: bool  # the state at exactly ``at`` (else: at least ``at``)
    after: str  # continue from after this key ("" from the start)
    limit: int
    token_rv: int | None  # the continue token's resourceVersion (-1: continue at the latest)

    @classmethod
    def of(cls, query: Mapping[str, str]) -> ListRequest:
        rv = query.get("resourceVersion", "")
        match = query.get("resourceVersionMatch", "")
        token = query.get("continue", "")
        limit_text = query.get("limit", "")
        try:
            limit = int(limit_text) if limit_text else 0
        except ValueError:
            raise bad_request(f'invalid limit "{limit_text}"') from None
        if match:
            if not rv:
                raise _list_options_invalid("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided")
            if token:
                raise _list_options_invalid("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided")
            if match not in ("NotOlderThan", "Exact"):
                raise _list_options_invalid(f'resourceVersionMatch: Unsupported value: "{match}": supported values: "Exact", "NotOlderThan"')
            if match == "Exact" and rv == "0":
                raise _list_options_invalid('resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"')
        if token:
            if rv not in ("", "0"):
                raise bad_request("specifying resource version is not allowed when using continue")
            token_rv, after = _decode_token(token)
            return cls(None if token_rv < 0 else token_rv, token_rv >= 0, after, limit, token_rv)
        if rv == "":
            return cls(None, False, "", limit, None)
        at = _parse_rv(rv)
        if at == 0:
            return cls(None, False, "", 0, None)  # any version: the watch cache's, whole (limit ignored)
        # Without a match a limit makes the list exact (served from etcd), as the API concepts say.
        return cls(at, match == "Exact" or (not match and limit > 0), "", limit, None)


def _wait_until(store: Store, kind: str, at: int, wait: float) -> int:
    """The store's resourceVersion once it reached ``at``; 504 Too large after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        _, now = store.list(kind, "\x00")  # no object lives there: only the version
        if now >= at:
            return now
        if time.monotonic() >= deadline:
            raise too_large(at, now)
        time.sleep(0.05)


def list_page(store: Store, target: Target, query: Mapping[str, str], *, too_large_wait: float = TOO_LARGE_WAIT) -> Page:
    """One page of a list with kube-apiserver's resourceVersion semantics: the most recent state
    (no resourceVersion), any (``0``), at least or exactly a version, and ``continue`` pages that
    show the first page's state until it leaves the watch window (then 410 Expired, with a token
    that continues at the latest state)."""
    req = ListRequest.of(query)
    selection = Selection.of(query, target.res.kind)
    namespace = selection.namespace_for(target)
    kind = target.res.kind
    if req.at is not None:
        _wait_until(store, kind, req.at, 0.0 if req.exact else too_large_wait)
    chunked = getattr(store, "list_chunk", None)
    if chunked is not None and (req.limit > 0 or req.after):
        return _chunk_page(chunked, req, selection, namespace, kind)
    if req.exact and req.at is not None:
        try:
            items, _ = objects_at(store, kind, namespace, req.at)
        except TooOld:
            if req.token_rv is not None:
                fresh = _encode_token(-1, req.after)
                raise ApiError(410, "Expired", _CONTINUE_EXPIRED, None, {"continue": fresh}) from None
            raise expired(_LIST_EXPIRED) from None
        rv = req.at
        if selection.labels is not None:
            items = [o for o in items if selection.labels.matches((o.get("metadata") or {}).get("labels"))]
    else:
        items, rv = store.list(kind, namespace, selection.labels)
    if selection.fields:
        items = [o for o in items if fields_match(o, selection.fields)]
    if req.after:
        items = [o for o in items if _key(o) > req.after]
    if req.limit > 0 and len(items) > req.limit:
        page = items[: req.limit]
        return Page(page, rv, _encode_token(rv, _key(page[-1])), len(items) - req.limit)
    return Page(items, rv)


def _chunk_page(chunked: Any, req: ListRequest, selection: Selection, namespace: str | None, kind: str) -> Page:
    """A paged list from a store that reads by key range (:meth:`hub.store.sqlite.SQLiteStore.list_chunk`):
    a page costs its own objects, not a read of every object before it."""
    after: tuple[str, str] | None = None
    if req.after:
        ns, _, name = req.after.partition("\x00")
        after = (ns, name)
    keep = None if selection.labels is None and not selection.fields else selection.matches
    try:
        chunk = chunked(kind, namespace, after=after, at=req.at if req.exact else None, limit=req.limit, keep=keep)
    except PageTooOld:
        if req.token_rv is not None:
            raise ApiError(410, "Expired", _CONTINUE_EXPIRED, None, {"continue": _encode_token(-1, req.after)}) from None
        raise expired(_LIST_EXPIRED) from None
    if not chunk.more:
        return Page(chunk.items, chunk.resource_version)
    token = _encode_token(chunk.resource_version, _key(chunk.items[-1]))
    return Page(chunk.items, chunk.resource_version, token, chunk.remaining)


def list_body(target: Target, page: Page) -> Object:
    meta: dict[str, Any] = {"resourceVersion": str(page.resource_version)}
    if page.continue_token:
        meta["continue"] = page.continue_token
    if page.remaining is not None:
        meta["remainingItemCount"] = page.remaining
    return {
        "kind": f"{target.res.kind}List",
        "apiVersion": target.api_version,
        "metadata": meta,
        "items": [external(target, o) for o in page.items],
    }
