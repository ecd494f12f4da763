"""The schema walks of every write on read schema nodes (hub.kubeapi.validate.Node): the same lines,
in the same order, and the same pruning as the walks on the schema's maps they replace, on random
mutations of real objects and on hand-made schemas with every shape the walks distinguish."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from hub.kubeapi import fields, validate
from hub.kubeapi.fields import crd_schema, unknown_fields
from hub.kubeapi.validate import _walk_schema, node_of, problems

# ------------------------------------------------------------------ the walks before (references)


def _old_fields_walk(value: Any, schema: Any, path: str, out: list[str], drop: bool) -> None:
    if not isinstance(schema, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key in list(value):
            child = value[key]
            known = isinstance(props, dict) and key in props
            if known or isinstance(extra, dict):
                if isinstance(child, dict | list):
                    sub: Any = props[key] if known else extra  # type: ignore[index]
                    _old_fields_walk(child, sub, f"{path}.{key}" if path else key, out, drop)
            elif props is not None or extra is False:
                out.append(f"{path}.{key}" if path else key)
                if drop:
                    del value[key]
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            if isinstance(item, dict | list):
                _old_fields_walk(item, schema["items"], f"{path}[{i}]", out, drop)


def _old_unknown_fields(kind: str, obj: dict[str, Any], schema: dict[str, Any], drop: bool) -> list[str]:
    out: list[str] = []
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in ("apiVersion", "kind", "metadata")}
    _old_fields_walk(body, {**schema, "properties": props}, "", out, drop)
    if drop:
        for key in [k for k in obj if k not in ("apiVersion", "kind", "metadata") and k not in body]:
            del obj[key]
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for key in [k for k in meta if k not in fields._META]:
            out.append(f"metadata.{key}")
            if drop:
                del meta[key]
    return out


def _old_problems(schema: Any, obj: Any, undeclared: bool) -> list[str]:
    out: list[str] = []
    _walk_schema(schema, obj, "", out, undeclared)  # the general walk is the walk before, kept as it was
    return out


# ------------------------------------------------------------------ objects and schemas


class _Str(str):
    """A str subclass (a value a controller may build in Python): the node walk hands it over."""


def _pod_spec() -> dict[str, Any]:
    return {"restartPolicy": "Never", "containers": [
        {"name": "c", "image": "i", "command": ["sleep", "1"], "ports": [{"containerPort": 80, "protocol": "TCP"}],
         "resources": {"requests": {"cpu": "1", "memory": 1024}}, "env": [{"name": "A", "value": "b"}]}]}


_OBJECTS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("Job", "batch", "v1", {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "n", "labels": {"a": "b"}},
        "spec": {"parallelism": 1, "completions": 1, "suspend": True, "completionMode": "NonIndexed",
                 "template": {"metadata": {"labels": {"x": "y"}}, "spec": _pod_spec()}},
        "status": {"active": 1, "conditions": [{"type": "Complete", "status": "True"}]}}),
    ("Event", "", "v1", {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e.1", "namespace": "n"},
        "involvedObject": {"kind": "Workload", "name": "w", "namespace": "n", "uid": "u", "resourceVersion": "5"},
        "reason": "Admitted", "message": "m", "type": "Normal", "count": 1, "firstTimestamp": "2026-11-27T23:25:21Z",
        "source": {"component": "kueue", "host": "vm"}, "reportingComponent": "kueue"}),
    ("Pod", "", "v1", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}, "spec": _pod_spec()}),
    ("Deployment", "apps", "v1", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "n"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}}, "spec": _pod_spec()}}}),
    ("Workload", "kueue.x-k8s.io", "v1beta2", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "w", "namespace": "n"},
        "spec": {"queueName": "q", "active": True, "podSets": [{"name": "main", "count": 1, "template": {"spec": _pod_spec()}}]},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "r", "message": "m",
                                   "lastTransitionTime": "2026-11-27T23:25:21Z"}],
                   "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "flavors": {"cpu": "f"},
                                                                               "resourceUsage": {"cpu": "1"}, "count": 1}]}}}),
]

# Every shape the walks tell apart: enums, types with no Python set, int-or-string, quantities,
# additionalProperties true/false/a schema, preserve-unknown-fields, required, items that are
# not a schema, a property whose schema is not a map.
_MADE: dict[str, Any] = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": {"type": "object", "required": ["mode", "size"], "properties": {
            "mode": {"type": "string", "enum": ["A", "B"]},
            "size": {"type": "integer"},
            "ratio": {"type": "number"},
            "port": {"x-kubernetes-int-or-string": True},
            "cpu": {"x-mkhub-quantity": True},
            "odd": {"type": "null"},
            "free": {},
            "flags": {"type": "array", "items": {"type": "boolean"}},
            "loose": {"type": "array", "items": True},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
            "open": {"type": "object", "additionalProperties": True, "properties": {"x": {"type": "integer"}}},
            "shut": {"type": "object", "additionalProperties": False},
            "kept": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                     "properties": {"n": {"type": "integer"}}},
            "nested": {"type": "object", "properties": {"inner": {"type": "object", "required": ["v"],
                                                                  "properties": {"v": {"type": "string", "enum": ["x"]}}}}},
            "rows": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
        }},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}
_MADE_OBJECT: dict[str, Any] = {
    "apiVersion": "x/v1", "kind": "Made", "metadata": {"name": "m"},
    "spec": {"mode": "A", "size": 3, "ratio": 0.5, "port": "http", "cpu": "500m", "odd": 1, "free": {"a": [1]},
             "flags": [True, False], "loose": [1, "a"], "tags": {"a": "b"}, "open": {"x": 1, "y": 2},
             "shut": {}, "kept": {"n": 1, "m": 2}, "nested": {"inner": {"v": "x"}}, "rows": [{"k": "a"}, {"k": "b"}]},
    "status": {"anything": 1},
}

_VALUES: list[Any] = [True, False, 0, 7, 1.5, -2.0, "", "A", "x", "500m", None, {}, {"z": 1}, [], [1], ["a"],
                      [{"k": 1}], _Str("A")]


def _containers(value: Any, out: list[Any]) -> None:
    if isinstance(value, dict):
        out.append(value)
        for v in value.values():
            _containers(v, out)
    elif isinstance(value, list):
        out.append(value)
        for v in value:
            _containers(v, out)


def _mutate(obj: dict[str, Any], rng: random.Random) -> None:
    for _ in range(rng.randint(1, 4)):
        spots: list[Any] = []
        _containers(obj, spots)
        spot = rng.choice(spots)
        if isinstance(spot, dict):
            choice = rng.random()
            if spot and choice < 0.5:
                spot[rng.choice(list(spot))] = copy.deepcopy(rng.choice(_VALUES))
            elif spot and choice < 0.65:
                del spot[rng.choice(list(spot))]
            else:
                spot[rng.choice(["bogus", "extra", "mode", "size", "v", "name", "cpu", "k"])] = copy.deepcopy(rng.choice(_VALUES))
        elif spot:
            spot[rng.randrange(len(spot))] = copy.deepcopy(rng.choice(_VALUES))
        else:
            spot.append(copy.deepcopy(rng.choice(_VALUES)))


def _cases() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    out = []
    for kind, group, version, obj in _OBJECTS:
        schema = crd_schema(group, version, kind)
        assert schema is not None, kind
        out.append((kind, schema, obj))
    out.append(("Made", _MADE, _MADE_OBJECT))
    return out


@pytest.mark.parametrize(("kind", "schema", "base"), _cases(), ids=lambda v: v if isinstance(v, str) else "")
def test_the_node_walks_say_what_the_schema_walks_said(kind: str, schema: dict[str, Any], base: dict[str, Any]) -> None:
    rng = random.Random(f"h24-{kind}")
    assert problems(schema, base, undeclared=False) == _old_problems(schema, base, False)
    differing = 0
    for _ in range(1500):
        obj = copy.deepcopy(base)
        _mutate(obj, rng)
        for undeclared in (False, True):
            assert problems(schema, obj, undeclared=undeclared) == _old_problems(schema, obj, undeclared), obj
        for drop in (False, True):
            mine, theirs = copy.deepcopy(obj), copy.deepcopy(obj)
            assert unknown_fields(kind, mine, schema, drop=drop) == _old_unknown_fields(kind, theirs, schema, drop), obj
            assert mine == theirs
        differing += bool(_old_problems(schema, obj, True))
    assert differing > 300  # the mutations do reach the lines


def test_a_schema_node_is_read_once_per_schema() -> None:
    schema = crd_schema("batch", "v1", "Job")
    assert schema is not None
    node = node_of(schema)
    assert node_of(schema) is node
    spec = node.kid("spec")
    assert spec is not None and node.kid("spec") is spec  # children kept on their parent
    assert node_of(dict(schema)) is not node  # an equal but other schema (a CRD updated): its own node


def test_a_value_the_node_walk_cannot_decide_goes_to_the_general_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """A str subclass, an enum, a wrong type: the general walk answers (and words the line)."""
    seen: list[str] = []
    real = validate._walk_schema

    def counting(schema: Any, value: Any, path: str, *rest: Any) -> None:
        seen.append(path)
        real(schema, value, path, *rest)

    monkeypatch.setattr(validate, "_walk_schema", counting)
    obj = copy.deepcopy(_MADE_OBJECT)
    assert problems(_MADE, obj) == []
    assert seen == []  # all plain: the node walk alone
    obj["spec"]["mode"] = "C"
    obj["spec"]["size"] = True
    obj["spec"]["flags"] = [True, _Str("x")]
    assert problems(_MADE, obj) == [
        'spec.mode: Unsupported value: "C": supported values: "A", "B"',
        "spec.size: Invalid value: true: must be of type integer",
        'spec.flags[1]: Invalid value: "x": must be of type boolean',
    ]
    assert seen == ["spec.mode", "spec.size", "spec.flags[1]"]
