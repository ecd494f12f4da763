"""Dead links and fencing, with real hub and agent processes on loopback.

* The hub is paused with SIGSTOP (its TCP connections stay open, nothing answers):
  the agent notices from its unanswered heartbeats, says so, and reconnects once
  the hub is back.
* worker-1 runs long Jobs, then its traffic is blackholed (a relay that keeps TCP
  open and delivers nothing) for longer than workerLostTimeout. The hub gives the
  Jobs to worker-2; worker-1 fences itself first, so that, read from the agents'
  run records (wall-clock start and end of every run), no workload ever runs on
  two workers at once. With ``--no-fencing`` the same partition does run them
  twice at once, which shows the check can fail.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import multikueue_setup, one_queue_setup, run_cli, wait_for
from netproxy import BlackholeProxy

from hub.demo.processes import AgentProcess, HubProcess

pytestmark = pytest.mark.timeout(240)

WORKERS = ("worker-1", "worker-2")
LONG_JOBS = 4

HUB_SETUP = one_queue_setup(8, checks=["multikueue"], between=multikueue_setup(WORKERS))

WORKER_OBJECTS = one_queue_setup(8)


def config(lost_timeout_ms: int) -> str:
    return f"apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nmultiKueue:\n  workerLostTimeout: {lost_timeout_ms}ms\n"


def long_jobs(seconds: int) -> str:
    return yaml.safe_dump_all([
        {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"long-{i}", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                         "annotations": {"mkhub.dev/sim-duration": f"{seconds}s"}},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}},
        }
        for i in range(LONG_JOBS)
    ])


def records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def runs(paths: list[Path]) -> dict[str, list[tuple[str, float, float, str]]]:
    """workload -> [(cluster, start, end, why)]; a run without an end is open until now."""
    out: dict[str, list[tuple[str, float, float, str]]] = {}
    for path in paths:
        started: dict[str, float] = {}
        for r in records(path):
            if r["event"] == "start":
                started[r["workload"]] = r["time"]
            elif r["workload"] in started:
                out.setdefault(r["workload"], []).append((r["cluster"], started.pop(r["workload"]), r["time"], r["why"]))
        for wl, t in started.items():
            out.setdefault(wl, []).append((path.stem, t, time.time(), "open"))
    return out


def overlaps(all_runs: dict[str, list[tuple[str, float, float, str]]]) -> list[str]:
    found = []
    for wl, rs in all_runs.items():
        for i, a in enumerate(rs):
            for b in rs[i + 1:]:
                if a[0] != b[0] and a[1] < b[2] and b[1] < a[2]:
                    found.append(f"{wl}: {a[0]} {a[1]:.2f}-{a[2]:.2f} and {b[0]} {b[1]:.2f}-{b[2]:.2f}")
    return found


def finished(hub: HubProcess) -> int:
    done = run_cli(["get", "workloads", "-n", "team-a", "-o", "json", *hub.connection_args()])
    if done.returncode != 0:
        return -1
    items = json.loads(done.stdout)["items"]
    return sum(
        1 for wl in items
        if any(c["type"] == "Finished" and c["status"] == "True" for c in (wl.get("status") or {}).get("conditions") or [])
    )


def test_the_agent_notices_a_paused_hub_and_reconnects(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(config(4000))  # heartbeats every second; dead after 3 s unanswered
    (tmp_path / "worker.yaml").write_text(WORKER_OBJECTS)
    with HubProcess(tmp_path / "hub", extra_args=["--config", str(tmp_path / "config.yaml")]) as hub:
        assert run_cli(["apply", "-f", "-", *hub.connection_args()], stdin=HUB_SETUP).returncode == 0
        with AgentProcess("worker-1", hub.address, tmp_path / "worker.yaml", log_path=tmp_path / "worker-1.log") as agent:
            wait_for("the agent to connect", lambda: agent.log().count("connected to hub") == 1, 30, agent)
            assert hub.proc is not None
            os.kill(hub.proc.pid, signal.SIGSTOP)  # TCP stays open; nothing answers
            try:
                wait_for("the agent to notice", lambda: "is dead: no answer to heartbeats" in agent.log(), 20, agent)
            finally:
                os.kill(hub.proc.pid, signal.SIGCONT)
            wait_for("the agent to reconnect", lambda: agent.log().count("connected to hub") >= 2, 30, agent)
            assert "Traceback" not in agent.log()


@pytest.mark.parametrize("fencing", [True, False], ids=["fencing", "no-fencing"])
def test_a_partition_longer_than_worker_lost_timeout_never_runs_a_workload_twice_at_once(
    tmp_path: Path, fencing: bool
) -> None:
    lost_timeout = 6.0  # heartbeats every 1.5 s; fencing margin 3 s: worker-1 stops after 3 s unheard
    (tmp_path / "config.yaml").write_text(config(int(lost_timeout * 1000)))
    (tmp_path / "worker.yaml").write_text(WORKER_OBJECTS)
    run_logs = [tmp_path / f"{w}.runs" for w in WORKERS]
    flag = [] if fencing else ["--no-fencing"]
    with HubProcess(tmp_path / "hub", extra_args=["--config", str(tmp_path / "config.yaml")]) as hub:
        assert run_cli(["apply", "-f", "-", *hub.connection_args()], stdin=HUB_SETUP).returncode == 0
        with BlackholeProxy(hub.port) as proxy:
            w1 = AgentProcess("worker-1", proxy.address, tmp_path / "worker.yaml", log_path=tmp_path / "worker-1.log",
                              extra_args=["--run-log", str(run_logs[0]), *flag])
            w2 = AgentProcess("worker-2", hub.address, tmp_path / "worker.yaml", log_path=tmp_path / "worker-2.log",
                              extra_args=["--run-log", str(run_logs[1]), *flag])
            with w1:
                wait_for("worker-1 to connect", lambda: "connected to hub" in w1.log(), 30, w1)
                done = run_cli(["apply", "-f", "-", *hub.connection_args()], stdin=long_jobs(25))
                assert done.returncode == 0, done.stderr
                wait_for("worker-1 to run every Job", lambda: len(records(run_logs[0])) == LONG_JOBS, 30, w1)
                with w2:
                    wait_for("worker-2 to connect", lambda: "connected to hub" in w2.log(), 30, w2)
                    proxy.blackhole()
                    cut = time.time()
                    wait_for("worker-2 to take the Jobs over",
                             lambda: sum(r["event"] == "start" for r in records(run_logs[1])) == LONG_JOBS, 30, w2)
                    time.sleep(max(0.0, cut + 2.5 * lost_timeout - time.time()))  # well past workerLostTimeout
                    during = runs(run_logs)
                    proxy.heal()
                    wait_for("every Job to finish", lambda: finished(hub) == LONG_JOBS, 60, hub)
                    all_runs = runs(run_logs)
                    w1_log, w2_log, hub_log = w1.log(), w2.log(), hub.log()

    if not fencing:
        assert overlaps(during), "without fencing both workers should have run the Jobs at once"
        return
    assert overlaps(all_runs) == [], all_runs
    # worker-1 stopped every run itself (fenced), before the hub gave them away, and said so.
    w1_runs = [r for rs in all_runs.values() for r in rs if r[0] == "worker-1"]
    assert len(w1_runs) == LONG_JOBS and {r[3] for r in w1_runs} == {"fenced"}, w1_runs
    assert all(r[2] - cut < lost_timeout for r in w1_runs), (cut, w1_runs)
    assert "fencing: not heard by the hub" in w1_log
    assert "is dead: no answer to heartbeats" in w1_log
    # The hub heard about it once the link was back, and each Job ran to its end once, on worker-2.
    assert hub_log.count("by fencing") == LONG_JOBS, hub_log[-3000:]
    w2_runs = [r for rs in all_runs.values() for r in rs if r[0] == "worker-2"]
    assert sorted(r[3] for r in w2_runs) == ["succeeded"] * LONG_JOBS, w2_runs
    assert "Traceback" not in w1_log + w2_log + hub_log
