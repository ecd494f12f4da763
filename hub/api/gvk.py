"""GroupVersionKinds as Kueue's configuration names them (``Kind.version.group``)."""

from __future__ import annotations

import re

_PART = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$")


def parse_gvk(name: str) -> tuple[str, str]:
    """``Kind.version.group`` -> (kind, apiVersion), split at the first two dots as Kubernetes'
    ``ParseKindArg`` does; raises ValueError with Kueue's reason."""
    parts = name.split(".", 2)
    if len(parts) != 3 or not all(_PART.match(p) for p in (*parts[:2], *parts[2].split("."))):
        raise ValueError("must be in 'kind.version.group' format")
    kind, version, group = parts
    return kind, f"{group}/{version}"


def default_plural(kind: str) -> str:
    """The resource name a CRD generator gives ``kind`` (kubebuilder's English plural)."""
    lower = kind.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in tuple("aeiou"):
        return lower[:-1] + "ies"
    return lower + "s"
