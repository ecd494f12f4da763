"""get and list: versions, label and field selectors, ``limit``/``continue`` pagination.

Pagination: the continue token names the last key served and the list's
resourceVersion; the next page lists again and starts after that key. Unlike
etcd, the store keeps no snapshots, so each page shows the state when it was
read (the list's resourceVersion is that of the first page, as the API server
reports it); an object changed between pages shows its newer state.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hub.api.selectors import LabelSelector, LabelSelectorError, parse_label_selector
from hub.store.interface import Object, ObjectList, Store

from . import namespaces
from .errors import ApiError, bad_request, expired, not_found
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


def list_page(store: Store, target: Target, query: Mapping[str, str]) -> Page:
    selection = Selection.of(query, target.res.kind)
    namespace = selection.namespace_for(target)
    items, rv = store.list(target.res.kind, namespace, selection.labels)
    if selection.fields:
        items = [o for o in items if fields_match(o, selection.fields)]
    token = query.get("continue", "")
    if token:
        first_rv, after = _decode_token(token)
        items = [o for o in items if _key(o) > after]
        rv = first_rv
    limit_text = query.get("limit", "")
    try:
        limit = int(limit_text) if limit_text else 0
    except ValueError:
        raise bad_request(f'invalid limit "{limit_text}"') from None
    if limit > 0 and len(items) > limit:
        page = items[:limit]
        return Page(page, rv, _encode_token(rv, _key(page[-1])), len(items) - limit)
    return Page(items, rv)


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


def too_old(exc: Exception) -> ApiError:
    return expired(f"too old resource version: {exc}")
