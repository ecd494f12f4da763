"""Scenario files (shared/conformance/FORMAT.md): loading and structural checks."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

STEP_KINDS = (
    "create", "update", "delete", "finish", "fail", "podsReady", "advance", "schedule",
    "checkState", "disconnect", "reconnect", "expect",
)
EXPECT_KEYS = (
    "admitted", "pending", "inadmissible", "rejected", "preempted", "evicted", "reserved", "deactivated",
    "finished", "absent", "checks", "conditions", "weightedShare", "dispatched", "usage", "only", "topology",
)
CLUSTER_STEPS = ("create", "update", "delete", "finish", "fail", "podsReady", "expect")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class NotSupported(Exception):
    """A step or expectation that needs a feature this build does not have yet."""


class ScenarioError(Exception):
    """A file that is not a valid scenario; names the file and the field."""

    def __init__(self, path: str, field_path: str, reason: str) -> None:
        super().__init__(f"{path}: {field_path}: {reason}")
        self.path = path
        self.field_path = field_path


@dataclass
class Step:
    index: int
    kind: str
    value: Any
    cluster: str | None = None


@dataclass
class Scenario:
    path: str
    name: str
    source: str
    description: str
    config: dict[str, Any]
    objects: list[dict[str, Any]]
    clusters: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)


def find_scenarios(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out.extend(sorted(q for q in path.rglob("*") if q.suffix in (".yaml", ".yml")))
        else:
            out.append(path)
    return out


def load_scenario(path: Path) -> Scenario:
    where = str(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ScenarioError(where, "<file>", f"cannot read: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ScenarioError(where, "<file>", f"not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ScenarioError(where, "<root>", "a scenario must be a mapping")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ScenarioError(where, "name", "required: a kebab-case scenario name")
    config = data.get("config") or {}
    if not isinstance(config, dict):
        raise ScenarioError(where, "config", "must be a mapping of Kueue Configuration fields")
    objects = _manifests(where, "objects", data.get("objects"))
    clusters: dict[str, list[dict[str, Any]]] = {}
    raw_clusters = data.get("clusters") or {}
    if not isinstance(raw_clusters, dict):
        raise ScenarioError(where, "clusters", "must map worker cluster names to {objects: [...]}")
    for cname, cdata in raw_clusters.items():
        if not isinstance(cdata, dict):
            raise ScenarioError(where, f"clusters.{cname}", "must be a mapping with objects")
        clusters[str(cname)] = _manifests(where, f"clusters.{cname}.objects", cdata.get("objects"))
    raw_steps = data.get("steps") or []
    if not isinstance(raw_steps, list):
        raise ScenarioError(where, "steps", "must be a list")
    steps = []
    for i, raw in enumerate(raw_steps):
        spath = f"steps[{i}]"
        if not isinstance(raw, dict):
            raise ScenarioError(where, spath, "each step must be a mapping")
        cluster = raw.get("cluster")
        kinds = [k for k in raw if k != "cluster"]
        if len(kinds) != 1 or kinds[0] not in STEP_KINDS:
            raise ScenarioError(where, spath, f"must have exactly one of: {', '.join(STEP_KINDS)} (got {kinds})")
        kind = kinds[0]
        if kind == "expect" and isinstance(raw[kind], dict) and "cluster" in raw[kind]:
            # `cluster` may sit on the step or inside the expectation itself.
            raw = {kind: {k: v for k, v in raw[kind].items() if k != "cluster"}, "cluster": raw[kind]["cluster"]}
            cluster = raw["cluster"]
        if cluster is not None:
            if kind not in CLUSTER_STEPS:
                raise ScenarioError(where, f"{spath}.cluster", f"not allowed on a {kind} step")
            if str(cluster) not in clusters:
                raise ScenarioError(where, f"{spath}.cluster", f"unknown cluster {cluster!r}")
        value = raw[kind]
        _check_step(where, spath, kind, value)
        steps.append(Step(i, kind, value, str(cluster) if cluster is not None else None))
    return Scenario(
        path=where,
        name=name,
        source=str(data.get("source") or ""),
        description=str(data.get("description") or ""),
        config=config,
        objects=objects,
        clusters=clusters,
        steps=steps,
    )


def _manifests(where: str, path: str, value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ScenarioError(where, path, "must be a list of manifests")
    for i, item in enumerate(value):
        if not isinstance(item, dict) or "kind" not in item or "apiVersion" not in item:
            raise ScenarioError(where, f"{path}[{i}]", "must be a manifest with apiVersion and kind")
    return value


def _check_step(where: str, path: str, kind: str, value: Any) -> None:
    p = f"{path}.{kind}"
    if kind in ("create", "update"):
        _manifests(where, p, value)
    elif kind in ("delete", "finish", "fail", "podsReady"):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ScenarioError(where, p, "must be a list of names")
    elif kind == "advance":
        from hub.api.config import parse_duration

        try:
            parse_duration(value)
        except ValueError as exc:
            raise ScenarioError(where, p, str(exc)) from exc
    elif kind == "schedule":
        if value is not None and not isinstance(value, dict):
            raise ScenarioError(where, p, "must be {} or {cycles: N}")
        cycles = (value or {}).get("cycles")
        if cycles is not None and (not isinstance(cycles, int) or cycles < 1):
            raise ScenarioError(where, f"{p}.cycles", "must be a positive integer")
    elif kind == "checkState":
        if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
            raise ScenarioError(where, p, "must map namespace/name to {check: state}")
    elif kind in ("disconnect", "reconnect"):
        if not isinstance(value, str):
            raise ScenarioError(where, p, "must be a worker cluster name")
    elif kind == "expect":
        if not isinstance(value, dict):
            raise ScenarioError(where, p, "must be a mapping")
        for key in value:
            if key not in EXPECT_KEYS:
                raise ScenarioError(where, f"{p}.{key}", f"unknown expectation; known: {', '.join(EXPECT_KEYS)}")
