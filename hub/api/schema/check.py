"""Checking a manifest against a structural schema: the fields the API server
would prune (``fieldValidation=Strict|Warn`` reports them as unknown fields) and
values of the wrong type or outside an enumeration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_SKIP_ROOT = ("apiVersion", "kind", "metadata")


def unknown_fields(schema: Mapping[str, Any], obj: Any, path: str = "") -> list[str]:
    """Paths of fields that a structural schema does not know (and would prune),
    as the API server names them: ``spec.resourceGroups[0].flavorz``."""
    out: list[str] = []
    _unknown(schema, obj, path, out, root=not path)
    return out


def _unknown(schema: Mapping[str, Any], obj: Any, path: str, out: list[str], *, root: bool = False) -> None:
    if isinstance(obj, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        for key, value in obj.items():
            child = f"{path}.{key}" if path else str(key)
            if root and key in _SKIP_ROOT:
                continue
            if key in props:
                _unknown(props[key], value, child, out)
            elif isinstance(extra, Mapping):
                _unknown(extra, value, child, out)
            elif not preserve and extra is not True:
                out.append(child)
    elif isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, value in enumerate(obj):
                _unknown(items, value, f"{path}[{i}]", out)


def _type_ok(schema: Mapping[str, Any], value: Any) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, int | str) and not isinstance(value, bool)
    kind = schema.get("type")
    if kind is None:
        return True
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    return True


def type_errors(schema: Mapping[str, Any], obj: Any, path: str = "") -> list[tuple[str, str]]:
    """(path, reason) for values of the wrong type or outside an enum; ``null`` is allowed."""
    out: list[tuple[str, str]] = []
    _types(schema, obj, path, out)
    return out


def _types(schema: Mapping[str, Any], value: Any, path: str, out: list[tuple[str, str]]) -> None:
    if value is None:
        return
    where = path or "<root>"
    if not _type_ok(schema, value):
        expected = "integer or string" if schema.get("x-kubernetes-int-or-string") else schema.get("type")
        out.append((where, f"must be of type {expected}"))
        return
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        out.append((where, "supported values: " + ", ".join(f'"{v}"' for v in enum)))
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, child in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if key in props:
                _types(props[key], child, sub, out)
            elif isinstance(extra, Mapping):
                _types(extra, child, sub, out)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, child in enumerate(value):
                _types(items, child, f"{path}[{i}]", out)


def structural_problems(schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Violations of the structural-schema rules CRDs must follow (a subset): every node
    has a type (or is int-or-string), arrays have items, objects do not mix properties
    with additionalProperties, anyOf only under int-or-string."""
    out: list[str] = []
    where = path or "<root>"
    int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
    if "type" not in schema and not int_or_string and not schema.get("x-kubernetes-preserve-unknown-fields"):
        out.append(f"{where}: no type")
    if "anyOf" in schema and not int_or_string:
        out.append(f"{where}: anyOf without x-kubernetes-int-or-string")
    if schema.get("type") == "array" and not isinstance(schema.get("items"), Mapping):
        out.append(f"{where}: array without items")
    if "properties" in schema and isinstance(schema.get("additionalProperties"), Mapping):
        out.append(f"{where}: both properties and additionalProperties")
    if schema.get("x-kubernetes-list-type") == "map":
        items = schema.get("items") or {}
        for key in schema.get("x-kubernetes-list-map-keys") or ():
            if key not in (items.get("required") or ()) and "default" not in (items.get("properties") or {}).get(key, {}):
                out.append(f"{where}: list-map key {key!r} must be required or defaulted")
    for key, child in (schema.get("properties") or {}).items():
        out.extend(structural_problems(child, f"{path}.{key}" if path else key))
    if isinstance(schema.get("items"), Mapping):
        out.extend(structural_problems(schema["items"], f"{path}[]"))
    if isinstance(schema.get("additionalProperties"), Mapping):
        out.extend(structural_problems(schema["additionalProperties"], f"{path}{{}}"))
    return out
