"""Topology-aware scheduling in a real embedded hub, through the real CLI: a Topology, its flavor and
queues, Nodes applied as any object (``mkhub apply -f nodes.yaml``, listed by ``mkhub get nodes``), and
a rack-required Job shaped after Kueue's TAS example, admitted with all its pods in one rack."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from test_kueue_manifests import SHAPED, mkhub

from hub.api.errors import FieldErrors
from hub.api.topology_assignment import read_topology_assignment
from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubProcess]:
    with HubProcess(tmp_path_factory.mktemp("tas") / "data") as proc:
        for name in ("tas-queues.yaml", "tas-nodes.yaml"):
            code, out, err = mkhub(proc, "apply", "-f", str(SHAPED / name))
            assert code == 0 and not err, (out, err)
        yield proc


def admission(hub: HubProcess) -> Any:
    code, out, err = mkhub(hub, "get", "wl", "-n", "default", "-o", "json")
    assert code == 0, err
    items = json.loads(out)["items"]
    return (items[0].get("status") or {}).get("admission") if items else None


def test_a_rack_required_job_lands_in_one_rack(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "get", "nodes")
    assert code == 0 and len(out.splitlines()) == 13, (out, err)
    code, out, err = mkhub(hub, "create", "-f", str(SHAPED / "tas-job-required.yaml"))
    assert code == 0, err
    deadline = time.monotonic() + 30
    while (admitted := admission(hub)) is None:
        assert time.monotonic() < deadline, "the Job's Workload was never admitted"
        time.sleep(0.1)
    [psa] = admitted["podSetAssignments"]
    ta = read_topology_assignment(psa["topologyAssignment"], "", FieldErrors())
    assert ta is not None and ta.levels == ("kubernetes.io/hostname",) and ta.pod_count == 10
    racks = {values[0].rsplit("-", 1)[0] for values, _ in ta.domains}
    assert len(racks) == 1 and len(ta.domains) == 3  # 4 + 4 + 2 pods on the three hosts of one rack
