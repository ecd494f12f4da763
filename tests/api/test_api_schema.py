"""CRDs generated from hub/api: checked-in files, structure, and agreement with the
manifests mkhub accepts (samples and every conformance scenario)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hub.api.conversion import V1BETA1, V1BETA2, to_internal, to_version
from hub.api.errors import ValidationError
from hub.api.registry import KINDS, parse_object
from hub.api.schema import (
    KUEUE_KINDS,
    STORAGE_VERSION,
    all_crds,
    crd,
    crd_file_name,
    crd_yaml,
    evaluate,
    human_duration,
    kind_schema,
    printer_columns,
    row_cells,
    table_columns,
)
from hub.api.schema.check import structural_problems, type_errors, unknown_fields
from hub.service.crdgen import write_crds

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "manifests" / "crds"


def test_checked_in_crds_match_the_model() -> None:
    """Fails when hub/api changes and `mkhub manifests crds` was not re-run (or a file was edited)."""
    expected = {crd_file_name(kind): crd_yaml(kind) for kind in KUEUE_KINDS}
    present = {p.name: p.read_text(encoding="utf-8") for p in CRD_DIR.glob("*.yaml")}
    assert sorted(present) == sorted(expected), "run: mkhub manifests crds"
    for name, text in expected.items():
        assert present[name] == text, f"{name} drifted from hub/api; run: mkhub manifests crds"


def test_write_crds_writes_one_parsable_file_per_kind(tmp_path: Path) -> None:
    paths = write_crds(tmp_path / "crds")
    assert len(paths) == len(KUEUE_KINDS) == 9
    for path in paths:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        assert len(docs) == 1 and docs[0]["kind"] == "CustomResourceDefinition"


def test_every_kueue_kind_in_the_registry_has_a_crd() -> None:
    # Kinds stored without being acted on (ProvisioningRequestConfig: hub.api.passive) and Topology
    # (hub.api.tas_kinds) have no CRD yet.
    kueue = {k for k, info in KINDS.items() if V1BETA2 in info.api_versions and info.acted_on and k != "Topology"}
    assert kueue == set(KUEUE_KINDS)


@pytest.mark.parametrize("kind", KUEUE_KINDS)
def test_crd_names_versions_and_subresources(kind: str) -> None:
    c = crd(kind)
    info = KINDS[kind]
    spec = c["spec"]
    assert c["metadata"]["name"] == f"{info.plural}.kueue.x-k8s.io"
    assert spec["names"]["kind"] == kind and spec["names"]["plural"] == info.plural
    assert set(spec["names"]["shortNames"]) == set(info.short_names)
    assert spec["names"]["categories"] == ["kueue"]
    assert spec["scope"] == ("Namespaced" if info.namespaced else "Cluster")
    versions = {v["name"]: v for v in spec["versions"]}
    assert set(versions) == {"v1beta1", "v1beta2"}
    assert all(v["served"] for v in versions.values())
    assert [n for n, v in versions.items() if v["storage"]] == [STORAGE_VERSION] == ["v1beta2"]
    for v in versions.values():
        schema = v["schema"]["openAPIV3Schema"]
        assert structural_problems(schema) == []
        has_status = "status" in schema["properties"]
        assert ("subresources" in v) == has_status
        assert v.get("additionalPrinterColumns", []) == [c.to_crd() for c in printer_columns(kind, v["name"])]


def test_version_differences_follow_conversion() -> None:
    def spec_props(kind: str, version: str) -> set[str]:
        return set(kind_schema(kind, version)["properties"]["spec"]["properties"])

    assert {"cohort", "admissionChecks"} <= spec_props("ClusterQueue", "v1beta1")
    assert "cohortName" not in spec_props("ClusterQueue", "v1beta1")
    assert "cohortName" in spec_props("ClusterQueue", "v1beta2")
    assert {"priorityClassName", "priorityClassSource"} <= spec_props("Workload", "v1beta1")
    assert "priorityClassRef" in spec_props("Workload", "v1beta2")
    assert {"kubeConfig", "clusterProfileRef"} <= spec_props("MultiKueueCluster", "v1beta1")
    assert spec_props("MultiKueueCluster", "v1beta2") == {"clusterSource"}
    lq1 = kind_schema("LocalQueue", "v1beta1")["properties"]["status"]["properties"]
    assert "flavorUsage" in lq1 and "flavorsUsage" not in lq1
    assert [c["jsonPath"] for c in crd("ClusterQueue")["spec"]["versions"][0]["additionalPrinterColumns"]][0] == ".spec.cohort"


def _scenario_objects() -> list[dict]:
    files = [*sorted((ROOT / "manifests" / "samples").rglob("*.yaml"))]
    objects: list[dict] = []
    for path in files:
        objects.extend(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
    for base in (ROOT / "tests" / "conformance" / "scenarios", ROOT.parent.parent / "shared" / "conformance" / "scenarios"):
        for path in sorted(base.rglob("*.yaml")) if base.is_dir() else []:
            doc = yaml.safe_load(path.read_text())
            if isinstance(doc, dict):
                objects.extend(o for o in doc.get("objects") or [] if isinstance(o, dict))
    return [o for o in objects if o.get("kind") in KUEUE_KINDS]


def test_every_accepted_manifest_fits_its_schema_in_both_versions() -> None:
    """No field of any sample or scenario object would be pruned or mistyped by the CRDs,
    in the version it is written in and after conversion to the other one."""
    objects = _scenario_objects()
    assert len(objects) > 50
    kinds_seen = set()
    for manifest in objects:
        kind = manifest["kind"]
        try:
            parse_object(manifest)
        except ValidationError:
            continue  # scenarios that pin a refusal
        kinds_seen.add(kind)
        internal = to_internal(manifest)
        for version, form in (("v1beta2", internal), ("v1beta1", to_version(internal, V1BETA1))):
            schema = kind_schema(kind, version)
            name = manifest["metadata"].get("name")
            assert unknown_fields(schema, form) == [], f"{kind} {name} ({version})"
            assert type_errors(schema, form) == [], f"{kind} {name} ({version})"
    assert {"ClusterQueue", "LocalQueue", "ResourceFlavor", "Workload"} <= kinds_seen


def test_unknown_and_mistyped_fields_are_reported() -> None:
    schema = kind_schema("ClusterQueue", "v1beta2")
    bad = {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "x"},
        "spec": {"queueingStrategy": "Random", "cohort": "old-name",
                 "resourceGroups": [{"coveredResources": ["cpu"], "flavorz": [],
                                     "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": True}]}]}]},
    }
    assert unknown_fields(schema, bad) == ["spec.cohort", "spec.resourceGroups[0].flavorz"]
    errors = dict(type_errors(schema, bad))
    assert errors["spec.queueingStrategy"] == 'supported values: "BestEffortFIFO", "StrictFIFO"'
    assert errors["spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"] == "must be of type integer or string"
    # Pod templates keep every field (nothing a user writes is pruned).
    wl = kind_schema("Workload", "v1beta2")
    manifest = {"spec": {"podSets": [{"name": "main", "template": {"spec": {
        "containers": [{"name": "c", "image": "busybox", "livenessProbe": {"exec": {"command": ["true"]}}}],
        "hostNetwork": True}}}]}}
    assert unknown_fields(wl, manifest) == []


def test_enums_come_from_the_model() -> None:
    from hub.api.queues import QUEUEING_STRATEGIES, STOP_POLICIES

    spec = kind_schema("ClusterQueue", "v1beta2")["properties"]["spec"]["properties"]
    assert spec["queueingStrategy"]["enum"] == list(QUEUEING_STRATEGIES)
    assert spec["stopPolicy"]["enum"] == list(STOP_POLICIES)


NOW = 1_700_000_000.0


def _workload(conditions: list[dict]) -> dict:
    return {
        "metadata": {"name": "job-a", "namespace": "team-a", "creationTimestamp": "2023-11-14T22:08:20Z"},
        "spec": {"queueName": "user-queue"},
        "status": {"admission": {"clusterQueue": "cluster-queue"}, "conditions": conditions},
    }


def test_workload_columns_render_as_kubectl_shows_them() -> None:
    columns = table_columns("Workload")
    assert [c.name for c in columns] == ["Name", "Queue", "Reserved in", "Admitted", "Finished", "Age"]
    wl = _workload([{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}])
    # creationTimestamp is 1699999700: 300 s before NOW.
    assert row_cells(columns, wl, NOW) == ["job-a", "user-queue", "cluster-queue", "True", None, "5m"]


def test_cluster_queue_columns_per_version_and_default_age() -> None:
    cq = {"metadata": {"name": "cq"}, "spec": {"cohort": "c1", "queueingStrategy": "StrictFIFO"},
          "status": {"pendingWorkloads": 3, "admittedWorkloads": 2}}
    cols = table_columns("ClusterQueue", "v1beta1")
    assert [(c.name, c.priority) for c in cols] == [
        ("Name", 0), ("Cohort", 0), ("Strategy", 1), ("Pending Workloads", 0), ("Admitted Workloads", 1)]
    assert row_cells(cols, cq, NOW) == ["cq", "c1", "StrictFIFO", 3, 2]
    assert row_cells(table_columns("ClusterQueue", "v1beta2"), cq, NOW)[1] is None
    assert [c.name for c in table_columns("ResourceFlavor")] == ["Name", "Age"]


def test_jsonpath_steps() -> None:
    obj = {"a": {"b": [{"t": "x", "v": 1}, {"t": "y", "v": 2}]}}
    assert evaluate(".a.b[1].v", obj) == [2]
    assert evaluate(".a.b[?(@.t=='y')].v", obj) == [2]
    assert evaluate('{.a.b[?(@.t=="x")].v}', obj) == [1]
    assert evaluate(".a.b[*].t", obj) == ["x", "y"]
    assert evaluate(".a.missing.deeper", obj) == []
    assert evaluate(".a.b[5]", obj) == []
    # Slices, as the Kubeflow CRDs' State column (.status.conditions[-1:].type) uses them.
    assert evaluate(".a.b[-1:].t", obj) == ["y"]
    assert evaluate(".a.b[0:1].t", obj) == ["x"]
    assert evaluate(".a.b[:].t", obj) == ["x", "y"]
    assert evaluate(".a[-1:]", obj) == []  # not a list: selects nothing


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (330, "5m30s"), (600, "10m"),
     (3 * 3600, "3h"), (3 * 3600 + 60 * 5, "3h5m"), (30 * 3600, "30h"), (50 * 3600, "2d2h"), (9 * 86400, "9d"),
     (800 * 86400, "2y70d"), (9 * 365 * 86400, "9y")],
)
def test_human_duration_matches_kubernetes(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_all_crds_are_independent_copies() -> None:
    first = all_crds()
    first[0]["spec"]["names"]["kind"] = "Mutated"
    assert all_crds()[0]["spec"]["names"]["kind"] != "Mutated"
