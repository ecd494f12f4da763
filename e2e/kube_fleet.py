"""A MultiKueue fleet of real processes for the Kubernetes-mode agent tests: worker dev-clusters
(``mkhub dev-cluster``), a hub, ``mkagent --kubeconfig`` per worker, and a recorder of what each
worker's API server saw (every Job and pod uid, every Job status), read over its watch API."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hub.ports import free_port

REPO = Path(__file__).resolve().parents[1]
KUBECTL = "/usr/bin/kubectl"
MKHUB = [sys.executable, "-m", "hub.cli"]
MKAGENT = [sys.executable, "-m", "worker_agent"]


def wait_for(predicate: Callable[[], Any], timeout: float = 60, what: str = "condition") -> Any:
    """Poll ``predicate`` every 0.2 s at first, then less often (up to 1 s): a check usually
    starts kubectl or mkhub, and five of those a second would starve the processes under test."""
    deadline = time.monotonic() + timeout
    every = 0.2
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
        every = min(1.0, every * 1.5)
    raise AssertionError(f"timed out waiting for {what}")


class Proc:
    def __init__(self, cmd: list[str], log_path: Path) -> None:
        self.cmd = cmd
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Proc:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1", "GRPC_VERBOSITY": "ERROR"})
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.alive:
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait(30)

    def stop(self) -> None:
        if self.alive:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def stop_all(procs: list[Proc]) -> None:
    """SIGTERM to each, then wait for each: their shutdowns overlap (a dev-cluster takes a second or two)."""
    for p in procs:
        if p.alive:
            assert p.proc is not None
            p.proc.send_signal(signal.SIGTERM)
    for p in procs:
        p.stop()


class DevCluster(Proc):
    def __init__(self, data_dir: Path, sim_duration: str = "1s") -> None:
        self.data_dir = data_dir
        self.port = free_port()
        super().__init__([*MKHUB, "dev-cluster", "--data-dir", str(data_dir), "--listen", f"127.0.0.1:{self.port}",
                          "--sim-duration", sim_duration], data_dir.parent / f"{data_dir.name}.log")

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfig"

    @property
    def server(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> DevCluster:
        self.kubeconfig.unlink(missing_ok=True)
        super().start()

        def ready() -> bool:
            assert self.alive, self.log()
            if not self.kubeconfig.exists():
                return False
            try:
                with urllib.request.urlopen(f"{self.server}/readyz", timeout=5) as resp:
                    return bool(resp.status == 200)
            except OSError:
                return False

        wait_for(ready, 60, f"dev-cluster {self.data_dir.name}")
        return self

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.data_dir.parent),
               "KUBECONFIG": str(self.kubeconfig)}
        result = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True, env=env, timeout=90, check=False)
        if check:
            assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)


class Recorder:
    """Every Job, JobSet and pod a worker's API server reports over its watch, across restarts of that server."""

    def __init__(self, name: str, cluster: DevCluster) -> None:
        self.name = name
        self.cluster = cluster
        self.job_uids: dict[str, set[str]] = defaultdict(set)  # namespace/name -> uids
        self.pod_uids: dict[str, set[str]] = defaultdict(set)  # job namespace/name -> pod uids
        self.pods_by_name: dict[str, set[str]] = defaultdict(set)  # pod namespace/name -> uids (plain Pods)
        self.pod_status: dict[str, dict[str, Any]] = {}  # pod namespace/name -> last status seen
        self.job_status: dict[str, dict[str, Any]] = {}  # namespace/name -> last status seen
        self.workloads: dict[str, dict[str, Any]] = {}  # namespace/name -> the last Workload seen
        self.jobset_uids: dict[str, set[str]] = defaultdict(set)  # namespace/name -> uids
        self.jobset_status: dict[str, dict[str, Any]] = {}  # namespace/name -> last status seen
        self.jobset_first: dict[str, dict[str, Any]] = {}  # namespace/name -> the JobSet as first seen
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._follow, args=(path,), daemon=True)
                         for path in ("/apis/batch/v1/jobs", "/api/v1/pods", "/apis/kueue.x-k8s.io/v1beta2/workloads",
                                      "/apis/jobset.x-k8s.io/v1alpha2/jobsets")]

    def start(self) -> Recorder:
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _follow(self, path: str) -> None:
        rv = ""
        while not self._stop.is_set():
            query = f"?watch=1&allowWatchBookmarks=true&resourceVersion={rv}" if rv else "?watch=1"
            try:
                with urllib.request.urlopen(f"{self.cluster.server}{path}{query}", timeout=30) as resp:
                    for raw in resp:
                        if self._stop.is_set():
                            return
                        if not raw.strip():
                            continue
                        event = json.loads(raw)
                        if event.get("type") == "ERROR":
                            rv = ""  # too old: list again (a fresh watch starts with every object ADDED)
                            break
                        rv = str((event.get("object") or {}).get("metadata", {}).get("resourceVersion") or rv)
                        if event.get("type") != "BOOKMARK":
                            self._record(event)
            except (OSError, ValueError):
                time.sleep(0.1)  # the server restarted, or a silent stream timed out: watch again

    def _record(self, event: dict[str, Any]) -> None:
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        with self.lock:
            if obj.get("kind") == "Job":
                self.job_uids[key].add(meta.get("uid", ""))
                if event.get("type") != "DELETED":
                    self.job_status[key] = obj.get("status") or {}
            elif obj.get("kind") == "Pod":
                self.pods_by_name[key].add(meta.get("uid", ""))
                if event.get("type") != "DELETED":
                    self.pod_status[key] = obj.get("status") or {}
                job = (meta.get("labels") or {}).get("batch.kubernetes.io/job-name")
                if job:
                    self.pod_uids[f"{meta.get('namespace', '')}/{job}"].add(meta.get("uid", ""))
            elif obj.get("kind") == "Workload" and event.get("type") != "DELETED":
                self.workloads[key] = obj
            elif obj.get("kind") == "JobSet":
                self.jobset_uids[key].add(meta.get("uid", ""))
                self.jobset_first.setdefault(key, obj)
                if event.get("type") != "DELETED":
                    self.jobset_status[key] = obj.get("status") or {}

    def jobs_named(self, key: str) -> set[str]:
        with self.lock:
            return set(self.job_uids.get(key, set()))

    def pods_of(self, key: str) -> set[str]:
        with self.lock:
            return set(self.pod_uids.get(key, set()))

    def pods_named(self, key: str) -> set[str]:
        """The uids of the pods called ``namespace/name`` this server ever had."""
        with self.lock:
            return set(self.pods_by_name.get(key, set()))

    def pod_phase(self, key: str) -> str:
        with self.lock:
            return str((self.pod_status.get(key) or {}).get("phase") or "")

    def jobsets_named(self, key: str) -> set[str]:
        with self.lock:
            return set(self.jobset_uids.get(key, set()))

    def jobset_as_created(self, key: str) -> dict[str, Any] | None:
        with self.lock:
            return self.jobset_first.get(key)

    def jobset_complete(self, key: str) -> bool:
        with self.lock:
            status = self.jobset_status.get(key) or {}
        return any(c.get("type") == "Completed" and c.get("status") == "True" for c in status.get("conditions") or [])

    def complete(self, key: str) -> bool:
        with self.lock:
            status = self.job_status.get(key) or {}
        return any(c.get("type") == "Complete" and c.get("status") == "True" for c in status.get("conditions") or [])


def agent(cluster_name: str, hub: str, worker: DevCluster, log_path: Path, *extra: str) -> Proc:
    return Proc([*MKAGENT, "--hub", hub, "--insecure", "--cluster", cluster_name, "--kubeconfig", str(worker.kubeconfig),
                 *extra], log_path)
