"""Strict decoding of a Kueue Configuration file, as Kueue's loader decodes it
(pkg/config: ``serializer.EnableStrict``): a field Kueue's Configuration type does not have is
refused with its path, ``strict decoding error: unknown field "waitForPodsReady.bogus"``, instead
of being dropped (a misspelt timeout would otherwise be lost without a word).

The known fields are those of hub/api/kueue_fields.txt (Kueue's Go types, per version), plus
mkhub's own extension (``multiKueue.capacityAwareDispatcherConfig``). Beneath a field of a type
from another package (``metav1.LabelSelector``, ``configv1alpha1.LeaderElectionConfiguration``) or
of a map, nothing is checked: those are Kubernetes' types, decoded as Kueue decodes them.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from .kueue_fields import CONFIG_KIND, read_fields

_TYPE_META = {"apiVersion": "string", "kind": "string"}
_MKHUB_EXTENSIONS = {  # read by hub.api.config, not in Kueue's types
    "multiKueue.capacityAwareDispatcherConfig": "map[string]any",
}


@cache
def _known(version: str) -> dict[str, str]:
    """Field path -> Go type of Kueue's Configuration in ``version`` (both versions when unknown)."""
    fields = dict(_TYPE_META)
    for f in read_fields():
        if f.kind == CONFIG_KIND and (version == "" or f.version == version):
            fields.setdefault(f.path, f.go_type)
    fields.update(_MKHUB_EXTENSIONS)
    return fields


def _opaque(go_type: str) -> bool:
    """Another package's type or a map: its insides are not Kueue's fields."""
    element = go_type.removeprefix("[]").removeprefix("*")
    return element.startswith("map[") or "." in element


def unknown_fields(data: dict[str, Any]) -> list[str]:
    """The paths of every field of ``data`` Kueue's Configuration does not have, in file order."""
    api_version = str(data.get("apiVersion") or "")
    version = api_version.rpartition("/")[2] if api_version.startswith("config.kueue.x-k8s.io/") else ""
    known = _known(version if version in ("v1beta1", "v1beta2") else "")
    out: list[str] = []

    def walk(value: Any, path: str, shown: str) -> None:
        if isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{path}[]", f"{shown}[{i}]")
            return
        if not isinstance(value, dict):
            return
        for key, child in value.items():
            child_path = f"{path}.{key}" if path else str(key)
            child_shown = f"{shown}.{key}" if shown else str(key)
            go_type = known.get(child_path)
            if go_type is None:
                out.append(child_shown)
            elif not _opaque(go_type):
                walk(child, child_path, child_shown)

    walk(data, "", "")
    return out


def strict_decoding_error(data: dict[str, Any]) -> str | None:
    """Kueue's loader's error for unknown fields (None: every field is known)."""
    unknown = unknown_fields(data)
    if not unknown:
        return None
    return "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in unknown)
