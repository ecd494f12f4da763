"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

Strategic merge patch is what ``kubectl apply`` (client-side) and ``kubectl
patch`` send for built-in kinds (Jobs, Namespaces). The API server reads merge
keys and strategies from the Go types' struct tags; mkhub serves few built-in
kinds, so the merge keys of the lists they contain are listed here by field
name (``containers`` by ``name``, ``env`` by ``name``...). Lists without one
are replaced whole, as the API server does for lists without a patch strategy.
The directives kubectl emits are honoured: ``$patch: replace|delete|merge``,
``$retainKeys``, ``$setElementOrder/<field>`` and
``$deleteFromPrimitiveList/<field>``. Kueue's kinds (custom resources) take no
strategic merge patch, as with Kueue: 415 UnsupportedMediaType.
"""

from __future__ import annotations

from typing import Any

from hub.api.conversion import json_copy

from .errors import ApiError, bad_request

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH_YAML = "application/apply-patch+yaml"
APPLY_PATCH_CBOR = "application/apply-patch+cbor"

# Lists merged by key in the types mkhub serves as built-ins (batch/v1 Job, its pod template,
# v1 Namespace, v1 Event, metadata).
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "volumes": "name",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "conditions": "type",
    "ownerReferences": "uid",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "schedulingGates": "name",
}
# Lists of scalars merged as sets.
PRIMITIVE_MERGE = frozenset({"finalizers"})

_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"


class PatchError(ApiError):
    pass


def _invalid_patch(message: str) -> PatchError:
    return PatchError(422, "Invalid", message)


# --------------------------------------------------------------------------- JSON merge patch


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return json_copy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# --------------------------------------------------------------------------- JSON patch


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _invalid_patch(f'invalid JSON pointer "{path}": must start with "/"')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, *, for_add: bool) -> int:
    if for_add and token == "-":
        return len(container)
    if not token.isdigit():
        raise _invalid_patch(f'invalid array index "{token}"')
    index = int(token)
    if index > len(container) or (not for_add and index == len(container)):
        raise _invalid_patch(f"array index {index} out of bounds")
    return index


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, for_add=False)]
        else:
            raise _invalid_patch(f'doc is missing path: "{path}"')
    return node


def _get(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _invalid_patch(f'doc is missing path: "{path}"')
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, for_add=False)]
    raise _invalid_patch(f'doc is missing path: "{path}"')


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, for_add=True), value)
    else:
        raise _invalid_patch(f'doc is missing path: "{path}"')
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    tokens = _pointer(path)
    if not tokens:
        raise _invalid_patch("cannot remove the whole document")
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _invalid_patch(f'Unable to remove nonexistent key: {last}: missing value')
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, for_add=False))
    raise _invalid_patch(f'doc is missing path: "{path}"')


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902; a failed ``test`` is 422, as the API server answers."""
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    doc = json_copy(doc)
    for op in ops:
        if not isinstance(op, dict) or not isinstance(op.get("op"), str) or not isinstance(op.get("path"), str):
            raise bad_request(f"invalid json patch operation: {op!r}")
        kind, path = op["op"], op["path"]
        if kind in ("add", "replace", "test") and "value" not in op:
            raise bad_request(f'json patch operation "{kind}" at "{path}" has no value')
        if kind == "add":
            doc = _add(doc, path, json_copy(op["value"]))
        elif kind == "remove":
            doc, _ = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            doc, _ = _remove(doc, path) if _pointer(path) else (doc, None)
            doc = _add(doc, path, json_copy(op["value"]))
        elif kind in ("move", "copy"):
            source = op.get("from")
            if not isinstance(source, str):
                raise bad_request(f'json patch operation "{kind}" has no "from"')
            if kind == "move":
                doc, value = _remove(doc, source)
            else:
                value = json_copy(_get(doc, source))
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op["value"]:
                raise _invalid_patch(f'testing value {path} failed: test failed')
        else:
            raise bad_request(f'unknown json patch operation "{kind}"')
    return doc


# --------------------------------------------------------------------------- strategic merge patch


def strategic_merge_patch(original: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        raise bad_request("a strategic merge patch must be a JSON object")
    merged = _merge_map(original if isinstance(original, dict) else {}, patch)
    return {} if merged is None else merged


def _merge_map(original: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any] | None:
    patch = dict(patch)
    directive = patch.pop("$patch", None)
    if directive == "replace":
        stripped: dict[str, Any] = _strip(patch)
        return stripped
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise bad_request(f'unknown patch directive "{directive}"')
    retain = patch.pop("$retainKeys", None)
    orders = {k[len(_ORDER):]: patch.pop(k) for k in [k for k in patch if k.startswith(_ORDER)]}
    deletions = {k[len(_DELETE_PRIMITIVE):]: patch.pop(k) for k in [k for k in patch if k.startswith(_DELETE_PRIMITIVE)]}
    result: dict[str, Any] = json_copy(original)
    if isinstance(retain, list):
        for key in [k for k in result if k not in retain]:
            del result[key]
    for key, values in deletions.items():
        if isinstance(result.get(key), list) and isinstance(values, list):
            result[key] = [v for v in result[key] if v not in values]
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            merged = _merge_map(result[key], value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, dict):
            merged = _merge_map({}, value)
            if merged is not None:
                result[key] = merged
        elif isinstance(value, list) and key in MERGE_KEYS:
            existing = result.get(key)
            result[key] = _merge_list(existing if isinstance(existing, list) else [], value, MERGE_KEYS[key])
        elif isinstance(value, list) and key in PRIMITIVE_MERGE:
            existing = result.get(key)
            current: list[Any] = existing if isinstance(existing, list) else []
            result[key] = [*current, *(v for v in value if v not in current)]
        else:
            result[key] = _strip(value)
    for key, order in orders.items():
        if isinstance(result.get(key), list) and isinstance(order, list):
            result[key] = _ordered(result[key], order, MERGE_KEYS.get(key))
    return result


def _merge_list(original: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [_strip(i) for i in patch if not (isinstance(i, dict) and i.get("$patch") == "replace")]
    result: list[Any] = json_copy(original)
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            if item not in result:
                result.append(_strip(item))
            continue
        at = next((i for i, cur in enumerate(result) if isinstance(cur, dict) and cur.get(merge_key) == item[merge_key]), None)
        if item.get("$patch") == "delete":
            if at is not None:
                del result[at]
            continue
        if at is None:
            result.append(_strip(item))
        else:
            merged = _merge_map(result[at], item)
            if merged is None:
                del result[at]
            else:
                result[at] = merged
    return result


def _ordered(items: list[Any], order: list[Any], merge_key: str | None) -> list[Any]:
    def key_of(item: Any) -> Any:
        return item.get(merge_key) if merge_key and isinstance(item, dict) else item

    wanted = [o.get(merge_key) if merge_key and isinstance(o, dict) else o for o in order]
    rank = {repr(k): i for i, k in enumerate(wanted)}
    return sorted(items, key=lambda it: rank.get(repr(key_of(it)), len(rank)))


def _strip(value: Any) -> Any:
    """A patch value without directives (what a new, unmerged value stores)."""
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if not (k.startswith("$") and (k in ("$patch", "$retainKeys") or k.startswith((_ORDER, _DELETE_PRIMITIVE))))
        }
    if isinstance(value, list):
        return [_strip(v) for v in value if not (isinstance(v, dict) and v.get("$patch") == "delete")]
    return value
