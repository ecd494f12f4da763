"""mkhub apply's admission: every rule is checked per object before it is stored; each object stands alone."""

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


NODE = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status:
  allocatable: {cpu: "4", pods: "110"}
  conditions: [{type: Ready, status: "True"}]
"""


def test_a_reapplied_node_writes_its_status_as_its_kubelet_would(store: SQLiteStore) -> None:
    """The embedded hub has no kubelet: a Node applied NotReady is how a failed node is reported
    (TAS node replacement); an identical Node stays unchanged."""
    applier = Applier(store)
    assert [a[2] for a in actions(applier, NODE)] == ["created"]
    assert [a[2] for a in actions(applier, NODE)] == ["unchanged"]
    assert [a[2] for a in actions(applier, NODE.replace('status: "True"', 'status: "False"'))] == ["configured"]
    node = store.get("Node", "", "n1")
    assert node is not None and node["status"]["conditions"] == [{"type": "Ready", "status": "False"}]


def test_objects_of_one_request_may_reference_each_other_in_any_order(store: SQLiteStore) -> None:
    applier = Applier(store)
    out = applier.apply(WORKLOAD + "---" + SETUP)
    assert not out.rejected and [r.action for r in out.results] == ["created"] * 5


def test_one_invalid_document_keeps_only_itself_out(store: SQLiteStore) -> None:
    applier = Applier(store)
    bad = WORKLOAD.replace("queueName: lq", "queueName: [lq]")
    out = applier.apply(SETUP + "---" + bad)
    assert out.rejected
    errors = [r.error for r in out.results if r.error]
    assert len(errors) == 1 and errors[0].startswith('Workload "team/w" is invalid: spec.queueName')
    assert [r.action for r in out.results if not r.error] == ["created"] * 4
    assert total(store) == 4


def test_a_workload_or_job_before_its_local_queue_is_accepted_with_a_warning(store: SQLiteStore) -> None:
    applier = Applier(store)
    applier.apply(SETUP.rsplit("---", 1)[0])  # everything but the LocalQueue
    out = applier.apply(WORKLOAD + "---" + JOB)
    assert not out.rejected and [r.action for r in out.results] == ["created", "created"]
    assert len(out.warnings) == 2
    assert 'LocalQueue "team/lq" not found' in out.warnings[0] and "LocalQueue lq doesn't exist" in out.warnings[0]


def test_missing_namespace(store: SQLiteStore) -> None:
    out = Applier(store).apply(SETUP.split("---", 1)[1] + "---" + WORKLOAD)
    assert out.rejected
    assert [r.error for r in out.results if r.error] == [
        'LocalQueue "team/lq" is invalid: metadata.namespace: Invalid value: "team": namespace "team" not found',
        'Workload "team/w" is invalid: metadata.namespace: Invalid value: "team": namespace "team" not found',
    ]
    assert total(store) == 2  # the flavor and the ClusterQueue stand on their own


def test_an_invalid_namespace_in_the_request_does_not_count_as_existing(store: SQLiteStore) -> None:
    bad_ns = SETUP.replace("metadata: {name: team}", "metadata: {name: team, labels: {bad: [x]}}")
    out = Applier(store).apply(bad_ns + "---" + WORKLOAD)
    errors = {r.kind: r.error for r in out.results if r.error}
    assert set(errors) == {"Namespace", "LocalQueue", "Workload"}
    assert 'namespace "team" not found' in errors["Workload"]


def test_schema_errors_name_object_and_field(store: SQLiteStore) -> None:
    applier = Applier(store)
    applier.apply(SETUP)
    cases = {
        SETUP.replace("nominalQuota: 4", "nominalQuota: lots"): "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Gizmo\nmetadata: {name: g}\n": 'Gizmo "g" is invalid: kind',
        WORKLOAD.replace("metadata: {name: w, namespace: team}", "metadata: {name: w, namespace: team, annotations: {mkhub.dev/sim-duration: soon}}"):
            "metadata.annotations[mkhub.dev/sim-duration]",
        JOB.replace("kind: Job", "kind: Widget").replace("batch/v1", "example.com/v1"): "not served by mkhub",
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


def test_dry_run_says_unchanged_and_configured_as_the_real_apply(store: SQLiteStore) -> None:
    applier = Applier(store)
    applier.apply(SETUP)
    rv = store.list("ClusterQueue")[1]
    out = applier.apply(SETUP.replace("nominalQuota: 4", "nominalQuota: 5"), dry_run=True)
    assert [r.action for r in out.results] == ["unchanged (dry run)"] * 2 + ["configured (dry run)", "unchanged (dry run)"]
    assert store.list("ClusterQueue")[1] == rv
    cq = store.get("ClusterQueue", "", "cq")
    assert cq is not None and cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 4


GENERATED_JOB = JOB.replace("  name: j\n", "  generateName: sample-job-\n")


def test_create_fills_in_generate_name_and_apply_refuses_it(store: SQLiteStore) -> None:
    applier = Applier(store)
    applier.apply(SETUP)
    out = applier.apply(GENERATED_JOB + "---" + GENERATED_JOB, create=True)
    assert [r.action for r in out.results] == ["created", "created"]
    names = sorted(j["metadata"]["name"] for j in store.list("Job")[0])
    assert len(names) == 2 and names[0] != names[1]
    assert all(n.startswith("sample-job-") and len(n) == len("sample-job-") + 5 for n in names)
    refused = applier.apply(GENERATED_JOB)
    assert refused.rejected and refused.results[0].error == "from sample-job-: cannot use generate name with apply"
    assert len(store.list("Job")[0]) == 2


def test_create_refuses_an_existing_object(store: SQLiteStore) -> None:
    applier = Applier(store)
    applier.apply(SETUP)
    out = applier.apply(SETUP, create=True, source="setup.yaml")
    assert out.rejected
    assert out.results[2].error == (
        'Error from server (AlreadyExists): error when creating "setup.yaml": clusterqueues.kueue.x-k8s.io "cq" already exists'
    )


PASSIVE = """
apiVersion: kueue.x-k8s.io/v1alpha1
kind: Topology
metadata: {name: default}
spec:
  levels:
  - nodeLabel: cloud.example.com/block
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ProvisioningRequestConfig
metadata: {name: prov-config}
spec:
  provisioningClassName: check-capacity.autoscaling.x-k8s.io
  managedResources: [nvidia.com/gpu]
"""


def test_kueue_kinds_mkhub_does_not_act_on_are_stored_with_a_warning(store: SQLiteStore) -> None:
    out = Applier(store).apply(PASSIVE)
    assert not out.rejected and [r.action for r in out.results] == ["created", "created"]
    # Topology is acted on (topology-aware scheduling, hub.engine.tas): only the other one warns.
    assert len(out.warnings) == 1 and "mkhub does not act on ProvisioningRequestConfig" in out.warnings[0]
    assert store.get("Topology", "", "default") is not None
    bad = Applier(store).apply(PASSIVE.replace("  - nodeLabel: kubernetes.io/hostname\n", "  - nodeLabel: cloud.example.com/block\n"))
    assert 'Topology "default" is invalid: spec.levels[1].nodeLabel' in bad.results[0].error


def test_deleting_a_cluster_queue_holding_quota_keeps_it_terminating(store: SQLiteStore) -> None:
    Applier(store).apply(SETUP + "---" + WORKLOAD)
    cq = store.get("ClusterQueue", "", "cq")
    assert cq is not None and cq["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    wl = store.get("Workload", "team", "w")
    assert wl is not None
    wl["status"] = {"admission": {"clusterQueue": "cq", "podSetAssignments": []},
                    "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "",
                                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    store.update_status(wl)
    result = Deleter(store).delete("cq", "", "cq")
    assert result.action == "deleted" and "is terminating: 1 workload(s) hold quota" in result.warning
    terminating = store.get("ClusterQueue", "", "cq")
    assert terminating is not None and terminating["metadata"].get("deletionTimestamp")
    store.delete("Workload", "team", "w")
    assert Deleter(store).delete("cq", "", "cq").action == "deleted"
    assert store.get("ClusterQueue", "", "cq") is None


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
    ensure_namespace(store)  # every hub has "default"
    samples = Path(__file__).resolve().parents[2] / "manifests" / "samples"
    text = "\n---\n".join(p.read_text() for p in sorted(samples.glob("*.yaml")))
    out = Applier(store).apply(text)
    assert not out.rejected, [r.error for r in out.results if r.error]
    assert not out.warnings
    created = Applier(store).apply((samples / "generate-name" / "sample-job.yaml").read_text(), create=True)
    assert [r.action for r in created.results] == ["created"] and not created.warnings
    # The federated samples go in on top of the standalone ones (the README's sections, one after the other).
    multi = samples / "multikueue"
    out = Applier(store).apply((multi / "hub.yaml").read_text() + "\n---\n" + (multi / "jobs.yaml").read_text())
    assert not out.rejected and not out.warnings, [r.error for r in out.results if r.error] + out.warnings
