"""A small vocabulary for structural OpenAPI v3 schemas (the subset CRDs allow).

Every helper returns a fresh plain dict, so callers may extend what they get.
Keys follow the order ``kubectl explain`` and controller-gen print them in:
description first, then type and constraints, then properties.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Schema = dict[str, Any]

DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def _described(schema: Schema, description: str) -> Schema:
    return {"description": description, **schema} if description else schema


def obj(
    properties: Mapping[str, Schema],
    description: str = "",
    *,
    required: Iterable[str] = (),
    **extra: Any,
) -> Schema:
    """An object with known properties; unknown ones are pruned by a structural schema."""
    out: Schema = {"type": "object", **_ext(extra)}
    if properties:
        out["properties"] = dict(properties)
    req = list(required)
    if req:
        out["required"] = req
    return _described(out, description)


def open_obj(description: str = "", properties: Mapping[str, Schema] | None = None) -> Schema:
    """An object whose unknown fields are kept (x-kubernetes-preserve-unknown-fields)."""
    out: Schema = {"type": "object"}
    if properties:
        out["properties"] = dict(properties)
    out["x-kubernetes-preserve-unknown-fields"] = True
    return _described(out, description)


def string(
    description: str = "",
    *,
    enum: Iterable[str] = (),
    pattern: str = "",
    max_length: int | None = None,
    min_length: int | None = None,
    default: str | None = None,
    fmt: str = "",
) -> Schema:
    out: Schema = {"type": "string"}
    if fmt:
        out["format"] = fmt
    values = list(enum)
    if values:
        out["enum"] = values
    if default is not None:
        out["default"] = default
    if max_length is not None:
        out["maxLength"] = max_length
    if min_length is not None:
        out["minLength"] = min_length
    if pattern:
        out["pattern"] = pattern
    return _described(out, description)


def name_ref(description: str = "", max_length: int = 253) -> Schema:
    """A reference to another object by its DNS-subdomain name."""
    return string(description, pattern=DNS_SUBDOMAIN, max_length=max_length)


def time(description: str = "") -> Schema:
    return string(description, fmt="date-time")


def integer(
    description: str = "",
    *,
    fmt: str = "int32",
    minimum: int | None = None,
    maximum: int | None = None,
    default: int | None = None,
) -> Schema:
    out: Schema = {"type": "integer", "format": fmt}
    if default is not None:
        out["default"] = default
    if minimum is not None:
        out["minimum"] = minimum
    if maximum is not None:
        out["maximum"] = maximum
    return _described(out, description)


def boolean(description: str = "", *, default: bool | None = None) -> Schema:
    out: Schema = {"type": "boolean"}
    if default is not None:
        out["default"] = default
    return _described(out, description)


def quantity(description: str = "", *, default: int | None = None) -> Schema:
    """A resource.Quantity: an integer or a string such as ``500m`` or ``1Gi``."""
    out: Schema = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    if default is not None:
        out["default"] = default
    out["pattern"] = QUANTITY
    out["x-kubernetes-int-or-string"] = True
    return _described(out, description)


def int_or_string(description: str = "") -> Schema:
    return _described({"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}, description)


def array(
    items: Schema,
    description: str = "",
    *,
    max_items: int | None = None,
    min_items: int | None = None,
    list_type: str = "atomic",
    map_keys: Iterable[str] = (),
) -> Schema:
    out: Schema = {"type": "array", "items": items}
    if max_items is not None:
        out["maxItems"] = max_items
    if min_items is not None:
        out["minItems"] = min_items
    keys = list(map_keys)
    out["x-kubernetes-list-type"] = "map" if keys else list_type
    if keys:
        out["x-kubernetes-list-map-keys"] = keys
    return _described(out, description)


def string_map(description: str = "", *, values: Schema | None = None, max_properties: int | None = None,
               atomic: bool = False) -> Schema:
    out: Schema = {"type": "object", "additionalProperties": values or {"type": "string"}}
    if max_properties is not None:
        out["maxProperties"] = max_properties
    if atomic:
        out["x-kubernetes-map-type"] = "atomic"
    return _described(out, description)


def _ext(extra: Mapping[str, Any]) -> dict[str, Any]:
    """Python keyword spellings of the vendor extensions we use."""
    names = {
        "map_type": "x-kubernetes-map-type",
        "default": "default",
        "max_properties": "maxProperties",
        "embedded": "x-kubernetes-embedded-resource",
    }
    out: dict[str, Any] = {}
    for key, value in extra.items():
        if key not in names:
            raise TypeError(f"unknown schema option {key!r}")
        out[names[key]] = value
    return out


def walk(schema: Mapping[str, Any], path: str = "") -> Iterable[tuple[str, Mapping[str, Any]]]:
    """Every (path, node) of a schema: ``spec.resourceGroups[].flavors`` style paths."""
    yield path, schema
    for key, child in (schema.get("properties") or {}).items():
        yield from walk(child, f"{path}.{key}" if path else key)
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from walk(items, f"{path}[]")
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        yield from walk(extra, f"{path}{{}}")
