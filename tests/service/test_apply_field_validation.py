"""Unknown fields through ``mkhub apply``'s applier, as kube-apiserver's field validation treats them
(Strict refuses naming the path, Warn drops with a warning, Ignore drops), and the warning for
Kueue's fields mkhub stores without acting on them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hub.service.apply import Applier, ensure_namespace
from hub.service.field_check import IGNORE, STRICT, WARN, field_validation
from hub.store import SQLiteStore

EXAMPLE = Path(__file__).resolve().parents[2] / "e2e" / "kueue-examples" / "concurrent-admission-setup.yaml"
GATED_WORKLOAD = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: gated, namespace: default}
spec:
  queueName: lq
  preemptionGates: [{name: example.com/gate}]
  podSets:
  - name: main
    count: 1
    template: {spec: {containers: [{name: c, image: busybox}]}}
"""
CQ = """
apiVersion: kueue.x-k8s.io/{version}
kind: ClusterQueue
metadata: {{name: cq}}
spec:
  namespaceSelector: {{}}
  {extra}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{{name: cpu, nominalQuota: 4{quota_extra}}}]
"""


@pytest.fixture
def store() -> Iterator[SQLiteStore]:
    s = SQLiteStore(":memory:")
    ensure_namespace(s)
    yield s
    s.close()


def cq(version: str = "v1beta2", extra: str = "", quota_extra: str = "") -> str:
    return CQ.format(version=version, extra=extra, quota_extra=quota_extra)


def test_an_unknown_field_is_refused_by_default_naming_its_path(store: SQLiteStore) -> None:
    out = Applier(store).apply(cq(extra="bogusField: 3", quota_extra=", nominalQuta: 8"))
    assert out.rejected
    assert [r.error for r in out.results] == [
        'ClusterQueue "cq": strict decoding error: unknown field "spec.bogusField", '
        'unknown field "spec.resourceGroups[0].flavors[0].resources[0].nominalQuta"'
    ]
    assert store.get("ClusterQueue", "", "cq") is None


def test_warn_drops_the_field_with_a_warning_and_ignore_drops_it_silently(store: SQLiteStore) -> None:
    out = Applier(store).apply(cq(extra="bogusField: 3"), field_validation=WARN)
    assert not out.rejected
    assert any(w == 'ClusterQueue "cq": unknown field "spec.bogusField"' for w in out.warnings), out.warnings
    assert "bogusField" not in store.get("ClusterQueue", "", "cq")["spec"]

    out = Applier(store).apply(cq(extra="bogusField: 4", quota_extra=", nominalQuta: 8"), field_validation=IGNORE)
    assert not out.rejected and not any("unknown field" in w for w in out.warnings), out.warnings
    stored = store.get("ClusterQueue", "", "cq")["spec"]
    assert "bogusField" not in stored and stored["resourceGroups"][0]["flavors"][0]["resources"] == [
        {"name": "cpu", "nominalQuota": 4}]


def test_fields_are_those_of_the_manifests_version(store: SQLiteStore) -> None:
    applier = Applier(store)
    assert not applier.apply(cq("v1beta1", extra="cohort: team")).rejected
    refused = applier.apply(cq("v1beta1", extra="concurrentAdmissionPolicy: {migration: {mode: TryPreferredFlavors}}"))
    assert [r.error for r in refused.results] == [
        'ClusterQueue "cq": strict decoding error: unknown field "spec.concurrentAdmissionPolicy"']
    refused = applier.apply(cq("v1beta2", extra="cohort: team"))
    assert [r.error for r in refused.results] == ['ClusterQueue "cq": strict decoding error: unknown field "spec.cohort"']


def test_kueues_concurrent_admission_example_is_acted_on_and_draws_no_warning(store: SQLiteStore) -> None:
    out = Applier(store).apply(EXAMPLE.read_text())
    assert not out.rejected, [r.error for r in out.results]
    assert out.warnings == []
    stored = store.get("ClusterQueue", "", "team-cluster-queue")
    assert stored["spec"]["concurrentAdmissionPolicy"] == {"migration": {"mode": "TryPreferredFlavors"}}


def test_a_field_mkhub_stores_without_acting_on_it_is_kept_with_a_warning(store: SQLiteStore) -> None:
    out = Applier(store).apply(GATED_WORKLOAD)
    assert not out.rejected, [r.error for r in out.results]
    assert 'Workload "default/gated": spec.preemptionGates is stored, but mkhub does not act on it ' \
        "(a closed gate blocks preemption (with the ConcurrentAdmission gate), but only concurrent admission opens one)" in out.warnings
    assert store.get("Workload", "default", "gated")["spec"]["preemptionGates"] == [{"name": "example.com/gate"}]


def test_a_workloads_topology_request_is_acted_on_and_draws_no_warning(store: SQLiteStore) -> None:
    wl = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: wl, namespace: default}
spec:
  queueName: lq
  podSets:
  - name: main
    count: 1
    template: {spec: {containers: [{name: c, image: busybox}]}}
  - name: workers
    count: 2
    topologyRequest: {required: rack}
    template: {spec: {containers: [{name: c, image: busybox}]}}
"""
    out = Applier(store).apply(wl)
    assert not out.rejected, [r.error for r in out.results]
    assert not any("topologyRequest" in w for w in out.warnings), out.warnings  # topology-aware scheduling reads it


def test_a_jobs_pod_template_is_checked_too(store: SQLiteStore) -> None:
    job = """
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: default}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, resources: {requets: {cpu: 1}}}]
"""
    out = Applier(store).apply(job)
    assert [r.error for r in out.results] == [
        'Job "default/j": strict decoding error: unknown field "spec.template.spec.containers[0].resources.requets"']


def test_kubectls_spellings_of_validate() -> None:
    assert [field_validation(v) for v in ("", "strict", "true", "True", "warn", "ignore", "false", "Warn")] == [
        STRICT, STRICT, STRICT, STRICT, WARN, IGNORE, IGNORE, WARN]
    with pytest.raises(ValueError, match='invalid - validate option "loose"; must be one of: strict'):
        field_validation("loose")
