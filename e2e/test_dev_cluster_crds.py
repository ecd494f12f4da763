"""CustomResourceDefinitions served by ``mkhub dev-cluster`` as a process, through the real kubectl:
a CRD applied, its objects written, validated and scaled, and all of it still served after a
restart (the served kinds are rebuilt from the stored CRDs when the API server starts)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_dev_cluster import NODES, DevClusterProcess

pytestmark = pytest.mark.timeout(240)

CRD = Path(__file__).resolve().parents[1] / "tests" / "kubeapi" / "crds" / "crontab.yaml"
CRONTAB = """apiVersion: stable.example.com/v1
kind: CronTab
metadata: {name: nightly, namespace: default}
spec: {cronSpec: "0 3 * * *", image: backup:1, tags: [db]}
"""


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


def test_a_crd_is_served_and_survives_a_restart(cluster: DevClusterProcess) -> None:
    cluster.kubectl("apply", "-f", str(CRD))
    cluster.kubectl("wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=30s")
    assert cluster.kubectl("apply", "-f", "-", stdin=CRONTAB).stdout.strip() == "crontab.stable.example.com/nightly created"
    refused = cluster.kubectl("apply", "-f", "-", stdin=CRONTAB.replace("nightly", "bad").replace("[db]", "[]"), check=False)
    assert refused.returncode != 0
    assert "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items" in refused.stderr
    cluster.kubectl("scale", "ct", "nightly", "--replicas=4")

    cluster.stop()
    cluster.start()
    got = json.loads(cluster.kubectl("get", "ct", "nightly", "-o", "json").stdout)
    assert got["spec"] == {"cronSpec": "0 3 * * *", "image": "backup:1", "tags": ["db"], "replicas": 4, "policy": "Allow"}
    table = cluster.kubectl("get", "crontabs").stdout.splitlines()
    assert table[0].split() == ["NAME", "SCHEDULE", "REPLICAS", "AGE"] and table[1].split()[:7] == ["nightly", "0", "3", "*", "*", "*", "4"]
    assert cluster.kubectl("get", "ct", "bad", check=False).returncode != 0  # the refused one was never stored
    cluster.kubectl("delete", "crd", "crontabs.stable.example.com")
    assert cluster.kubectl("get", "crontabs", check=False).returncode != 0
