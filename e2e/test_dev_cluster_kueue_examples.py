"""Kueue's TAS and ProvisioningRequest example files (site/static/examples/tas and
provisioning, copied unchanged into e2e/kueue-examples/) through the real kubectl against
``mkhub dev-cluster``: every object of every file created. A file holding a ``Topology`` or a
``ProvisioningRequestConfig`` used to fail as a whole: kubectl's validation did not find those
kinds in the OpenAPI v3 document, fell back to OpenAPI v2 (asked as protobuf only) and gave up.
(``tas/kind-cluster.yaml`` is kind's cluster configuration, not an API object.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_dev_cluster import NODES, DevClusterProcess

pytestmark = pytest.mark.timeout(240)

EXAMPLES = Path(__file__).resolve().parent / "kueue-examples"


@pytest.fixture
def cluster(tmp_path: Path, kubectl_required: None) -> Iterator[DevClusterProcess]:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(NODES)
    dc = DevClusterProcess(tmp_path / "dev", nodes)
    dc.start()
    try:
        yield dc
    finally:
        dc.stop()


def test_tas_and_provisioning_examples_through_kubectl(cluster: DevClusterProcess) -> None:
    out = cluster.kubectl("apply", "-f", str(EXAMPLES / "tas" / "sample-queues.yaml")).stdout.split("\n")
    assert [line for line in out if line] == [
        "topology.kueue.x-k8s.io/default created",
        "resourceflavor.kueue.x-k8s.io/tas-flavor created",
        "clusterqueue.kueue.x-k8s.io/tas-cluster-queue created",
        "localqueue.kueue.x-k8s.io/tas-user-queue created",
    ]
    # The GPU variant of the same objects (tolerations on the flavor, a GPU quota).
    gpu = cluster.kubectl("apply", "-f", str(EXAMPLES / "tas" / "sample-gpu-queues.yaml")).stdout
    assert "resourceflavor.kueue.x-k8s.io/tas-flavor configured" in gpu
    for name in ("required", "preferred", "unconstrained"):
        created = cluster.kubectl("create", "-f", str(EXAMPLES / "tas" / f"sample-job-{name}.yaml")).stdout
        assert created.startswith(f"job.batch/tas-sample-{name}") and created.rstrip().endswith(" created")

    setup = cluster.kubectl("apply", "-f", str(EXAMPLES / "provisioning" / "provisioning-setup.yaml")).stdout
    assert [line for line in setup.split("\n") if line] == [
        "resourceflavor.kueue.x-k8s.io/default-flavor created",
        "clusterqueue.kueue.x-k8s.io/cluster-queue created",
        "localqueue.kueue.x-k8s.io/user-queue created",
        "admissioncheck.kueue.x-k8s.io/sample-prov created",
        "provisioningrequestconfig.kueue.x-k8s.io/prov-test-config created",
    ]
    assert cluster.kubectl("create", "-f", str(EXAMPLES / "provisioning" / "sample-job.yaml")).stdout.startswith(
        "job.batch/sample-job-")

    topology = json.loads(cluster.kubectl("get", "topology", "default", "-o", "json").stdout)
    assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == [
        "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack", "kubernetes.io/hostname"]
    config = json.loads(cluster.kubectl("get", "provisioningrequestconfig", "prov-test-config", "-o", "json").stdout)
    assert config["spec"]["retryStrategy"] == {"backoffLimitCount": 2, "backoffBaseSeconds": 0,
                                               "backoffMaxSeconds": 1800}
    jobs = json.loads(cluster.kubectl("get", "jobs", "-n", "default", "-o", "json").stdout)["items"]
    assert len(jobs) == 4

    # The schema in the document is the one writes are checked against (as a CRD's is).
    bad = cluster.kubectl("apply", "-f", "-", check=False, stdin=(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {name: flat}\n"
        "spec: {levels: [{nodeLabel: kubernetes.io/hostname, weight: 2}]}\n"))
    assert bad.returncode != 0
    assert 'unknown field "spec.levels[0].weight"' in bad.stderr, bad.stderr
