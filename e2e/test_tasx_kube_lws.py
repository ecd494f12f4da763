"""A LeaderWorkerSet under topology-aware scheduling on Kubernetes, end to end: ``mkhub dev-cluster
--nodes blocks=2,racks=2,hosts=4`` (16 nodes of 8 CPUs, Kueue's TAS example labels) with the hub on
it (its webhooks registered, the LeaderWorkerSet framework enabled), a set of one group (a leader
and three workers of 5 CPUs: one worker per node) whose templates require a rack, created with
kubectl.

As Kueue sets it up: the webhook gives the worker template ``kueue.x-k8s.io/pod-index-offset: "1"``;
the group's Workload indexes its workers by ``leaderworkerset.sigs.k8s.io/worker-index`` (the
leader by none); the group is admitted in one rack per pod set, its pods ungated there and bound,
worker ``i`` on the ``i``-th node of its pod set's assignment (rank ``i - 1``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import frameworks_config
from test_kube_jobs import kubectl, wait_for
from test_kube_tas_pods import HOST, RACK, items, node_labels, tas_cluster

from hub.api.errors import FieldErrors
from hub.api.jobkinds.leaderworkerset import FRAMEWORK, WORKER_INDEX_LABEL
from hub.api.topology_assignment import read_topology_assignment
from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(300)

OFFSET = "kueue.x-k8s.io/pod-index-offset"


def template(cpu: str) -> dict[str, Any]:
    return {"metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": RACK}},
            "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai", "resources": {"requests": {"cpu": cpu}}}]}}


LWS = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
    "metadata": {"name": "serve", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "tas-user-queue"}},
    "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 4, "leaderTemplate": template("1"), "workerTemplate": template("5")}},
}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[Path, KubeHub]]:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(frameworks_config("batch/job", FRAMEWORK)))
    yield from tas_cluster(tmp_path, ("--config", str(config)))


def test_workers_are_indexed_from_1_and_placed_by_rank_in_one_rack(cluster: tuple[Path, KubeHub]) -> None:
    kc, hub = cluster
    out = kubectl(kc, "create", "-f", "-", stdin=yaml.safe_dump(LWS))
    assert out.returncode == 0, out.stderr
    [lws] = items(kc, "leaderworkersets", "-n", "default")
    lwt = lws["spec"]["leaderWorkerTemplate"]
    assert lwt["workerTemplate"]["metadata"]["annotations"][OFFSET] == "1"
    assert OFFSET not in lwt["leaderTemplate"]["metadata"]["annotations"]

    def admitted() -> dict[str, Any] | None:
        for wl in items(kc, "workloads", "-n", "default"):
            if any(c["type"] == "Admitted" and c["status"] == "True" for c in (wl.get("status") or {}).get("conditions") or []):
                return wl
        return None

    wl = wait_for("the group's Workload admitted", admitted, log=hub.log)
    requests = {ps["name"]: ps.get("topologyRequest") for ps in wl["spec"]["podSets"]}
    assert requests == {"leader": {"required": RACK}, "worker": {"required": RACK, "podIndexLabel": WORKER_INDEX_LABEL}}
    slots: dict[str, list[str]] = {}
    for psa in wl["status"]["admission"]["podSetAssignments"]:
        ta = read_topology_assignment(psa["topologyAssignment"], "", FieldErrors())
        assert ta is not None and ta.levels == (HOST,)
        slots[psa["name"]] = [values[-1] for values, n in ta.domains for _ in range(n)]
    assert len(slots["worker"]) == 3 and len(set(slots["worker"])) == 3  # 5 CPUs each: a node each

    def bound() -> list[dict[str, Any]] | None:
        pods = [p for p in items(kc, "pods", "-n", "default") if p["metadata"]["name"].startswith("serve-")]
        return pods if len(pods) == 4 and all(p["spec"].get("nodeName") for p in pods) else None

    pods = wait_for("the group's 4 pods bound", bound, log=hub.log)
    labels = node_labels(kc)
    workers = {int(p["metadata"]["labels"][WORKER_INDEX_LABEL]): p["spec"]["nodeName"] for p in pods
               if p["metadata"]["labels"][WORKER_INDEX_LABEL] != "0"}
    assert workers == {i: slots["worker"][i - 1] for i in (1, 2, 3)}  # by rank: index less the offset
    assert len({labels[node][RACK] for node in workers.values()}) == 1  # the required rack
