"""A hub (mutual TLS, ``--ui-listen``) with two agents and a small GPU scene, for the dashboard's
browser tests, ``mkhub ui screenshots`` and ``mkhub bench ui``.

The scene: team-a's two 4-GPU Jobs fill the cohort ``research`` (the second borrows
team-b's GPUs), one on each worker; a 1-GPU Job waits behind them (pending, with Kueue's
reason); team-b has a small CPU Job. Deleting ``hog-2`` lets the waiting one in.
"""

from __future__ import annotations

import contextlib
import io
import json
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from hub.paths import samples_dir
from hub.service.certs import certs_main
from hub.ui.auth import TOKENS_FILE, new_token

from .processes import AgentProcess, HubProcess, free_port

WORKERS = ("worker-1", "worker-2")


def gpu_job(name: str, namespace: str, gpus: int, duration: str = "30m", cpu: int = 1) -> str:
    gpu = f"\n            nvidia.com/gpu: {gpus}" if gpus else ""
    return f"""---
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: {namespace}
  labels: {{kueue.x-k8s.io/queue-name: gpu-queue}}
  annotations: {{mkhub.dev/sim-duration: {duration}}}
spec:
  parallelism: 1
  completions: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        resources:
          requests:
            cpu: {cpu}
            memory: 1Gi{gpu}
"""


SCENE = (gpu_job("hog-1", "team-a", 4) + gpu_job("hog-2", "team-a", 4) + gpu_job("waiter", "team-a", 1)
         + gpu_job("etl", "team-b", 0, cpu=2))


class UIFleet:
    def __init__(self, workdir: Path, extra_args: tuple[str, ...] = ()) -> None:
        self.workdir = workdir
        self.certs = workdir / "certs"
        self.ui_port = free_port()
        self.hub = HubProcess(workdir / "hub", tls_dir=self.certs, log_path=workdir / "hub.log",
                              extra_args=["--ui-listen", f"127.0.0.1:{self.ui_port}", *extra_args])
        self.agents: dict[str, AgentProcess] = {}
        self.token = ""

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.ui_port}"

    def start(self, scene: bool = True) -> UIFleet:
        with contextlib.redirect_stdout(io.StringIO()):  # its list of files is not ours to print
            made = certs_main(["--out", str(self.certs), *(a for w in WORKERS for a in ("--agent", w))])
        if made != 0:
            raise RuntimeError("mkhub certs failed")
        self.hub.start()
        self.token = new_token(self.hub.data_dir / TOKENS_FILE)
        samples = samples_dir() / "multikueue"
        self.apply((samples / "hub.yaml").read_text())
        for name in WORKERS:
            self.agents[name] = AgentProcess(name, self.hub.address, samples / f"{name}.yaml", tls_dir=self.certs / "agents" / name,
                                             data_dir=self.workdir / name, log_path=self.workdir / f"{name}.log").start()
        self.until(lambda: all(w["connected"] for w in self.api("/api/v1/fleet")[1]["workers"]), "both agents connected")
        if scene:
            self.apply(SCENE)
            self.until(lambda: self.states().get("team-a/hog-2") == "running" and self.states().get("team-a/waiter") == "pending",
                       "the hogs running on the workers and the waiter pending")
        return self

    def apply(self, text: str) -> None:
        with self.hub.channel() as channel:
            out = self.hub.client(channel).apply(text)
            if out.rejected:
                raise RuntimeError(f"apply refused: {[r.error for r in out.results if r.error]}")

    def delete_job(self, name: str, namespace: str) -> None:
        with self.hub.channel() as channel:
            self.hub.client(channel).delete("job", name, namespace)

    def states(self) -> dict[str, str]:
        """Job name -> its Workload's state, as the dashboard's API says."""
        items = self.api("/api/v1/workloads?limit=500")[1]["items"]
        return {f"{r['namespace']}/{r['owner']}": r["state"] for r in items}

    def api(self, path: str, token: str | None = None, cert: bool = False) -> tuple[int, Any]:
        """GET the dashboard's API with the token (or another one, or the admin certificate); (status, JSON)."""
        context = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
        headers = {}
        if cert:
            context.load_cert_chain(str(self.certs / "admin.crt"), str(self.certs / "admin.key"))
        elif token is None or token:
            headers["Authorization"] = f"Bearer {self.token if token is None else token}"
        request = urllib.request.Request(self.url + path, headers=headers)
        try:
            with urllib.request.urlopen(request, context=context, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def until(self, check: Any, what: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if check():
                    return
            except (OSError, KeyError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out waiting for {what}; hub log:\n{(self.workdir / 'hub.log').read_text()[-2000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        for agent in self.agents.values():
            if agent.alive:
                agent.terminate()
        if self.hub.proc is not None and self.hub.proc.poll() is None:
            self.hub.terminate()
