"""The Applier hands the reconciler the Workloads it parsed: each equal to a parse of what was stored."""

from __future__ import annotations

import json

import pytest

from hub.api.registry import parse_object
from hub.controllers.handoff import ParsedObjects
from hub.service.apply import Applier
from hub.store import SQLiteStore
from hub.store.interface import ObjectKey

SETUP = """
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: 4}, {name: memory, nominalQuota: 4Gi}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: lq, namespace: team}
spec: {clusterQueue: cq}
"""

V1BETA1 = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: w1, namespace: team, labels: {app: x}, annotations: {mkhub.dev/sim-duration: 2s}}
spec:
  queueName: lq
  priority: 7
  podSets:
  - name: main
    count: 3
    minCount: 1
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "500m", memory: 1Gi}}}]}}
"""

V1BETA2 = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "Workload",
    "metadata": {"name": "w2", "namespace": "team", "uid": "ignored", "resourceVersion": "99"},
    "spec": {
        "queueName": "lq",
        "active": False,
        "priority": 5,
        "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"},
        "podSets": [{"count": 1, "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}],
    },
    "status": {"conditions": [{"type": "Finished", "status": "True", "reason": "x", "message": "y"}]},
}

NO_NAMESPACE = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: w3}
spec: {queueName: lq, podSets: [{count: 1, template: {spec: {containers: [{name: c}]}}}]}
"""


@pytest.mark.parametrize("partial_admission", [True, False])
@pytest.mark.parametrize("text", [V1BETA1, json.dumps(V1BETA2), NO_NAMESPACE], ids=["v1beta1", "v1beta2-json", "default-ns"])
def test_left_object_equals_a_parse_of_the_stored_manifest(store: SQLiteStore, text: str, partial_admission: bool) -> None:
    Applier(store).apply(SETUP + "\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: default}\n")
    handoff = ParsedObjects()
    outcome = Applier(store, partial_admission=partial_admission, handoff=handoff).apply(text, default_namespace="team")
    assert not outcome.rejected, outcome.results
    assert len(handoff) == 1
    result = outcome.results[0]
    stored = store.get("Workload", result.namespace, result.name)
    assert stored is not None
    key = ObjectKey("Workload", result.namespace, result.name)
    left = handoff.take(int(stored["metadata"]["resourceVersion"]), key)
    assert left is not None
    assert left == parse_object(stored, partial_admission=partial_admission)
    assert left.meta.uid == stored["metadata"]["uid"] and left.meta.resource_version == stored["metadata"]["resourceVersion"]
    assert len(handoff) == 0


def test_nothing_left_for_dry_runs_updates_refusals_or_other_kinds(store: SQLiteStore) -> None:
    handoff = ParsedObjects()
    applier = Applier(store, handoff=handoff)
    applier.apply(SETUP)  # Namespace, ResourceFlavor, ClusterQueue, LocalQueue: not Workloads
    assert len(handoff) == 0
    applier.apply(V1BETA1, dry_run=True)
    assert len(handoff) == 0 and store.get("Workload", "team", "w1") is None
    applier.apply(V1BETA1.replace("priority: 7", "priority: seven"))  # refused
    assert len(handoff) == 0
    applier.apply(V1BETA1)
    assert len(handoff) == 1
    handoff.passed(10**9)
    applier.apply(V1BETA1.replace("app: x", "app: y"))  # an update: the reconciler parses it
    assert len(handoff) == 1


def test_take_checks_the_key_and_a_passed_change_is_not_left() -> None:
    handoff = ParsedObjects()
    obj = parse_object(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}
    )
    handoff.leave(5, ObjectKey("Namespace", "", "n"), obj)
    assert handoff.take(5, ObjectKey("Namespace", "", "other")) is None  # not for that object: parse it
    handoff.leave(6, ObjectKey("Namespace", "", "n"), obj)
    assert handoff.take(6, ObjectKey("Namespace", "", "n")) is obj
    handoff.passed(10)
    handoff.leave(9, ObjectKey("Namespace", "", "n"), obj)  # the reconciler is past it already
    assert len(handoff) == 0
