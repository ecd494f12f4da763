"""The dev-cluster's admission of a write (hub.service.apply.Applier.admit through
hub.kubeapi.writes): what it validates on an update, and what it leaves to the kinds that need it."""

from __future__ import annotations

from typing import Any

import pytest

from hub.api import registry
from hub.api.errors import ValidationError
from hub.kubeapi.errors import ApiError
from hub.kubeapi.reads import Target
from hub.kubeapi.resources import BY_KIND
from hub.kubeapi.writes import Options
from hub.service import apply as apply_module
from hub.service.apply import Applier, ensure_namespace
from hub.service.devcluster import _kube_api
from hub.store import SQLiteStore

MERGE = "application/merge-patch+json"
OPTS = Options(field_manager="test", manager_given=True)


def _job(name: str, containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": containers}}}}


def _job_target(name: str) -> Target:
    return Target(BY_KIND["Job"], "v1", "default", name)


def test_an_update_validates_the_new_job_not_the_stored_one(store: SQLiteStore) -> None:
    """kube-apiserver validates the object being written: a Job stored with an invalid label
    (by an older server, or directly in the store) can be repaired by a patch. The stored Job used
    to be parsed and validated too, refusing the repair for the stored object's fault."""
    ensure_namespace(store)
    broken = _job("broken", [{"name": "c", "image": "busybox"}])
    broken["metadata"]["labels"] = {"team": "not a label value!"}
    store.create(broken)
    writer = _kube_api(store).writer
    out = writer.patch(_job_target("broken"), MERGE, {"metadata": {"labels": {"team": "a"}}}, OPTS).obj
    assert out["metadata"]["labels"] == {"team": "a"}
    # The new object is still validated: a bad label again is refused, naming the field.
    with pytest.raises(ApiError) as refused:
        writer.patch(_job_target("broken"), MERGE, {"metadata": {"labels": {"team": "bad value!"}}}, OPTS)
    assert "metadata.labels" in refused.value.message


def test_the_stored_object_is_parsed_only_for_kinds_with_update_rules(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A LocalQueue's clusterQueue is immutable (Kueue's webhook): its update parses the stored
    one to compare; a Job has no such rule here, so its update parses only the new Job."""
    ensure_namespace(store)
    applier = Applier(store, suspend_queued_jobs=False)
    parsed: list[str] = []
    real = registry.parse_object

    def counting(manifest: Any, **kwargs: Any) -> Any:
        parsed.append(str(manifest.get("kind")))
        return real(manifest, **kwargs)

    monkeypatch.setattr(apply_module, "parse_object", counting)
    job = store.create(_job("j", [{"name": "c", "image": "busybox"}]))
    applier.admit({**job, "metadata": {**job["metadata"], "labels": {"a": "b"}}}, job)
    assert parsed == ["Job"]

    lq = store.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                       "metadata": {"name": "lq", "namespace": "default"}, "spec": {"clusterQueue": "a"}})
    parsed.clear()
    with pytest.raises(ValidationError, match="clusterQueue"):
        applier.admit({**lq, "spec": {"clusterQueue": "b"}}, lq)
    assert parsed == ["LocalQueue", "LocalQueue"]


def test_admit_leaves_the_callers_manifest_alone(store: SQLiteStore) -> None:
    """One copy of the caller's manifest is edited and stored; the caller's own is untouched."""
    ensure_namespace(store)
    applier = Applier(store, suspend_queued_jobs=False)
    manifest = _job("k", [{"name": "c", "image": "busybox"}])
    manifest["status"] = {"active": 1}
    manifest["metadata"]["uid"] = "given"
    before = repr(manifest)
    out, _ = applier.admit(manifest, None)
    assert repr(manifest) == before
    assert "status" not in out and "uid" not in out["metadata"]
    assert out["spec"] is not manifest["spec"]
