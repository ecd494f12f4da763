"""TAS for Kueue's pod integration on the worker side of MultiKueue, end to end: ``mkhub serve
--kubeconfig`` on a manager ``mkhub dev-cluster`` with the ``pod`` framework, one worker ``mkhub
dev-cluster --nodes blocks=2,racks=2,hosts=4`` (16 nodes of 8 CPUs labelled as Kueue's TAS examples
read them) and its ``mkagent --kubeconfig``.

A pod group of three rack-required Pods is created with kubectl in the manager; the worker's agent
admits its copy with a topology assignment and creates the Pods there as the worker's Kueue would
have them: Kueue's admission gate gone, the topology gate kept, the Workload's and pod set's names
in; then ungates each with its domain's nodeSelector, and the worker's scheduler binds every Pod to
a node of one rack (read from the Pods' ``spec.nodeName`` and the nodes' labels)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import test_kube_agent_tas
import yaml
from kube_fleet import DevCluster, Proc, wait_for
from test_kube_agent_tas import GATE, HOST, RACK, admitted_in_manager

fleet = test_kube_agent_tas.fleet  # the fixture, shared

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("kubectl_required")]

CONFIG = """
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
integrations: {frameworks: [batch/job, pod]}
"""


def group_pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "labels": {"kueue.x-k8s.io/queue-name": "tas-user-queue", "kueue.x-k8s.io/pod-group-name": "trio"},
                         "annotations": {"kueue.x-k8s.io/pod-group-total-count": "3",
                                         "kueue.x-k8s.io/podset-required-topology": RACK}},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "3"}}}]}}


@pytest.mark.parametrize("fleet", [CONFIG], indirect=True)
def test_a_rack_required_pod_group_runs_in_the_worker_with_every_pod_in_one_rack(
        fleet: tuple[DevCluster, DevCluster, Proc, Proc]) -> None:  # noqa: F811 (the fixture)
    manager, worker, hub, worker_agent = fleet
    wait_for(lambda: admitted_in_manager(manager), 60, "the hub's webhook serves the queue")
    names = [f"trio-{i}" for i in range(3)]
    manager.kubectl("create", "-f", "-", stdin=yaml.safe_dump_all([group_pod(n) for n in names]))

    def bound() -> list[dict[str, Any]] | None:
        pods = [p for p in worker.get("pods", "-n", "default")["items"] if p["metadata"]["name"] in names]
        return pods if len(pods) == 3 and all(p["spec"].get("nodeName") for p in pods) else None

    try:
        pods: list[dict[str, Any]] = wait_for(bound, 120, "the group's 3 Pods bound in the worker")
    except AssertionError:
        seen = [(p["metadata"]["name"], p["spec"].get("schedulingGates"), p["spec"].get("nodeSelector"))
                for p in worker.get("pods", "-n", "default")["items"]]
        raise AssertionError(f"{hub.log()[-2000:]}\n--- agent\n{worker_agent.log()[-3000:]}\n--- worker pods {seen}") from None
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in worker.get("nodes")["items"]}
    for p in pods:
        assert GATE not in {g["name"] for g in p["spec"].get("schedulingGates") or []}
        assert p["spec"]["nodeSelector"][HOST] == p["spec"]["nodeName"]  # the ungater's domain, not the scheduler's pick
        assert p["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == "trio"
        assert p["metadata"]["labels"]["kueue.x-k8s.io/podset"] == p["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"]
    assert len({labels[p["spec"]["nodeName"]][RACK] for p in pods}) == 1
    # BestFit on an empty worker: the first rack, two 3-CPU pods on its first 8-CPU host, one on the next.
    assert Counter(p["spec"]["nodeName"] for p in pods) == {"b1-r1-h1": 2, "b1-r1-h2": 1}
    # The manager's Pods stay gated: they never run there.
    for name in names:
        assert manager.get("pod", name, "-n", "default")["spec"].get("schedulingGates")
