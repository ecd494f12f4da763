"""``mkhub simulate``: run conformance scenarios against the real engine."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hub.api.config import parse_configuration
from hub.api.errors import ValidationError
from hub.api.jobkinds import JOB_KINDS, owner_managed
from hub.api.jobkinds.pod import default_at_creation, manages_pod, read_pod
from hub.api.meta import parse_time
from hub.api.registry import KINDS, object_ref, parse_object, validate_update
from hub.store.interface import ObjectKey

from .cluster import SimCluster
from .expect import ExpectationFailed, check_expectations, workload_state
from .scenario import NotSupported, Scenario, ScenarioError, Step, find_scenarios, load_scenario

START = parse_time("2025-01-01T00:00:00Z")


class ScenarioRun:
    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        try:
            self.config = parse_configuration(scenario.config)
        except ValidationError as exc:
            raise ScenarioError(scenario.path, "config", str(exc)) from exc
        self.now = START
        self.last_stamp: float | None = None
        self.manager = SimCluster("manager", self.config, self.now)
        self.workers: dict[str, SimCluster] = {
            name: SimCluster(name, self.config, self.now) for name in scenario.clusters
        }
        self.federation: Any = None
        if scenario.clusters:
            self.federation = self._make_federation()

    def _make_federation(self) -> Any:
        # Imported only here: single-cluster scenarios need neither the agent nor the generated protocol
        # code. A failed import is a broken install, not a missing feature: its own error goes through.
        from .federation import SimFederation

        return SimFederation(self.manager, self.workers, self.config)

    def cluster(self, name: str | None) -> SimCluster:
        return self.manager if name is None else self.workers[name]

    def _stamp(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Creation order is file order: one second apart, unless the manifest says otherwise."""
        meta = manifest.setdefault("metadata", {})
        if meta.get("creationTimestamp"):
            return manifest
        stamp = self.now if self.last_stamp is None else max(self.now, self.last_stamp + 1.0)
        self.last_stamp = stamp
        self.now = stamp
        from hub.api.meta import format_time

        meta["creationTimestamp"] = format_time(stamp)
        return manifest

    def _uid(self, cluster: SimCluster, manifest: dict[str, Any]) -> None:
        meta = manifest.setdefault("metadata", {})
        if not meta.get("uid"):
            kind, ns, name = object_ref(manifest)
            meta["uid"] = f"uid-{cluster.name}-{kind.lower()}-{ns}-{name}"

    def create(self, cluster: SimCluster, manifests: list[dict[str, Any]]) -> None:
        for raw in manifests:
            manifest = self._stamp(json.loads(json.dumps(raw, default=str)))
            self._uid(cluster, manifest)
            kind, ns, name = object_ref(manifest)
            ref = f"{ns}/{name}" if ns else name
            try:
                if kind == "Pod":
                    manifest = self._pod_webhook(cluster, manifest)
                obj = parse_object(manifest, partial_admission=self.config.gate("PartialAdmission"))
            except ValidationError as exc:
                cluster.rejected[ref] = str(exc)
                continue
            cluster.controller.apply(obj, self.now)

    def _pod_webhook(self, cluster: SimCluster, manifest: dict[str, Any]) -> dict[str, Any]:
        """Kueue's pod webhook at creation: a Pod it manages is gated and marked (hub.api.jobkinds.pod)."""
        pod = read_pod(manifest)
        labels = cluster.engine.namespaces.get(pod.meta.namespace)
        if not manages_pod(self.config, pod, labels, owner_managed(self.config, pod.meta.owner_references)):
            return manifest
        return default_at_creation(manifest)

    def update(self, cluster: SimCluster, manifests: list[dict[str, Any]]) -> None:
        for raw in manifests:
            manifest = json.loads(json.dumps(raw, default=str))
            kind, ns, name = object_ref(manifest)
            ref = f"{ns}/{name}" if ns else name
            old = self._current(cluster, kind, ref)
            if old is None:
                cluster.rejected[ref] = f'{kind} "{ref}" not found'
                continue
            meta = manifest.setdefault("metadata", {})
            meta.setdefault("creationTimestamp", None)
            if old.meta.creation_timestamp is not None:
                from hub.api.meta import format_time

                meta["creationTimestamp"] = format_time(old.meta.creation_timestamp)
            meta.setdefault("uid", old.meta.uid)
            try:
                new = parse_object(manifest, partial_admission=self.config.gate("PartialAdmission"))
                if hasattr(old, "status") and hasattr(new, "status") and "status" not in raw:
                    new.status = old.status
                validate_update(old, new)
            except ValidationError as exc:
                cluster.rejected[ref] = str(exc)
                continue
            cluster.controller.apply(new, self.now)

    def _current(self, cluster: SimCluster, kind: str, ref: str) -> Any:
        engine = cluster.engine
        table: dict[str, Any] = {
            "ClusterQueue": engine.cqs,
            "Cohort": engine.cohorts,
            "LocalQueue": engine.local_queues,
            "ResourceFlavor": engine.flavors,
            "Workload": engine.workloads,
            "WorkloadPriorityClass": engine.priority_classes,
            "AdmissionCheck": engine.admission_checks,
            "MultiKueueConfig": engine.mk_configs,
            "MultiKueueCluster": engine.mk_clusters,
            "Node": engine.tas.nodes,
            "Topology": engine.tas.topologies,
        }
        if kind == "ClusterQueue":
            state = engine.cqs.get(ref)
            return state.spec if state is not None else None
        if kind == "Namespace":
            from hub.api.meta import ObjectMeta
            from hub.api.others import Namespace

            labels = engine.namespaces.get(ref)
            return Namespace(ObjectMeta(ref, labels=labels or {})) if labels is not None else None
        if kind in JOB_KINDS:
            namespace, _, name = ref.rpartition("/")
            return cluster.controller.jobs.jobs.get(ObjectKey(kind, namespace, name))
        return table.get(kind, {}).get(ref)

    def run_step(self, step: Step) -> None:
        cluster = self.cluster(step.cluster)
        kind, value = step.kind, step.value
        if kind == "create":
            self.create(cluster, value)
        elif kind == "update":
            self.update(cluster, value)
        elif kind == "delete":
            for ref in value:
                parts = ref.split("/")
                if len(parts) == 3:
                    k, ns, name = parts
                elif len(parts) == 2:
                    k, ns, name = parts[0], "", parts[1]
                else:
                    raise ScenarioError(self.scenario.path, f"steps[{step.index}].delete", f"bad reference {ref!r}")
                info = KINDS.get(k)
                if info is None:
                    raise ScenarioError(self.scenario.path, f"steps[{step.index}].delete", f"unknown kind {k!r}")
                cluster.controller.delete(k, ns, name, self.now)
        elif kind in ("finish", "fail"):
            for ref in value:
                key = cluster.resolve(ref)
                cluster.engine.finish(key, kind == "finish", now=self.now)
        elif kind == "podsReady":
            for ref in value:
                cluster.engine.pods_ready(cluster.resolve(ref), True, self.now)
        elif kind == "advance":
            from hub.api.config import parse_duration

            self.now += parse_duration(value)
        elif kind == "schedule":
            cycles = (value or {}).get("cycles")
            self._schedule(cycles)
        elif kind == "checkState":
            for ref, checks in value.items():
                key = cluster.resolve(ref)
                states = {str(check): (str(state), "", None) for check, state in checks.items()}
                cluster.engine.set_check_states(key, states, now=self.now)
        elif kind in ("disconnect", "reconnect"):
            if self.federation is None:
                raise NotSupported(f"{kind}: MultiKueue is not supported yet")
            getattr(self.federation, kind)(value, self.now)
        # Controllers react to what a step did before anything else happens.
        for c in [self.manager, *self.workers.values()]:
            c.controller.react(self.now)
            c.collect_events()

    def _schedule(self, cycles: int | None) -> None:
        if self.federation is not None:
            self.federation.settle(self.now, cycles)
        else:
            self.manager.controller.settle(self.now, cycles)
        for c in [self.manager, *self.workers.values()]:
            c.collect_events()

    def run(self) -> None:
        self.create(self.manager, self.scenario.objects)
        for name, objects in self.scenario.clusters.items():
            self.create(self.workers[name], objects)
        if self.federation is not None:
            self.federation.start(self.now)  # agents connect once their MultiKueueClusters exist
        for c in [self.manager, *self.workers.values()]:
            c.controller.react(self.now)
            c.collect_events()
        for step in self.scenario.steps:
            if step.kind == "expect":
                target = self.cluster(step.cluster)
                check_expectations(target, step)
                target.evicted_since.clear()
                target.preempted_since.clear()
                target.rejected.clear()
                continue
            self.run_step(step)


def run_file(path: Path) -> tuple[str, bool, str, ScenarioRun | None]:
    scenario = load_scenario(path)
    try:
        run = ScenarioRun(scenario)
        run.run()
    except ExpectationFailed as exc:
        return scenario.name, False, str(exc), None
    except NotSupported as exc:
        return scenario.name, False, f"not supported yet: {exc}", None
    return scenario.name, True, "", run


def main(paths: list[str], as_json: bool = False, out: Any = None) -> int:
    out = out or sys.stdout
    files = find_scenarios(paths)
    if not files:
        print(f"error: no scenario files found in {', '.join(paths)}", file=sys.stderr)
        return 2
    passed = failed = 0
    results: list[dict[str, Any]] = []
    for path in files:
        try:
            name, ok, why, run = run_file(path)
        except ScenarioError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if as_json:
            results.append({"scenario": name, "passed": ok, "failure": why or None, "workloads": _final_state(path)})
        else:
            print(f"PASS {name}" if ok else f"FAIL {name}: {why}", file=out)
        passed += ok
        failed += not ok
    if as_json:
        print(json.dumps(results, indent=2, sort_keys=True), file=out)
    print(f"{passed} passed, {failed} failed", file=out if not as_json else sys.stderr)
    return 0 if failed == 0 else 1


def _final_state(path: Path) -> dict[str, Any]:
    """Re-run a scenario ignoring expectations and report every workload's final state."""
    scenario = load_scenario(path)
    scenario.steps = [s for s in scenario.steps if s.kind != "expect"]
    try:
        run = ScenarioRun(scenario)
        run.run()
    except NotSupported as exc:
        return {"error": f"not supported yet: {exc}"}
    clusters = {"manager": run.manager, **run.workers}
    return {
        name: {key: workload_state(c, key) for key in sorted(c.engine.workloads)}
        for name, c in clusters.items()
    }
