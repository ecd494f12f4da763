"""The list of every field of Kueue's API types (hub/api/kueue_fields.txt) against what mkhub serves.

A field of Kueue's must be served (in the CRD schema of its version) when it is marked acted or
stored, absent when marked not-served, and every mark but acted needs a reason. When Kueue's
sources are at hand (the mirror), the list must also be what tools/kueue_fields.py makes of them.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from hub.api import config as config_module
from hub.api import dra as dra_module
from hub.api.kueue_fields import (
    ACTED,
    CONFIG_KIND,
    KINDS,
    MARKS,
    NOT_SERVED,
    RULES,
    Field,
    format_fields,
    mark_of,
    read_fields,
)
from hub.api.schema import KUEUE_KINDS, kind_schema
from hub.api.schema.dsl import walk

ROOT = Path(__file__).resolve().parents[2]
FIELDS = read_fields()


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kueue_fields_tool", ROOT / "tools" / "kueue_fields.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def served_paths(schema: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """The schema's field paths, and those below which anything is kept (preserve-unknown-fields)."""
    paths, open_ = set(), set()
    for path, node in walk(schema):
        paths.add(path)
        if node.get("x-kubernetes-preserve-unknown-fields"):
            open_.add(path)
    return paths, open_


def is_served(path: str, paths: set[str], open_: set[str]) -> bool:
    return path in paths or any(path.startswith(prefix + ".") or path.startswith(prefix + "[") for prefix in open_)


def test_the_list_covers_every_kind_and_both_versions() -> None:
    kinds = {(f.version, f.kind) for f in FIELDS}
    for version in ("v1beta1", "v1beta2"):
        for kind in (*KUEUE_KINDS, CONFIG_KIND):
            assert (version, kind) in kinds
    assert {f.kind for f in FIELDS} <= {*KINDS, CONFIG_KIND}
    assert len(FIELDS) > 500


def test_every_field_is_marked_and_every_mark_but_acted_says_why() -> None:
    unmarked = [f"{f.version} {f.kind} {f.path}" for f in FIELDS if f.mark not in MARKS]
    assert not unmarked, f"classify these in hub/api/kueue_fields.py RULES, then run tools/kueue_fields.py: {unmarked}"
    silent = [f"{f.version} {f.kind} {f.path}" for f in FIELDS if f.mark != ACTED and not f.reason]
    assert not silent


def test_the_marks_are_the_rules_marks() -> None:
    stale = [f"{f.version} {f.kind} {f.path}" for f in FIELDS if mark_of(f.version, f.kind, f.path) != (f.mark, f.reason)]
    assert not stale, f"hub/api/kueue_fields.txt is older than RULES: run tools/kueue_fields.py ({stale[:5]})"
    used = {(f.kind, f.path) for f in FIELDS} | {(f"{f.version}:{f.kind}", f.path) for f in FIELDS}
    prefixes = {(k, p[: i]) for k, p in used for i in range(len(p) + 1)}
    unused = [key for key in RULES if key not in prefixes]
    assert not unused, f"rules that match no field of Kueue's: {unused}"


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
@pytest.mark.parametrize("kind", KUEUE_KINDS)
def test_kueue_fields_are_served_as_marked(kind: str, version: str) -> None:
    paths, open_ = served_paths(kind_schema(kind, version))
    fields = [f for f in FIELDS if (f.kind, f.version) == (kind, version)]
    assert fields
    missing = [f.path for f in fields if f.mark != NOT_SERVED and not is_served(f.path, paths, open_)]
    assert not missing, f"{kind} {version}: Kueue's fields marked served but not in mkhub's schema: {missing}"
    served = [f.path for f in fields if f.mark == NOT_SERVED and f.path in paths]
    assert not served, f"{kind} {version}: fields marked not-served that the schema serves: {served}"


def test_the_concurrent_admission_policy_is_served_in_v1beta2_only() -> None:
    v2, _ = served_paths(kind_schema("ClusterQueue", "v1beta2"))
    v1, _ = served_paths(kind_schema("ClusterQueue", "v1beta1"))
    assert "spec.concurrentAdmissionPolicy.migration.constraints.lastAcceptableFlavorName" in v2
    assert not any(p.startswith("spec.concurrentAdmissionPolicy") for p in v1)
    mark = mark_of("v1beta2", "ClusterQueue", "spec.concurrentAdmissionPolicy.migration.mode")
    assert mark == ("acted", "")  # the engine acts on it with the ConcurrentAdmission gate (hub.engine.concurrent_admission)


def test_configuration_fields_marked_acted_are_read_by_the_parser() -> None:
    source = Path(config_module.__file__).read_text() + Path(dra_module.__file__).read_text()  # DRA's mappings
    names = set(re.findall(r'"([A-Za-z]+)"', source))
    acted = [f for f in FIELDS if f.kind == CONFIG_KIND and f.mark == ACTED]
    unread = [f.path for f in acted if re.split(r"[.\[{]", f.path.rstrip("]}").replace("[]", ""))[-1] not in names]
    assert not unread, f"Configuration fields marked acted that hub/api/config.py never reads: {unread}"


def test_the_format_round_trips() -> None:
    rows = [Field("v1beta2", "ClusterQueue", "spec.x", "string", "stored", "two words")]
    assert read_fields(format_fields(rows, "here")) == rows


def test_the_list_is_what_kueues_sources_say() -> None:
    header = (ROOT / "hub" / "api" / "kueue_fields.txt").read_text().splitlines()[0]
    commit = re.search(r"kubernetes-sigs/kueue ([0-9a-f]{40})", header)
    assert commit is not None, header
    tool = _tool()
    repo = tool.MIRROR
    if not repo.exists() or subprocess.run(["git", "-C", str(repo), "cat-file", "-e", commit.group(1)],
                                           capture_output=True).returncode != 0:
        pytest.skip(f"Kueue's sources at {commit.group(1)} are not at hand ({repo})")
    rows = tool.inventory(repo, commit.group(1))
    assert [(f.version, f.kind, f.path, f.go_type) for f in rows] == [
        (f.version, f.kind, f.path, f.go_type) for f in FIELDS
    ]
