"""Checking a scenario's ``expect`` steps against the simulated clusters."""

from __future__ import annotations

from typing import Any

from hub.api.quantity import QuantityError, format_quantity, resource_value
from hub.api.workload import Workload

from .cluster import SimCluster
from .scenario import NotSupported, Step


class ExpectationFailed(Exception):
    pass


def state_of(cluster: SimCluster, key: str) -> str:
    wl = cluster.engine.workloads.get(key)
    if wl is None:
        return "absent"
    if wl.is_finished:
        return "finished"
    if wl.is_quota_reserved:
        return "admitted" if wl.is_admitted else "reserved"
    if cluster.engine.is_inadmissible(key):
        return "inadmissible"
    return "pending"


def workload_state(cluster: SimCluster, key: str) -> dict[str, Any]:
    wl = cluster.engine.workloads[key]
    out: dict[str, Any] = {"state": state_of(cluster, key), "active": wl.active}
    adm = wl.status.admission
    if adm is not None:
        out["clusterQueue"] = adm.cluster_queue
        out["flavors"] = {psa.name: dict(psa.flavors) for psa in adm.pod_set_assignments}
        out["counts"] = {psa.name: psa.count for psa in adm.pod_set_assignments}
        placed = topology_of(wl)
        if placed:
            out["topology"] = placed
    out["conditions"] = {
        c.type: {"status": c.status, "reason": c.reason, "message": c.message} for c in wl.status.conditions
    }
    if wl.status.admission_checks:
        out["checks"] = {c.name: c.state for c in wl.status.admission_checks}
    if wl.status.cluster_name:
        out["clusterName"] = wl.status.cluster_name
    out["why"] = cluster.engine.explain(key)
    return out


def topology_of(wl: Workload) -> dict[str, dict[str, int]]:
    """Per pod set, each assigned domain (its values joined by "/") and its pod count."""
    adm = wl.status.admission
    out: dict[str, dict[str, int]] = {}
    for psa in adm.pod_set_assignments if adm is not None else ():
        if psa.topology_assignment is not None:
            out[psa.name] = {"/".join(values): count for values, count in psa.topology_assignment.domains}
    return out


def _why(cluster: SimCluster, key: str) -> str:
    return cluster.engine.explain(key)


def _keys(cluster: SimCluster, names: Any) -> list[tuple[str, str]]:
    if not isinstance(names, list):
        names = list(names or {})
    return [(str(n), cluster.resolve(str(n))) for n in names]


def check_expectations(cluster: SimCluster, step: Step) -> None:
    exp: dict[str, Any] = step.value
    problems: list[str] = []
    engine = cluster.engine
    where = f" in {cluster.name}" if step.cluster else ""

    def wl(key: str) -> Workload | None:
        return engine.workloads.get(key)

    admitted = exp.get("admitted")
    if admitted is not None:
        for name, detail in (admitted or {}).items():
            key = cluster.resolve(name)
            w = wl(key)
            state = state_of(cluster, key)
            if state != "admitted" or w is None:
                problems.append(f"{name} should be admitted{where}, but is {state}: {_why(cluster, key)}")
                continue
            detail = detail or {}
            adm = w.status.admission
            assert adm is not None
            if "clusterQueue" in detail and adm.cluster_queue != detail["clusterQueue"]:
                problems.append(f"{name} should be admitted in {detail['clusterQueue']}, but is in {adm.cluster_queue}")
            got_flavors = {psa.name: dict(psa.flavors) for psa in adm.pod_set_assignments}
            for ps, want in (detail.get("flavors") or {}).items():
                have = got_flavors.get(ps, {})
                want = {str(k): str(v) for k, v in (want or {}).items()}
                if have != want:
                    problems.append(f"{name} pod set {ps} should get flavors {want}, but got {have}")
            got_counts = {psa.name: psa.count for psa in adm.pod_set_assignments}
            for ps, want in (detail.get("counts") or {}).items():
                if got_counts.get(ps) != want:
                    problems.append(f"{name} pod set {ps} should be admitted with {want} pods, but got {got_counts.get(ps)}")
        if exp.get("only"):
            wanted = {cluster.resolve(n) for n in admitted or {}}
            extra = sorted(k for k in engine.workloads if state_of(cluster, k) == "admitted" and k not in wanted)
            for key in extra:
                problems.append(f"{key} is admitted{where} but the expectation lists only {sorted(wanted) or 'none'}")

    simple = {
        "pending": ("pending", "inadmissible"),
        "inadmissible": ("inadmissible",),
        "reserved": ("reserved",),
        "finished": ("finished",),
        "absent": ("absent",),
    }
    for field, allowed in simple.items():
        names = exp.get(field)
        if names is None:
            continue
        for name, key in _keys(cluster, names):
            state = state_of(cluster, key)
            if field == "absent" and state == "absent" and cluster.controller.jobs.find(name) is not None:
                problems.append(f"{name} should be absent{where}, but its job exists")
            elif state not in allowed:
                problems.append(f"{name} should be {field}{where}, but is {state}: {_why(cluster, key)}")
        if field == "reserved" and exp.get("only"):
            wanted = {k for _, k in _keys(cluster, names)}
            for key in sorted(engine.workloads):
                if state_of(cluster, key) == "reserved" and key not in wanted:
                    problems.append(f"{key} holds a reservation{where} but is not listed as reserved")

    deactivated = exp.get("deactivated")
    if deactivated is not None:
        for name, key in _keys(cluster, deactivated):
            w = wl(key)
            if w is None or w.active:
                problems.append(f"{name} should be deactivated (spec.active=false){where}, but is active")

    for field, seen in (("evicted", cluster.evicted_since), ("preempted", cluster.preempted_since)):
        names = exp.get(field)
        if names is None:
            continue
        wanted = {k for _, k in _keys(cluster, names)}
        got = set(seen)
        if wanted != got:
            problems.append(f"{field} since the previous expect step should be {sorted(wanted)}, but was {sorted(got)}")

    rejected = exp.get("rejected")
    if rejected is not None:
        for name in rejected:
            message = cluster.rejected.get(str(name))
            if message is None:
                problems.append(f"{name} should have been rejected by validation{where}, but was accepted")
            elif ": " not in message:
                problems.append(f"{name} was rejected without naming a field: {message}")

    for name, checks in (exp.get("checks") or {}).items():
        key = cluster.resolve(name)
        w = wl(key)
        have = {c.name: c.state for c in w.status.admission_checks} if w else {}
        for check, state in checks.items():
            if have.get(check) != state:
                problems.append(f"{name} check {check} should be {state}, but is {have.get(check, 'absent')}")

    for name, conds in (exp.get("conditions") or {}).items():
        key = cluster.resolve(name)
        w = wl(key)
        for ctype, want in conds.items():
            cond = w.status.condition(ctype) if w else None
            if cond is None:
                problems.append(f"{name} should have condition {ctype} {want}, but has none")
                continue
            have = {"status": cond.status, "reason": cond.reason, "message": cond.message}
            for k, v in (want or {}).items():
                if str(have.get(k)) != str(v):
                    problems.append(f"{name} condition {ctype}.{k} should be {v!r}, but is {have.get(k)!r} ({cond.message})")

    for name, want in (exp.get("topology") or {}).items():
        w = wl(cluster.resolve(name))
        got = topology_of(w) if w is not None else {}
        if got != want:
            problems.append(f"{name} topology assignment should be {want}, but is {got or 'none'}")

    shares = exp.get("weightedShare")
    if shares is not None:
        for cq, want in shares.items():
            got = engine.weighted_share(str(cq)) if hasattr(engine, "weighted_share") else None
            if got is None:
                raise NotSupported("weightedShare expectations need fair sharing")
            if got != want:
                problems.append(f"ClusterQueue {cq} weightedShare should be {want}, but is {got}")

    for name, worker in (exp.get("dispatched") or {}).items():
        key = cluster.resolve(name)
        w = wl(key)
        got = w.status.cluster_name if w else None
        if got != worker:
            problems.append(f"{name} should run in {worker}, but clusterName is {got or 'unset'}")

    for cq, flavors in (exp.get("usage") or {}).items():
        usage = engine.usage_of(str(cq))
        for flavor, resources in (flavors or {}).items():
            for res, qty in (resources or {}).items():
                try:
                    want = resource_value(str(res), qty)
                except QuantityError as exc:
                    problems.append(f"usage {cq}/{flavor}/{res}: {exc}")
                    continue
                got = usage.get((str(flavor), str(res)), 0)
                if got != want:
                    problems.append(
                        f"ClusterQueue {cq} should use {format_quantity(str(res), want)} {res} of {flavor}, "
                        f"but uses {format_quantity(str(res), got)}"
                    )

    if problems:
        raise ExpectationFailed(f"step {step.index}: " + "; ".join(problems))
