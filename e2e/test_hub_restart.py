"""kill -9 in the middle of a run: no admission lost or duplicated, nothing run twice, all finish.

A real ``mkhub serve`` (subprocess, SQLite on a temp dir, gRPC on loopback) gets
250 workloads (225 Workloads and 25 Jobs) for a ClusterQueue that runs 25 at a
time. The test watches the store through the control API the whole time and
checks, at every observation, that reserved usage never exceeds the quota and
that no workload's lifecycle goes backwards or restarts. Once a fair share has
finished, the hub is SIGKILLed and started again on the same data dir; every
workload must then finish exactly once, each having run its full duration.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import run_cli

from hub.api.meta import parse_time
from hub.api.quantity import resource_value
from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(240)

QUOTA = 25
WORKLOADS = 225
JOBS = 25
TOTAL = WORKLOADS + JOBS
KILL_AFTER_FINISHED = 75


def duration_of(i: int) -> float:
    return 0.3 + (i % 4) * 0.1  # 300-600 ms, so finishes do not come in lockstep


SETUP = f"""
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: default-flavor
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: cluster-queue
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: default-flavor
      resources:
      - name: cpu
        nominalQuota: {QUOTA}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  namespace: team-a
  name: user-queue
spec:
  clusterQueue: cluster-queue
"""

_CONTAINERS = [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]


def submissions() -> str:
    docs: list[dict[str, Any]] = []
    for i in range(WORKLOADS):
        docs.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "Workload",
                "metadata": {
                    "name": f"wl-{i:03d}",
                    "namespace": "team-a",
                    "annotations": {"mkhub.dev/sim-duration": f"{int(duration_of(i) * 1000)}ms"},
                },
                "spec": {"queueName": "user-queue", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": _CONTAINERS}}}]},
            }
        )
    for j in range(JOBS):
        i = WORKLOADS + j
        docs.append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": f"job-{j:03d}",
                    "namespace": "team-a",
                    "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                    "annotations": {"mkhub.dev/sim-duration": f"{int(duration_of(i) * 1000)}ms"},
                },
                "spec": {"template": {"spec": {"containers": _CONTAINERS, "restartPolicy": "Never"}}},
            }
        )
    return yaml.safe_dump_all(docs)


def cond(wl: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for c in (wl.get("status") or {}).get("conditions") or []:
        if c["type"] == type_ and c["status"] == "True":
            return c
    return None


@dataclass
class Seen:
    """What the test has observed of one workload; it may only move forward."""

    phase: int = 0  # 0 pending, 1 admitted, 2 finished
    admitted_at: str | None = None
    finished_at: str | None = None


class Observer:
    def __init__(self) -> None:
        self.seen: dict[str, Seen] = {}
        self.max_reserved = 0
        self.snapshots = 0

    def check(self, workloads: list[dict[str, Any]]) -> int:
        """Check one snapshot; returns how many workloads are finished."""
        self.snapshots += 1
        reserved_cpu = 0
        finished = 0
        for wl in workloads:
            name = wl["metadata"]["name"]
            seen = self.seen.setdefault(name, Seen())
            adm, fin = cond(wl, "Admitted"), cond(wl, "Finished")
            phase = 2 if fin else 1 if adm else 0
            assert phase >= seen.phase, f"{name} went back from phase {seen.phase} to {phase}: {wl.get('status')}"
            if adm is not None:
                # The same admission, observed again: a changed time means it was admitted (run) twice.
                assert seen.admitted_at in (None, adm["lastTransitionTime"]), f"{name} was admitted twice"
                seen.admitted_at = adm["lastTransitionTime"]
            if fin is not None:
                assert seen.finished_at in (None, fin["lastTransitionTime"]), f"{name} finished twice"
                seen.finished_at = fin["lastTransitionTime"]
                finished += 1
            elif cond(wl, "QuotaReserved") is not None:
                for psa in wl["status"]["admission"]["podSetAssignments"]:
                    reserved_cpu += resource_value("cpu", psa["resourceUsage"]["cpu"])
            assert not (wl.get("status") or {}).get("schedulingStats"), f"{name} was evicted"
            seen.phase = phase
        assert reserved_cpu <= QUOTA * 1000, f"{reserved_cpu}m cpu reserved, quota {QUOTA}"
        self.max_reserved = max(self.max_reserved, reserved_cpu)
        return finished


def watch(hub: HubProcess, observer: Observer, until: int, timeout: float) -> list[dict[str, Any]]:
    """Observe the hub's store until ``until`` workloads are finished; returns the last snapshot."""
    deadline = time.monotonic() + timeout
    with hub.channel() as channel:
        client = hub.client(channel)
        while True:
            _, _, workloads = client.list("Workload", namespace="team-a")
            if observer.check(workloads) >= until:
                return workloads
            assert time.monotonic() < deadline, f"not {until} finished within {timeout}s; log:\n{hub.log()[-3000:]}"
            time.sleep(0.05)


def test_kill_9_mid_run_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    hub = HubProcess(data).start()
    try:
        (tmp_path / "setup.yaml").write_text(SETUP)
        (tmp_path / "work.yaml").write_text(submissions())
        setup = run_cli(["apply", "-f", str(tmp_path / "setup.yaml"), *hub.connection_args()])
        assert setup.returncode == 0, setup.stderr
        work = run_cli(["apply", "-f", str(tmp_path / "work.yaml"), *hub.connection_args()])
        assert work.returncode == 0, work.stderr
        assert work.stdout.count(" created") == TOTAL

        observer = Observer()
        before = watch(hub, observer, KILL_AFTER_FINISHED, timeout=60)
        hub.kill()
        finished_before = sum(1 for wl in before if cond(wl, "Finished"))
        assert finished_before < TOTAL, "the run ended before the kill; the test proves nothing"
        running_before = {wl["metadata"]["name"] for wl in before if cond(wl, "Admitted") and not cond(wl, "Finished")}
        assert running_before, "nothing was running at the kill"

        hub = HubProcess(data, log_path=hub.log_path).start()
        final = watch(hub, observer, TOTAL, timeout=90)
    finally:
        hub.kill()

    assert len(final) == TOTAL
    assert observer.max_reserved == QUOTA * 1000  # the quota was used, never exceeded
    by_name = {wl["metadata"]["name"]: wl for wl in final}
    for name, wl in by_name.items():
        fin, adm = cond(wl, "Finished"), cond(wl, "Admitted")
        assert fin is not None and fin["reason"] == "Succeeded", name
        assert adm is not None, name
        # The run took its whole duration: resumed after the restart, not cut short or restarted.
        index = int(name.split("-")[1]) if name.startswith("wl-") else None
        if index is not None:
            ran = parse_time(fin["lastTransitionTime"]) - parse_time(adm["lastTransitionTime"])
            assert ran >= duration_of(index) - 1e-3, (name, ran)
    # Workloads running at the kill kept their admission across the restart.
    for name in running_before:
        assert observer.seen[name].admitted_at == cond(by_name[name], "Admitted")["lastTransitionTime"]  # type: ignore[index]
    assert sum(1 for n in by_name if n.startswith("job-job-")) == JOBS


def test_restart_keeps_jobs_and_queue_status(tmp_path: Path) -> None:
    """After the crash test's kind of restart, Jobs report Complete and the queue is empty."""
    data = tmp_path / "data"
    with HubProcess(data) as hub:
        (tmp_path / "setup.yaml").write_text(SETUP)
        assert run_cli(["apply", "-f", str(tmp_path / "setup.yaml"), *hub.connection_args()]).returncode == 0
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                         "annotations": {"mkhub.dev/sim-duration": "3s"}},  # long enough to be seen running on a busy machine
            "spec": {"parallelism": 3, "template": {"spec": {"containers": _CONTAINERS, "restartPolicy": "Never"}}},
        }
        assert run_cli(["apply", "-f", "-", *hub.connection_args()], stdin=yaml.safe_dump(job)).returncode == 0
        with hub.channel() as channel:
            client = hub.client(channel)
            deadline = time.monotonic() + 30
            while (client.get("Job", "j", "team-a").get("status") or {}).get("active") != 3:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        hub.kill()  # while the Job runs
        hub.start()
        with hub.channel() as channel:
            client = hub.client(channel)
            deadline = time.monotonic() + 30
            while True:
                status = client.get("Job", "j", "team-a").get("status") or {}
                if status.get("succeeded") == 3:
                    break
                assert time.monotonic() < deadline, status
                time.sleep(0.05)
            # Queue statuses are written at most every QUEUE_STATUS_INTERVAL, so they settle shortly after.
            while True:
                cq_status = client.get("ClusterQueue", "cluster-queue")["status"]
                if cq_status["reservingWorkloads"] == 0 and cq_status["pendingWorkloads"] == 0:
                    break
                assert time.monotonic() < deadline, cq_status
                time.sleep(0.05)
            _, _, workloads = client.list("Workload", namespace="team-a")
            assert len(workloads) == 1  # the Job's Workload was adopted, not created again
