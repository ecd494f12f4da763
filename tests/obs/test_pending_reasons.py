"""Every pending workload says why it waits: Kueue's QuotaReserved=False reason and a message naming
the pod set, resource, flavor and shortfall, or what blocks borrowing; equivalent workloads parked
behind one that was evaluated carry its reason and name."""

from __future__ import annotations

import copy
from typing import Any

from hub.api.config import Configuration
from hub.api.registry import parse_object
from hub.api.workload import QUOTA_RESERVED
from hub.controllers.cluster import ClusterController
from hub.controllers.simrunner import SimRunner
from hub.engine.engine import Engine
from tests.controllers.hub_objects import T0, flavor, local_queue, namespace, workload


def cq(name: str, cpu: int | str, *, cohort: str = "", borrowing: int | None = None, lending: int | None = None,
       stop: str = "", resource: str = "cpu", flavor_name: str = "default") -> dict[str, Any]:
    quota: dict[str, Any] = {"name": resource, "nominalQuota": cpu}
    if borrowing is not None:
        quota["borrowingLimit"] = borrowing
    if lending is not None:
        quota["lendingLimit"] = lending
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": [resource], "flavors": [{"name": flavor_name, "resources": [quota]}]}],
    }
    if cohort:
        spec["cohort"] = cohort
    if stop:
        spec["stopPolicy"] = stop
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def wl(name: str, cpu: int | str = 1, lq: str = "lq", resource: str = "cpu", **pod: Any) -> dict[str, Any]:
    manifest = copy.deepcopy(workload(name, duration="1h", queueName=lq))  # its pod template is shared
    container = manifest["spec"]["podSets"][0]["template"]["spec"]["containers"][0]
    container["resources"] = {"requests": {resource: str(cpu)}}
    manifest["spec"]["podSets"][0]["template"]["spec"].update(pod)
    return manifest


def run(*manifests: dict[str, Any]) -> Engine:
    engine = Engine(Configuration(), T0)
    controller = ClusterController(engine, SimRunner(lambda w: None, default_duration=3600.0, ready_delay=0.0))
    for i, manifest in enumerate(manifests):
        controller.apply(parse_object(manifest), T0 + i * 0.001)
        controller.settle(T0 + i * 0.001)
    controller.settle(T0 + 1)
    return engine


def why(engine: Engine, name: str) -> tuple[str, str]:
    cond = engine.workloads[f"team/{name}"].status.condition(QUOTA_RESERVED)
    assert cond is not None and not cond.is_true, f"{name} is not pending"
    return cond.reason, cond.message


BASE = (namespace(), flavor())


def test_insufficient_quota() -> None:
    engine = run(*BASE, cq("cq", 2), local_queue(), wl("big", 2), wl("w", 2))
    reason, message = why(engine, "w")
    assert reason == "WaitingForQuota"
    assert "pod set main" in message and "for cpu in flavor default" in message
    assert "2 more needed (2 requested, 0 available in cq)" in message


def test_borrowing_limit() -> None:
    engine = run(
        *BASE, cq("cq-a", 2, cohort="pool", borrowing=1), cq("cq-b", 4, cohort="pool"), local_queue("lq", cq="cq-a"),
        wl("first", 2), wl("w", 2),
    )
    reason, message = why(engine, "w")
    assert reason == "WaitingForQuota"
    assert "for cpu in flavor default, 1 more needed (2 requested, 1 available in cq-a and its cohort)" in message
    assert "borrowing limited by borrowingLimit 1 of ClusterQueue cq-a (0 borrowed)" in message


def test_lending_limit() -> None:
    engine = run(
        *BASE, cq("cq-a", 2, cohort="pool"), cq("cq-b", 4, cohort="pool", lending=1), local_queue("lq", cq="cq-a"),
        wl("first", 2), wl("w", 2),
    )
    reason, message = why(engine, "w")
    assert reason == "WaitingForQuota"
    assert "for cpu in flavor default, 1 more needed (2 requested, 1 available in cq-a and its cohort)" in message
    assert "unused but not lent: 3 in ClusterQueue cq-b (lendingLimit 1)" in message


def test_no_matching_flavor_for_a_node_selector() -> None:
    zoned = {**flavor(), "spec": {"nodeLabels": {"zone": "a"}}}
    engine = run(namespace(), zoned, cq("cq", 4), local_queue(), wl("w", 1, nodeSelector={"zone": "b"}))
    reason, message = why(engine, "w")
    assert reason == "NoMatchingFlavor"
    assert message == (
        "couldn't assign flavors to pod set main: flavor default doesn't match node affinity: "
        "nodeSelector zone=b (flavor has zone=a)"
    )


def test_exceeds_max_quota() -> None:
    engine = run(*BASE, cq("cq", 2), local_queue(), wl("w", 3))
    reason, message = why(engine, "w")
    assert reason == "ExceedsMaxQuota"
    assert "pod set main" in message and "for cpu in flavor default" in message
    assert "> maximum capacity (2): 1 more than ClusterQueue cq can ever get" in message


def test_missing_local_queue() -> None:
    engine = run(*BASE, cq("cq", 2), local_queue(), wl("w", 1, lq="nope"))
    reason, message = why(engine, "w")
    assert reason == "Misconfigured"
    assert message == "LocalQueue nope doesn't exist"


def test_stopped_queue() -> None:
    engine = run(*BASE, cq("cq", 2, stop="Hold"), local_queue(), wl("w", 1))
    reason, message = why(engine, "w")
    assert reason == "Suspended"
    assert message == "ClusterQueue cq is inactive: ClusterQueue is stopped"


def test_six_equivalent_workloads_each_state_a_reason() -> None:
    gpu = {"resource": "nvidia.com/gpu"}
    jobs = [wl(f"job-{i}", 4, **gpu) for i in range(7)]
    engine = run(*BASE, cq("team-a-cq", 4, **gpu), local_queue(cq="team-a-cq"), *jobs)
    assert engine.workloads["team/job-0"].is_admitted
    reasons = {f"job-{i}": why(engine, f"job-{i}") for i in range(1, 7)}
    shortfall = "for nvidia.com/gpu in flavor default, 4 more needed (4 requested, 0 available in team-a-cq)"
    evaluated = [name for name, (_, message) in reasons.items() if not message.startswith("Same as")]
    assert len(evaluated) >= 1
    for name, (reason, message) in reasons.items():
        assert reason == "WaitingForQuota", (name, reason)
        assert shortfall in message, (name, message)
        assert "pod set main" in message
        if name not in evaluated:
            # Not re-evaluated: the reason of the equivalent workload that was, and its name.
            assert any(message.startswith(f"Same as equivalent workload team/{head}, ") for head in evaluated), message
