"""Topology and Node as hub.api reads and checks them (Kueue's CRD rules, core/v1 Node's shape)."""

from __future__ import annotations

from typing import Any

import pytest

from hub.api.errors import ValidationError
from hub.api.registry import parse_object, validate_update
from hub.api.tas_kinds import Node, Topology


def topology(*levels: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Topology", "metadata": {"name": "t"},
            "spec": {"levels": [{"nodeLabel": x} for x in levels]}}


def refused(manifest: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as exc:
        parse_object(manifest)
    return str(exc.value)


def test_topology_levels_are_read_in_order() -> None:
    obj = parse_object(topology("example.com/block", "example.com/rack", "kubernetes.io/hostname"))
    assert isinstance(obj, Topology) and obj.levels == ("example.com/block", "example.com/rack", "kubernetes.io/hostname")


def test_topology_rules_of_kueues_crd() -> None:
    assert "spec.levels[1].nodeLabel" in refused(topology("a/b", "a/b")) and "must be unique" in refused(topology("a/b", "a/b"))
    assert "only be used at the lowest level" in refused(topology("kubernetes.io/hostname", "a/rack"))
    assert "spec.levels: Invalid value" in refused(topology())
    assert "spec.levels[0].nodeLabel" in refused(topology("not a label"))


def test_topology_levels_change_only_with_hosts_lowest() -> None:
    old = parse_object(topology("a/block", "kubernetes.io/hostname"))
    validate_update(old, parse_object(topology("a/block", "a/rack", "kubernetes.io/hostname")))
    with pytest.raises(ValidationError) as exc:
        validate_update(parse_object(topology("a/block", "a/rack")), parse_object(topology("a/block")))
    assert "levels are mutable only when" in str(exc.value)


def node(**status: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"a/rack": "r1"}},
            "spec": {"taints": [{"key": "gpu", "value": "x", "effect": "NoSchedule"}]}, "status": status}


def test_node_is_read_in_kubernetes_shape() -> None:
    obj = parse_object(node(allocatable={"cpu": "4", "memory": "1Gi", "nvidia.com/gpu": "8"},
                            conditions=[{"type": "Ready", "status": "True"}]))
    assert isinstance(obj, Node) and obj.schedulable
    assert obj.allocatable == {"cpu": 4000, "memory": 2**30, "nvidia.com/gpu": 8}
    assert [(t.key, t.value, t.effect) for t in obj.taints] == [("gpu", "x", "NoSchedule")]
    not_ready = parse_object(node(allocatable={"cpu": "4"}, conditions=[{"type": "Ready", "status": "False"}]))
    assert isinstance(not_ready, Node) and not not_ready.schedulable
    no_condition = parse_object(node(capacity={"cpu": "2"}))
    assert isinstance(no_condition, Node) and not no_condition.schedulable and no_condition.allocatable == {"cpu": 2000}


def test_a_bad_node_field_is_named() -> None:
    assert 'Node "n1" is invalid: status.allocatable[cpu]' in refused(node(allocatable={"cpu": "lots"}))
    bad_taint = node()
    bad_taint["spec"]["taints"] = [{"key": "gpu", "effect": "Sometimes"}]
    assert "spec.taints[0].effect" in refused(bad_taint)
