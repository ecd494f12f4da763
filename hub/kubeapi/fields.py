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
from .validate import Node, NodeCache, kept_node

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


def _walk(value: Any, node: Node, path: str, out: list[str], drop: bool, skip: frozenset[str] = frozenset()) -> None:
    """``skip``: keys of this map left alone (the top level's, which the API server checks itself)."""
    if node.preserve:
        return
    if isinstance(value, dict):
        props, extra = node.props, node.extra
        unknown: list[str] = []
        for key, child in value.items():
            if skip and key in skip:
                continue
            known = props is not None and key in props
            if known or extra is not None:
                # A scalar has no fields: only maps and lists are walked, their paths built then.
                if isinstance(child, dict | list):
                    sub = node.kid(key) if known else node.extra_node()
                    if sub is not None:  # None: a schema that is not a map, which declares nothing
                        _walk(child, sub, f"{path}.{key}" if path else key, out, drop)
            elif node.closed:
                out.append(f"{path}.{key}" if path else key)
                unknown.append(key)
        if drop:
            for key in unknown:
                del value[key]
    elif isinstance(value, list) and node.items is not None:
        items = node.items_node()
        for i, item in enumerate(value):
            if isinstance(item, dict | list):
                _walk(item, items, f"{path}[{i}]", out, drop)


_OWN = frozenset({"apiVersion", "kind", "metadata"})  # checked by the API server itself (metadata: _META below)
_TOPS: NodeCache = {}


def _top(schema: Schema) -> Node:
    """The node of the top level without apiVersion, kind and metadata: a kind's schema that
    declares no properties declares no top-level field either."""

    def build() -> Node:
        props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in _OWN}
        return Node({**schema, "properties": props})

    return kept_node(_TOPS, schema, build)


def unknown_fields(kind: str, obj: Object, schema: Schema | None, *, drop: bool) -> list[str]:
    """Paths of the fields ``obj`` has and its kind does not know; with ``drop``, removes them."""
    out: list[str] = []
    if schema is not None:
        _walk(obj, _top(schema), "", out, drop, _OWN)  # past the API server's own fields, no copy of the object
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
