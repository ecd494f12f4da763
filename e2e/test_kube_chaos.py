"""Chaos on Kubernetes: 200 Jobs through a hub on a dev-cluster as strict as kube-apiserver.

While the Jobs run, a loop does what users and controllers do to a busy cluster: it
relabels Jobs and Workloads (writes that move their resourceVersions under the hub,
beside the dev-cluster's Job controller, which rewrites running Jobs' status all the
time), and preempts running Jobs by deactivating their Workloads, re-activating them a
moment later. The hub is killed twice (``kill -9``) and replaced. Watching the API
server throughout: reserved quota never exceeds the ClusterQueue's, a Workload is
admitted again only after it was preempted, every Job completes and every Workload
finishes, no hub exits other than by the kills, and the hubs rebuild their engines
(a round the API server refused) at most a couple of times, not in a storm.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_kube_jobs import ROOT, kubectl, start_dev_cluster

from hub.api.quantity import resource_value
from hub.demo.processes import free_port
from hub.store.interface import StoreError
from tests.store.kube.harness import open_store, register_job_webhook
from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(400)

JOBS = 200
QUOTA = 20
KILLS_AT = (60, 130)  # finished Workloads before each kill -9
PREEMPTIONS = 20
MAX_REBUILDS = 2

QUEUES = f"""\
apiVersion: v1
kind: Namespace
metadata: {{name: team-a}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {{name: spot}}
spec:
  nodeLabels: {{pool: cpu}}
  tolerations: [{{key: spot, operator: Exists, effect: NoSchedule}}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: cluster-queue}}
spec:
  stopPolicy: Hold  # released once every Job exists (below)
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: spot
      resources: [{{name: cpu, nominalQuota: {QUOTA}}}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{name: user-queue, namespace: team-a}}
spec: {{clusterQueue: cluster-queue}}
"""


def jobs() -> str:
    docs = [{
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": f"job-{i:03d}", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"template": {
            "metadata": {"annotations": {"mkhub.dev/sim-duration": f"{1000 + (i % 4) * 500}ms"}},
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}},
    } for i in range(JOBS)]
    return yaml.safe_dump_all(docs)


def cond(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_ and c.get("status") == "True":
            return c  # type: ignore[no-any-return]
    return None


class Observer:
    """Admitted once at a time: a new admission only after a preemption; quota never exceeded."""

    def __init__(self, preempted: set[str]) -> None:
        self.preempted = preempted
        self.admitted: dict[str, str] = {}
        self.finished: set[str] = set()
        self.max_reserved = 0

    def check(self, workloads: list[dict[str, Any]]) -> int:
        reserved = 0
        for wl in workloads:
            name = wl["metadata"]["name"]
            adm, fin = cond(wl, "Admitted"), cond(wl, "Finished")
            if fin is not None:
                self.finished.add(name)
            else:
                assert name not in self.finished, f"{name} finished, then was not finished"
            if adm is not None:
                before = self.admitted.get(name)
                again = before is not None and before != adm["lastTransitionTime"]
                assert not again or name in self.preempted, f"{name} admitted twice without a preemption"
                self.admitted[name] = adm["lastTransitionTime"]
            if fin is None and cond(wl, "QuotaReserved") is not None:
                for psa in wl["status"]["admission"]["podSetAssignments"]:
                    reserved += resource_value("cpu", psa["resourceUsage"]["cpu"])
        assert reserved <= QUOTA * 1000, f"{reserved}m cpu reserved, quota {QUOTA}"
        self.max_reserved = max(self.max_reserved, reserved)
        return len(self.finished)


class Chaos(threading.Thread):
    """Relabels Jobs and Workloads, preempts running Jobs and re-activates them."""

    def __init__(self, kubeconfig: Path, preempted: set[str]) -> None:
        super().__init__(name="chaos", daemon=True)
        self.store = open_store(kubeconfig)
        self.preempted = preempted
        self.stop = threading.Event()
        self.writes = 0
        self.errors: list[str] = []

    def run(self) -> None:
        rng = random.Random(28)
        inactive: list[tuple[float, str]] = []
        n = 0
        while not self.stop.wait(0.02):
            n += 1
            try:
                kind = "Job" if n % 2 else "Workload"
                objs = self.store.list(kind, "team-a")[0]
                if objs:
                    obj = rng.choice(objs)
                    labels = {**(obj["metadata"].get("labels") or {}), "chaos.example/touched": str(n)}
                    self.store.update({**obj, "metadata": {**obj["metadata"], "labels": labels, "resourceVersion": None}})
                    self.writes += 1
                # Every round, not every 4th: under the full suite's load a round takes far longer than
                # 20 ms and the Jobs finished before 10 preemptions had been tried (seen: 9).
                if len(self.preempted) < PREEMPTIONS:
                    running = [w for w in self.store.list("Workload", "team-a")[0]
                               if cond(w, "Admitted") and not cond(w, "Finished") and w["metadata"]["name"] not in self.preempted]
                    if running:
                        name = rng.choice(running)["metadata"]["name"]
                        self.preempted.add(name)
                        self._set_active(name, False)
                        inactive.append((time.monotonic() + 1.0, name))
                while inactive and inactive[0][0] <= time.monotonic():
                    self._set_active(inactive[0][1], True)
                    inactive.pop(0)  # only once it took: a conflict past the retries tries it again
            except StoreError as exc:  # a Job or Workload gone meanwhile, a conflict past the retries
                self.errors.append(str(exc))
        for _, name in inactive:
            for attempt in range(20):  # every preempted Workload must come back, or the run never ends
                try:
                    self._set_active(name, True)
                    break
                except StoreError as exc:
                    self.errors.append(str(exc))
                    time.sleep(0.1 * (attempt + 1))

    def _set_active(self, name: str, active: bool) -> None:
        def change(wl: dict[str, Any]) -> bool:
            if wl["spec"].get("active", True) is active:
                return False
            wl["spec"]["active"] = active
            return True

        self.store.modify("Workload", "team-a", name, change)
        self.writes += 1


def _rebuilds(logs: list[str]) -> int:
    return sum(len(re.findall(r"rebuilding the engine|could not be committed", text)) for text in logs)


def test_200_jobs_through_preemptions_relabels_and_two_hub_kills(tmp_path: Path) -> None:
    api = start_dev_cluster(tmp_path / "cluster")
    kc = api.kubeconfig
    certs = subprocess.run([sys.executable, "-m", "hub.cli", "certs", "--out", str(tmp_path / "certs")],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert certs.returncode == 0, certs.stderr
    port = free_port()
    register_job_webhook(kc, tmp_path / "certs", port)
    for args in (("apply", "-f", str(ROOT / "manifests/crds")), ("apply", "-f", "-")):
        out = kubectl(kc, *args, stdin=QUEUES)
        assert out.returncode == 0, out.stderr
    # Kubernetes' defaults are 15 s / 10 s / 2 s; a 2 s renew deadline was missed at load 15 and more
    # (the hub then rightly exits): long enough to hold through the full suite, short enough for two take-overs.
    hub_args = ["--lease-duration", "9s", "--renew-deadline", "6s", "--retry-period", "1s",
                "--webhook-listen", f"127.0.0.1:{port}", "--webhook-tls-dir", str(tmp_path / "certs")]
    hubs = [KubeHub(kc, tmp_path / "hub0.log", extra_args=hub_args).start()]
    preempted: set[str] = set()
    chaos = Chaos(kc, preempted)
    reader = open_store(kc)
    try:
        hubs[0].wait_serving()
        (tmp_path / "jobs.yaml").write_text(jobs())
        # 200 creates, each through the hub's webhook: under the full suite's load this took over a minute
        applied = kubectl(kc, "apply", "-f", str(tmp_path / "jobs.yaml"), timeout=240)
        assert applied.returncode == 0 and applied.stdout.count(" created") == JOBS, applied.stderr
        # The queue is held while the Jobs are created: under the full suite's load the creates took
        # 50-100 s, slower than Jobs run, so 180-192 of them had finished before any chaos and "the
        # queue was busy" below measured how fast kubectl ran, not the hub (seen on main as on h9).
        observer = Observer(preempted)
        observer.check(reader.list("Workload", "team-a")[0])
        assert observer.max_reserved == 0 and not observer.finished, "admitted while the ClusterQueue was held"
        released = kubectl(kc, "patch", "clusterqueue", "cluster-queue", "--type=merge", "-p", '{"spec":{"stopPolicy":"None"}}')
        assert released.returncode == 0, released.stderr
        chaos.start()

        def observe(until: int, timeout: float) -> list[dict[str, Any]]:
            deadline = time.monotonic() + timeout
            while True:
                assert hubs[-1].proc is not None and hubs[-1].proc.poll() is None, f"the hub exited:\n{hubs[-1].log()[-3000:]}"
                workloads = reader.list("Workload", "team-a")[0]
                if observer.check(workloads) >= until:
                    return workloads
                assert time.monotonic() < deadline, f"not {until} finished in {timeout}s:\n{hubs[-1].log()[-3000:]}"
                time.sleep(0.1)

        for i, at in enumerate(KILLS_AT):
            observe(at, 120)
            hubs[-1].kill()
            hubs.append(KubeHub(kc, tmp_path / f"hub{i + 1}.log", extra_args=hub_args).start())
            hubs[-1].wait_serving()
        observe(JOBS - PREEMPTIONS, 150)
        chaos.stop.set()
        chaos.join(30)
        final = observe(JOBS, 120)
        for wl in final:
            fin = cond(wl, "Finished")
            assert fin is not None and fin["reason"] == "Succeeded", wl["metadata"]["name"]
        done = reader.list("Job", "team-a")[0]
        assert len(done) == JOBS and all(cond(j, "Complete") for j in done)
        assert observer.max_reserved >= QUOTA * 500  # the queue was busy; never over quota (Observer)
        assert hubs[-1].proc is not None and hubs[-1].proc.poll() is None
        logs = [h.log() for h in hubs]
        rebuilds = _rebuilds(logs)
        print(f"chaos: {chaos.writes} writes, {len(preempted)} preemptions, {rebuilds} rebuilds, "
              f"{len(chaos.errors)} refused chaos writes, at most {observer.max_reserved}m cpu reserved")
        assert rebuilds <= MAX_REBUILDS, "\n".join(line for text in logs for line in text.splitlines() if "rebuild" in line)
        assert not any("Traceback" in text for text in logs), logs[-1][-3000:]
        assert len(preempted) >= PREEMPTIONS // 2, "too few preemptions to mean anything"
    finally:
        chaos.stop.set()
        for hub in hubs:
            hub.kill()
        for store in (reader, chaos.store):
            store.close()
            store.transport.close()
        api.stop()
