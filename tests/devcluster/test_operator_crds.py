"""The operators' CRDs the dev-cluster installs at start (hub.devcluster.operators)."""

from __future__ import annotations

from hub.devcluster.operators import install, jobset_crd, leaderworkerset_crd, operator_crds
from hub.kubeapi.crds import admit, crd_errors, resource_of
from hub.store import SQLiteStore


def test_the_crds_are_valid_and_serve_the_kinds_with_their_subresources() -> None:
    for crd in operator_crds():
        assert crd_errors(crd) == []
    js, lws = resource_of(jobset_crd()), resource_of(leaderworkerset_crd())
    assert js is not None and lws is not None
    assert (js.kind, js.group, js.versions, js.plural, js.has_status, js.scale is None) == (
        "JobSet", "jobset.x-k8s.io", ("v1alpha2",), "jobsets", True, True)
    assert [c.name for c in js.table_columns("v1alpha2")][:5] == ["Name", "TerminalState", "Restarts", "Completed", "Suspended"]
    assert (lws.kind, lws.versions, lws.short_names, lws.scale is not None) == ("LeaderWorkerSet", ("v1",), ("lws",), True)


def test_defaults_fill_what_the_operators_default_and_templates_are_kept_whole() -> None:
    res = resource_of(jobset_crd())
    assert res is not None
    template = {"spec": {"completions": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i", "args": ["100s"]}]}}}}
    out = admit(res, {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "a"},
                      "spec": {"replicatedJobs": [{"name": "driver", "template": template}]}}, "v1alpha2")
    assert out["spec"] == {"replicatedJobs": [{"name": "driver", "groupName": "default", "replicas": 1, "template": template}],
                           "successPolicy": {"operator": "All"}, "startupPolicy": {"startupPolicyOrder": "AnyOrder"},
                           "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True}}
    res = resource_of(leaderworkerset_crd())
    assert res is not None
    out = admit(res, {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "a"},
                      "spec": {"leaderWorkerTemplate": {"workerTemplate": template}}}, "v1")
    assert out["spec"]["replicas"] == 1 and out["spec"]["startupPolicy"] == "LeaderCreated"
    assert out["spec"]["leaderWorkerTemplate"] == {"workerTemplate": template, "size": 1,
                                                   "restartPolicy": "RecreateGroupOnPodRestart"}


def test_install_stores_the_missing_crds_and_leaves_existing_ones_alone(store: SQLiteStore) -> None:
    own = jobset_crd()
    own["metadata"]["labels"] = {"installed-by": "hand"}
    store.create(own)
    assert install(store) == [c["metadata"]["name"] for c in operator_crds()][1:]  # all but the JobSet's
    assert install(store) == []
    kept = store.get("CustomResourceDefinition", "", "jobsets.jobset.x-k8s.io")
    assert kept is not None and kept["metadata"]["labels"] == {"installed-by": "hand"}
