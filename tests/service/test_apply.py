"""mkhub apply's admission: every rule is checked before anything is stored, and all or nothing is stored."""

from __future__ import annotations

from pathlib import Path

import yaml

from hub.service.apply import Applier, ensure_namespace
from hub.service.delete import Deleter
from hub.store import SQLiteStore

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
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: 4}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: lq, namespace: team}
spec: {clusterQueue: cq}
"""

WORKLOAD = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: w, namespace: team}
spec:
  queueName: lq
  podSets:
  - count: 1
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}
"""

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  namespace: team
  labels: {kueue.x-k8s.io/queue-name: lq}
spec:
  template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}], restartPolicy: Never}}
"""


def actions(applier: Applier, text: str, **kw: object) -> list[tuple[str, str, str]]:
    out = applier.apply(text, **kw)  # type: ignore[arg-type]
    return [(r.kind, r.name, r.error or r.action) for r in out.results]


def total(store: SQLiteStore) -> int:
    return sum(len(store.list(k)[0]) for k in ("Namespace", "ResourceFlavor", "ClusterQueue", "LocalQueue", "Workload", "Job"))


def test_create_then_unchanged_then_configured(store: SQLiteStore) -> None:
    applier = Applier(store)
    assert [a[2] for a in actions(applier, SETUP)] == ["created"] * 4
    assert [a[2] for a in actions(applier, SETUP)] == ["unchanged"] * 4
    changed = SETUP.replace("nominalQuota: 4", "nominalQuota: 8")
    assert [a[2] for a in actions(applier, changed)] == ["unchanged", "unchanged", "configured", "unchanged"]
    cq = store.get("ClusterQueue", "", "cq")
    assert cq is not None and cq["apiVersion"] == "kueue.x-k8s.io/v1beta2"  # stored in Kueue's storage version


def test_objects_of_one_request_may_reference_each_other_in_any_order(store: SQLiteStore) -> None:
    applier = Applier(store)
    out = applier.apply(WORKLOAD + "---" + SETUP)
    assert not out.rejected and [r.action for r in out.results] == ["created"] * 5


def test_one_invalid_document_stores_nothing(store: SQLiteStore) -> None:
    applier = Applier(store)
    bad = WORKLOAD.replace("queueName: lq", "queueName: nope")
    out = applier.apply(SETUP + "---" + bad)
    assert out.rejected
    errors = [r.error for r in out.results if r.error]
    assert errors == ['Workload "team/w" is invalid: spec.queueName: Invalid value: "nope": LocalQueue "team/nope" not found']
    assert total(store) == 0


def test_missing_namespace(store: SQLiteStore) -> None:
    out = Applier(store).apply(SETUP.split("---", 1)[1] + "---" + WORKLOAD)
    assert out.rejected
    assert [r.error for r in out.results if r.error] == [
        'LocalQueue "team/lq" is invalid: metadata.namespace: Invalid value: "team": namespace "team" not found',
        'Workload "team/w" is invalid: metadata.namespace: Invalid value: "team": namespace "team" not found',
    ]
    assert total(store) == 0


def test_schema_errors_name_object_and_field(store: SQLiteStore) -> None:
    applier = Applier(store)
    applier.apply(SETUP)
    cases = {
        SETUP.replace("nominalQuota: 4", "nominalQuota: lots"): "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Gizmo\nmetadata: {name: g}\n": 'Gizmo "g" is invalid: kind',
        WORKLOAD.replace("metadata: {name: w, namespace: team}", "metadata: {name: w, namespace: team, annotations: {mkhub.dev/sim-duration: soon}}"):
            "metadata.annotations[mkhub.dev/sim-duration]",
        JOB.replace("queue-name: lq", "queue-name: other"): "metadata.labels[kueue.x-k8s.io/queue-name]",
        "- just\n- a list\n": "a manifest must be a mapping",
    }
    before = total(store)
    for text, expected in cases.items():
        out = applier.apply(text)
        assert out.rejected, text
        assert any(expected in r.error for r in out.results), [r.error for r in out.results]
    assert total(store) == before


def test_yaml_syntax_error_names_source_and_line(store: SQLiteStore) -> None:
    out = Applier(store).apply("kind: Namespace\nmetadata: {name: x\n", source="ns.yaml")
    assert out.rejected and out.results[0].error.startswith("error parsing ns.yaml: line ")


def test_status_and_server_fields_are_ignored(store: SQLiteStore) -> None:
    applier = Applier(store, clock=lambda: 1_800_000_000.25)
    applier.apply(SETUP)
    doc = yaml.safe_load(WORKLOAD)
    doc["metadata"].update(uid="mine", resourceVersion="99", creationTimestamp="2000-01-01T00:00:00Z")
    doc["status"] = {"conditions": [{"type": "Admitted", "status": "True"}]}
    assert not applier.apply(yaml.safe_dump(doc)).rejected
    stored = store.get("Workload", "team", "w")
    assert stored is not None and "status" not in stored
    assert stored["metadata"]["uid"] != "mine"
    assert stored["metadata"]["creationTimestamp"] == "2027-01-15T08:00:00.250000Z"  # the hub's clock, sub-second


def test_cluster_scoped_objects_drop_a_namespace(store: SQLiteStore) -> None:
    Applier(store).apply("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f, namespace: team}\n")
    assert store.get("ResourceFlavor", "", "f") is not None


def test_default_namespace_and_dash_n(store: SQLiteStore) -> None:
    ensure_namespace(store)
    applier = Applier(store)
    applier.apply(SETUP)
    lq = SETUP.split("---")[-1].replace("namespace: team", "")
    assert not applier.apply(lq).rejected
    assert store.get("LocalQueue", "default", "lq") is not None
    assert not applier.apply(WORKLOAD.replace(", namespace: team", ""), default_namespace="team").rejected
    assert store.get("Workload", "team", "w") is not None


def test_queued_job_is_suspended_and_the_hub_keeps_the_flag(store: SQLiteStore) -> None:
    applier = Applier(store)
    applier.apply(SETUP + "---" + JOB)
    stored = store.get("Job", "team", "j")
    assert stored is not None and stored["spec"]["suspend"] is True
    stored["spec"]["suspend"] = False  # what the hub writes on admission
    store.update(stored)
    out = applier.apply(JOB)  # the user re-applies the original manifest
    assert [r.action for r in out.results] == ["unchanged"]
    again = store.get("Job", "team", "j")
    assert again is not None and again["spec"]["suspend"] is False


def test_immutable_fields_on_update(store: SQLiteStore) -> None:
    applier = Applier(store)
    applier.apply(SETUP)
    out = applier.apply(SETUP.replace("clusterQueue: cq", "clusterQueue: other"))
    assert out.rejected
    assert any("spec.clusterQueue" in r.error and "immutable" in r.error for r in out.results)


def test_warnings_for_references_kueue_tolerates(store: SQLiteStore) -> None:
    out = Applier(store).apply(SETUP.replace("metadata: {name: default}", "metadata: {name: other}"))
    assert not out.rejected
    assert any("ResourceFlavor(s) default not found" in w for w in out.warnings)


def test_dry_run_stores_nothing(store: SQLiteStore) -> None:
    out = Applier(store).apply(SETUP, dry_run=True)
    assert [r.action for r in out.results] == ["created (dry run)"] * 4
    assert total(store) == 0


def test_delete_namespace_takes_its_objects(store: SQLiteStore) -> None:
    ensure_namespace(store)
    Applier(store).apply(SETUP + "---" + WORKLOAD + "---" + JOB)
    deleter = Deleter(store)
    assert deleter.delete("ns", "", "team").action == "deleted"
    assert store.list("Workload")[0] == [] and store.list("Job")[0] == [] and store.list("LocalQueue")[0] == []
    assert store.get("ClusterQueue", "", "cq") is not None


def test_delete_refusals(store: SQLiteStore) -> None:
    ensure_namespace(store)
    deleter = Deleter(store)
    assert "may not be deleted" in deleter.delete("namespace", "", "default").error
    assert deleter.delete("wl", "team", "nope").error == 'workloads.kueue.x-k8s.io "nope" not found'
    assert "doesn't have a resource type" in deleter.delete("gizmo", "", "x").error


def test_delete_from_manifests(store: SQLiteStore) -> None:
    Applier(store).apply(SETUP)
    results = Deleter(store).delete_manifests(SETUP)
    # Dependents first (the reverse of the file), so deleting the Namespace last finds nothing gone.
    assert [(r.kind, r.action) for r in results] == [
        ("LocalQueue", "deleted"), ("ClusterQueue", "deleted"), ("ResourceFlavor", "deleted"), ("Namespace", "deleted")
    ]
    assert total(store) == 0


def test_the_samples_apply_cleanly(store: SQLiteStore) -> None:
    samples = Path(__file__).resolve().parents[2] / "manifests" / "samples"
    text = "\n---\n".join(p.read_text() for p in sorted(samples.glob("*.yaml")))
    out = Applier(store).apply(text)
    assert not out.rejected, [r.error for r in out.results if r.error]
    assert not out.warnings
