"""The scenario checker refuses wrong outcomes: each expectation kind is shown to fail.

Every conformance scenario is run once; at each of its ``expect`` steps (which must pass as
written) the step is mutated into claims that contradict what the scenario itself says
happened (a workload it lists as admitted claimed as pending, a preempted set with one
workload dropped or one added, a usage figure changed, ...). Each mutated step must fail.
A checker that stops looking at a field, or relaxes an exact set to a subset, lets a
mutation through and fails this test, as tests/properties/test_prop_mutations.py does
for the engine's invariants.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hub.api.quantity import resource_value
from hub.sim import runner
from hub.sim.cluster import SimCluster
from hub.sim.expect import ExpectationFailed
from hub.sim.scenario import Step, find_scenarios

SCENARIOS = Path(__file__).resolve().parents[1] / "conformance" / "scenarios"
STATES = ("admitted", "pending", "inadmissible", "reserved", "finished", "absent")
# A workload that is inadmissible is also pending (FORMAT.md): those two claims may hold together.
COMPATIBLE = {("pending", "inadmissible"), ("inadmissible", "pending")}

Mutation = tuple[str, dict[str, Any]]  # (the kind it exercises, the mutated expect value)


def _names(value: Any) -> list[str]:
    return [str(n) for n in (value if isinstance(value, list) else list(value or {}))]


def _with_claim(exp: dict[str, Any], field: str, name: str) -> dict[str, Any]:
    out = copy.deepcopy(exp)
    if field == "admitted":
        out["admitted"] = {**(out.get("admitted") or {}), name: {}}
    else:
        out[field] = [*_names(out.get(field)), name]
    return out


def _state_mutations(exp: dict[str, Any]) -> Iterator[Mutation]:
    for claimed in STATES:
        for name in _names(exp.get(claimed)):
            for other in STATES:
                if other != claimed and (claimed, other) not in COMPATIBLE:
                    yield other, _with_claim(exp, other, name)


def _admission_detail_mutations(exp: dict[str, Any]) -> Iterator[Mutation]:
    for name, detail in (exp.get("admitted") or {}).items():
        for field, wrong in _wrong_details(detail or {}):
            out = copy.deepcopy(exp)
            out["admitted"][name] = {**(detail or {}), field: wrong}
            yield f"admitted.{field}", out


def _wrong_details(detail: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    if "clusterQueue" in detail:
        yield "clusterQueue", str(detail["clusterQueue"]) + "-other"
    for ps, flavors in (detail.get("flavors") or {}).items():
        for res in flavors or {}:
            yield "flavors", {**detail["flavors"], ps: {**flavors, res: "no-such-flavor"}}
    for ps, count in (detail.get("counts") or {}).items():
        yield "counts", {**detail["counts"], ps: count + 1}


def _only_mutations(exp: dict[str, Any]) -> Iterator[Mutation]:
    """With ``only``, leaving one admitted (or reserved) workload out of the list must fail."""
    if not exp.get("only"):
        return
    for name in list(exp.get("admitted") or {}):
        out = copy.deepcopy(exp)
        del out["admitted"][name]
        yield "only.admitted", out
    for name in _names(exp.get("reserved")):
        out = copy.deepcopy(exp)
        out["reserved"] = [n for n in _names(exp["reserved"]) if n != name]
        yield "only.reserved", out


def _exact_set_mutations(exp: dict[str, Any], cluster: SimCluster) -> Iterator[Mutation]:
    """``evicted`` and ``preempted`` are exact sets: one missing or one extra must fail."""
    for field in ("evicted", "preempted"):
        if field not in exp:
            continue
        names = _names(exp[field])
        for name in names:
            yield f"{field}.subset", {**copy.deepcopy(exp), field: [n for n in names if n != name]}
        listed = {cluster.resolve(n) for n in names}
        extra = next((k for k in sorted(cluster.engine.workloads) if k not in listed), "nobody/none")
        yield f"{field}.superset", {**copy.deepcopy(exp), field: [*names, extra]}


def _other_mutations(exp: dict[str, Any], cluster: SimCluster) -> Iterator[Mutation]:
    active = [*(exp.get("admitted") or {}), *_names(exp.get("reserved"))]
    if "deactivated" in exp:
        for name in active[:1]:
            yield "deactivated", _with_claim(exp, "deactivated", name)
    if "rejected" in exp:
        accepted = [k for k in sorted(cluster.engine.workloads) if k not in cluster.rejected]
        yield "rejected", _with_claim(exp, "rejected", (accepted or ["nobody/none"])[0])
    for name, checks in (exp.get("checks") or {}).items():
        for check, state in checks.items():
            out = copy.deepcopy(exp)
            out["checks"][name][check] = "Pending" if state != "Pending" else "Ready"
            yield "checks", out
    for name, conds in (exp.get("conditions") or {}).items():
        for ctype, want in conds.items():
            for key, value in (want or {}).items():
                out = copy.deepcopy(exp)
                wrong = {"True": "False", "False": "True"}.get(str(value), f"{value}-other")
                out["conditions"][name][ctype][key] = wrong
                yield "conditions", out
    for cq, share in (exp.get("weightedShare") or {}).items():
        out = copy.deepcopy(exp)
        out["weightedShare"][cq] = share + 1
        yield "weightedShare", out
    for name in exp.get("dispatched") or {}:
        out = copy.deepcopy(exp)
        out["dispatched"][name] = "no-such-worker"
        yield "dispatched", out
    for cq, flavors in (exp.get("usage") or {}).items():
        for flavor, resources in (flavors or {}).items():
            for res, qty in (resources or {}).items():
                out = copy.deepcopy(exp)
                out["usage"][cq][flavor][res] = "0" if resource_value(str(res), qty) else "1"
                yield "usage", out


def mutations(exp: dict[str, Any], cluster: SimCluster) -> Iterator[Mutation]:
    yield from _state_mutations(exp)
    yield from _admission_detail_mutations(exp)
    yield from _only_mutations(exp)
    yield from _exact_set_mutations(exp, cluster)
    yield from _other_mutations(exp, cluster)


def run_mutated(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], set[str]]:
    """Run a scenario; return the mutations that passed (should be none) and the kinds tried."""
    real: Callable[[SimCluster, Step], None] = runner.check_expectations
    survivors: list[str] = []
    kinds: set[str] = set()

    def checking(cluster: SimCluster, step: Step) -> None:
        real(cluster, step)  # as written, the step holds
        for kind, value in mutations(step.value, cluster):
            kinds.add(kind)
            try:
                real(cluster, Step(step.index, "expect", value, step.cluster))
            except ExpectationFailed:
                continue
            survivors.append(f"step {step.index} ({kind}): {value}")

    monkeypatch.setattr(runner, "check_expectations", checking)
    name, ok, why, _ = runner.run_file(path)
    assert ok, f"{name}: {why}"
    return survivors, kinds


FILES = find_scenarios([str(SCENARIOS)])


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_wrong_claim_fails(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    survivors, _ = run_mutated(path, monkeypatch)
    assert not survivors, "the checker accepted claims that contradict the outcome:\n" + "\n".join(survivors)


def test_every_expectation_kind_is_mutated_somewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """The corpus reaches every kind, so each test above stands for one in FORMAT.md."""
    tried: set[str] = set()
    for path in FILES:
        tried |= run_mutated(path, monkeypatch)[1]
    wanted = {
        *STATES, "admitted.clusterQueue", "admitted.flavors", "admitted.counts", "only.admitted", "only.reserved",
        "evicted.subset", "evicted.superset", "preempted.subset", "preempted.superset", "deactivated", "rejected",
        "checks", "conditions", "weightedShare", "dispatched", "usage",
    }
    assert wanted <= tried, f"no scenario exercises {sorted(wanted - tried)}"


def test_a_rejection_that_names_no_field_fails_the_rejected_expectation() -> None:
    """FORMAT.md: a rejected create must have been refused with a message naming the field."""
    from hub.api.config import Configuration
    from hub.sim.expect import check_expectations

    cluster = SimCluster("manager", Configuration(), 0.0)
    cluster.rejected["team/vague"] = "refused"
    cluster.rejected["team/precise"] = "spec.queueName: Invalid value: must be a DNS label"
    check_expectations(cluster, Step(1, "expect", {"rejected": ["team/precise"]}))
    with pytest.raises(ExpectationFailed, match="rejected without naming a field"):
        check_expectations(cluster, Step(1, "expect", {"rejected": ["team/vague"]}))
