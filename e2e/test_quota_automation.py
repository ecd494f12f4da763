"""``quotaManagement: Automated`` on real processes: ``mkhub serve`` and one ``mkagent`` whose
ClusterQueue has 8 cpu. Turning the MultiKueueConfig to Automated sets the manager
ClusterQueue's quota to the worker's at once, without waiting for the worker to report
anything new (an idle worker never does)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_give_up import HUB, queues

from hub.demo.processes import AgentProcess, HubProcess

pytestmark = pytest.mark.timeout(120)

AUTOMATED = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {name: fleet}
spec: {clusters: [worker-1], quotaManagement: Automated}
"""


def test_automated_quota_applies_when_the_config_does(tmp_path: Path) -> None:
    (tmp_path / "worker.yaml").write_text(queues(8))
    hub = HubProcess(tmp_path / "hub", log_path=tmp_path / "hub.log").start()
    agent = AgentProcess("worker-1", hub.address, tmp_path / "worker.yaml", log_path=tmp_path / "agent.log").start()
    try:
        with hub.channel() as channel:
            client = hub.client(channel)
            assert not client.apply(HUB).rejected  # the manager's cq: 16 cpu, set by hand
            deadline = time.monotonic() + 60
            while not ((client.get("MultiKueueCluster", "worker-1").get("status") or {}).get("fleet") or {}).get("quota"):
                assert time.monotonic() < deadline, hub.log()[-3000:]
                time.sleep(0.2)

            def nominal() -> str:
                cq = client.get("ClusterQueue", "cq")
                return str(cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"])

            assert nominal() == "16"
            assert not client.apply(AUTOMATED).rejected
            deadline = time.monotonic() + 30
            while nominal() != "8":
                assert time.monotonic() < deadline, f"still {nominal()}\n{hub.log()[-3000:]}"
                time.sleep(0.2)
    finally:
        agent.terminate()
        hub.terminate()
