"""``metadata.managedFields`` and server-side apply (``application/apply-patch+yaml``).

Every write records which manager set which fields, as ``FieldsV1`` entries
(``{"f:spec": {"f:queueingStrategy": {}}}``); an apply by one manager that would
change a field another manager set is refused with 409 Conflict naming each
field and manager (``force=true`` takes them over), exactly as the API server
words it. What is simpler here than in the API server (structured-merge-diff):

- lists are atomic: one manager owns a whole list (Kueue marks most of its
  lists ``listType=atomic``; for pod templates the API server merges by key);
- field sets are computed on the stored form (v1beta2 for Kueue kinds), each
  entry labelled with the apiVersion of the request that wrote it;
- an apply that drops a field it owned alone removes it from the object.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from hub.api.conversion import json_copy
from hub.store.interface import Object

from .errors import ApiError

Path = tuple[str, ...]
CLIENT_SIDE_APPLY = "kubectl-client-side-apply"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

_META_UNMANAGED = frozenset({
    "name", "namespace", "generateName", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink",
})


def _scoped(obj: Object, subresource: str) -> dict[str, Any]:
    """The part of an object a write to ``subresource`` ("" or "status") may own."""
    if subresource == "status":
        return {"status": obj["status"]} if isinstance(obj.get("status"), dict) else {}
    out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "status", "metadata")}
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        kept = {k: v for k, v in meta.items() if k not in _META_UNMANAGED}
        if kept:
            out["metadata"] = kept
    return out


def leaves(obj: Object, subresource: str = "") -> dict[Path, Any]:
    """Field path -> value for every leaf (scalars, lists, empty maps) a manager can own."""
    out: dict[Path, Any] = {}

    def walk(node: dict[str, Any], prefix: Path) -> None:
        for key, value in node.items():
            path = (*prefix, key)
            if isinstance(value, dict) and value:
                walk(value, path)
            else:
                out[path] = value

    walk(_scoped(obj, subresource), ())
    return out


def _related(a: Path, b: Path) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def get_path(obj: Any, path: Path) -> Any:
    for step in path:
        if not isinstance(obj, dict) or step not in obj:
            return None
        obj = obj[step]
    return obj


def _set_path(obj: dict[str, Any], path: Path, value: Any) -> None:
    node = obj
    for step in path[:-1]:
        child = node.get(step)
        if not isinstance(child, dict):
            child = node[step] = {}
        node = child
    if value is None:
        node.pop(path[-1], None)
    elif isinstance(value, dict) and not value and isinstance(node.get(path[-1]), dict):
        return  # an empty map in the config does not clear what others set inside it
    else:
        node[path[-1]] = json_copy(value)


def _del_path(obj: dict[str, Any], path: Path) -> None:
    node: Any = obj
    for step in path[:-1]:
        node = node.get(step) if isinstance(node, dict) else None
        if node is None:
            return
    if isinstance(node, dict):
        node.pop(path[-1], None)


# --------------------------------------------------------------------------- FieldsV1


def encode_fields(paths: Iterable[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for step in path:
            node = node.setdefault(f"f:{step}", {})
    return root


def decode_fields(fields: Any) -> set[Path]:
    """The paths of a FieldsV1 document; list members (``k:``, ``v:``, ``i:``) count as their list."""
    out: set[Path] = set()

    def walk(node: Any, prefix: Path) -> None:
        if not isinstance(node, dict) or not node:
            if prefix:
                out.add(prefix)
            return
        named = [(k, v) for k, v in node.items() if k.startswith("f:")]
        if any(k != "." and not k.startswith("f:") for k in node):
            out.add(prefix)  # members of a list: the list itself
        if "." in node and prefix:
            out.add(prefix)
        for key, value in named:
            walk(value, (*prefix, key[2:]))

    walk(fields, ())
    return out


def _entries(obj: Object | None) -> list[dict[str, Any]]:
    meta = (obj or {}).get("metadata") or {}
    value = meta.get("managedFields")
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def _entry_id(entry: dict[str, Any]) -> tuple[str, str, str]:
    return (str(entry.get("manager", "")), str(entry.get("operation", "")), str(entry.get("subresource", "")))


def _entry(manager: str, operation: str, api_version: str, now: str, subresource: str, paths: set[Path]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "manager": manager, "operation": operation, "apiVersion": api_version, "time": now,
        "fieldsType": "FieldsV1", "fieldsV1": encode_fields(paths),
    }
    if subresource:
        out["subresource"] = subresource
    return out


def _owned(entries: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], set[Path]]]:
    for entry in entries:
        yield entry, decode_fields(entry.get("fieldsV1"))


def _rebuild(entries: list[tuple[dict[str, Any], set[Path]]]) -> list[dict[str, Any]]:
    out = []
    for entry, paths in entries:
        if paths:
            out.append({**entry, "fieldsV1": encode_fields(paths)})
    return out


def valid_entries(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(e, dict) and isinstance(e.get("manager", ""), str) and e.get("operation") in ("Apply", "Update")
        for e in value
    )


# --------------------------------------------------------------------------- updates


def _untouched(fields: Any, touched: set[Path]) -> bool:
    """Whether no path of the FieldsV1 ``fields`` is related to a ``touched`` one (either a prefix of
    the other), read along the touched paths only. False where it cannot tell without decoding:
    a node with list members (``k:``, ``v:``, ``i:``) or ``.`` on the way."""
    if not isinstance(fields, dict) or not fields:
        return False
    for path in touched:
        node = fields
        for step in path:
            if any(not k.startswith("f:") for k in node):
                return False
            child = node.get(f"f:{step}")
            if child is None:
                break  # owns nothing on this path
            if not isinstance(child, dict) or not child:
                return False  # owns a prefix of the path
            node = child
        else:
            return False  # owns fields under the path
    return True


def record_update(
    current: Object | None, new: Object, manager: str, api_version: str, now: str, subresource: str = ""
) -> list[dict[str, Any]]:
    """managedFields after a create/update/patch by ``manager``: the fields it changed become its own.

    A request that sets managedFields itself (as kubectl does when it migrates client-side
    apply ownership) has them taken as written. Another manager's entry that owns nothing the
    write changed or removed is kept as it is (only the others are decoded and re-encoded)."""
    given = (new.get("metadata") or {}).get("managedFields")
    base = _entries(current)
    if given is not None and given != base and valid_entries(given):
        base = [e for e in given if isinstance(e, dict)]
    old = leaves(current, subresource) if current is not None else {}
    fresh = leaves(new, subresource)
    changed = {p for p, v in fresh.items() if p not in old or old[p] != v}
    removed = {p for p in old if p not in fresh}
    if not changed and not removed:
        return base
    if not base:  # a create's (no entry to trim): the changed fields are all the new entry owns
        return [_entry(manager, "Update", api_version, now, subresource, changed)] if changed else []
    # p is related to a changed c when p is a prefix of c (or c itself), or c a proper prefix of p.
    above = {c[:i] for c in changed for i in range(1, len(c) + 1)}

    def kept(p: Path) -> bool:
        return p not in removed and p not in above and not any(p[:i] in changed for i in range(1, len(p)))

    me = (manager, "Update", subresource)
    touched = changed | removed
    result: list[dict[str, Any]] = []
    mine: set[Path] = set()
    for entry in base:
        if _entry_id(entry) == me:
            mine = {p for p in decode_fields(entry.get("fieldsV1")) if kept(p)}
        elif _untouched(entry.get("fieldsV1"), touched):
            result.append(entry)
        else:
            paths = {p for p in decode_fields(entry.get("fieldsV1")) if kept(p)}
            if paths:
                result.append({**entry, "fieldsV1": encode_fields(paths)})
    mine |= changed
    if mine:
        result.append(_entry(manager, "Update", api_version, now, subresource, mine))
    return result


# --------------------------------------------------------------------------- server-side apply


def _manager_text(entry: dict[str, Any]) -> str:
    text = f'"{entry.get("manager", "")}"'
    if entry.get("subresource"):
        text += f' with subresource "{entry["subresource"]}"'
    if entry.get("operation") == "Update":
        text += f" using {entry.get('apiVersion', '')}"
        if entry.get("time"):
            text += f" at {entry['time']}"
    return text


def conflict_error(resource_kind: str, group: str, name: str, conflicts: list[tuple[dict[str, Any], Path]]) -> ApiError:
    by_manager: dict[str, list[str]] = {}
    for entry, path in conflicts:
        by_manager.setdefault(_manager_text(entry), []).append("." + ".".join(path))
    if len(conflicts) == 1:
        ((who, paths),) = by_manager.items()
        text = f"conflict with {who}: {paths[0]}"
    else:
        text = "\n".join(f"conflicts with {who}:" + "".join(f"\n- {p}" for p in paths) for who, paths in by_manager.items())
    count = f"{len(conflicts)} conflict" + ("s" if len(conflicts) != 1 else "")
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {_manager_text(e)}", "field": "." + ".".join(p)}
        for e, p in conflicts
    ]
    details: dict[str, Any] = {"name": name, "kind": resource_kind, "causes": causes}
    if group:
        details["group"] = group
    return ApiError(409, "Conflict", f"Apply failed with {count}: {text}", details)


def server_side_apply(
    current: Object | None,
    applied: Object,
    manager: str,
    api_version: str,
    now: str,
    *,
    force: bool,
    subresource: str = "",
    resource_kind: str = "",
    group: str = "",
    last_applied: Object | None = None,
) -> Object:
    """The object after ``manager`` applies ``applied`` (its full intent) over ``current``.

    Raises 409 Conflict when another manager owns a field the config sets to another value.
    As the API server eases the move from client-side apply: a field owned by
    ``kubectl-client-side-apply`` whose live value is still what ``last_applied`` (the
    object's last-applied-configuration, stored form) says is taken without conflict."""
    config = leaves(applied, subresource)
    me = (manager, "Apply", subresource)
    entries = list(_owned(_entries(current)))
    conflicts: list[tuple[dict[str, Any], Path]] = []
    eased: list[tuple[dict[str, Any], Path]] = []
    for entry, paths in entries:
        if _entry_id(entry) == me or str(entry.get("subresource", "")) != subresource:
            continue
        for owned in sorted(paths):
            if (
                entry.get("manager") == CLIENT_SIDE_APPLY
                and last_applied is not None
                and get_path(last_applied, owned) == get_path(current, owned)
            ):
                conflicts_eased = True
            else:
                conflicts_eased = False
            for path, value in config.items():
                if _related(owned, path) and get_path(current, path) != value:
                    if conflicts_eased:
                        eased.append((entry, owned))
                    else:
                        conflicts.append((entry, owned))
                    break
    if conflicts and not force:
        name = str((applied.get("metadata") or {}).get("name", ""))
        raise conflict_error(resource_kind, group, name, conflicts)
    taken = {id(e): {p for (c, p) in [*conflicts, *eased] if c is e} for e, _ in entries}
    result = json_copy(current) if current is not None else {
        "apiVersion": applied.get("apiVersion"), "kind": applied.get("kind"), "metadata": {}
    }
    previously: set[Path] = set()
    others: list[tuple[dict[str, Any], set[Path]]] = []
    for entry, paths in entries:
        if _entry_id(entry) == me:
            previously = paths
        else:
            others.append((entry, {p for p in paths if p not in taken.get(id(entry), set())}))
    still_owned = [p for _, paths in others for p in paths]
    for path in previously:
        if path in config or any(_related(path, c) for c in config):
            continue
        if not any(_related(path, o) for o in still_owned):
            _del_path(result, path)
    for path, value in config.items():
        _set_path(result, path, value)
    meta = result.setdefault("metadata", {})
    for key in ("name", "namespace"):
        given = (applied.get("metadata") or {}).get(key)
        if given and not meta.get(key):
            meta[key] = given
    managed = _rebuild(others)
    managed.append(_entry(manager, "Apply", api_version, now, subresource, set(config)))
    meta["managedFields"] = managed
    return result

