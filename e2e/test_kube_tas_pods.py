"""Topology-aware scheduling on Kubernetes, end to end: Kueue's TAS example files
(``e2e/kueue-examples/tas``, unchanged) through ``kubectl`` against ``mkhub dev-cluster --nodes
blocks=2,racks=2,hosts=4`` (16 nodes of 8 CPUs, labelled as the examples' Topology reads them), the
hub's webhooks registered and ``mkhub serve --kubeconfig`` on it.

Each Job is admitted with the topology assignment Kueue's BestFit gives on what is free then; its
pods are created by the dev-cluster's Job controller with the topology gate (from the admitted
template), ungated by the hub each with its domain's nodeSelector, and bound by the dev-cluster's
scheduler: every pod sits on the node its assignment counted it on, so the rack-required Job's pods
are all in one rack (read from the pods' ``spec.nodeName`` and the nodes' labels). A pod Kueue does
not manage, bound to a node, takes that node's room from the next placement."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from test_kube_jobs import kubectl, wait_for

from hub.api.errors import FieldErrors
from hub.api.topology_assignment import read_topology_assignment
from hub.demo.processes import free_port
from tests.store.kube.harness import ApiServer, _server_of, register_job_webhook
from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "e2e" / "kueue-examples" / "tas"
BLOCK, RACK, HOST = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack", "kubernetes.io/hostname"
GATE = "kueue.x-k8s.io/topology"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, KubeHub]]:
    yield from tas_cluster(tmp_path_factory.mktemp("tas-kube"))


def tas_cluster(base: Path, hub_args: Sequence[str] = ()) -> Iterator[tuple[Path, KubeHub]]:
    """The dev-cluster with the examples' queues and the hub on it (with ``hub_args`` too), in ``base``, until closed."""
    data = base / "cluster"
    data.mkdir()
    log = (base / "dev-cluster.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hub.cli", "dev-cluster", "--data-dir", str(data), "--listen", "127.0.0.1:0",
         "--nodes", "blocks=2,racks=2,hosts=4", "--sim-duration", "600s"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while not (data / "kubeconfig").exists():
        assert proc.poll() is None and time.monotonic() < deadline, f"mkhub dev-cluster did not start: {log.name}"
        time.sleep(0.05)
    api = ApiServer(data / "kubeconfig", _server_of(data / "kubeconfig"), proc)
    hub: KubeHub | None = None
    try:
        kc = api.kubeconfig
        certs = subprocess.run([sys.executable, "-m", "hub.cli", "certs", "--out", str(base / "certs")],
                               cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert certs.returncode == 0, certs.stderr
        port = free_port()
        register_job_webhook(kc, base / "certs", port)
        out = kubectl(kc, "apply", "-f", str(ROOT / "manifests/crds"))
        assert out.returncode == 0, out.stderr
        hub = KubeHub(kc, base / "hub.log", extra_args=[
            "--lease-duration", "3s", "--renew-deadline", "2s", "--retry-period", "0.5s",
            "--webhook-listen", f"127.0.0.1:{port}", "--webhook-tls-dir", str(base / "certs"), *hub_args]).start()
        hub.wait_serving()
        out = kubectl(kc, "apply", "-f", str(EXAMPLES / "sample-queues.yaml"))
        assert out.returncode == 0, out.stderr
        yield kc, hub
    finally:
        if hub is not None:
            hub.kill()
        api.stop()


def items(kc: Path, *what: str) -> list[dict[str, Any]]:
    out = kubectl(kc, "get", *what, "-o", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["items"]  # type: ignore[no-any-return]


def node_labels(kc: Path) -> dict[str, dict[str, str]]:
    return {n["metadata"]["name"]: n["metadata"]["labels"] for n in items(kc, "nodes")}


def create(kc: Path, example: str) -> str:
    out = kubectl(kc, "create", "-f", str(EXAMPLES / example))
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[0].split("/", 1)[1]  # "job.batch/NAME created"


def admitted_assignment(kc: Path, hub: KubeHub, job: str) -> dict[tuple[str, ...], int]:
    """The Job's Workload's topology assignment once admitted: pods per domain (the levels' values)."""
    def admitted() -> dict[str, Any] | None:
        for wl in items(kc, "workloads", "-n", "default"):
            owner = (wl["metadata"].get("ownerReferences") or [{}])[0]
            if owner.get("name") == job and any(c["type"] == "Admitted" and c["status"] == "True"
                                                for c in (wl.get("status") or {}).get("conditions") or []):
                return wl
        return None

    wl = wait_for(f"{job}'s Workload admitted", admitted, log=hub.log)
    [psa] = wl["status"]["admission"]["podSetAssignments"]
    ta = read_topology_assignment(psa["topologyAssignment"], "", FieldErrors())
    assert ta is not None and ta.levels == (HOST,)  # the lowest level is the node: Kueue names hosts
    return {values: count for values, count in ta.domains}


def bound_pods(kc: Path, hub: KubeHub, job: str, count: int) -> list[dict[str, Any]]:
    """The Job's pods once all ``count`` are ungated and bound."""
    def bound() -> list[dict[str, Any]] | None:
        pods = items(kc, "pods", "-n", "default", "-l", f"batch.kubernetes.io/job-name={job}")
        done = [p for p in pods if p["spec"].get("nodeName")]
        return pods if len(pods) == count and len(done) == count else None

    def state() -> str:
        pods = items(kc, "pods", "-n", "default", "-l", f"batch.kubernetes.io/job-name={job}")
        seen = Counter((bool(p["spec"].get("schedulingGates")), p["spec"].get("nodeName", ""),
                        (p["spec"].get("nodeSelector") or {}).get(HOST, "")) for p in pods)
        return f"{hub.log()}\npods (gated, node, host selector): {sorted(seen.items())}"

    return wait_for(f"{job}'s {count} pods bound", bound, log=state)  # type: ignore[no-any-return]


NON_TAS_POD = """
apiVersion: v1
kind: Pod
metadata: {name: not-kueues, namespace: default}
spec:
  nodeSelector: {kubernetes.io/hostname: b1-r2-h4}
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "3"}}}]
"""


def on_nodes(pods: list[dict[str, Any]]) -> Counter[str]:
    return Counter(p["spec"]["nodeName"] for p in pods)


def test_kueues_tas_examples_land_where_their_assignments_say(cluster: tuple[Path, KubeHub]) -> None:
    kc, hub = cluster
    labels = node_labels(kc)
    assert len(labels) == 16

    # Rack required, 10 pods of 1 CPU on hosts of 8: BestFit takes the first rack that fits (all do),
    # fills its first host and puts the other 2 on the next (the first of the hosts that fit them).
    required = create(kc, "sample-job-required.yaml")
    assert admitted_assignment(kc, hub, required) == {("b1-r1-h1",): 8, ("b1-r1-h2",): 2}
    pods = bound_pods(kc, hub, required, 10)
    for p in pods:
        assert p["metadata"]["annotations"]["kueue.x-k8s.io/workload"]  # how the ungater found it
        assert p["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"
        assert GATE not in {g["name"] for g in p["spec"].get("schedulingGates") or []}
        assert p["spec"]["nodeSelector"] == {"cloud.provider.com/node-group": "tas-group", HOST: p["spec"]["nodeName"]}
    assert on_nodes(pods) == {"b1-r1-h1": 8, "b1-r1-h2": 2}
    assert len({labels[p["spec"]["nodeName"]][RACK] for p in pods}) == 1  # all in one rack, by the nodes' labels

    # Unconstrained, 6 pods: BestFit takes the host with the least room that holds them all, the one
    # the required Job left 6 CPUs free on.
    unconstrained = create(kc, "sample-job-unconstrained.yaml")
    assert admitted_assignment(kc, hub, unconstrained) == {("b1-r1-h2",): 6}
    assert on_nodes(bound_pods(kc, hub, unconstrained, 6)) == {"b1-r1-h2": 6}

    # Block preferred, 40 pods: the fullest block that holds them (b1, 48 CPUs free); below it Kueue
    # takes the hosts of the block's racks with the most room, in name order: the two empty hosts of
    # the rack in use, then b1-r2's first three.
    preferred = create(kc, "sample-job-preferred.yaml")
    hosts = {"b1-r1-h3": 8, "b1-r1-h4": 8, "b1-r2-h1": 8, "b1-r2-h2": 8, "b1-r2-h3": 8}
    assert admitted_assignment(kc, hub, preferred) == {(h,): n for h, n in hosts.items()}
    assert on_nodes(bound_pods(kc, hub, preferred, 40)) == hosts

    # A pod Kueue does not manage takes 3 of b1-r2-h4's 8 CPUs: the next 6-pod Job no longer fits
    # there (it would have, by the Node alone) and goes to the next host that holds it.
    out = kubectl(kc, "create", "-f", "-", stdin=NON_TAS_POD)
    assert out.returncode == 0, out.stderr
    wait_for("the pod Kueue does not manage bound", lambda: items(kc, "pods", "-n", "default",
             "--field-selector", "spec.nodeName=b1-r2-h4"), log=hub.log)
    again = create(kc, "sample-job-unconstrained.yaml")
    assert admitted_assignment(kc, hub, again) == {("b2-r1-h1",): 6}
    assert on_nodes(bound_pods(kc, hub, again, 6)) == {"b2-r1-h1": 6}
