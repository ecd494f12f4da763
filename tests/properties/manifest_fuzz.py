"""Manifest fuzzing: valid manifests of every kind, and mutations of them, through the real applier.

Every case must end one of two ways: accepted, stored, and read back from the
store as the same object (a round trip); or refused with an error that names
the object and a field path. Anything else (an exception, a refusal naming no
field) is a failure. ``test_prop_manifests.py`` runs a bounded, seeded number
of cases in ``make test``; ``make fuzz`` runs this file as a script for a long
run and prints the counts.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
import traceback
from collections import Counter
from dataclasses import fields, is_dataclass, replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub.api.others import Job
from hub.api.registry import parse_object
from hub.service.apply import Applier, ensure_namespace
from hub.store import SQLiteStore

Q = "kueue.x-k8s.io/v1beta1"
Q2 = "kueue.x-k8s.io/v1beta2"
_CONTAINERS = [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]

BASES: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b", "labels": {"team": "b"}}},
    {"apiVersion": Q, "kind": "ResourceFlavor", "metadata": {"name": "flavor-a"},
     "spec": {"nodeLabels": {"pool": "a"}, "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]}},
    {"apiVersion": Q, "kind": "ClusterQueue", "metadata": {"name": "cq-x", "labels": {"tier": "gold"}},
     "spec": {"cohort": "co-1", "namespaceSelector": {"matchLabels": {"team": "b"},
              "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}]},
              "queueingStrategy": "BestEffortFIFO",
              "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
              "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                  {"name": "flavor-a", "resources": [{"name": "cpu", "nominalQuota": "8", "borrowingLimit": "2"},
                                                     {"name": "memory", "nominalQuota": "16Gi"}]}]}]}},
    {"apiVersion": Q2, "kind": "Cohort", "metadata": {"name": "co-1"},
     "spec": {"parentName": "root", "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
         {"name": "flavor-a", "resources": [{"name": "cpu", "nominalQuota": 4}]}]}]}},
    {"apiVersion": Q, "kind": "LocalQueue", "metadata": {"name": "lq-x", "namespace": "default"},
     "spec": {"clusterQueue": "cq"}},
    {"apiVersion": Q, "kind": "Workload", "metadata": {"name": "wl-x", "namespace": "default", "labels": {"a": "b"}},
     "spec": {"queueName": "user-queue", "priority": 10, "podSets": [
         {"name": "main", "count": 2, "minCount": 1, "template": {"spec": {"containers": _CONTAINERS}}}]}},
    {"apiVersion": Q, "kind": "WorkloadPriorityClass", "metadata": {"name": "high"}, "value": 1000, "description": "d"},
    {"apiVersion": Q, "kind": "AdmissionCheck", "metadata": {"name": "ac-x"},
     "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
              "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "mk"}}},
    {"apiVersion": Q, "kind": "MultiKueueConfig", "metadata": {"name": "mk"}, "spec": {"clusters": ["w1", "w2"]}},
    {"apiVersion": Q, "kind": "MultiKueueCluster", "metadata": {"name": "w1"},
     "spec": {"kubeConfig": {"locationType": "Secret", "location": "w1-secret"}}},
    {"apiVersion": "batch/v1", "kind": "Job",
     "metadata": {"name": "job-x", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                  "annotations": {"mkhub.dev/sim-duration": "1s", "note": "x"}},
     "spec": {"parallelism": 3, "completions": 6, "completionMode": "Indexed",
              "template": {"spec": {"restartPolicy": "Never", "containers": _CONTAINERS}}}},
    {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
     "metadata": {"name": "js-x", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
     "spec": {"suspend": True, "managedBy": "kueue.x-k8s.io/multikueue",
              "successPolicy": {"operator": "Any", "targetReplicatedJobs": ["workers"]},
              "failurePolicy": {"maxRestarts": 2, "rules": [{"name": "r", "action": "FailJobSet",
                                                            "onJobFailureReasons": ["PodFailurePolicy"]}]},
              "replicatedJobs": [
                  {"name": "leader", "template": {"spec": {"template": {"spec": {"containers": _CONTAINERS}}}}},
                  {"name": "workers", "replicas": 2, "template": {"spec": {"parallelism": 2, "completions": 4,
                   "template": {"spec": {"containers": _CONTAINERS}}}}}]}},
    {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
     "metadata": {"name": "lws-x", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
     "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 3, "subGroupPolicy": {"subGroupSize": 3},
              "leaderTemplate": {"spec": {"containers": _CONTAINERS}}, "workerTemplate": {"spec": {"containers": _CONTAINERS}}},
              "rolloutStrategy": {"rollingUpdateConfiguration": {"maxUnavailable": "50%", "maxSurge": 1}}}},
    {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
     "metadata": {"name": "mpi-x", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
     "spec": {"slotsPerWorker": 1, "runPolicy": {"cleanPodPolicy": "Running", "suspend": True},
              "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": {"spec": {"containers": _CONTAINERS}}},
                                  "Worker": {"replicas": 2, "template": {"spec": {"containers": _CONTAINERS}}}}}},
    {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime", "metadata": {"name": "rt-x"},
     "spec": {"mlPolicy": {"numNodes": 2}, "template": {"spec": {"replicatedJobs": [
         {"name": "node", "template": {"spec": {"template": {"spec": {"containers": _CONTAINERS}}}}}]}}}},
    {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
     "metadata": {"name": "tj-x", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
     "spec": {"runtimeRef": {"name": "rt-x"}, "trainer": {"numNodes": 2, "resourcesPerNode": {"requests": {"cpu": "1"}}},
              "suspend": True}},
    # Topology-aware scheduling's inputs (hub.api.tas_kinds).
    {"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Topology", "metadata": {"name": "topo-x"},
     "spec": {"levels": [{"nodeLabel": "example.com/rack"}, {"nodeLabel": "kubernetes.io/hostname"}]}},
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-x", "labels": {"example.com/rack": "r1"}},
     "spec": {"taints": [{"key": "gpu", "value": "x", "effect": "NoSchedule"}], "unschedulable": False},
     "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}, "conditions": [{"type": "Ready", "status": "True"}]}},
]

# The objects the cases refer to; they exist before every case.
SETUP = f"""
apiVersion: {Q}
kind: ResourceFlavor
metadata: {{name: default-flavor}}
---
apiVersion: {Q}
kind: ClusterQueue
metadata: {{name: cq}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources: [{{name: cpu, nominalQuota: 8}}, {{name: memory, nominalQuota: 32Gi}}]
---
apiVersion: {Q}
kind: LocalQueue
metadata: {{name: user-queue, namespace: default}}
spec: {{clusterQueue: cq}}
"""

# Refusals name the object and a field path, or say where parsing failed; a field the kind does
# not know is named as kube-apiserver's strict field validation names it.
FIELD_PATH = re.compile(r'^(.+? ".*" is invalid: (<root>|[A-Za-z][\w.\-/]*(\[[^\]]*\][\w.\-/]*)*): |error parsing |'
                        r'.+? ".*": strict decoding error: unknown field ".*")')

_NAMEISH = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-.", min_size=0, max_size=70) | st.sampled_from(
    ["a" * 63, "a" * 64, "a" * 253, "a" * 254, "-x", "x-", "UPPER", "bad key!", "a/b", "a/b/c", "example.com/x", "é"]
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**31 - 1, 2**31, 2**63, -(2**63) - 1, 2**64]),
    st.floats(allow_nan=False, allow_infinity=False),
    _NAMEISH,
    st.sampled_from(["-100", "1e3", "1Ki", "0.5", "100m", "-1Gi", "3", "true", "2025-01-01T00:00:00Z", "", " "]),
    st.text(max_size=20),
)


def _values(depth: int = 3) -> st.SearchStrategy[Any]:
    return st.recursive(
        _SCALARS,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8) | _NAMEISH, inner, max_size=4),
        max_leaves=depth * 4,
    )


def _deep(levels: int, as_list: bool) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value] if as_list else {"a": value}
    return value


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _set(root: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = root
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return root


def _delete(root: Any, path: tuple[Any, ...]) -> Any:
    if not path:
        return root
    parent = root
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    return root


@st.composite
def manifests(draw: st.DrawFn) -> Any:
    """A valid base manifest, then up to three mutations (most cases mutate; some stay valid)."""
    m: Any = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        paths = _paths(m)
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["replace", "replace", "replace", "delete", "add", "deep", "name", "label"]))
        if op == "replace":
            m = _set(m, path, draw(_values()))
        elif op == "delete":
            m = _delete(m, path)
        elif op == "add":
            target = m
            for key in path:
                target = target[key]
            if isinstance(target, dict):
                target[draw(_NAMEISH)] = draw(_values())
            elif isinstance(target, list):
                target.append(draw(_values()))
        elif op == "deep":
            m = _set(m, path, _deep(draw(st.sampled_from([5, 99, 101, 300, 1000])), draw(st.booleans())))
        elif op == "name" and isinstance(m, dict) and isinstance(m.get("metadata"), dict):
            m["metadata"]["name"] = draw(_NAMEISH)
        elif op == "label" and isinstance(m, dict) and isinstance(m.get("metadata"), dict):
            which = draw(st.sampled_from(["labels", "annotations"]))
            if not isinstance(m["metadata"].get(which), dict):
                m["metadata"][which] = {}
            m["metadata"][which][draw(_NAMEISH)] = draw(_NAMEISH)
    return m


class Harness:
    """One real SQLite store with the setup objects, and the hub's applier over it."""

    def __init__(self) -> None:
        self.store = SQLiteStore(":memory:")
        ensure_namespace(self.store)
        self.applier = Applier(self.store, clock=lambda: 1_700_000_000.0)
        out = self.applier.apply(SETUP)
        assert not out.rejected, [r.error for r in out.results]
        self.counts: Counter[str] = Counter()

    def close(self) -> None:
        self.store.close()

    def check(self, manifest: Any) -> str:
        """'accepted' or 'refused'; raises AssertionError for anything else (exceptions propagate)."""
        text = json.dumps(manifest)  # JSON is YAML; yaml.safe_dump would itself recurse on deep input
        outcome = self.applier.apply(text)
        if outcome.rejected:
            errors = [r.error for r in outcome.results if r.error]
            assert errors, "rejected without an error"
            for error in errors:
                assert "\n" not in error, f"more than one line: {error!r}"
                assert FIELD_PATH.match(error), f"no field path: {error!r}"
            return "refused"
        for r in outcome.results:
            stored = self.store.get(r.kind, r.namespace, r.name)
            assert stored is not None, f"accepted but not stored: {r}"
            again = parse_object(json.loads(json.dumps(stored)))
            original = parse_object(json.loads(text), default_namespace="default")
            assert _comparable(again) == _comparable(original), f"round trip changed {r.kind} {r.name}"
            if r.kind != "Namespace" or r.name != "default":
                self.store.delete(r.kind, r.namespace, r.name)
        return "accepted"


def _comparable(obj: Any) -> Any:
    """The object without what the server sets or keeps (uid, times, versions; a queued Job's
    suspend; finalizers and owner references, which an apply that does not name them leaves as
    they are, as kubectl apply's merge does; the deletionTimestamp of an object whose finalizer
    keeps it after an earlier example deleted it, such as a ClusterQueue's resource-in-use)."""
    meta = replace(
        obj.meta,
        uid="",
        creation_timestamp=None,
        deletion_timestamp=None,
        resource_version="",
        generation=0,
        finalizers=[],
        owner_references=[],
    )
    out = replace(obj, meta=meta)
    if isinstance(out, Job):
        out = replace(out, suspend=False, template=out.template)
    elif is_dataclass(out) and "suspend" in {f.name for f in fields(out)}:  # any kind Kueue's webhook suspends
        out = replace(out, suspend=False)
        if isinstance(getattr(out, "spec_raw", None), dict):  # a kind that keeps its spec as written too
            out = replace(out, spec_raw={k: v for k, v in out.spec_raw.items() if k != "suspend"})
    return out


def run(examples: int, seed: int | None) -> Counter[str]:
    """The long run: count outcomes, keep going past failures, print the first few."""
    harness = Harness()
    counts: Counter[str] = Counter()
    shown = 0

    @settings(max_examples=examples, deadline=None, database=None, derandomize=seed is None,
              suppress_health_check=list(HealthCheck))
    @given(manifests())
    def case(manifest: Any) -> None:
        nonlocal shown
        counts["cases"] += 1
        try:
            counts[harness.check(manifest)] += 1
        except AssertionError as exc:
            counts["refused without a field path"] += 1
            if shown < 5:
                shown += 1
                print(f"FAIL: {exc}", file=sys.stderr)
        except Exception:
            counts["exceptions"] += 1
            if shown < 5:
                shown += 1
                print(f"EXCEPTION for {json.dumps(manifest)[:300]}\n{traceback.format_exc()}", file=sys.stderr)

    if seed is not None:
        from hypothesis import seed as hyp_seed

        case = hyp_seed(seed)(case)
    case()
    harness.close()
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description="fuzz the hub's manifest validation")
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: derandomized)")
    args = parser.parse_args()
    counts = run(args.examples, args.seed)
    print(
        f"cases {counts['cases']}, accepted {counts['accepted']}, refused with a field path {counts['refused']}, "
        f"refused without a field path {counts['refused without a field path']}, exceptions {counts['exceptions']}"
    )
    return 0 if counts["exceptions"] == 0 and counts["refused without a field path"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
