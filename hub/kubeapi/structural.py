"""A CustomResourceDefinition's structural ``openAPIV3Schema``: defaults and validation of custom resources.

As the apiextensions-apiserver does it, in this order on every write: unknown fields are
pruned (:mod:`hub.kubeapi.fields`, which also answers ``fieldValidation=Strict|Warn``),
nulls of fields that are not ``nullable`` are dropped, ``default`` values fill missing
fields, then the object is validated. Field errors are worded as kube-apiserver words
them (its OpenAPI validator's errors converted to field errors), for example
``spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0``
and ``spec.foo: Required value``.

Supported keywords: type, properties, additionalProperties, items, required, enum,
pattern, minimum/maximum (with exclusiveMinimum/exclusiveMaximum), multipleOf,
minLength/maxLength, minItems/maxItems, minProperties/maxProperties, nullable, default,
x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields,
x-kubernetes-embedded-resource. Not supported: CEL rules (x-kubernetes-validations),
format checks, allOf/anyOf/oneOf/not.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Mapping
from typing import Any

from hub.api.errors import FieldError

Schema = Mapping[str, Any]


def _type_name(value: Any) -> str:
    """The JSON type of a value, as the OpenAPI validator names it in its errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_ok(schema: Schema, value: Any) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)
    kind = schema.get("type")
    if not kind:
        return True
    actual = _type_name(value)
    return actual == kind or (kind == "number" and actual == "integer")


def _go(value: Any) -> str:
    """A value as Go's %v prints it in an error (enum lists, which are JSON)."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


# --------------------------------------------------------------------------- defaults


def apply_defaults(schema: Schema, value: Any) -> Any:
    """``value`` with non-nullable nulls dropped and ``default`` values filled in (in place where it can)."""
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if isinstance(props, Mapping):
            for key, sub in props.items():
                if not isinstance(sub, Mapping):
                    continue
                if key in value and value[key] is None and not sub.get("nullable"):
                    del value[key]
                if key not in value and "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
        for key in list(value):
            sub = props.get(key) if isinstance(props, Mapping) and key in props else extra if isinstance(extra, Mapping) else None
            if isinstance(sub, Mapping) and value[key] is not None:
                value[key] = apply_defaults(sub, value[key])
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        items = schema["items"]
        for i, item in enumerate(value):
            if item is None and "default" in items and not items.get("nullable"):
                value[i] = copy.deepcopy(items["default"])
            elif item is not None:
                value[i] = apply_defaults(items, item)
    return value


# --------------------------------------------------------------------------- validation


def validate(schema: Schema, obj: Mapping[str, Any]) -> list[FieldError]:
    """Every field error of a custom resource (``apiVersion``, ``kind`` and ``metadata`` are
    checked by the server itself, not by the schema)."""
    out: list[FieldError] = []
    props = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in ("apiVersion", "kind", "metadata") and name not in obj:
            out.append(FieldError(name, "Required value"))
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        sub = props.get(key)
        if isinstance(sub, Mapping):
            _check(sub, value, key, out)
    return out


def _invalid(out: list[FieldError], path: str, value: Any, reason: str) -> None:
    out.append(FieldError(path, reason, value, True))


def _check(schema: Schema, value: Any, path: str, out: list[FieldError]) -> None:
    if value is None:
        if not schema.get("nullable") and (schema.get("type") or schema.get("x-kubernetes-int-or-string")):
            if schema.get("x-kubernetes-int-or-string"):
                _invalid(out, path, "null", f'{path} in body must be of type integer,string: "null"')
            else:
                _invalid(out, path, "null", f'{path} in body must be of type {schema.get("type")}: "null"')
        return
    if not _type_ok(schema, value):
        wanted = "integer,string" if schema.get("x-kubernetes-int-or-string") else str(schema.get("type"))
        actual = _type_name(value)
        _invalid(out, path, actual, f'{path} in body must be of type {wanted}: "{actual}"')
        return
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        listed = ", ".join(f'"{_go(v)}"' for v in enum)
        shown = json.dumps(value) if isinstance(value, str) else _go(value)
        out.append(FieldError(path, f"Unsupported value: {shown}: supported values: {listed}"))
    if isinstance(value, str):
        _check_string(schema, value, path, out)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(schema, value, path, out)
    elif isinstance(value, list):
        _check_array(schema, value, path, out)
    elif isinstance(value, dict):
        _check_object(schema, value, path, out)


def _check_string(schema: Schema, value: str, path: str, out: list[FieldError]) -> None:
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(high, int) and len(value) > high:
        out.append(FieldError(path, f"Too long: may not be more than {high} bytes"))
    if isinstance(low, int) and len(value) < low:
        _invalid(out, path, value, f"{path} in body should be at least {low} chars long")
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        compiled = go_regex(pattern)
        if compiled is not None and compiled.search(value) is None:
            _invalid(out, path, value, f"{path} in body should match '{pattern}'")


_FLAGS = re.compile(r"\(\?([imsU]+)\)")
_POSIX = {"alnum": "0-9A-Za-z", "alpha": "A-Za-z", "digit": "0-9", "lower": "a-z", "upper": "A-Z", "space": "\\s",
          "xdigit": "0-9A-Fa-f", "word": "\\w", "punct": "!-/:-@\\[-`{-~", "blank": " \\t"}


@functools.lru_cache(maxsize=512)
def go_regex(pattern: str) -> re.Pattern[str] | None:
    """A CRD's pattern (Go's RE2 syntax) as a Python regular expression, or None when it has
    RE2 syntax Python lacks (the check is then skipped rather than guessed). Go allows flags
    such as ``(?i)`` anywhere; they are moved to the front (exact for the usual ``^(?i)...``)."""
    flags = "".join(m.group(1) for m in _FLAGS.finditer(pattern)).replace("U", "")
    text = _FLAGS.sub("", pattern).replace("\\z", "\\Z")
    text = re.sub(r"\[:(\w+):\]", lambda m: _POSIX.get(m.group(1), m.group(0)), text)
    if flags:
        text = f"(?{''.join(sorted(set(flags)))}){text}"
    try:
        return re.compile(text)
    except re.error:
        return None


def _check_number(schema: Schema, value: float, path: str, out: list[FieldError]) -> None:
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(low, int | float):
        if schema.get("exclusiveMinimum") and value <= low:
            _invalid(out, path, value, f"{path} in body should be greater than {_number(low)}")
        elif value < low:
            _invalid(out, path, value, f"{path} in body should be greater than or equal to {_number(low)}")
    if isinstance(high, int | float):
        if schema.get("exclusiveMaximum") and value >= high:
            _invalid(out, path, value, f"{path} in body should be less than {_number(high)}")
        elif value > high:
            _invalid(out, path, value, f"{path} in body should be less than or equal to {_number(high)}")
    step = schema.get("multipleOf")
    if isinstance(step, int | float) and step > 0 and (value / step) != int(value / step):
        _invalid(out, path, value, f"{path} in body should be a multiple of {_number(step)}")


def _check_array(schema: Schema, value: list[Any], path: str, out: list[FieldError]) -> None:
    low, high = schema.get("minItems"), schema.get("maxItems")
    if isinstance(high, int) and len(value) > high:
        out.append(FieldError(path, f"Too many: {len(value)}: must have at most {high} items"))
    if isinstance(low, int) and len(value) < low:
        _invalid(out, path, len(value), f"{path} in body should have at least {low} items")
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            _check(items, item, f"{path}[{i}]", out)


def _check_object(schema: Schema, value: dict[str, Any], path: str, out: list[FieldError]) -> None:
    low, high = schema.get("minProperties"), schema.get("maxProperties")
    if isinstance(high, int) and len(value) > high:
        out.append(FieldError(path, f"Too many: {len(value)}: must have at most {high} items"))
    if isinstance(low, int) and len(value) < low:
        _invalid(out, path, len(value), f"{path} in body should have at least {low} properties")
    if schema.get("x-kubernetes-embedded-resource"):
        for key in ("apiVersion", "kind"):
            if not value.get(key):
                out.append(FieldError(f"{path}.{key}", "Required value"))
    for name in schema.get("required") or ():
        if name not in value:
            out.append(FieldError(f"{path}.{name}", "Required value"))
    props = schema.get("properties")
    extra = schema.get("additionalProperties")
    for key, child in value.items():
        sub = props.get(key) if isinstance(props, Mapping) else None
        if sub is None and isinstance(extra, Mapping):
            sub = extra
        if isinstance(sub, Mapping):
            _check(sub, child, f"{path}.{key}", out)


# --------------------------------------------------------------------------- the schema itself


_KEYWORD_TYPES: dict[str, tuple[type, ...]] = {
    "type": (str,), "description": (str,), "pattern": (str,), "format": (str,), "title": (str,),
    "properties": (dict,), "items": (dict,), "additionalProperties": (dict, bool), "required": (list,), "enum": (list,),
    "minimum": (int, float), "maximum": (int, float), "multipleOf": (int, float),
    "exclusiveMinimum": (bool,), "exclusiveMaximum": (bool,), "nullable": (bool,),
    "minLength": (int,), "maxLength": (int,), "minItems": (int,), "maxItems": (int,),
    "minProperties": (int,), "maxProperties": (int,),
    "x-kubernetes-int-or-string": (bool,), "x-kubernetes-preserve-unknown-fields": (bool,),
    "x-kubernetes-embedded-resource": (bool,),
}
_TYPE_WORDS = {str: "string", dict: "object", list: "array", bool: "boolean", int: "integer", float: "number"}


def schema_problems(schema: Any, path: str) -> list[FieldError]:
    """What makes a CRD's schema unusable here (kube-apiserver refuses far more non-structural
    schemas; these are the ones that would break serving): nodes and keywords of the wrong type.
    Patterns are RE2, which Python cannot always judge: never refused here (:func:`go_regex`)."""
    if not isinstance(schema, dict):
        return [FieldError(path, f"must be of type object: \"{_type_name(schema)}\"", _type_name(schema), True)]
    out: list[FieldError] = []
    for key, types in _KEYWORD_TYPES.items():
        value = schema.get(key)
        if value is None:
            continue
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok:
            wanted = " or ".join(_TYPE_WORDS[t] for t in types)
            out.append(FieldError(f"{path}.{key}", f"must be of type {wanted}", value, True))
    if out:
        return out
    if schema.get("type") not in (None, "object", "array", "string", "integer", "number", "boolean"):
        out.append(FieldError(f"{path}.type", "Unsupported value: " + json.dumps(schema.get("type"))
                              + ': supported values: "array", "boolean", "integer", "number", "object", "string"'))
    for i, name in enumerate(schema.get("required") or ()):
        if not isinstance(name, str):
            out.append(FieldError(f"{path}.required[{i}]", "must be of type string", name, True))
    for name, sub in (schema.get("properties") or {}).items():
        out += schema_problems(sub, f"{path}.properties[{name}]")
    for key in ("items", "additionalProperties"):
        value = schema.get(key)
        if isinstance(value, dict):
            out += schema_problems(value, f"{path}.{key}")
    return out
