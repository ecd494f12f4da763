"""Unknown fields in ``mkhub apply`` / ``mkhub create``, as kube-apiserver's field validation
treats them, and warnings for Kueue's fields mkhub keeps without acting on them.

Modes (the API server's ``fieldValidation``; kubectl's ``--validate`` spells them
strict|warn|ignore, also true|false):

- ``Strict`` (the default, as kubectl's): an object with a field its kind's schema does not
  know is refused, naming the field's path (``strict decoding error: unknown field "spec.bogusField"``);
- ``Warn``: the field is dropped (as the API server prunes it) and a warning names it;
- ``Ignore``: the field is dropped without a word.

The schema is the one the API server mkhub serves checks writes against
(:func:`hub.kubeapi.fields.crd_schema`: Kueue's CRDs, the built-in kinds), or for the
operators' kinds (JobSet, MPIJob, ...) the CRD ``mkhub dev-cluster`` installs for them, as a
cluster with the operator would check them; a kind without one has its top level and metadata
checked. Independently of the mode, a Kueue object that
sets a field mkhub stores but does not act on (:mod:`hub.api.kueue_fields`) is accepted with a
warning that names the field and says why.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from hub.api.conversion import KUEUE_GROUP
from hub.api.errors import one_line
from hub.api.kueue_fields import QUIET, STORED, mark_of
from hub.api.registry import KINDS

# The API server's schemas (hub.kubeapi, with its aiohttp server) and the dev-cluster's CRDs are
# imported on the first check, not with the hub: a third of `mkhub serve`'s start-up imports.

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"
FIELD_VALIDATIONS = (STRICT, WARN, IGNORE)
_SPELLINGS = {"strict": STRICT, "true": STRICT, "warn": WARN, "ignore": IGNORE, "false": IGNORE}
_SKIP = ("apiVersion", "kind", "metadata", "status")


def field_validation(text: str) -> str:
    """kubectl's ``--validate`` value (or the API server's spelling; empty is Strict) to a mode."""
    if not text:
        return STRICT
    mode = _SPELLINGS.get(text.lower())
    if mode is None:
        raise ValueError(f'invalid - validate option "{text}"; must be one of: strict (or true), warn, ignore (or false)')
    return mode


def check_unknown_fields(manifest: dict[str, Any], mode: str, ref: str) -> tuple[str, list[str]]:
    """(error, warnings) for one manifest; with Warn and Ignore the unknown fields are removed from it."""
    group, _, version = str(manifest.get("apiVersion") or "").rpartition("/")
    kind = str(manifest.get("kind") or "")
    if kind not in KINDS:
        return "", []  # the registry refuses it, with its own message
    from hub.kubeapi.fields import unknown_fields

    unknown = unknown_fields(kind, manifest, schema_of(group, version, kind), drop=mode != STRICT)
    fields = ", ".join(f'unknown field "{one_line(path)}"' for path in unknown)  # a key may hold a newline
    if unknown and mode == STRICT:
        return f"{ref}: strict decoding error: {fields}", []
    warnings = [f"{ref}: {fields}"] if unknown and mode == WARN else []
    if group == KUEUE_GROUP and not KINDS[kind].passive_note:
        warnings.extend(f"{ref}: {path} is stored, but mkhub does not act on it ({reason})"
                        for path, reason in stored_fields(manifest, version, kind))
    return "", warnings


def schema_of(group: str, version: str, kind: str) -> dict[str, Any] | None:
    """The structural schema a kind's fields are checked against, or None."""
    from hub.kubeapi.fields import crd_schema

    return crd_schema(group, version, kind) or _operator_schemas().get((group, version, kind))


@cache
def _operator_schemas() -> dict[tuple[str, str, str], dict[str, Any]]:
    """(group, version, kind) -> the schema of the operators' CRDs that mkhub dev-cluster installs."""
    from hub.devcluster.operators import operator_crds
    from hub.devcluster.podbased_crds import podbased_crds

    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for crd in (*operator_crds(), *podbased_crds()):
        spec = crd["spec"]
        for version in spec["versions"]:
            out[(spec["group"], version["name"], spec["names"]["kind"])] = version["schema"]["openAPIV3Schema"]
    return out


def stored_fields(manifest: dict[str, Any], version: str, kind: str) -> list[tuple[str, str]]:
    """(path, reason) of the outermost fields set in ``manifest`` that mkhub stores without acting on."""
    out: list[tuple[str, str]] = []
    for key, value in manifest.items():
        if key not in _SKIP:
            _stored(value, key, key, version, kind, out)
    return out


def _stored(value: Any, path: str, pattern: str, version: str, kind: str, out: list[tuple[str, str]]) -> None:
    mark, reason = mark_of(version, kind, pattern)
    if mark == STORED:
        if (kind, pattern) not in QUIET:
            out.append((path, reason))
        return
    if isinstance(value, dict):
        for key, child in value.items():
            _stored(child, f"{path}.{key}", f"{pattern}.{key}", version, kind, out)
    elif isinstance(value, list):
        for i, child in enumerate(value):
            _stored(child, f"{path}[{i}]", f"{pattern}[]", version, kind, out)
