"""A pod set's topology assignment and its two wire shapes.

Internally an assignment is Kueue's ``utiltas.TopologyAssignment``: the levels (node label
keys, highest first) and, per domain, its values at those levels and its pod count.
``kueue.x-k8s.io/v1beta2`` writes it compressed (``levels`` + ``slices``: per level one
``universal`` value or ``individual`` roots with a common prefix and suffix, pod counts
``universal`` or ``individual``); ``v1beta1`` writes ``levels`` + ``domains``. Both are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import FieldErrors


@dataclass(frozen=True, slots=True)
class TopologyAssignment:
    levels: tuple[str, ...]
    domains: tuple[tuple[tuple[str, ...], int], ...]  # (values per level, pod count)

    @property
    def pod_count(self) -> int:
        return sum(count for _, count in self.domains)


def _compact_values(values: Sequence[str]) -> dict[str, Any]:
    """One level's values as Kueue's fillSingleCompactSliceValues writes them."""
    prefix = suffix = values[0]
    min_len = max_len = len(values[0])
    for s in values[1:]:
        n = len(s)
        min_len, max_len = min(min_len, n), max(max_len, n)
        prefix, suffix = prefix[:n], suffix[len(suffix) - n:] if n < len(suffix) else suffix
        i = 0
        while i < len(prefix) and s[i] == prefix[i]:
            i += 1
        prefix = prefix[:i]
        j = 0
        while j < len(suffix) and s[len(s) - 1 - j] == suffix[len(suffix) - 1 - j]:
            j += 1
        suffix = suffix[len(suffix) - j:] if j else ""
    if len(prefix) == max_len:
        return {"universal": prefix}
    if len(prefix) + len(suffix) > min_len:
        prefix = prefix[: min_len - len(suffix)]
    out: dict[str, Any] = {}
    if prefix:
        out["prefix"] = prefix
    if suffix:
        out["suffix"] = suffix
    out["roots"] = [s[len(prefix): len(s) - len(suffix)] for s in values]
    return {"individual": out}


def to_v1beta2(ta: TopologyAssignment) -> dict[str, Any]:
    """Kueue's single-slice compact encoding (``V1Beta2From``)."""
    out: dict[str, Any] = {"levels": list(ta.levels), "slices": []}
    if not ta.domains:
        return out
    counts = [c for _, c in ta.domains]
    slice_: dict[str, Any] = {
        "domainCount": len(ta.domains),
        "valuesPerLevel": [_compact_values([values[i] for values, _ in ta.domains]) for i in range(len(ta.levels))],
        "podCounts": {"universal": counts[0]} if len(set(counts)) == 1 else {"individual": counts},
    }
    out["slices"].append(slice_)
    return out


def to_v1beta1(ta: TopologyAssignment) -> dict[str, Any]:
    return {"levels": list(ta.levels), "domains": [{"values": list(v), "count": c} for v, c in ta.domains]}


def read_topology_assignment(raw: object, path: str, errs: FieldErrors) -> TopologyAssignment | None:
    """Either shape; a malformed one is a field error naming where."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        errs.invalid(path, raw, "must be an object")
        return None
    levels = raw.get("levels")
    if not isinstance(levels, list) or not levels or not all(isinstance(x, str) for x in levels):
        errs.invalid(f"{path}.levels", levels, "must be a non-empty list of node label keys")
        return None
    try:
        if "domains" in raw:
            domains = tuple((tuple(str(v) for v in d["values"]), int(d["count"])) for d in raw["domains"] or [])
        else:
            domains = tuple(_read_slices(raw.get("slices") or [], len(levels)))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        errs.invalid(path, "...", f"malformed topology assignment ({type(exc).__name__}: {exc})")
        return None
    for values, _ in domains:
        if len(values) != len(levels):
            errs.invalid(f"{path}.levels", levels, "each domain must have one value per level")
            return None
    return TopologyAssignment(tuple(levels), domains)


def _read_slices(slices: list[Any], n_levels: int) -> list[tuple[tuple[str, ...], int]]:
    out: list[tuple[tuple[str, ...], int]] = []
    for s in slices:
        n = int(s["domainCount"])
        per_level = s["valuesPerLevel"]
        if len(per_level) != n_levels:
            raise ValueError("valuesPerLevel must have one entry per level")
        columns = []
        for lv in per_level:
            if "universal" in lv and lv["universal"] is not None:
                columns.append([str(lv["universal"])] * n)
            else:
                ind = lv["individual"]
                prefix, suffix = ind.get("prefix") or "", ind.get("suffix") or ""
                roots = ind["roots"]
                if len(roots) != n:
                    raise ValueError("individual.roots must have domainCount items")
                columns.append([f"{prefix}{r}{suffix}" for r in roots])
        pc = s["podCounts"]
        counts = [int(pc["universal"])] * n if pc.get("universal") is not None else [int(c) for c in pc["individual"]]
        if len(counts) != n:
            raise ValueError("podCounts.individual must have domainCount items")
        out.extend((tuple(col[i] for col in columns), counts[i]) for i in range(n))
    return out
