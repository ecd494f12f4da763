"""Every valid manifest of the fuzzer's kinds with one random extra field, anywhere its kind's schema
lists the fields, is refused naming the field's path under Strict (the default), accepted without
it under Ignore, and accepted without it with a warning naming the path under Warn."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from manifest_fuzz import BASES, Harness

from hub.service.field_check import IGNORE, STRICT, WARN, schema_of

Path_ = tuple[str | int, ...]


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    h = Harness()
    yield h
    h.close()


def manifest_schema(manifest: dict[str, Any]) -> dict[str, Any]:
    group, _, version = manifest["apiVersion"].rpartition("/")
    schema = schema_of(group, version, manifest["kind"])
    assert schema is not None, manifest["kind"]
    return schema


def closed_objects(value: Any, schema: dict[str, Any], path: Path_ = ()) -> list[tuple[Path_, frozenset[str]]]:
    """(path, known keys) of every object in ``value`` whose schema lists its fields and keeps no others
(not below an ``x-kubernetes-preserve-unknown-fields`` node, such as a Workload's pod template)."""
    out: list[tuple[Path_, frozenset[str]]] = []
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return out  # everything below is kept as written
    if isinstance(value, dict):
        props = schema.get("properties")
        if isinstance(props, dict) and "additionalProperties" not in schema:
            out.append((path, frozenset(props)))
        for key, child in value.items():
            if path == () and key == "metadata":
                continue  # ObjectMeta: its own rules
            sub = (props or {}).get(key) or (schema.get("additionalProperties") if isinstance(
                schema.get("additionalProperties"), dict) else None)
            if isinstance(sub, dict):
                out.extend(closed_objects(child, sub, (*path, key)))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, child in enumerate(value):
            out.extend(closed_objects(child, schema["items"], (*path, i)))
    return out


def dotted(path: Path_) -> str:
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else key)
    return out


@st.composite
def with_extra_field(draw: st.DrawFn) -> tuple[dict[str, Any], Path_, str]:
    manifest = copy.deepcopy(draw(st.sampled_from(BASES)))
    where, known = draw(st.sampled_from(closed_objects(manifest, manifest_schema(manifest))))
    name = draw(st.from_regex(r"[a-z][A-Za-z0-9]{0,12}", fullmatch=True).filter(
        lambda n: n not in known and n not in ("apiVersion", "kind", "metadata", "status")))
    target: Any = manifest
    for key in where:
        target = target[key]
    target[name] = draw(st.one_of(st.integers(), st.text(max_size=8), st.booleans(), st.just({"a": 1})))
    return manifest, where, name


def _node(root: Any, path: Path_) -> Any:
    """The value at ``path``, or None where the stored form differs (v1beta1 converted to v1beta2)."""
    for key in path:
        try:
            root = root[key]
        except (KeyError, IndexError, TypeError):
            return None
    return root


@settings(max_examples=examples(150), derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=with_extra_field())
def test_an_extra_field_is_refused_by_path_or_dropped(harness: Harness, case: tuple[dict[str, Any], Path_, str]) -> None:
    manifest, where, name = case
    path = dotted((*where, name))
    text = json.dumps(manifest)
    strict = harness.applier.apply(text, field_validation=STRICT)
    errors = [r.error for r in strict.results if r.error]
    assert strict.rejected and len(errors) == 1 and f'unknown field "{path}"' in errors[0], errors
    assert "\n" not in errors[0]

    for mode in (WARN, IGNORE):
        out = harness.applier.apply(text, field_validation=mode)
        assert not any("unknown field" in r.error for r in out.results), [r.error for r in out.results]
        named = [w for w in out.warnings if f'unknown field "{path}"' in w]
        assert len(named) == (1 if mode == WARN else 0), out.warnings
        if not out.rejected:
            meta = manifest["metadata"]
            namespace = "" if manifest["kind"] == "Namespace" else meta.get("namespace", "")
            stored = harness.store.get(manifest["kind"], namespace, meta["name"])
            assert stored is not None
            node = _node(stored, where)
            assert not isinstance(node, dict) or name not in node, f"{path} was stored"
