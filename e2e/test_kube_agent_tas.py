"""TAS on the worker side of MultiKueue, end to end: ``mkhub serve --kubeconfig`` on a manager
``mkhub dev-cluster``, one worker ``mkhub dev-cluster --nodes blocks=2,racks=2,hosts=4`` (16 nodes
of 8 CPUs, labelled as Kueue's TAS examples read them) and its ``mkagent --kubeconfig``.

Kueue's rack-required example Job (``e2e/kueue-examples/tas``, unchanged) is created with kubectl
in the manager; the worker's agent admits its copy with a topology assignment, as the worker's
Kueue would, creates the Job there with the topology gate in its pod template, and ungates the
pods the worker's Job controller makes, each with its domain's nodeSelector: the worker's scheduler
binds every pod to a node of one rack (read from the pods' ``spec.nodeName`` and the nodes' labels)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_harness import multikueue_setup
from kube_fleet import MKHUB, REPO, DevCluster, Proc, agent, free_port, stop_all, wait_for
from test_kube_agent import webhook_args

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("kubectl_required")]

EXAMPLES = REPO / "e2e" / "kueue-examples" / "tas"
RACK, HOST = "cloud.provider.com/topology-rack", "kubernetes.io/hostname"
GATE = "kueue.x-k8s.io/topology"
CONFIG = """
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
integrations: {frameworks: [batch/job]}
"""


def manager_setup() -> str:
    """The examples' queues, the ClusterQueue behind MultiKueue (TAS in the manager waits for a worker)."""
    queues = (EXAMPLES / "sample-queues.yaml").read_text()
    queues = queues.replace("  namespaceSelector: {} # match all.", "  namespaceSelector: {}\n  admissionChecksStrategy: {admissionChecks: [{name: multikueue}]}")
    assert "admissionChecks" in queues
    return multikueue_setup(["worker-1"]) + "---\n" + queues


@pytest.fixture
def fleet(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[DevCluster, DevCluster, Proc, Proc]]:
    """The fleet; a test may pass another Kueue Configuration as its parameter."""
    worker = DevCluster(tmp_path / "worker-1", "300s")  # pods stay bound while the test reads them
    worker.cmd += ["--nodes", "blocks=2,racks=2,hosts=4"]
    manager = DevCluster(tmp_path / "manager", "300s")
    procs: list[Proc] = []
    try:
        worker.start()
        manager.start()
        worker.kubectl("apply", "-f", str(EXAMPLES / "sample-queues.yaml"))
        (tmp_path / "config.yaml").write_text(getattr(request, "param", CONFIG))
        hub_port = free_port()
        store = ["--kubeconfig", str(manager.kubeconfig), "--leader-elect", "false", *webhook_args(manager, tmp_path)]
        manager.kubectl("apply", "-f", "-", stdin=manager_setup())
        hub = Proc([*MKHUB, "serve", *store, "--listen", f"127.0.0.1:{hub_port}", "--insecure",
                    "--config", str(tmp_path / "config.yaml")], tmp_path / "hub.log").start()
        procs.append(hub)
        worker_agent = agent("worker-1", f"127.0.0.1:{hub_port}", worker, tmp_path / "agent.log").start()
        procs.append(worker_agent)
        yield manager, worker, hub, worker_agent
    finally:
        for p in procs:
            p.kill()
        stop_all([manager, worker])


def admitted_in_manager(manager: DevCluster) -> bool:
    """The probe Job of the webhook is marked for MultiKueue (the hub serves and knows the queue)."""
    dry = manager.kubectl("create", "--dry-run=server", "-o", "json", "-f", str(EXAMPLES / "sample-job-required.yaml"),
                          check=False)
    return dry.returncode == 0 and json.loads(dry.stdout)["spec"].get("managedBy") == "kueue.x-k8s.io/multikueue"


def test_a_rack_required_job_runs_in_the_worker_with_every_pod_in_one_rack(
        fleet: tuple[DevCluster, DevCluster, Proc, Proc]) -> None:
    manager, worker, hub, worker_agent = fleet
    wait_for(lambda: admitted_in_manager(manager), 60, "the hub's webhook marks the Job for MultiKueue")
    out = manager.kubectl("create", "-f", str(EXAMPLES / "sample-job-required.yaml"))
    name = out.stdout.split()[0].split("/", 1)[1]  # "job.batch/NAME created"

    def state() -> str:
        pods = worker.get("pods", "-n", "default")["items"]
        seen = Counter((bool(p["spec"].get("schedulingGates")), p["spec"].get("nodeName", ""),
                        (p["spec"].get("nodeSelector") or {}).get(HOST, "")) for p in pods)
        return (f"{hub.log()[-2000:]}\n--- agent\n{worker_agent.log()[-3000:]}\n"
                f"--- worker pods (gated, node, host selector): {sorted(seen.items())}")

    def bound() -> list[dict[str, Any]] | None:
        pods = worker.get("pods", "-n", "default", "-l", f"batch.kubernetes.io/job-name={name}")["items"]
        return pods if len(pods) == 10 and all(p["spec"].get("nodeName") for p in pods) else None

    try:
        pods: list[dict[str, Any]] = wait_for(bound, 120, f"{name}'s 10 pods bound in the worker")
    except AssertionError:
        raise AssertionError(state()) from None
    # The worker's Job carries what the worker's Kueue puts in a TAS-admitted template.
    [job] = worker.get("jobs", "-n", "default")["items"]
    template = job["spec"]["template"]
    assert GATE in {g["name"] for g in template["spec"].get("schedulingGates") or []}
    assert template["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"
    copy_name = template["metadata"]["annotations"]["kueue.x-k8s.io/workload"]
    assert copy_name == job["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"]
    # Every pod ungated into its domain, bound there: all in one rack by the nodes' labels.
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in worker.get("nodes")["items"]}
    for p in pods:
        assert GATE not in {g["name"] for g in p["spec"].get("schedulingGates") or []}
        assert p["spec"]["nodeSelector"][HOST] == p["spec"]["nodeName"]
    assert len({labels[p["spec"]["nodeName"]][RACK] for p in pods}) == 1
    # BestFit on an empty worker: the first rack, its first host filled, the other 2 on the next.
    assert Counter(p["spec"]["nodeName"] for p in pods) == {"b1-r1-h1": 8, "b1-r1-h2": 2}
    # The manager ran no pod of its own.
    assert not manager.get("pods", "-n", "default")["items"]
