"""Unknown fields, for ``fieldValidation=Strict|Warn|Ignore``.

With an OpenAPI v3 schema of the kind (a CRD's ``openAPIV3Schema``), every
field the schema does not declare is unknown, as the API server's pruning finds
it (``x-kubernetes-preserve-unknown-fields`` keeps a subtree). Without one, the
top level and ``metadata`` are checked. Unknown fields are dropped before the
object is stored (Strict refuses the request instead), as the API server prunes
custom resources.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from hub.api.errors import one_line
from hub.store.interface import Object

from .errors import bad_request
from .openapi import schema_for

Schema = dict[str, Any]
SchemaSource = Callable[[str, str, str], Schema | None]
"""(group, version, kind) -> the kind's OpenAPI v3 schema, or None."""

@cache
def crd_schema(group: str, version: str, kind: str) -> Schema | None:
    """The CRD schema a Kueue kind is checked and pruned against (:func:`hub.kubeapi.openapi.schema_for`,
    built once per kind and version), or a built-in kind's; None for a kind without one."""
    return schema_for(group, version, kind)


_TOP = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})
_TOP_EXTRA = {
    "WorkloadPriorityClass": frozenset({"value", "description"}),
    "MutatingWebhookConfiguration": frozenset({"webhooks"}),
    "ValidatingWebhookConfiguration": frozenset({"webhooks"}),
    "Event": frozenset({
        "involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count", "type",
        "eventTime", "series", "action", "related", "reportingComponent", "reportingInstance",
    }),
}
_META = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers",
    "managedFields",
})


def _walk(value: Any, schema: Schema, path: str, out: list[str], drop: bool) -> None:
    if not isinstance(schema, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key in list(value):
            child = value[key]
            known = isinstance(props, dict) and key in props
            if known or isinstance(extra, dict):
                # A scalar has no fields: only maps and lists are walked, their paths built then.
                if isinstance(child, dict | list):
                    sub: Any = props[key] if known else extra  # type: ignore[index]
                    _walk(child, sub, f"{path}.{key}" if path else key, out, drop)
            elif props is not None or extra is False:
                out.append(f"{path}.{key}" if path else key)
                if drop:
                    del value[key]
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = schema["items"]
        for i, item in enumerate(value):
            if isinstance(item, dict | list):
                _walk(item, items, f"{path}[{i}]", out, drop)


def unknown_fields(kind: str, obj: Object, schema: Schema | None, *, drop: bool) -> list[str]:
    """Paths of the fields ``obj`` has and its kind does not know; with ``drop``, removes them."""
    out: list[str] = []
    if schema is not None:
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in ("apiVersion", "kind", "metadata")}
        _walk(body, {**schema, "properties": props}, "", out, drop)
        if drop:
            for key in [k for k in obj if k not in ("apiVersion", "kind", "metadata") and k not in body]:
                del obj[key]
    else:
        allowed = _TOP | _TOP_EXTRA.get(kind, frozenset())
        for key in [k for k in obj if k not in allowed]:
            out.append(key)
            if drop and kind not in _TOP_EXTRA:
                del obj[key]
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for key in [k for k in meta if k not in _META]:
            out.append(f"metadata.{key}")
            if drop:
                del meta[key]
    return out


def check_fields(kind: str, obj: Object, schema: Schema | None, mode: str, duplicates: Sequence[str] = ()) -> list[str]:
    """Apply ``fieldValidation`` to unknown fields and to keys the body repeated (``duplicates``);
    returns warnings (Warn, the default), raises 400 BadRequest (Strict)."""
    if mode not in ("", "Strict", "Warn", "Ignore"):
        raise bad_request(f'fieldValidation must be one of Strict, Warn, Ignore (got "{mode}")')
    unknown = unknown_fields(kind, obj, schema, drop=True)
    found = [f'unknown field "{one_line(p)}"' for p in unknown] + [f'duplicate field "{one_line(k)}"' for k in duplicates]
    if not found or mode == "Ignore":
        return []
    if mode == "Strict":
        raise bad_request(f"strict decoding error: {', '.join(found)}")
    return found
