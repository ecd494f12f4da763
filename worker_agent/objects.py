"""The worker cluster's own objects in embedded mode: manifests from a file or a directory.

Namespaces, ResourceFlavors, Cohorts, ClusterQueues, LocalQueues,
WorkloadPriorityClasses and AdmissionChecks, as a user would ``kubectl apply``
them to a worker running Kueue; validated and defaulted with
:func:`hub.api.registry.parse_object`. Workloads and Jobs come from the hub only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hub.api.errors import ValidationError
from hub.api.registry import ApiObject, parse_object

# Referenced objects first, so nothing is queued before what it needs exists. Topologies and Nodes
# are topology-aware scheduling's inventory (their free domains go to the hub with the capacity);
# DRA's claims and templates are what copies' pod templates claim devices through.
_ORDER = ("Namespace", "Topology", "Node", "ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue",
          "WorkloadPriorityClass", "AdmissionCheck", "ResourceClaim", "ResourceClaimTemplate")
ALLOWED_KINDS = frozenset(_ORDER)


class ObjectsError(Exception):
    """An unreadable or invalid manifest; the message names the file and the field."""


def manifest_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".json") and p.is_file())
    if not path.exists():
        raise ObjectsError(f"{path}: no such file or directory")
    return [path]


def _documents(path: Path) -> list[Any]:
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    except (OSError, yaml.YAMLError) as exc:
        raise ObjectsError(f"{path}: cannot read: {exc}") from None
    out: list[Any] = []
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List":
            out.extend(doc.get("items") or [])
        else:
            out.append(doc)
    return out


def load_objects(path: Path, *, partial_admission: bool = True) -> list[ApiObject]:
    """Every object under ``path``, validated, in dependency order."""
    objects: list[ApiObject] = []
    for file in manifest_files(path):
        for index, doc in enumerate(_documents(file), start=1):
            try:
                obj = parse_object(doc, partial_admission=partial_admission)
            except ValidationError as exc:
                raise ObjectsError(f"{file} (document {index}): {exc}") from None
            if obj.kind not in ALLOWED_KINDS:
                raise ObjectsError(
                    f"{file} (document {index}): {obj.kind} {obj.meta.key}: a worker's own objects are "
                    f"{', '.join(_ORDER)}; workloads come from the hub"
                )
            objects.append(obj)
    objects.sort(key=lambda o: _ORDER.index(o.kind))
    return objects
