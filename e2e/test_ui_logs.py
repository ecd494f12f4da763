"""The dashboard's log view, end to end: a Job runs on a worker (a ``mkhub dev-cluster`` with its
own ``mkagent --kubeconfig``), and the workload detail page in a real browser shows its pods' lines,
relayed by the worker's agent through the hub as ``mkhub logs`` gets them (the same lines)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import multikueue_setup, one_queue_setup
from kube_fleet import MKHUB, DevCluster, Proc, agent, free_port, stop_all, wait_for

from hub.ui import browser

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("kubectl_required")]

if (missing := browser.available()) is not None:
    if os.environ.get("CI") == "true":  # CI must run them: `make test` installs the browser
        raise RuntimeError(f"the dashboard's browser tests cannot run: {missing}")
    pytestmark.append(pytest.mark.skip(reason=missing))

from playwright.sync_api import expect, sync_playwright  # noqa: E402

WORKER = "worker-1"
CONFIG = """
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
integrations:
  frameworks: [batch/job]
"""
JOB = yaml.safe_dump({
    "apiVersion": "batch/v1", "kind": "Job",
    "metadata": {"name": "talker", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                 "annotations": {"mkhub.dev/sim-duration": "10m"}},
    "spec": {"parallelism": 2, "completions": 2, "template": {"spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}},
})


class Scene:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.hub_port = free_port()
        self.ui_port = free_port()
        self.worker = DevCluster(tmp / WORKER, "1s")
        self.procs: list[Proc] = []

    def mkhub(self, *args: str, stdin: str | None = None) -> str:
        out = subprocess.run([*MKHUB, "--server", f"127.0.0.1:{self.hub_port}", "--insecure", *args], input=stdin,
                             capture_output=True, text=True, timeout=60, check=False)
        assert out.returncode == 0, f"mkhub {' '.join(args)}: {out.stderr}"
        return out.stdout

    def start(self) -> Scene:
        self.worker.start()
        self.worker.kubectl("apply", "-f", "-", stdin=one_queue_setup(4, node_labels={"kubernetes.io/os": "linux"}))
        (self.tmp / "config.yaml").write_text(CONFIG)
        hub = Proc([*MKHUB, "serve", "--data-dir", str(self.tmp / "hub"), "--listen", f"127.0.0.1:{self.hub_port}",
                    "--insecure", "--config", str(self.tmp / "config.yaml"), "--ui-listen", f"127.0.0.1:{self.ui_port}"],
                   self.tmp / "hub.log").start()
        self.procs.append(hub)
        wait_for(lambda: subprocess.run([*MKHUB, "--server", f"127.0.0.1:{self.hub_port}", "--insecure", "get", "clusterqueues"],
                                        capture_output=True, timeout=60, check=False).returncode == 0, 60, "the hub serving")
        self.mkhub("apply", "-f", "-", stdin=one_queue_setup(8, checks=["multikueue"], between=multikueue_setup([WORKER])))
        self.procs.append(agent(WORKER, f"127.0.0.1:{self.hub_port}", self.worker, self.tmp / "agent.log").start())
        return self

    def stop(self) -> None:
        for p in self.procs:
            p.kill()
        stop_all([self.worker])


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[Scene]:
    s = Scene(tmp_path)
    try:
        yield s.start()
    finally:
        s.stop()


def test_the_detail_page_shows_the_logs_mkhub_logs_gets_from_the_worker(scene: Scene) -> None:
    scene.mkhub("create", "-f", "-", stdin=JOB)

    def started() -> list[str] | None:
        # `mkhub logs` through the hub: both pods' start lines, once the Job runs on the worker.
        out = subprocess.run([*MKHUB, "--server", f"127.0.0.1:{scene.hub_port}", "--insecure", "logs", "job/talker", "-n", "team-a"],
                             capture_output=True, text=True, timeout=60, check=False)
        lines = out.stdout.splitlines()
        return lines if out.returncode == 0 and sum("started on node" in line for line in lines) == 2 else None

    cli_lines = wait_for(started, 120, "the Job's pods started on the worker, their logs through `mkhub logs`")
    with sync_playwright() as p:
        chromium = browser.launch(p)
        try:
            page = chromium.new_page()
            errors: list[Any] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"http://127.0.0.1:{scene.ui_port}/workloads?namespace=team-a")
            row = page.locator("tr", has_text="Job/talker")
            expect(row).to_have_attribute("data-state", "running", timeout=60_000)
            row.locator("a.rowlink").click()
            expect(page.locator('[data-field="Worker"]')).to_have_text(WORKER)
            page.get_by_role("button", name="Show logs").click()
            logs = page.locator("#logs")
            expect(logs).to_contain_text("started on node", timeout=30_000)
            shown = logs.inner_text().splitlines()
            # The same lines as `mkhub logs` printed, each under its pod's name.
            assert sorted(re.sub(r"^\[(pod/)?[^\]]+\] ", "", line) for line in shown) == \
                sorted(re.sub(r"^\[(pod/)?[^\]]+\] ", "", line) for line in cli_lines), (shown, cli_lines)
            pods = {m.group(1) for line in shown if (m := re.match(r"^\[([^\]]+)\]", line))}
            assert len(pods) == 2 and all(p.startswith("talker-") for p in pods), shown
            assert not errors, errors
        finally:
            chromium.close()
