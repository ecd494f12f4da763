"""Concurrent admission in the engine alone (hub.engine.concurrent_admission): variant names as
Kueue makes them, the allowed-flavors annotation in the flavor assigner (only with the gate), the
parent's waitForPodsReady deadline applying instead of its variant's, events on the parent."""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import T0, cq, flavor, local_queue, wl

from hub.api.config import parse_configuration
from hub.api.registry import parse_object
from hub.engine.concurrent_admission import variant_name
from hub.engine.engine import Engine

pytestmark = pytest.mark.timeout(60)

GATE = {"featureGates": {"ConcurrentAdmission": True}}
POLICY = {"migration": {"mode": "TryPreferredFlavors"}}


def queue(policy: dict[str, Any] | None = POLICY) -> dict[str, Any]:
    manifest = cq("q", {"a": {"cpu": 1}, "b": {"cpu": 1}})
    if policy is not None:
        manifest["spec"]["concurrentAdmissionPolicy"] = policy
    return manifest


def engine_with(config: dict[str, Any], *manifests: dict[str, Any]) -> Engine:
    engine = Engine(parse_configuration(config), T0)
    for manifest in (flavor("a"), flavor("b"), *manifests, local_queue("q", "q")):
        engine.apply(parse_object(manifest), T0)
    return engine


def submit(engine: Engine, name: str, now: float = T0, **extra: Any) -> None:
    manifest = wl(name, "q", cpu=1)
    manifest["metadata"]["uid"] = f"uid-{name}"
    manifest["metadata"].update(extra)
    engine.apply(parse_object(manifest), now)


def settle(engine: Engine, now: float = T0) -> None:
    for _ in range(10):
        engine.tick(now)
        engine.schedule(now)
    engine.tick(now)


def cpu_flavor(engine: Engine, key: str) -> str | None:
    admission = engine.workloads[key].status.admission
    return None if admission is None else dict(admission.pod_set_assignments[0].flavors)["cpu"]


def test_variant_names_follow_kueues_rule() -> None:
    name = variant_name("job-sample-job-8c7d2", "7a9a0d5e", "spot")
    assert name.startswith("job-sample-job-variant-spot-") and len(name.rsplit("-", 1)[1]) == 5
    assert name == variant_name("job-sample-job-8c7d2", "7a9a0d5e", "spot")  # deterministic
    assert name != variant_name("job-sample-job-8c7d2", "other-uid", "spot")  # the parent's uid is hashed
    long = variant_name("w" * 300 + "-abcde", "u", "spot")
    assert len(long) == 253 and long[-6] == "-"
    assert variant_name("solo", "u", "spot").startswith("solo-variant-spot-")  # no hash suffix to strip


def test_the_parent_is_held_and_its_variant_admitted_then_copied_onto_it() -> None:
    engine = engine_with(GATE, queue())
    submit(engine, "w")
    settle(engine)
    parent = engine.workloads["team/w"]
    assert parent.meta.labels["kueue.x-k8s.io/concurrent-admission-parent"] == "true"
    variants = sorted(k for k in engine.workloads if k != "team/w")
    assert variants == [f"team/{variant_name('w', 'uid-w', f)}" for f in ("a", "b")]
    assert cpu_flavor(engine, "team/w") == "a" and cpu_flavor(engine, variants[0]) == "a"
    assert engine.usage_of("q")[("a", "cpu")] == 1000  # counted once: the variant's, not the parent's
    _, events = engine.drain()
    recorded = [(e.key, e.reason) for e in events if e.type == "Recorded"]
    assert ("team/w", "CreatedVariant") in recorded and (variants[1], "DeactivatedVariant") in recorded


def test_without_the_gate_the_policy_and_the_annotation_are_ignored() -> None:
    engine = engine_with({}, queue())
    submit(engine, "w", annotations={"kueue.x-k8s.io/workload-allowed-resource-flavors": "b"})
    settle(engine)
    assert list(engine.workloads) == ["team/w"]
    assert cpu_flavor(engine, "team/w") == "a"


def test_with_the_gate_the_annotation_restricts_any_workload_to_its_flavors() -> None:
    engine = engine_with(GATE, queue(None))
    submit(engine, "w", annotations={"kueue.x-k8s.io/workload-allowed-resource-flavors": "b"})
    settle(engine)
    assert cpu_flavor(engine, "team/w") == "b"


def test_the_parents_pods_ready_deadline_applies_not_its_variants() -> None:
    config = {**GATE, "waitForPodsReady": {"enable": True, "timeout": "60s", "blockAdmission": False}}
    engine = engine_with(config, queue())
    submit(engine, "w")
    settle(engine)
    (variant,) = [k for k, v in engine.workloads.items() if v.status.admission is not None and k != "team/w"]
    settle(engine, T0 + 120)  # no pod became ready: Kueue times the parent out, never a variant
    evicted = engine.workloads["team/w"].status.condition("Evicted")
    assert evicted is not None and (evicted.status, evicted.reason) == ("True", "PodsReadyTimeout")
    assert engine.workloads[variant].status.condition("Evicted") is None


def test_the_parents_pods_ready_is_synced_onto_its_admitted_variant() -> None:
    config = {**GATE, "waitForPodsReady": {"enable": True, "timeout": "60s", "blockAdmission": True}}
    engine = engine_with(config, queue())
    submit(engine, "w")
    settle(engine)
    (variant,) = [k for k, v in engine.workloads.items() if v.status.admission is not None and k != "team/w"]
    engine.pods_ready("team/w", True, T0 + 30)
    settle(engine, T0 + 30)
    assert engine.workloads[variant].status.is_true("PodsReady")
    assert engine.all_reserved_pods_ready()  # blockAdmission no longer waits on the variant


def test_the_next_variants_preemption_gate_opens_only_after_kueues_timeout() -> None:
    policy_queue = queue()
    policy_queue["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    engine = engine_with(GATE, policy_queue)
    submit(engine, "low-a")
    submit(engine, "low-b")
    settle(engine)
    high = wl("high", "q", cpu=1, priority=100)
    high["metadata"]["uid"] = "uid-high"
    engine.apply(parse_object(high), T0)
    engine.tick(T0)  # its variants are created
    engine.schedule(T0)  # the preferred variant needs preemption: gated
    engine.schedule(T0)  # so does the other one, before the controller ran
    settle(engine)

    def gate(flavor_name: str) -> str:
        variant = engine.workloads[f"team/{variant_name('high', 'uid-high', flavor_name)}"]
        return next(g.position for g in variant.status.preemption_gates if g.name == "kueue.x-k8s.io/concurrent-admission")

    # The most preferred blocked variant first; its victims have not stopped (no job runner here).
    assert (gate("a"), gate("b")) == ("Open", "Closed")
    assert engine.next_wakeup() == T0 + 300
    settle(engine, T0 + 299)
    assert gate("b") == "Closed"
    settle(engine, T0 + 300)
    assert gate("b") == "Open"


def test_a_pending_parent_is_explained_by_its_variants() -> None:
    no_quota = cq("q", {"a": {"cpu": 0}, "b": {"cpu": 0}})
    no_quota["spec"]["concurrentAdmissionPolicy"] = POLICY
    engine = engine_with(GATE, no_quota)
    submit(engine, "w")
    settle(engine)
    names = ", ".join(sorted(variant_name("w", "uid-w", f) for f in ("a", "b")))
    assert engine.explain("team/w") == f"pending: a concurrent-admission parent, admitted once one of its variants is ({names})"
