"""``mkhub demo --kubernetes``: MultiKueue on three Kubernetes API servers, driven with kubectl.

Three ``mkhub dev-cluster`` processes (the manager, worker-1, worker-2), Kueue's CRDs and the
samples of ``manifests/samples/multikueue`` applied to each with the real ``kubectl``; the hub
on the manager's API server (``mkhub serve --kubeconfig``, mutual TLS to the agents) and one
``mkagent --kubeconfig`` per worker on that worker's API server. A burst of GPU Jobs is
created in the manager with ``kubectl create`` (``spec.managedBy: kueue.x-k8s.io/multikueue``:
the manager never runs them); each is admitted by the hub, copied to both workers, run by
one of them. Progress is read from the three API servers with kubectl. At the end the
commands to look around in each cluster are printed; ``--keep`` keeps everything running
until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

import yaml

from hub.service.crdgen import write_crds
from hub.service.webhook import webhook_configuration

from .processes import MKAGENT, MKHUB, free_port
from .run import SAMPLES, DemoError, Interrupted, JobPlan, _interrupt, condition, owner_job, plan_jobs

WORKERS = ("worker-1", "worker-2")
MANAGED_BY = "kueue.x-k8s.io/multikueue"
START_TIMEOUT = 60.0
# The workers' nodes: the a100 flavor's node label, so the dev-cluster's scheduler places the pods.
WORKER_NODES = {"nodes": [
    {"name": f"gpu-node-{i}", "labels": {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}} for i in (1, 2)
]}


class Child:
    """One child process with its log file."""

    def __init__(self, name: str, argv: list[str], log: Path) -> None:
        self.name = name
        self.argv = argv
        self.log_path = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Child:
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_log(self, text: str, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log():
            if not self.alive():
                raise DemoError(f"{self.name} exited before {text!r}", self.name)
            if time.monotonic() > deadline:
                raise DemoError(f"{self.name}: no {text!r} within {timeout:.0f}s", self.name)
            time.sleep(0.2)

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


class JobWatch:
    """Every Job a worker's API server ever had, from its watch (a Job is deleted once its
    Workload is finished in the hub, so a poll could miss short ones)."""

    def __init__(self, worker: str, server: str, seen: dict[str, set[str]], lock: threading.Lock) -> None:
        self.worker = worker
        self.server = server
        self.seen = seen
        self.lock = lock
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._follow, name=f"watch-{worker}", daemon=True)

    def _follow(self) -> None:
        while not self.stop.is_set():
            try:
                with urllib.request.urlopen(f"{self.server}/apis/batch/v1/jobs?watch=1", timeout=5) as resp:
                    for raw in resp:
                        if self.stop.is_set():
                            return
                        meta = ((json.loads(raw) if raw.strip() else {}).get("object") or {}).get("metadata") or {}
                        if meta.get("uid"):
                            with self.lock:
                                key = f"{meta.get('namespace')}/{meta.get('name')}"
                                self.seen.setdefault(key, set()).add(f"{self.worker}/{meta['uid']}")
            except (OSError, ValueError):
                time.sleep(0.2)


class KubeDemo:
    def __init__(self, args: argparse.Namespace, out: TextIO = sys.stdout) -> None:
        self.jobs: int = args.jobs
        self.keep: bool = args.keep
        self.seed: int = args.seed
        self.samples: Path = args.manifests or SAMPLES
        self.out = out
        self.workdir = Path(tempfile.mkdtemp(prefix="mkhub-kube-demo-"))
        self.children: dict[str, Child] = {}
        self.seen: dict[str, set[str]] = {}  # namespace/job -> worker/uid of each Job the workers' API servers had
        self.seen_lock = threading.Lock()
        self.watches: list[JobWatch] = []
        self.ports: dict[str, int] = {}
        self.t0 = time.monotonic()
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            raise DemoError("kubectl is not on PATH (mkhub demo --kubernetes drives the clusters with it)")
        self.kubectl_bin = kubectl

    # --- output

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def step(self, text: str) -> None:
        self.say(f"[{time.monotonic() - self.t0:5.1f}s] {text}")

    # --- clusters

    def kubeconfig(self, cluster: str) -> Path:
        return self.workdir / cluster / "kubeconfig"

    def kubectl(self, cluster: str, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run([self.kubectl_bin, "--kubeconfig", str(self.kubeconfig(cluster)), *args], input=stdin,
                              capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise DemoError(f"kubectl {' '.join(args)} in {cluster}: {done.stderr.strip()}", cluster)
        return done.stdout

    def get(self, cluster: str, resource: str) -> list[dict[str, Any]]:
        return list(json.loads(self.kubectl(cluster, "get", resource, "-A", "-o", "json"))["items"])

    def start_clusters(self) -> None:
        nodes = self.workdir / "worker-nodes.yaml"
        nodes.write_text(yaml.safe_dump(WORKER_NODES))
        for cluster in ("manager", *WORKERS):
            port = self.ports[cluster] = free_port()
            extra = [] if cluster == "manager" else ["--nodes", str(nodes)]
            self.children[cluster] = Child(cluster, [
                *MKHUB, "dev-cluster", "--data-dir", str(self.workdir / cluster), "--listen", f"127.0.0.1:{port}", *extra,
            ], self.workdir / f"{cluster}.log").start()
        for cluster in ("manager", *WORKERS):
            self.children[cluster].wait_log("mkhub dev-cluster: Kubernetes API on")
        for worker in WORKERS:
            watch = JobWatch(worker, f"http://127.0.0.1:{self.ports[worker]}", self.seen, self.seen_lock)
            watch.thread.start()
            self.watches.append(watch)
        self.step(f"3 API servers (mkhub dev-cluster): manager :{self.ports['manager']}, "
                  + ", ".join(f"{w} :{self.ports[w]}" for w in WORKERS))
        crds = self.workdir / "crds"
        write_crds(crds)  # manifests/crds/, generated here too: a wheel does not ship them
        for cluster in ("manager", *WORKERS):
            self.kubectl(cluster, "apply", "-f", str(crds))
        self.kubectl("manager", "apply", "-f", str(self.samples / "hub.yaml"))
        for i, worker in enumerate(WORKERS, 1):
            self.kubectl(worker, "apply", "-f", str(self.samples / f"worker-{i}.yaml"))
        self.step("kubectl apply: Kueue's CRDs everywhere; the manager's queues and MultiKueue objects "
                  f"({self.samples / 'hub.yaml'}), each worker's own queues")

    def start_hub_and_agents(self) -> None:
        certs = self.workdir / "certs"
        subprocess.run([*MKHUB, "certs", "--out", str(certs), *[a for w in WORKERS for a in ("--agent", w)]],
                       check=True, capture_output=True, timeout=60)
        hub_port = self.ports["hub"] = free_port()
        webhook_port = free_port()
        self.children["hub"] = Child("hub", [
            *MKHUB, "serve", "--kubeconfig", str(self.kubeconfig("manager")), "--tls-dir", str(certs),
            "--listen", f"127.0.0.1:{hub_port}", "--lease-namespace", "default",
            "--webhook-listen", f"127.0.0.1:{webhook_port}",
        ], self.workdir / "hub.log").start()
        self.children["hub"].wait_log("state restored; serving")
        self.kubectl("manager", "apply", "-f", "-", stdin=yaml.safe_dump(webhook_configuration(webhook_port, certs)))
        self.step(f"the hub on the manager's API server (mkhub serve --kubeconfig), gRPC :{hub_port}, mTLS; "
                  f"its Job webhook :{webhook_port} registered in the manager")
        for worker in WORKERS:
            self.children[f"agent-{worker}"] = Child(f"agent-{worker}", [
                *MKAGENT, "--hub", f"127.0.0.1:{hub_port}", "--cluster", worker, "--tls-dir",
                str(certs / "agents" / worker), "--kubeconfig", str(self.kubeconfig(worker)),
            ], self.workdir / f"agent-{worker}.log").start()
        for worker in WORKERS:
            self.children[f"agent-{worker}"].wait_log("connected to hub")
        self.step(f"agents connected: {', '.join(WORKERS)} (mkagent --kubeconfig, each on its worker's API server)")

    # --- the burst

    def manifests(self, plans: list[JobPlan]) -> str:
        docs = []
        for plan in plans:
            doc = plan.manifest()
            doc["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.k8s.io/e2e-test-images/agnhost:2.53"
            docs.append(doc)
        return yaml.safe_dump_all(docs)

    def progress(self, total: int) -> tuple[int, int, Counter[str]]:
        workloads = [w for w in self.get("manager", "workloads") if owner_job(w)]
        admitted = sum(1 for w in workloads if condition(w, "Admitted"))
        finished = sum(1 for w in workloads if condition(w, "Finished"))
        running: Counter[str] = Counter()
        for worker in WORKERS:
            for job in self.get(worker, "jobs"):
                status = job.get("status") or {}
                if int(status.get("active") or 0) > 0:
                    running[worker] += 1
        line = (f"admitted {admitted:>3}/{total}  finished {finished:>3}/{total}  running: "
                + ", ".join(f"{w} {running[w]}" for w in WORKERS))
        self.step(line)
        return admitted, finished, running

    def burst(self, plans: list[JobPlan], timeout: float) -> None:
        self.kubectl("manager", "create", "-f", "-", stdin=self.manifests(plans))
        managed = sum(1 for j in self.get("manager", "jobs") if (j.get("spec") or {}).get("managedBy") == MANAGED_BY)
        self.step(f"kubectl create: {len(plans)} GPU Jobs in the manager (team-a, team-b; 1-4 GPUs); the webhook "
                  f"gave {managed} of them spec.managedBy: {MANAGED_BY}")
        deadline = time.monotonic() + timeout
        while True:
            for child in self.children.values():
                if not child.alive():
                    raise DemoError(f"{child.name} exited", child.name)
            _, finished, _ = self.progress(len(plans))
            if finished >= len(plans):
                return
            if time.monotonic() > deadline:
                raise DemoError(f"{len(plans) - finished} of {len(plans)} jobs did not finish within {timeout:.0f}s", "hub")
            time.sleep(1.0)

    def summary(self, plans: list[JobPlan]) -> int:
        # What the workers' API servers had while the burst ran (an agent deletes its Job once the
        # hub's Workload is finished): one Job, in one worker, per manager Job.
        with self.seen_lock:
            seen = {k: set(v) for k, v in self.seen.items()}
        # A Job whose Workload was preempted in the manager is deleted in its worker and runs again
        # once readmitted (as with Kueue): more than one Job for it is expected, one after the other.
        preempted = {f"{w['metadata']['namespace']}/{owner_job(w)}" for w in self.get("manager", "workloads")
                     if any(c.get("reason") == "Preempted" for c in (w.get("status") or {}).get("conditions") or [])}
        ran = Counter(sorted(ws)[-1].split("/")[0] for ws in seen.values())
        restarted = sorted(k for k, ws in seen.items() if len(ws) > 1 and k in preempted)
        twice = sorted(k for k, ws in seen.items() if len(ws) > 1 and k not in preempted)
        complete = sum(1 for j in self.get("manager", "jobs")
                       if any(c.get("type") == "Complete" and c.get("status") == "True"
                              for c in (j.get("status") or {}).get("conditions") or []))
        self.say()
        missing = sorted(f"{p.team}/{p.name}" for p in plans if f"{p.team}/{p.name}" not in seen)
        if missing:
            self.say(f"finished in the manager but never created in a worker: {missing}")
            return 1
        self.say(f"All {len(plans)} jobs finished: " + ", ".join(f"{ran[w]} ran on {w}" for w in WORKERS)
                 + f"; {complete} show Complete in the manager"
                 + (f"; {len(restarted)} preempted and run again" if restarted else "")
                 + (f"; ran twice: {twice}" if twice else "; none ran twice"))
        return 1 if twice else 0

    def look_around(self) -> None:
        manager, w1 = self.kubeconfig("manager"), self.kubeconfig("worker-1")
        certs = self.workdir / "certs"
        self.say()
        self.say("Look around (each cluster is a Kubernetes API server; kubectl works as with Kueue):")
        self.say(f"  export KUBECONFIG={manager}")
        self.say("  kubectl get jobs,workloads -A                     # the manager: Jobs and their Workloads")
        self.say("  kubectl get clusterqueues,multikueueclusters       # quotas, the workers' connectivity")
        for worker in WORKERS:
            self.say(f"  kubectl --kubeconfig {self.kubeconfig(worker)} get jobs,pods,workloads -A   # {worker}")
        self.say(f"  mkhub logs job/gpu-001 -n team-a --server 127.0.0.1:{self.ports['hub']} --tls-dir {certs}")
        self.say(f"  kubectl --kubeconfig {w1} get workloads -A -L kueue.x-k8s.io/multikueue-origin")
        self.say(f"Logs and state: {self.workdir}")

    def run(self) -> int:
        self.say(f"mkhub demo --kubernetes: {self.jobs} GPU jobs through a manager and {len(WORKERS)} worker clusters")
        self.start_clusters()
        self.start_hub_and_agents()
        plans = plan_jobs(self.jobs, self.seed)
        self.burst(plans, timeout=60 + 5 * self.jobs)
        code = self.summary(plans)
        self.look_around()
        if self.keep:
            self.keep_running()
        return code

    def keep_running(self) -> None:
        """``--keep``: run until Ctrl-C. A process that exits (an agent killed to rehearse an
        outage, say) is reported once; the others keep running."""
        self.say("Running until Ctrl-C (--keep). Stop an agent, a worker cluster or the hub to rehearse an outage:")
        self.say("the rest keep running.")
        gone: set[str] = set()
        while len(gone) < len(self.children):
            for name, child in self.children.items():
                if name not in gone and not child.alive():
                    gone.add(name)
                    code = child.proc.returncode if child.proc is not None else None
                    self.say(f"{name} exited (code {code}); the others keep running. Its log: {child.log_path}")
            time.sleep(0.5)
        raise DemoError("every process of the demo has exited")

    def close(self, failed: bool) -> None:
        for watch in self.watches:
            watch.stop.set()
        for name in [n for n in self.children if n not in ("manager", *WORKERS)] + ["manager", *WORKERS]:
            child = self.children.get(name)
            if child is not None:
                child.stop()
        if failed or self.keep:
            self.say(f"logs kept in {self.workdir}")
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def report(self, err: DemoError) -> None:
        self.say(f"error: {err}")
        child = self.children.get(err.process or "")
        if child is not None:
            tail = "\n".join(child.log().splitlines()[-15:])
            self.say(f"--- end of {child.log_path}:\n{tail}")


def main(args: argparse.Namespace) -> int:
    """``mkhub demo --kubernetes`` (options parsed by hub.cli)."""
    if args.jobs < 1:
        print("error: --jobs must be at least 1", file=sys.stderr)
        return 2
    # Installed for SIGINT too: a shell may start the demo with SIGINT ignored (a background job).
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, _interrupt) for sig in signals}
    try:
        return run_kube_demo(args)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_kube_demo(args: argparse.Namespace) -> int:
    try:
        demo = KubeDemo(args)
    except DemoError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    failed = True
    try:
        code = demo.run()
        failed = code != 0
        return code
    except DemoError as err:
        demo.report(err)
        return 1
    except (KeyboardInterrupt, Interrupted):
        demo.say("interrupted: stopping the clusters, the hub and the agents")
        failed = False
        return 130
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # stopping the children is not interruptible
            signal.signal(sig, signal.SIG_IGN)
        demo.close(failed)
