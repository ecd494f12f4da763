"""``kill -9`` of the hub leader with workers attached: the standby takes over and nothing is
lost or run twice.

A manager and two worker ``mkhub dev-cluster`` s; two ``mkhub serve --kubeconfig``
replicas on the manager electing a leader over a Lease, as the hub Deployment runs; their
gRPC and webhook ports behind a :class:`service_relay.ServiceRelay` each (the Services,
which reach only the serving replica); an ``mkagent --kubeconfig`` per worker dialling the
gRPC Service. Jobs are created with ``kubectl create`` in the manager; once some run in the
workers, the leader is killed. What ran where is read from the workers' own API servers
(:class:`kube_fleet.Recorder`: every Job and pod uid they ever had), not from the hub.
"""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kube_fleet import MKHUB, REPO, DevCluster, Proc, Recorder, agent, free_port, wait_for
from service_relay import ServiceRelay
from test_kube_agent import HUB_SETUP, WORKER_OBJECTS, WORKERS, config, job, managed_by

from tests.store.kube.hubproc import FAST_LEASE, KubeHub

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("kubectl_required")]

JOBS = [f"job-{i}" for i in range(8)]  # 2 pods of 1 cpu each: 4 run at once in the fleet (4 cpu per worker)
LOST_TIMEOUT = 60.0  # the failover (Lease expiry, restore, agents back) fits well within it


@dataclass
class Failover:
    tmp: Path
    manager: DevCluster
    workers: dict[str, DevCluster]
    recorders: dict[str, Recorder]
    hubs: list[KubeHub]
    grpc: ServiceRelay
    agents: dict[str, Proc]

    def mkhub(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*MKHUB, "--server", self.grpc.address, "--insecure", *args],
                              capture_output=True, text=True, timeout=60, check=False)

    def workloads(self) -> dict[str, dict[str, Any]]:
        """The manager's Workloads by the name of the Job that owns them."""
        out = {}
        for wl in self.manager.get("workloads", "-n", "team-a")["items"]:
            for ref in wl["metadata"].get("ownerReferences") or []:
                out[ref.get("name", "")] = wl
        return out

    def finished(self) -> set[str]:
        return {name for name, wl in self.workloads().items()
                if any(c["type"] == "Finished" and c["status"] == "True" for c in (wl.get("status") or {}).get("conditions") or [])}

    def started(self) -> set[str]:
        return {name for name in JOBS if any(rec.pods_of(f"team-a/{name}") for rec in self.recorders.values())}


def register_webhook(manager: DevCluster, tmp: Path, relay: ServiceRelay) -> None:
    """manifests/base/webhook.yaml, its Service being the relay in front of both replicas."""
    webhook = yaml.safe_load((REPO / "manifests/base/webhook.yaml").read_text())
    ca = base64.b64encode((tmp / "certs" / "ca.crt").read_bytes()).decode()
    for hook in webhook["webhooks"]:
        hook["clientConfig"] = {"url": f"https://{relay.address}{hook['clientConfig']['service']['path']}", "caBundle": ca}
    manager.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(webhook))


@pytest.fixture
def failover(tmp_path: Path) -> Iterator[Failover]:
    workers = {name: DevCluster(tmp_path / name, "1s").start() for name in WORKERS}
    manager = DevCluster(tmp_path / "manager", "1s").start()
    recorders = {name: Recorder(name, dc).start() for name, dc in workers.items()}
    relays: list[ServiceRelay] = []
    hubs: list[KubeHub] = []
    agents: dict[str, Proc] = {}
    try:
        for dc in workers.values():
            dc.kubectl("apply", "-f", "-", stdin=WORKER_OBJECTS)
        certs = subprocess.run([*MKHUB, "certs", "--out", str(tmp_path / "certs")], capture_output=True, text=True,
                               timeout=60, check=False)
        assert certs.returncode == 0, certs.stderr
        (tmp_path / "config.yaml").write_text(config(LOST_TIMEOUT))
        webhook_ports = [free_port(), free_port()]
        for i, port in enumerate(webhook_ports):
            hubs.append(KubeHub(manager.kubeconfig, tmp_path / f"hub-{i}.log", [
                *FAST_LEASE, "--config", str(tmp_path / "config.yaml"),
                "--webhook-listen", f"127.0.0.1:{port}", "--webhook-tls-dir", str(tmp_path / "certs")]))
        grpc = ServiceRelay([h.port for h in hubs]).start()
        webhooks = ServiceRelay(webhook_ports).start()
        relays += [grpc, webhooks]
        register_webhook(manager, tmp_path, webhooks)
        manager.kubectl("apply", "-f", "-", stdin=HUB_SETUP)
        hubs[0].start().wait_serving()
        hubs[1].start().wait_log(r"waiting for the leader Lease")
        wait_for(lambda: managed_by(manager) == "kueue.x-k8s.io/multikueue", 60, "the webhook to set managedBy")
        for name, dc in workers.items():
            agents[name] = agent(name, grpc.address, dc, tmp_path / f"{name}-agent.log").start()
        f = Failover(tmp_path, manager, workers, recorders, hubs, grpc, agents)
        wait_for(lambda: all(
            any(c["type"] == "Active" and c["status"] == "True" for c in (mk.get("status") or {}).get("conditions") or [])
            for mk in manager.get("multikueueclusters")["items"]) and len(manager.get("multikueueclusters")["items"]) == 2,
            60, "both workers connected")
        yield f
    finally:
        for r in recorders.values():
            r.stop()
        for p in agents.values():
            p.kill()
        for h in hubs:
            h.kill()
        for relay in relays:
            relay.stop()
        for dc in [*workers.values(), manager]:
            dc.stop()


def test_kill_9_of_the_leader_with_workers_attached_loses_and_reruns_nothing(failover: Failover) -> None:
    f = failover
    for name in JOBS:
        f.manager.kubectl("create", "-f", "-", stdin=job(name, "4s"))
    wait_for(lambda: len(f.started()) >= 2, 90, "Jobs running in the workers")
    assert len(f.finished()) < len(JOBS)
    f.hubs[0].kill()
    f.hubs[1].wait_serving(90)  # once the dead leader's Lease expired
    wait_for(lambda: f.finished() == set(JOBS), 180, "every workload finished under the new leader")

    # From the workers' own records: each Job was created once, in one worker, and ran its two pods there.
    for name in JOBS:
        ran = {w: rec.jobs_named(f"team-a/{name}") for w, rec in f.recorders.items() if rec.jobs_named(f"team-a/{name}")}
        assert len(ran) == 1 and all(len(uids) == 1 for uids in ran.values()), f"Job {name} created more than once: {ran}"
        worker = next(iter(ran))
        assert len(f.recorders[worker].pods_of(f"team-a/{name}")) == 2, f"{name} ran other than 2 pods on {worker}"
        assert f.recorders[worker].complete(f"team-a/{name}"), f"{name} did not complete on {worker}"
        # The manager's workload names that worker, and the manager's Job mirrors its completion.
        assert f.workloads()[name]["status"].get("clusterName") == worker
    wait_for(lambda: all(any(c["type"] == "Complete" and c["status"] == "True"
                             for c in (j.get("status") or {}).get("conditions") or [])
                         for j in f.manager.get("jobs", "-n", "team-a")["items"]), 60, "the manager's Jobs Complete")
    assert not f.manager.get("pods", "-n", "team-a")["items"]  # nothing ran in the manager
    # Both replicas served the agents: the first until it died, the second after.
    assert all(n > 0 for n in f.grpc.routed.values()), f.grpc.routed
    assert "Traceback" not in f.hubs[1].log()
