"""kill -9 of a worker agent in the middle of a MultiKueue run: nothing lost, nothing run twice at once.

A real ``mkhub serve`` and two real ``mkagent`` processes on loopback. The hub's
ClusterQueue (12 CPUs, MultiKueue check) dispatches to two workers of 6 CPUs
each; 120 one-CPU Jobs run a few hundred milliseconds each, so only part of
them runs at any time. Once half have finished, worker-1 is SIGKILLed.

The test watches the hub's store the whole time (every workload's lifecycle
only moves forward, an admission never changes cluster without an eviction in
between, reserved quota stays within the ClusterQueue's) and reads every run
from the agents' logs (``hub.controllers.simrunner`` logs each run's start, resume,
stop and success): no workload runs on two workers at once, and each completes
exactly once, except a workload whose completion died with the killed agent
(the hub never heard of it), which runs again, as Kueue's MultiKueue would.

* the agent stays dead: what it was running is re-dispatched once
  ``workerLostTimeout`` (3 s) has passed, and completes on worker-2;
* the agent restarts on its ``--data-dir`` within ``workerLostTimeout``
  (over mutual TLS): the runs it had saved resume where they were, without
  being re-dispatched or started again.

And the other way round: the hub is SIGKILLed while both agents run its
workloads; restarted on its data dir, it re-derives its MultiKueue state from
the store and the agents' Hellos, and nothing is re-dispatched or run twice.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import progress, run_cli
from cli_harness import wait_for as harness_wait_for

from hub.api.meta import parse_time
from hub.api.quantity import resource_value
from hub.ctl.client import ControlClient
from hub.demo.processes import AgentProcess, HubProcess

pytestmark = pytest.mark.timeout(150)

WORKLOADS = 120
HUB_CPU = 12
WORKER_CPU = 6
KILL_AFTER_FINISHED = WORKLOADS // 2
WORKERS = ("worker-1", "worker-2")

HUB_SETUP = f"""
apiVersion: v1
kind: Namespace
metadata: {{name: team-a}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {{name: default-flavor}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueCluster
metadata: {{name: worker-1}}
spec:
  kubeConfig: {{locationType: Secret, location: worker-1-kubeconfig}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueCluster
metadata: {{name: worker-2}}
spec:
  kubeConfig: {{locationType: Secret, location: worker-2-kubeconfig}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueConfig
metadata: {{name: fleet}}
spec:
  clusters: [worker-1, worker-2]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: AdmissionCheck
metadata: {{name: multikueue}}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {{apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: fleet}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: cluster-queue}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: default-flavor
      resources:
      - {{name: cpu, nominalQuota: {HUB_CPU}}}
  admissionChecks: [multikueue]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{namespace: team-a, name: user-queue}}
spec: {{clusterQueue: cluster-queue}}
"""

WORKER_OBJECTS = f"""
apiVersion: v1
kind: Namespace
metadata: {{name: team-a}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {{name: default-flavor}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: cluster-queue}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: default-flavor
      resources:
      - {{name: cpu, nominalQuota: {WORKER_CPU}}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{namespace: team-a, name: user-queue}}
spec: {{clusterQueue: cluster-queue}}
"""


# Kueue's default dispatcher and mkhub's capacity-aware one: an agent's death runs with the
# first, its restart with the second, and the hub's death with both (each re-derives its
# dispatch state from the store and the agents' Hellos in its own way).
ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
CAPACITY_AWARE = "mkhub.dev/capacity-aware"


def hub_config(lost_timeout: float, dispatcher: str) -> str:
    return f"""
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
multiKueue:
  workerLostTimeout: {int(lost_timeout * 1000)}ms
  dispatcherName: {dispatcher}
"""


def jobs(durations_ms: tuple[int, ...]) -> str:
    docs = []
    for i in range(WORKLOADS):
        docs.append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": f"job-{i:03d}",
                    "namespace": "team-a",
                    "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                    "annotations": {"mkhub.dev/sim-duration": f"{durations_ms[i % len(durations_ms)]}ms"},
                },
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                            ],
                        }
                    }
                },
            }
        )
    return yaml.safe_dump_all(docs)


# ---------------------------------------------------------------------------------- the hub's view


def cond(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == type_ and c["status"] == "True":
            return dict(c)
    return None


def evictions(wl: dict[str, Any]) -> int:
    return sum(
        int(e.get("count", 0))
        for e in ((wl.get("status") or {}).get("schedulingStats") or {}).get("evictions") or []
    )


def key(wl: dict[str, Any]) -> str:
    return f"{wl['metadata']['namespace']}/{wl['metadata']['name']}"


@dataclass
class Seen:
    """What the test observed of one workload; it may only move forward."""

    finished_at: str | None = None
    # eviction count -> (cluster, Admitted time) of that admission: one admission, one cluster
    admissions: dict[int, tuple[str, str]] = field(default_factory=dict)
    evictions: int = 0


class Observer:
    def __init__(self) -> None:
        self.seen: dict[str, Seen] = {}
        self.max_reserved = 0
        self.last: list[dict[str, Any]] = []

    def check(self, workloads: list[dict[str, Any]]) -> int:
        """Check one snapshot of the hub's store; returns how many workloads are finished."""
        self.last = workloads
        reserved = finished = 0
        for wl in workloads:
            seen = self.seen.setdefault(key(wl), Seen())
            status = wl.get("status") or {}
            count = evictions(wl)
            assert count >= seen.evictions, f"{key(wl)}: eviction count went back"
            seen.evictions = count
            fin, adm = cond(wl, "Finished"), cond(wl, "Admitted")
            if seen.finished_at is not None:
                assert fin is not None and fin["lastTransitionTime"] == seen.finished_at, (
                    f"{key(wl)} un-finished: {status}"
                )
            if fin is not None:
                seen.finished_at = fin["lastTransitionTime"]
                finished += 1
            if adm is not None:
                admission = (str(status.get("clusterName")), adm["lastTransitionTime"])
                before = seen.admissions.setdefault(count, admission)
                # The same admission seen again: another cluster or time would mean a second run at once.
                assert before == admission, (
                    f"{key(wl)} moved from {before} to {admission} without an eviction"
                )
            if cond(wl, "QuotaReserved") is not None and fin is None:
                for psa in status["admission"]["podSetAssignments"]:
                    reserved += resource_value("cpu", psa["resourceUsage"]["cpu"])
        assert reserved <= HUB_CPU * 1000, f"{reserved}m CPU reserved on the hub, quota {HUB_CPU}"
        self.max_reserved = max(self.max_reserved, reserved)
        return finished

    def watch(self, client: ControlClient, until: int, timeout: float, f: Fleet) -> None:
        start = time.monotonic()
        deadline, said = start + timeout, start
        while (done := self.check(client.list("Workload", namespace="team-a")[2])) < until:
            now = time.monotonic()
            assert now < deadline, f"not {until} finished within {timeout}s\n{f.logs()}"
            if now - said >= 10:
                said = now
                progress(f"{done} of {until} workloads finished ({now - start:.0f} s of {timeout:.0f} s)")
            time.sleep(0.1)


# ---------------------------------------------------------------------------------- the agents' view


_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) DEBUG hub\.controllers\.simrunner: run (started|resumed|succeeded|stopped) (\S+)(?: at ([\d.]+))?"
)


@dataclass(frozen=True)
class Run:
    agent: str
    key: str
    at: str  # the run's start as its first line logged it: a resumed run keeps it
    start: float
    end: float
    completed: bool


def runs(agent: str, logs: list[tuple[Path, float]]) -> list[Run]:
    """Every run an agent's processes (their logs, in order, each with when it died) made."""
    out: list[Run] = []
    for path, died in logs:
        open_runs: dict[str, tuple[str, float]] = {}
        for line in path.read_text(errors="replace").splitlines():
            m = _LINE.match(line)
            if m is None:
                continue
            stamp, what, wl_key, at = m.groups()
            when = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if what in ("started", "resumed"):
                assert wl_key not in open_runs, f"{agent}: {wl_key} started while running"
                open_runs[wl_key] = (at, when)
            elif wl_key in open_runs:
                run_at, start = open_runs.pop(wl_key)
                out.append(Run(agent, wl_key, run_at, start, when, what == "succeeded"))
        out.extend(Run(agent, k, a, s, died, False) for k, (a, s) in open_runs.items())
    return out


def check_runs(all_runs: list[Run], stranded: set[str]) -> dict[str, set[tuple[str, str]]]:
    """No workload on two agents at once; one completed run each (two for a stranded one whose
    first completion died with its agent). Returns workload -> completed (agent, run) pairs."""
    by_key: dict[str, list[Run]] = defaultdict(list)
    for run in all_runs:
        by_key[run.key].append(run)
    completed: dict[str, set[tuple[str, str]]] = {}
    for wl_key, wl_runs in by_key.items():
        for a in wl_runs:
            for b in wl_runs:
                if a.agent < b.agent:
                    assert a.end <= b.start or b.end <= a.start, (
                        f"{wl_key} ran on {a.agent} and {b.agent} at once: {a} {b}"
                    )
        completed[wl_key] = {(r.agent, r.at) for r in wl_runs if r.completed}
        allowed = 2 if wl_key in stranded else 1
        assert 1 <= len(completed[wl_key]) <= allowed, (
            f"{wl_key} completed {len(completed[wl_key])} times: {wl_runs}"
        )
    return completed


# ---------------------------------------------------------------------------------- processes


@dataclass
class Fleet:
    root: Path
    hub: HubProcess
    agents: dict[str, AgentProcess]
    tls_dir: Path | None
    data_dirs: bool
    # agent -> its processes' logs, each with when that process died (inf: alive at the end)
    agent_logs: dict[str, list[tuple[Path, float]]] = field(default_factory=dict)

    def start_agent(self, name: str) -> None:
        incarnation = len(self.agent_logs.setdefault(name, []))
        log_path = self.root / f"{name}-{incarnation}.log"
        self.agent_logs[name].append((log_path, float("inf")))
        self.agents[name] = AgentProcess(
            name,
            self.hub.address,
            self.root / "worker-objects.yaml",
            tls_dir=self.tls_dir,
            data_dir=self.root / name if self.data_dirs else None,
            log_path=log_path,
            extra_args=["--log-level", "debug"],
        ).start()

    def kill_agent(self, name: str) -> float:
        """SIGKILL; returns the time just before it, which is no earlier than the agent's last act."""
        killed_at = time.time()
        self.agents[name].kill()
        path, _ = self.agent_logs[name][-1]
        self.agent_logs[name][-1] = (path, killed_at)
        return killed_at

    def stop(self) -> None:
        for agent in self.agents.values():
            agent.kill()
        self.hub.kill()

    def logs(self) -> str:
        parts = [f"--- hub ---\n{self.hub.log()[-3000:]}"]
        for logs in self.agent_logs.values():
            for path, _ in logs:
                text = path.read_text(errors="replace") if path.exists() else ""
                tail = "\n".join(
                    line for line in text.splitlines() if "hub.controllers.simrunner" not in line
                )[-2000:]
                parts.append(f"--- {path.name} ---\n{tail}")
        return "\n".join(parts)


@contextmanager
def fleet(
    tmp_path: Path, *, lost_timeout: float, mtls: bool, data_dirs: bool, dispatcher: str
) -> Iterator[tuple[Fleet, ControlClient]]:
    tls_dir = None
    if mtls:
        tls_dir = tmp_path / "certs"
        made = run_cli(["certs", "--out", str(tls_dir), "--agent", "worker-1", "--agent", "worker-2"])
        assert made.returncode == 0, made.stderr
    (tmp_path / "config.yaml").write_text(hub_config(lost_timeout, dispatcher))
    (tmp_path / "worker-objects.yaml").write_text(WORKER_OBJECTS)
    hub = HubProcess(
        tmp_path / "hub",
        tls_dir=tls_dir,
        extra_args=["--config", str(tmp_path / "config.yaml")],
        log_path=tmp_path / "hub.log",
    ).start()
    f = Fleet(tmp_path, hub, {}, tls_dir, data_dirs)
    try:
        with hub.channel() as channel:
            client = hub.client(channel)
            applied = client.apply(HUB_SETUP)
            assert not applied.rejected, [r.error for r in applied.results]
            for name in WORKERS:
                f.start_agent(name)
            wait_for(lambda: all(active(client, n) for n in WORKERS), "both workers Active", 60, f)
            yield f, client
    finally:
        f.stop()


def active(client: ControlClient, cluster: str) -> bool:
    return cond(client.get("MultiKueueCluster", cluster), "Active") is not None


def wait_for(check: Any, what: str, timeout: float, f: Fleet) -> None:
    try:
        harness_wait_for(what, check, timeout, every=0.05, most=0.05)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{f.logs()}") from None


def saved_runs(state: Path, durations_ms: tuple[int, ...], min_left: float) -> set[str]:
    """The workloads whose run worker-1's last state snapshot holds (started, not finished)
    and that still have ``min_left`` seconds to run by the wall clock (the agent's startedAt)."""
    try:
        copies = json.loads(state.read_text())["copies"]
    except (FileNotFoundError, ValueError):
        return set()
    now = time.time()
    running = set()
    for c in copies:
        if not c["started"] or c["sent_final"] or c["startedAt"] is None:
            continue
        index = re.search(r"job-(\d{3})", c["key"])
        assert index, c["key"]
        if c["startedAt"] + durations_ms[int(index.group(1)) % len(durations_ms)] / 1000 - now > min_left:
            running.add(c["key"])
    return running


def kill_worker_1(
    f: Fleet,
    client: ControlClient,
    observer: Observer,
    lost_timeout: float,
    state: Path | None = None,
    durations_ms: tuple[int, ...] = (),
) -> tuple[float, set[str]]:
    """Kill worker-1 halfway; returns when, and the workloads the hub had running there (stranded).

    With ``state`` (worker-1's agent-state.json), only once a snapshot holds a run that is
    still going (by ``durations_ms``): the agent saves every second, and a kill before any
    saved run, or once every saved run had finished, would leave nothing to resume (under
    load both happened, and the test proved nothing)."""
    observer.watch(client, KILL_AFTER_FINISHED, 90, f)
    if state is not None:
        wait_for(lambda: bool(saved_runs(state, durations_ms, 0.3)), "worker-1 to save a running copy", 60, f)
    killed_at = f.kill_agent("worker-1")
    progress("worker-1 killed; waiting for the hub to mark it inactive")
    # The round that notices the disconnection marks the cluster inactive, and it has applied
    # every report the agent sent before dying: the store now says what was left on worker-1.
    wait_for(lambda: not active(client, "worker-1"), "worker-1 inactive", lost_timeout, f)
    snapshot = client.list("Workload", namespace="team-a")[2]
    assert time.time() < killed_at + lost_timeout, "the snapshot came too late to tell what was stranded"
    observer.check(snapshot)
    stranded = {
        key(wl)
        for wl in snapshot
        if cond(wl, "Admitted")
        and not cond(wl, "Finished")
        and (wl.get("status") or {}).get("clusterName") == "worker-1"
    }
    assert stranded, "nothing was running on worker-1 when it died: the test proves nothing"
    assert sum(1 for wl in snapshot if cond(wl, "Finished")) < WORKLOADS
    return killed_at, stranded


def final_checks(
    observer: Observer, f: Fleet, stranded: set[str]
) -> tuple[dict[str, dict[str, Any]], dict[str, set[tuple[str, str]]]]:
    final = {key(wl): wl for wl in observer.last}
    assert len(final) == WORKLOADS
    for wl_key, wl in final.items():
        fin = cond(wl, "Finished")
        assert fin is not None and fin["reason"] == "Succeeded", (wl_key, wl.get("status"))
        assert wl["status"].get("clusterName") in WORKERS, wl_key
    assert observer.max_reserved == HUB_CPU * 1000  # the quota was used and never exceeded
    all_runs = [run for name, logs in f.agent_logs.items() for run in runs(name, logs)]
    completed = check_runs(all_runs, stranded)
    assert set(completed) == set(final), "a workload the hub finished never ran, or a stranger ran"
    for wl_key, wl in final.items():
        # The cluster the hub credits with the workload did complete a run of it.
        assert any(agent == wl["status"]["clusterName"] for agent, _ in completed[wl_key]), (
            wl_key,
            completed[wl_key],
        )
    return final, completed


# ---------------------------------------------------------------------------------- the tests


def test_killed_agents_workloads_are_redispatched_after_worker_lost_timeout(tmp_path: Path) -> None:
    dispatcher = ALL_AT_ONCE
    lost_timeout = 3.0
    observer = Observer()
    with fleet(tmp_path, lost_timeout=lost_timeout, mtls=False, data_dirs=False, dispatcher=dispatcher) as (
        f,
        client,
    ):
        applied = client.apply(jobs((300, 400, 500, 600)))
        assert not applied.rejected
        killed_at, stranded = kill_worker_1(f, client, observer, lost_timeout)
        observer.watch(client, WORKLOADS, 90, f)
        final, completed = final_checks(observer, f, stranded)

    twice = sorted(k for k in stranded if len(completed[k]) == 2)
    print(
        f"stranded on worker-1: {len(stranded)}; their completions lost with it: {twice}"
    )  # shown on failure
    for wl_key in stranded:
        wl = final[wl_key]
        assert wl["status"]["clusterName"] == "worker-2", (wl_key, wl["status"])
        assert evictions(wl) >= 1, (wl_key, wl["status"])
        readmitted = parse_time(cond(wl, "Admitted")["lastTransitionTime"])  # type: ignore[index]
        assert readmitted >= killed_at + lost_timeout - 0.01, (
            f"{wl_key} re-dispatched before workerLostTimeout"
        )
    for wl_key, wl in final.items():
        if wl["status"]["clusterName"] == "worker-1":
            assert parse_time(cond(wl, "Admitted")["lastTransitionTime"]) < killed_at, wl_key  # type: ignore[index]
    # Everything worker-1 did not finish, worker-2 did.
    assert all(("worker-2" in {a for a, _ in completed[k]}) for k in stranded)


def test_restarted_agent_resumes_its_runs_from_its_data_dir(tmp_path: Path) -> None:
    dispatcher = CAPACITY_AWARE
    lost_timeout = 30.0  # the restart must come well within it
    observer = Observer()
    with fleet(tmp_path, lost_timeout=lost_timeout, mtls=True, data_dirs=True, dispatcher=dispatcher) as (
        f,
        client,
    ):
        durations_ms = (500, 800, 1100, 1400)
        applied = client.apply(jobs(durations_ms))
        assert not applied.rejected
        state = tmp_path / "worker-1" / "agent-state.json"
        killed_at, stranded = kill_worker_1(f, client, observer, lost_timeout, state, durations_ms)
        saved = json.loads(state.read_text())["copies"]
        before = {key(wl): wl for wl in observer.last}
        f.start_agent("worker-1")
        restarted_at = time.time()
        progress("worker-1 restarted from its data dir")
        wait_for(lambda: active(client, "worker-1"), "worker-1 back", 60, f)
        observer.watch(client, WORKLOADS, 120, f)
        final, completed = final_checks(observer, f, stranded)

    # Runs the agent had saved, that the hub had not seen finish: resumed, not re-dispatched, not re-run.
    resumed = {c["key"] for c in saved if c["started"] and not c["sent_final"]} & stranded
    print(f"stranded on worker-1: {len(stranded)}, saved and resumed: {len(resumed)}")  # shown on failure
    assert resumed, "the agent had saved none of the runs it had: the test proves nothing"
    # (copies saved while still queued there have no start time)
    saved_at = {c["key"]: f"{c['startedAt']:.3f}" for c in saved if c["startedAt"] is not None}
    new_runs = runs("worker-1", f.agent_logs["worker-1"][1:])
    for wl_key in resumed:
        wl = final[wl_key]
        assert wl["status"]["clusterName"] == "worker-1", (wl_key, wl["status"])
        assert evictions(wl) == evictions(before[wl_key]), f"{wl_key} was re-dispatched"
        assert cond(wl, "Admitted") == cond(before[wl_key], "Admitted"), f"{wl_key} was admitted again"
        again = [r for r in new_runs if r.key == wl_key]
        assert again and all(r.at == saved_at[wl_key] for r in again), f"{wl_key} started over: {again}"
        assert ("worker-1", saved_at[wl_key]) in completed[wl_key]
    # Stranded runs the agent had not saved went back to the hub's queue when it came back.
    for wl_key in stranded - resumed:
        assert wl_key in final
    assert restarted_at < killed_at + lost_timeout


@pytest.mark.parametrize("dispatcher", [ALL_AT_ONCE, CAPACITY_AWARE], ids=["all-at-once", "capacity-aware"])
def test_hub_killed_mid_run_takes_its_agents_back_without_rerunning_anything(tmp_path: Path, dispatcher: str) -> None:
    observer = Observer()
    with fleet(tmp_path, lost_timeout=30.0, mtls=False, data_dirs=False, dispatcher=dispatcher) as (
        f,
        client,
    ):
        applied = client.apply(jobs((300, 400, 500, 600)))
        assert not applied.rejected
        observer.watch(client, KILL_AFTER_FINISHED, 90, f)
        f.hub.kill()
        f.hub.start()  # same data dir, same port: the agents reconnect on their own
        observer.watch(client, WORKLOADS, 90, f)
        final, completed = final_checks(observer, f, stranded=set())
    assert all(len(done) == 1 for done in completed.values())
    # Every decision an agent acted on had been committed: the restarted hub agrees with what
    # the agents hold, so no workload was evicted and dispatched again.
    assert [k for k, wl in final.items() if evictions(wl)] == []
