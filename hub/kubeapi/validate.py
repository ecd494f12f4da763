"""Checking an object against the OpenAPI v3 document an API server serves for its group-version.

What kubeconform does with Kubernetes' published schemas, done with the documents of
``/openapi/v3/apis/{group}/{version}`` (``/openapi/v3/api/v1`` for the core group) of any
API server — mkhub's own (:mod:`hub.kubeapi.openapi`) or a real cluster's:

- :func:`kind_schema` finds the schema of a kind by its ``x-kubernetes-group-version-kind``
  and inlines every ``$ref`` (also the ``allOf: [{$ref}]`` wrapping OpenAPI v3 uses);
- :func:`problems` lists what is wrong with an object, one line per field, as the API
  server words it: unknown fields (``spec.replicaz: field not declared in schema``),
  values of the wrong type, missing required fields, values outside an enum.

``int-or-string`` values (``format: int-or-string`` or ``x-kubernetes-int-or-string``)
accept both; resource quantities (``io.k8s.apimachinery.pkg.api.resource.Quantity``)
accept numbers and strings, as the API server decodes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Schema = dict[str, Any]

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_QUANTITY_MARK = "x-mkhub-quantity"
_PREFIXES = ("#/components/schemas/", "#/definitions/")
_MAX_DEPTH = 40


def _name(ref: str) -> str:
    for prefix in _PREFIXES:
        if ref.startswith(prefix):
            return ref[len(prefix):]
    return ref


def _inline(node: Any, schemas: Mapping[str, Any], depth: int) -> Any:
    if isinstance(node, dict):
        if "$ref" in node or _single_ref(node):
            ref = node["$ref"] if "$ref" in node else node["allOf"][0]["$ref"]
            name = _name(str(ref))
            if depth > _MAX_DEPTH or name not in schemas:
                raise ValueError(f"cannot resolve the schema reference {ref!r}")
            inner = _inline(schemas[name], schemas, depth + 1)
            rest = {k: _inline(v, schemas, depth) for k, v in node.items() if k not in ("$ref", "allOf")}
            out = {**inner, **rest}
            if name == QUANTITY:
                out[_QUANTITY_MARK] = True
            return out
        return {k: _inline(v, schemas, depth) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, schemas, depth) for v in node]
    return node


def _single_ref(node: Mapping[str, Any]) -> bool:
    all_of = node.get("allOf")
    return isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict) and "$ref" in all_of[0]


def resolve(schema: Mapping[str, Any], schemas: Mapping[str, Any]) -> Schema:
    """``schema`` with every reference into ``schemas`` (definitions by name) inlined."""
    out: Schema = _inline(dict(schema), schemas, 0)
    return out


def kind_schema(document: Mapping[str, Any], group: str, version: str, kind: str) -> Schema | None:
    """The resolved schema of ``kind`` in an OpenAPI v3 (or v2) document, or None."""
    schemas = (document.get("components") or {}).get("schemas") or document.get("definitions") or {}
    for schema in schemas.values():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            if (gvk.get("group", ""), gvk.get("version"), gvk.get("kind")) == (group, version, kind):
                return resolve(schema, schemas)
    return None


def _type_name(schema: Mapping[str, Any]) -> str | None:
    if schema.get(_QUANTITY_MARK):
        return "quantity"
    if schema.get("x-kubernetes-int-or-string") or schema.get("format") == "int-or-string":
        return "int-or-string"
    kind = schema.get("type")
    return str(kind) if kind is not None else None


# The Python types each schema type accepts (a bool only "boolean", below); looked up, not
# rebuilt per value: the walk visits every field of every object written.
_ACCEPTS: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": (),
    "int-or-string": (int, str),
    "quantity": (int, float, str),
}


def _type_ok(kind: str, value: Any) -> bool:
    if isinstance(value, bool):
        return kind == "boolean"
    accepts = _ACCEPTS.get(kind)
    return accepts is None or isinstance(value, accepts)


_EXPECTED = {"int-or-string": "integer or string", "quantity": "quantity (a number or a string such as 500m, 1Gi)"}


def _show(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return "{...}" if isinstance(value, dict) else "[...]"
    return str(value)


def _scalar_ok(schema: Mapping[str, Any], value: Any) -> bool:
    """Whether :func:`_walk` would find nothing wrong with this scalar (its type, its enum)."""
    kind = _type_name(schema)
    if kind is not None and not _type_ok(kind, value):
        return False
    enum = schema.get("enum")
    return not isinstance(enum, list) or value in enum


def _walk_schema(schema: Mapping[str, Any], value: Any, path: str, out: list[str], undeclared: bool = True) -> None:
    """The general walk: what :func:`_walk` hands anything unusual to (a value of the wrong type, an
    enum, a type other than the JSON decoder's), and what it must always answer as."""
    if value is None:
        return
    where = path or "<root>"
    kind = _type_name(schema)
    if kind is not None and not _type_ok(kind, value):
        out.append(f"{where}: Invalid value: {_show(value)}: must be of type {_EXPECTED.get(kind, kind)}")
        return
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        listed = ", ".join(_show(v) for v in enum)
        out.append(f"{where}: Unsupported value: {_show(value)}: supported values: {listed}")
    # Most fields are scalars that pass: checked in place, their path built only for a problem.
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        for name in schema.get("required") or ():
            if name not in value:
                out.append(f"{path + '.' if path else ''}{name}: Required value")
        for key, child in value.items():
            if isinstance(props, dict) and key in props:
                sub = props[key]
            elif isinstance(extra, dict):
                sub = extra
            else:
                if undeclared and (props is not None or extra is False) and not preserve and extra is not True:
                    out.append(f"{path}.{key}: field not declared in schema" if path else f"{key}: field not declared in schema")
                continue
            if child is None or (not isinstance(child, dict | list) and _scalar_ok(sub, child)):
                continue
            _walk_schema(sub, child, f"{path}.{key}" if path else str(key), out, undeclared)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, child in enumerate(value):
                if child is None or (not isinstance(child, dict | list) and _scalar_ok(items, child)):
                    continue
                _walk_schema(items, child, f"{path}[{i}]", out, undeclared)


# The exact Python types a JSON decoder gives that each schema type accepts (``_type_ok`` is
# the rule; a value of another type, a subclass say, goes to the general walk, which decides).
_EXACT: dict[str, frozenset[type]] = {
    "object": frozenset({dict}),
    "array": frozenset({list}),
    "string": frozenset({str}),
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "boolean": frozenset({bool}),
    "int-or-string": frozenset({int, str}),
    "quantity": frozenset({int, float, str}),
}
_ANY: frozenset[type] = frozenset()
_NO_FAST: frozenset[type] = frozenset({type(None)})  # a type _type_ok knows no set for (a bool fails it): general walk


class Node:
    """One node of a kind's schema, read once: the walks of every write (types here, unknown fields
    in hub.kubeapi.fields) looked ``properties``, ``additionalProperties``, ``items``, the type and
    the enum up again in the schema's maps at every field of every object, ~a third of their time.
    Children are read on first use (a schema may be large; a write visits few of its fields)."""

    __slots__ = ("schema", "types", "plain", "props", "closed", "extra", "preserve", "required", "items",
                 "undeclared", "_kids", "_extra", "_items")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        kind = _type_name(schema)
        self.types = _EXACT.get(kind, _NO_FAST) if kind is not None else _ANY  # _ANY: any type passes
        self.plain = not isinstance(schema.get("enum"), list)  # no enum to check
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        self.props: Mapping[str, Any] | None = props if isinstance(props, dict) else None
        self.closed = props is not None or extra is False  # a key it does not name is unknown
        self.extra: Mapping[str, Any] | None = extra if isinstance(extra, dict) else None
        self.preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        self.required: tuple[str, ...] = tuple(schema.get("required") or ())
        items = schema.get("items")
        self.items: Mapping[str, Any] | None = items if isinstance(items, dict) else None
        self.undeclared = self.closed and not self.preserve and extra is not True
        self._kids: dict[str, Node | None] = {}
        self._extra: Node | None = None
        self._items: Node | None = None

    def passes(self, value: Any) -> bool:
        """Whether the value's type alone passes (no enum), as the general walk would find it."""
        return self.plain and (not self.types or type(value) in self.types)

    def kid(self, key: str) -> Node | None:
        """The node of a declared property (None: its schema is not a map)."""
        try:
            return self._kids[key]
        except KeyError:
            sub = self.props[key] if self.props is not None else None
            node = self._kids[key] = Node(sub) if isinstance(sub, dict) else None
            return node

    def extra_node(self) -> Node:
        node = self._extra
        if node is None:
            assert self.extra is not None
            node = self._extra = Node(self.extra)
        return node

    def items_node(self) -> Node:
        node = self._items
        if node is None:
            assert self.items is not None
            node = self._items = Node(self.items)
        return node


NodeCache = dict[int, tuple[Mapping[str, Any], Node]]  # by id; the schema is held, so its id is not reused
_NODES: NodeCache = {}
_MAX_NODES = 256  # root schemas kept: a kind and version each, built once (openapi.schema_for, a CRD's)


def kept_node(cache: NodeCache, schema: Mapping[str, Any], build: Callable[[], Node]) -> Node:
    """The node ``build`` makes for a root schema, kept in ``cache`` for the next write of its kind."""
    kept = cache.get(id(schema))
    if kept is not None and kept[0] is schema:
        return kept[1]
    if len(cache) >= _MAX_NODES:
        cache.clear()
    node = build()
    cache[id(schema)] = (schema, node)
    return node


def node_of(schema: Mapping[str, Any]) -> Node:
    """The node of a root schema, kept for the next write of its kind."""
    return kept_node(_NODES, schema, lambda: Node(schema))


def _walk(node: Node, value: Any, path: str, out: list[str], undeclared: bool) -> None:
    """:func:`_walk_schema` of a map or list whose own type and enum passed, on read nodes; every
    child that is not a plain pass (a wrong type, an enum, a schema that is not a map) goes to
    the general walk, so the lines and their order are its."""
    if type(value) is dict:
        props = node.props
        for name in node.required:
            if name not in value:
                out.append(f"{path + '.' if path else ''}{name}: Required value")
        for key, child in value.items():
            if props is not None and key in props:
                sub = node.kid(key)
            elif node.extra is not None:
                sub = node.extra_node()
            else:
                if undeclared and node.undeclared:
                    out.append(f"{path}.{key}: field not declared in schema" if path else f"{key}: field not declared in schema")
                continue
            if child is None:
                continue
            if sub is not None and sub.passes(child):
                if type(child) is dict or type(child) is list:
                    _walk(sub, child, f"{path}.{key}" if path else str(key), out, undeclared)
                continue
            schema: Any = sub.schema if sub is not None else props[key]  # type: ignore[index]  # sub None: a declared one
            if not isinstance(child, dict | list) and _scalar_ok(schema, child):
                continue
            _walk_schema(schema, child, f"{path}.{key}" if path else str(key), out, undeclared)
    else:
        if node.items is None:
            return
        items = node.items_node()
        for i, child in enumerate(value):
            if child is None:
                continue
            if items.passes(child):
                if type(child) is dict or type(child) is list:
                    _walk(items, child, f"{path}[{i}]", out, undeclared)
                continue
            if not isinstance(child, dict | list) and _scalar_ok(items.schema, child):
                continue
            _walk_schema(items.schema, child, f"{path}[{i}]", out, undeclared)


def problems(schema: Mapping[str, Any], obj: Any, *, undeclared: bool = True) -> list[str]:
    """Every problem of ``obj`` against a resolved kind schema, one ``path: reason`` line each;
    ``undeclared=False`` leaves out unknown fields (for a caller that checks them on its own)."""
    out: list[str] = []
    if isinstance(schema, dict) and (type(obj) is dict or type(obj) is list):
        node = node_of(schema)
        if node.passes(obj):
            _walk(node, obj, "", out, undeclared)
            return out
    _walk_schema(schema, obj, "", out, undeclared)
    return out
