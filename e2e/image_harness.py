"""What the image runs, run here: the hub and agent Deployments' commands (as kustomize renders
the manager and worker overlays) with their addresses and mounted paths moved to this machine.

No base image can be pulled here, so the container itself is not built; its contents are the
installed wheel (see the Dockerfile), and ``bin_dir`` is where that installation's ``mkhub``
and ``mkagent`` are: the checkout's virtualenv, or a fresh one the wheel went into
(e2e/test_wheel.py).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hub.demo.processes import free_port
from tests.store.kube.harness import start_dev_cluster

ROOT = Path(__file__).resolve().parents[1]
KUBECTL = "/usr/bin/kubectl"


def prepare_manifests(out: Path, mkhub: list[str]) -> Path:
    """A copy of manifests/ with the certificates the overlays' comments say to write."""
    shutil.copytree(ROOT / "manifests", out, ignore=shutil.ignore_patterns("certs"))
    certs = out / "overlays" / "manager" / "certs"
    subprocess.run([*mkhub, "certs", "--out", str(certs), "--agent", "worker-1", "--hub-name",
                    "mkhub-hub.mkhub-system.svc", "--hub-name", "mkhub-hub-webhook.mkhub-system.svc",
                    "--hub-name", "mkhub-visibility.mkhub-system.svc"],
                   check=True, capture_output=True)
    shutil.copytree(certs, out / "overlays" / "standalone" / "certs")
    shutil.copytree(certs / "agents" / "worker-1", out / "overlays" / "worker" / "certs")
    return out


def containers(overlay: Path) -> dict[str, dict[str, Any]]:
    """Deployment name -> its (first) container, as ``kubectl kustomize`` renders the overlay."""
    rendered = subprocess.run([KUBECTL, "kustomize", str(overlay)], capture_output=True, text=True, check=True,
                              timeout=60).stdout
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0]
            for d in yaml.safe_load_all(rendered) if isinstance(d, dict) and d.get("kind") == "Deployment"}


def localize(argv: list[str], moves: dict[str, str | None]) -> list[str]:
    """``--flag=value`` arguments replaced by ``moves[--flag]`` (None drops the flag); every flag
    named in ``moves`` must be there, so a changed Deployment cannot slip through untested."""
    out, seen = [], set()
    for arg in argv:
        flag = arg.split("=", 1)[0]
        if flag in moves:
            seen.add(flag)
            if moves[flag] is not None:
                out.append(str(moves[flag]))
            continue
        out.append(arg)
    missing = set(moves) - seen
    assert not missing, f"the Deployment no longer passes {sorted(missing)}: {argv}"
    return out


def probe(port: int, service: str) -> int:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(  # type: ignore[no-untyped-call]
                health_pb2.HealthCheckRequest(service=service), timeout=2)
        except grpc.RpcError:
            return -1
    return int(reply.status)


def admission_review(port: int, ca: Path) -> dict[str, Any]:
    """What the API server sends the Job webhook for a queued Job's CREATE (HTTPS, the hub's certificate)."""
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "gpu-queue"}},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "review-1", "kind": {"group": "batch", "version": "v1", "kind": "Job"},
        "resource": {"group": "batch", "version": "v1", "resource": "jobs"}, "operation": "CREATE",
        "namespace": "team-a", "name": "j", "object": job, "dryRun": False}}
    context = ssl.create_default_context(cafile=str(ca))
    request = urllib.request.Request(f"https://127.0.0.1:{port}/mutate-batch-v1-job", data=json.dumps(review).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10, context=context) as resp:
        return dict(json.load(resp))


def reach_visibility(kube: list[str], port: int, hub: Proc) -> None:
    """The overlay's visibility APIService, its caBundle as the overlay set it, reached through the
    dev-cluster's aggregator: its Service made an ExternalName for this machine (no Service network)."""
    for args in (["patch", "service", "mkhub-visibility", "-n", "mkhub-system", "--type", "merge", "-p",
                  '{"spec":{"type":"ExternalName","externalName":"127.0.0.1","selector":null}}'],
                 *(["patch", "apiservice", f"{v}.visibility.kueue.x-k8s.io", "--type", "merge", "-p",
                    json.dumps({"spec": {"service": {"port": port}}})] for v in ("v1beta2", "v1beta1"))):
        done = subprocess.run([KUBECTL, *kube, *args], capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr

    last = [""]

    def pending() -> bool:
        out = subprocess.run([KUBECTL, *kube, "get", "--raw",
                              "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/team-a-cq/pendingworkloads"],
                             capture_output=True, text=True, timeout=60, check=False)
        if out.returncode != 0:
            status = subprocess.run([KUBECTL, *kube, "get", "apiservice", "v1beta2.visibility.kueue.x-k8s.io", "-o",
                                     "jsonpath={.status}"], capture_output=True, text=True, timeout=60, check=False)
            last[0] = f"{out.stderr.strip()} {status.stdout}"
        return out.returncode == 0 and json.loads(out.stdout)["kind"] == "PendingWorkloadsSummary"

    try:
        hub.wait_for("the visibility API through its APIService", pending)
    except AssertionError as exc:
        raise AssertionError(f"{last[0]}\n{exc}") from None


@dataclass
class Proc:
    proc: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, what: str, check: Any, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert self.proc.poll() is None, f"exited ({self.proc.returncode}) before {what}:\n{self.text()[-3000:]}"
            assert time.monotonic() < deadline, f"no {what} within {timeout}s:\n{self.text()[-3000:]}"
            time.sleep(0.2)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return int(self.proc.returncode)


def start(argv: list[str], bin_dir: Path, log: Path, cwd: Path) -> Proc:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("MKHUB_")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(bin_dir / argv[0]), *argv[1:]], cwd=cwd, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    return Proc(proc, log)


def run_the_deployments(bin_dir: Path, tmp: Path) -> None:
    """The manager overlay applied to a dev-cluster; its hub Deployment's command run against it
    until its readiness probe passes and /metrics answers; the worker overlay and the worker's
    queues applied to a second dev-cluster, and the agent Deployment's command run against it
    until it is connected to that hub. Both stop cleanly on SIGTERM."""
    mkhub = [str(bin_dir / "mkhub")] if (bin_dir / "mkhub").exists() else [sys.executable, "-m", "hub.cli"]
    manifests = prepare_manifests(tmp / "manifests", mkhub)
    api = start_dev_cluster(tmp / "cluster")
    worker_api = start_dev_cluster(tmp / "worker-cluster")
    procs: list[Proc] = []
    try:
        kube = ["--kubeconfig", str(api.kubeconfig)]
        for args in (["apply", "-k", str(manifests / "overlays" / "manager")],
                     ["apply", "-f", str(manifests / "samples" / "multikueue" / "hub.yaml")]):
            done = subprocess.run([KUBECTL, *kube, *args], capture_output=True, text=True, timeout=120, check=False)
            assert done.returncode == 0, done.stderr

        hub = containers(manifests / "overlays" / "manager")["mkhub-hub"]
        grpc_port, metrics_port, health_port, webhook_port = free_port(), free_port(), free_port(), free_port()
        visibility_port = free_port()
        config = manifests / "overlays" / "manager" / "config.yaml"
        hub_argv = localize([*hub["command"], *hub["args"]], {
            "--in-cluster": f"--kubeconfig={api.kubeconfig}",  # the service account's API server
            "--listen": f"--listen=127.0.0.1:{grpc_port}",
            "--metrics-listen": f"--metrics-listen=127.0.0.1:{metrics_port}",
            "--health-listen": f"--health-listen=127.0.0.1:{health_port}",
            "--webhook-listen": f"--webhook-listen=127.0.0.1:{webhook_port}",
            "--visibility-listen": f"--visibility-listen=127.0.0.1:{visibility_port}",
            "--tls-dir": f"--tls-dir={manifests / 'overlays' / 'manager' / 'certs'}",  # the Secret's mount
            "--config": f"--config={config}",  # the ConfigMap's mount
        })
        assert hub_argv[:2] == ["mkhub", "serve"] and "--leader-elect=true" in hub_argv, hub_argv
        hub_proc = start(hub_argv, bin_dir, tmp / "hub.log", tmp)
        procs.append(hub_proc)
        probes = {p["grpc"].get("service", ""): p["grpc"]["port"] for p in (hub["livenessProbe"], hub["readinessProbe"])}
        assert probes == {"liveness": 8081, "": 8081}
        hub_proc.wait_for("the readiness probe passing", lambda: probe(health_port, "") == health_pb2.HealthCheckResponse.SERVING)
        assert probe(health_port, "liveness") == health_pb2.HealthCheckResponse.SERVING
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as resp:
            assert b"# TYPE" in resp.read()
        certs = manifests / "overlays" / "manager" / "certs"
        review = admission_review(webhook_port, certs / "ca.crt")
        assert review["response"]["uid"] == "review-1" and review["response"]["allowed"] is True, review
        patch = json.loads(base64.b64decode(review["response"]["patch"]))
        assert {"op": "replace", "path": "/spec/suspend", "value": True} in patch or \
            {"op": "add", "path": "/spec/suspend", "value": True} in patch, patch
        reach_visibility(kube, visibility_port, hub_proc)
        lease = subprocess.run([KUBECTL, *kube, "get", "lease", "mkhub-hub-leader", "-n", "mkhub-system", "-o", "json"],
                               capture_output=True, text=True, timeout=60, check=True)
        assert json.loads(lease.stdout)["spec"]["holderIdentity"]

        worker = manifests / "overlays" / "worker"
        worker_kube = ["--kubeconfig", str(worker_api.kubeconfig)]
        for args in (["apply", "-k", str(worker)],
                     ["apply", "-f", str(manifests / "samples" / "multikueue" / "worker-1.yaml")]):
            done = subprocess.run([KUBECTL, *worker_kube, *args], capture_output=True, text=True, timeout=120, check=False)
            assert done.returncode == 0, done.stderr
        agent = containers(worker)["mkhub-agent"]
        agent_argv = localize([*agent["command"], *agent["args"]], {
            "--in-cluster": f"--kubeconfig={worker_api.kubeconfig}",  # the service account's API server
            "--hub": f"--hub=127.0.0.1:{grpc_port}",
            "--tls-dir": f"--tls-dir={worker / 'certs'}",  # the Secret's mount
            "--metrics-listen": f"--metrics-listen=127.0.0.1:{free_port()}",
        })
        assert agent_argv[0] == "mkagent" and "--cluster=worker-1" in agent_argv, agent_argv
        agent_proc = start(agent_argv, bin_dir, tmp / "agent.log", tmp)
        procs.append(agent_proc)
        agent_proc.wait_for("the agent connected to the hub", lambda: "connected to hub" in agent_proc.text())
        assert agent_proc.stop() == 0, agent_proc.text()[-3000:]
        assert hub_proc.stop() == 0, hub_proc.text()[-3000:]
    finally:
        for proc in procs:
            proc.stop()
        api.stop()
        worker_api.stop()
