"""``mkagent --kubeconfig``: worker agents on their clusters' own API servers, end to end (Jobs and JobSets).

Real processes over HTTP and gRPC: a manager and two worker ``mkhub dev-cluster`` s
(their Kueue objects applied with the real kubectl), the hub on the manager
(``mkhub serve --kubeconfig``; the first test also with an embedded hub), and one
``mkagent --kubeconfig`` per worker. A Job created with ``kubectl create`` in the
manager for a MultiKueue queue is admitted by the hub, copied to both
workers as Workloads (with Kueue's origin label), created as a Job in exactly
one of them (the winner), runs and completes there; ``mkhub logs`` prints its
pods' lines, relayed by the winner's agent. What ran where is read from the
workers' own API servers (:class:`kube_fleet.Recorder` watches every Job and
pod uid), not from the hub. Then the faults: kill -9 of the winner's agent, a
restart of the winner's API server, the hub unreachable past workerLostTimeout
(the agent stops its run, the hub runs it elsewhere; nothing left behind), the
hub's Job deleted while its worker is unreachable (the remote Job is deleted
once the worker is back). JobSets likewise: created in the manager (kubectl, or ``mkhub create``
on an embedded hub), run in exactly one worker by its JobSet operator, the manager's JobSet
showing the worker's status; kill -9 of the winning agent or of the hub neither loses nor reruns one.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import multikueue_setup, one_queue_setup
from kube_fleet import (
    MKHUB,
    REPO,
    DevCluster,
    Proc,
    Recorder,
    agent,
    free_port,
    stop_all,
    wait_for,
)
from netproxy import BlackholeProxy

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("kubectl_required")]

WORKERS = ("worker-1", "worker-2")
# Agents fence (stop their runs) after 60 % of it unheard by the hub: 4 s fenced a run after 2.4 s of an
# embedded hub starved at load 20 and ran the Job again (two uids in one worker). A test about a cut-off
# worker asks for a short one; the rest must not see a partition the machine's load makes up.
LOST_TIMEOUT = 20.0

HUB_SETUP = one_queue_setup(8, checks=["multikueue"], between=multikueue_setup(WORKERS))

WORKER_OBJECTS = one_queue_setup(4, node_labels={"kubernetes.io/os": "linux"})

def config(lost_timeout: float, frameworks: str = "batch/job, jobset.x-k8s.io/jobset", external: tuple[str, ...] = ()) -> str:
    return f"""
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
integrations:
  frameworks: [{frameworks}]
multiKueue:
  workerLostTimeout: {int(lost_timeout * 1000)}ms
  gcInterval: 2s
  externalFrameworks: [{", ".join(f"{{name: {name}}}" for name in external)}]
"""


def job(name: str, duration: str, *, parallelism: int = 2) -> str:
    return yaml.safe_dump({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                     "annotations": {"mkhub.dev/sim-duration": duration}},
        "spec": {"parallelism": parallelism, "completions": parallelism, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}},
    })


@dataclass
class Fleet:
    tmp: Path
    hub_port: int
    hub: Proc
    workers: dict[str, DevCluster]
    agents: dict[str, Proc]
    recorders: dict[str, Recorder]
    proxies: dict[str, BlackholeProxy] = field(default_factory=dict)
    manager: DevCluster | None = None  # the hub's own cluster (mkhub serve --kubeconfig); None: embedded hub

    def submit(self, manifest: str) -> None:
        """``kubectl create`` in the manager cluster (or ``mkhub create`` on an embedded hub)."""
        if self.manager is not None:
            self.manager.kubectl("create", "-f", "-", stdin=manifest)
        else:
            self.mkhub("create", "-f", "-", stdin=manifest)

    def delete_job(self, name: str) -> None:
        if self.manager is not None:
            self.manager.kubectl("delete", "job", name, "-n", "team-a")
        else:
            self.mkhub("delete", "job", name, "-n", "team-a")

    def hub_job(self, name: str) -> dict[str, Any]:
        if self.manager is not None:
            return dict(self.manager.get("job", name, "-n", "team-a"))
        return dict(json.loads(self.mkhub("get", "job", name, "-n", "team-a", "-o", "json").stdout))

    def mkhub(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([*MKHUB, "--server", f"127.0.0.1:{self.hub_port}", "--insecure", *args], input=stdin,
                                capture_output=True, text=True, timeout=60, check=False)
        if check:
            assert result.returncode == 0, f"mkhub {' '.join(args)}: {result.stderr}"
        return result

    def hub_workload(self, job_name: str) -> dict[str, Any] | None:
        if self.manager is not None:
            items = self.manager.get("workloads", "-n", "team-a")["items"]
        else:
            items = json.loads(self.mkhub("get", "workloads", "-n", "team-a", "-o", "json").stdout)["items"]
        for wl in items:
            if any(r.get("name") == job_name for r in wl["metadata"].get("ownerReferences") or []):
                return dict(wl)
        return None

    def finished(self, job_name: str) -> bool:
        wl = self.hub_workload(job_name)
        return wl is not None and any(c["type"] == "Finished" and c["status"] == "True"
                                      for c in (wl.get("status") or {}).get("conditions") or [])

    def ran_on(self, job_name: str) -> dict[str, set[str]]:
        """Worker -> uids of the Jobs of that name its API server ever had."""
        key = f"team-a/{job_name}"
        return {name: rec.jobs_named(key) for name, rec in self.recorders.items() if rec.jobs_named(key)}

    def winner(self, job_name: str) -> str:
        ran = wait_for(lambda: self.ran_on(job_name), 60, f"job {job_name} created in a worker")
        assert len(ran) == 1, ran
        return str(next(iter(ran)))

    def assert_ran_once(self, job_name: str, pods: int = 2) -> str:
        ran = self.ran_on(job_name)
        assert len(ran) == 1 and all(len(uids) == 1 for uids in ran.values()), f"Job {job_name} created more than once: {ran}"
        name = next(iter(ran))
        pod_uids = self.recorders[name].pods_of(f"team-a/{job_name}")
        assert len(pod_uids) == pods, f"{job_name} ran {len(pod_uids)} pods on {name}, not {pods}"
        return str(name)


def webhook_args(manager: DevCluster, tmp: Path) -> list[str]:
    """The hub's Job webhook, registered in the manager cluster as manifests/base/webhook.yaml does."""
    certs = subprocess.run([*MKHUB, "certs", "--out", str(tmp / "certs")], capture_output=True, text=True, timeout=60, check=False)
    assert certs.returncode == 0, certs.stderr
    port = free_port()
    webhook = yaml.safe_load((REPO / "manifests/base/webhook.yaml").read_text())
    ca = base64.b64encode((tmp / "certs" / "ca.crt").read_bytes()).decode()
    for hook in webhook["webhooks"]:  # each at its kind's path (Jobs, JobSets)
        hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{hook['clientConfig']['service']['path']}", "caBundle": ca}
    manager.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(webhook))
    return ["--webhook-listen", f"127.0.0.1:{port}", "--webhook-tls-dir", str(tmp / "certs")]


def managed_by(manager: DevCluster) -> str | None:
    dry = manager.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", stdin=job("probe", "1s"), check=False)
    return json.loads(dry.stdout)["spec"].get("managedBy") if dry.returncode == 0 else None


@pytest.fixture
def fleet(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Fleet]:
    """The hub on a manager dev-cluster (``mkhub serve --kubeconfig``) unless the test asks for
    ``{"hub": "embedded"}``; ``{"agent_args": [...]}`` for the agents; ``{"lost_timeout": s}``
    for a workerLostTimeout other than LOST_TIMEOUT; ``{"frameworks": "batch/job, pod"}`` for
    other integrations than Jobs and JobSets; ``{"external": ["Kind.version.group"]}`` for
    multiKueue.externalFrameworks (the agents get the same Configuration)."""
    param: dict[str, Any] = dict(getattr(request, "param", {}))
    agent_args: list[str] = list(param.get("agent_args", []))
    workers = {name: DevCluster(tmp_path / name, "1s").start() for name in WORKERS}
    manager = DevCluster(tmp_path / "manager", "1s").start() if param.get("hub", "kube") == "kube" else None
    procs: list[Proc] = []
    recorders = {name: Recorder(name, dc).start() for name, dc in workers.items()}
    try:
        for dc in workers.values():
            dc.kubectl("apply", "-f", "-", stdin=WORKER_OBJECTS)
        (tmp_path / "config.yaml").write_text(config(float(param.get("lost_timeout", LOST_TIMEOUT)),
                                                     param.get("frameworks", "batch/job, jobset.x-k8s.io/jobset"),
                                                     tuple(param.get("external", ()))))
        if param.get("external"):
            agent_args += ["--config", str(tmp_path / "config.yaml")]
        hub_port = free_port()
        proxies = {name: BlackholeProxy(hub_port).start() for name in WORKERS}
        store = (["--kubeconfig", str(manager.kubeconfig), "--leader-elect", "false"] if manager is not None
                 else ["--data-dir", str(tmp_path / "hub")])
        if manager is not None:
            store += webhook_args(manager, tmp_path)
            manager.kubectl("apply", "-f", "-", stdin=HUB_SETUP)
        hub = Proc([*MKHUB, "serve", *store, "--listen", f"127.0.0.1:{hub_port}", "--insecure",
                    "--config", str(tmp_path / "config.yaml")], tmp_path / "hub.log").start()
        procs.append(hub)
        f = Fleet(tmp_path, hub_port, hub, workers, {}, recorders, proxies, manager)
        wait_for(lambda: f.mkhub("get", "clusterqueues", check=False).returncode == 0, 60, "the hub serving")
        if manager is None:
            f.mkhub("apply", "-f", "-", stdin=HUB_SETUP)
        else:
            # Kueue's webhook (served by the hub, called by the manager's API server) must know the queue.
            wait_for(lambda: managed_by(manager) == "kueue.x-k8s.io/multikueue", 60, "the webhook to set managedBy")
        for name, dc in workers.items():
            f.agents[name] = agent(name, proxies[name].address, dc, tmp_path / f"{name}-agent.log", *agent_args).start()
            procs.append(f.agents[name])
        wait_for(lambda: len(json.loads(f.mkhub("get", "multikueueclusters", "-o", "json").stdout)["items"]) == 2, 30)
        wait_for(lambda: all(
            any(c["type"] == "Active" and c["status"] == "True" for c in (mk.get("status") or {}).get("conditions") or [])
            for mk in json.loads(f.mkhub("get", "multikueueclusters", "-o", "json").stdout)["items"]), 60, "both workers connected")
        yield f
    finally:
        for r in recorders.values():
            r.stop()
        # The fleet's current hub and agents, not only the first ones: a test may have replaced them.
        for p in [*procs, *([f.hub, *f.agents.values()] if "f" in locals() else [])]:
            p.kill()
        for p in (locals().get("proxies") or {}).values():
            p.stop()
        stop_all([*workers.values(), *([manager] if manager is not None else [])])


@pytest.mark.parametrize("fleet", [{}, {"hub": "embedded"}], indirect=True, ids=["manager-cluster", "embedded-hub"])
def test_job_runs_in_exactly_one_worker_and_logs_come_through_the_hub(fleet: Fleet) -> None:
    fleet.submit(job("hello", "2s"))
    winner = fleet.winner("hello")
    loser = next(n for n in WORKERS if n != winner)
    # The winner's copy is a Workload there, with Kueue's origin label, admitted locally.
    rec = fleet.recorders[winner]
    copy = wait_for(lambda: next((w for w in rec.workloads.values()
                                  if (w["metadata"].get("labels") or {}).get("kueue.x-k8s.io/multikueue-origin")), None), 30)
    assert copy["metadata"]["namespace"] == "team-a"
    # The worker Job: same namespace and name, origin label, unsuspended, no managedBy, the flavor's nodeSelector.
    worker_job = wait_for(lambda: next(iter(fleet.workers[winner].get("jobs", "-n", "team-a")["items"]), None), 30)
    assert worker_job["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] == "multikueue"
    assert worker_job["spec"].get("suspend") is False and "managedBy" not in worker_job["spec"]
    assert worker_job["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
    wait_for(lambda: fleet.recorders[winner].complete("team-a/hello"), 60, "the worker Job complete")
    wait_for(lambda: fleet.finished("hello"), 60, "the hub's workload finished")
    fleet.assert_ran_once("hello")
    # Admitted in the manager through MultiKueue, on the worker that ran it.
    hub_wl = fleet.hub_workload("hello")
    assert hub_wl is not None and hub_wl["status"].get("clusterName") == winner
    assert any(c["type"] == "Admitted" and c["status"] == "True" for c in hub_wl["status"]["conditions"])
    assert not fleet.recorders[loser].jobs_named("team-a/hello")
    # The manager's Job shows Complete with the worker's counts, and never ran a pod of its own.
    def complete_job() -> dict[str, Any] | None:
        got = fleet.hub_job("hello")
        return got if j_complete(got) else None

    hub_job = wait_for(complete_job, 30, "the manager Job Complete")
    assert hub_job["status"].get("succeeded") == 2 and not hub_job["status"].get("failed")
    if fleet.manager is not None:
        assert hub_job["spec"].get("managedBy") == "kueue.x-k8s.io/multikueue"
        assert not fleet.manager.get("pods", "-n", "team-a")["items"]
    # Logs through the hub: one line per pod start, prefixed since the Job has two pods.
    out = fleet.mkhub("logs", "job/hello", "-n", "team-a").stdout.splitlines()
    started = [line for line in out if "started on node" in line]
    assert len(started) == 2 and all(line.startswith("[pod/hello-") for line in started), out
    assert sum("exited with code 0" in line for line in out) == 2, out
    tail = fleet.mkhub("logs", "job/hello", "-n", "team-a", "--tail", "1").stdout.splitlines()
    assert len(tail) == 2 and all("exited with code 0" in line for line in tail), tail
    missing = fleet.mkhub("logs", "job/nope", "-n", "team-a", check=False)
    assert missing.returncode == 1 and "nope" in missing.stderr
    # Finished: the worker's Job and copies are gone (Kueue removes remote objects of a finished workload).
    wait_for(lambda: not fleet.workers[winner].get("jobs", "-n", "team-a")["items"], 30, "the worker Job deleted")
    wait_for(lambda: not fleet.workers[winner].get("workloads", "-n", "team-a")["items"], 30, "the copy deleted")


# The restarted agent (or API server) must be back within workerLostTimeout, or the hub rightly
# runs the workload elsewhere: on a loaded machine a restart takes several seconds.
@pytest.mark.parametrize("fleet", [{"lost_timeout": 45.0}], indirect=True)
def test_kill_9_of_the_winning_agent_neither_loses_nor_reruns_the_job(fleet: Fleet) -> None:
    fleet.submit(job("steady", "5s"))
    winner = fleet.winner("steady")
    wait_for(lambda: len(fleet.recorders[winner].pods_of("team-a/steady")) == 2, 30, "pods running")
    fleet.agents[winner].kill()
    fleet.agents[winner] = agent(winner, fleet.proxies[winner].address, fleet.workers[winner],
                                 fleet.tmp / f"{winner}-agent-2.log").start()
    wait_for(lambda: fleet.finished("steady"), 90, "the hub's workload finished")
    fleet.assert_ran_once("steady")
    assert "restored 1 workload copies" in fleet.agents[winner].log()
    # The restored copy keeps its uid and the hub's: the decision log names them, never "uid -".
    assert "(uid -)" not in fleet.agents[winner].log(), fleet.agents[winner].log()[-3000:]


@pytest.mark.parametrize("fleet", [{"lost_timeout": 45.0}], indirect=True)
def test_a_restarted_worker_api_server_neither_loses_nor_reruns_the_job(fleet: Fleet) -> None:
    fleet.submit(job("sturdy", "5s"))
    winner = fleet.winner("sturdy")
    wait_for(lambda: len(fleet.recorders[winner].pods_of("team-a/sturdy")) == 2, 30, "pods running")
    fleet.workers[winner].stop()
    fleet.workers[winner].start()
    wait_for(lambda: fleet.finished("sturdy"), 90, "the hub's workload finished")
    fleet.assert_ran_once("sturdy")


def j_complete(job: dict[str, Any]) -> bool:
    return any(c["type"] == "Complete" and c["status"] == "True" for c in (job.get("status") or {}).get("conditions") or [])


def completed_on(fleet: Fleet, job_name: str) -> list[str]:
    return [name for name, rec in fleet.recorders.items() if rec.complete(f"team-a/{job_name}")]


@pytest.mark.parametrize("fleet", [{"lost_timeout": 8.0}], indirect=True)
def test_a_worker_cut_off_past_worker_lost_timeout_stops_its_run_and_the_job_completes_elsewhere(fleet: Fleet) -> None:
    fleet.submit(job("moved", "6s"))
    first = fleet.winner("moved")
    other = next(n for n in WORKERS if n != first)
    wait_for(lambda: len(fleet.recorders[first].pods_of("team-a/moved")) == 2, 30, "pods running")
    fleet.proxies[first].blackhole()
    # Fencing: the cut-off agent deletes its Job before the hub gives the workload to the other worker.
    wait_for(lambda: not fleet.workers[first].get("jobs", "-n", "team-a")["items"], 30, "the cut-off worker's Job deleted")
    wait_for(lambda: fleet.recorders[other].jobs_named("team-a/moved"), 60, "the job re-dispatched to the other worker")
    fleet.proxies[first].heal()
    wait_for(lambda: fleet.finished("moved"), 90, "the hub's workload finished")
    assert completed_on(fleet, "moved") == [other]
    assert len(fleet.recorders[other].jobs_named("team-a/moved")) == 1
    assert len(fleet.recorders[first].jobs_named("team-a/moved")) == 1  # never made again there
    wait_for(lambda: not fleet.workers[first].get("workloads", "-n", "team-a")["items"], 30, "no copy left behind")


@pytest.mark.parametrize("fleet", [{"agent_args": ["--no-fencing"], "lost_timeout": 4.0}], indirect=True)
def test_the_hub_job_deleted_while_its_worker_is_unreachable_is_removed_there_once_it_is_back(fleet: Fleet) -> None:
    fleet.submit(job("gone", "60s"))
    winner = fleet.winner("gone")
    wait_for(lambda: len(fleet.recorders[winner].pods_of("team-a/gone")) == 2, 30, "pods running")
    fleet.proxies[winner].blackhole()
    fleet.delete_job("gone")
    wait_for(lambda: fleet.hub_workload("gone") is None, 30, "the hub's workload deleted")
    # Unreachable (and not fencing): the worker's Job runs on.
    assert fleet.workers[winner].get("jobs", "-n", "team-a")["items"]
    fleet.proxies[winner].heal()
    wait_for(lambda: not fleet.workers[winner].get("jobs", "-n", "team-a")["items"], 30, "the orphaned Job deleted")
    wait_for(lambda: not fleet.workers[winner].get("workloads", "-n", "team-a")["items"], 30, "the orphaned copy deleted")
    assert not completed_on(fleet, "gone")
    assert all(not rec.jobs_named("team-a/gone") for name, rec in fleet.recorders.items() if name != winner)


def jobset(name: str, duration: str = "1s") -> str:
    """A JobSet of a driver and two workers (3 pods of 1 cpu, each running ``duration``), for a MultiKueue queue."""
    def replicated(rj: str, replicas: int) -> dict[str, Any]:
        return {"name": rj, "replicas": replicas, "template": {"spec": {"parallelism": 1, "completions": 1, "template": {
            "metadata": {"annotations": {"mkhub.dev/sim-duration": duration}},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}}

    return yaml.safe_dump({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"replicatedJobs": [replicated("driver", 1), replicated("workers", 2)]},
    })


def jobset_winner(fleet: Fleet, name: str) -> str:
    key = f"team-a/{name}"
    ran = wait_for(lambda: {n: r.jobsets_named(key) for n, r in fleet.recorders.items() if r.jobsets_named(key)}, 60,
                   f"JobSet {name} created in a worker")
    assert len(ran) == 1, ran
    return str(next(iter(ran)))


def assert_jobset_ran_once(fleet: Fleet, name: str) -> None:
    """The JobSet was created in one worker only, once, and each of its child Jobs ran once there."""
    key = f"team-a/{name}"
    made = {n: r.jobsets_named(key) for n, r in fleet.recorders.items() if r.jobsets_named(key)}
    assert len(made) == 1 and all(len(uids) == 1 for uids in made.values()), f"JobSet {name} made more than once: {made}"
    rec = fleet.recorders[next(iter(made))]
    for child in (f"{name}-driver-0", f"{name}-workers-0", f"{name}-workers-1"):
        assert len(rec.jobs_named(f"team-a/{child}")) == 1, f"{child}: {rec.jobs_named(f'team-a/{child}')}"
        assert len(rec.pods_of(f"team-a/{child}")) == 1, f"{child} ran {rec.pods_of(f'team-a/{child}')}"


def manager_jobset(fleet: Fleet, name: str) -> dict[str, Any]:
    if fleet.manager is not None:
        return dict(fleet.manager.get("jobset", name, "-n", "team-a"))
    return dict(json.loads(fleet.mkhub("get", "jobset", name, "-n", "team-a", "-o", "json").stdout))


@pytest.mark.parametrize("fleet", [{}, {"hub": "embedded"}], indirect=True, ids=["manager-cluster", "embedded-hub"])
def test_a_jobset_runs_in_exactly_one_worker_and_the_manager_mirrors_its_status(fleet: Fleet) -> None:
    fleet.submit(jobset("train"))
    winner = jobset_winner(fleet, "train")
    loser = next(n for n in WORKERS if n != winner)
    # As created in the winner (read from its watch: a short run may be over and collected already).
    worker_js = wait_for(lambda: fleet.recorders[winner].jobset_as_created("team-a/train"), 30)
    assert worker_js["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] == "multikueue"
    assert worker_js["spec"].get("suspend") is False and "managedBy" not in worker_js["spec"]
    for rj in worker_js["spec"]["replicatedJobs"]:  # the worker's local admission, in every template
        assert rj["template"]["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
    wait_for(lambda: fleet.recorders[winner].jobset_complete("team-a/train"), 90, "the worker JobSet Completed")
    wait_for(lambda: fleet.finished("train"), 60, "the hub's workload finished")
    assert_jobset_ran_once(fleet, "train")
    assert not fleet.recorders[loser].jobsets_named("team-a/train")
    hub_wl = fleet.hub_workload("train")
    assert hub_wl is not None and hub_wl["status"].get("clusterName") == winner
    assert [ps["name"] for ps in hub_wl["spec"]["podSets"]] == ["driver", "workers"]

    def mirrored() -> dict[str, Any] | None:
        got = manager_jobset(fleet, "train")
        done = any(c["type"] == "Completed" and c["status"] == "True" for c in (got.get("status") or {}).get("conditions") or [])
        return got if done else None

    manager = wait_for(mirrored, 30, "the manager JobSet Completed")
    # The worker's status, mirrored: its replicated jobs' counts, as the worker's JobSet controller wrote them.
    counts = {s["name"]: s.get("succeeded") for s in manager["status"]["replicatedJobsStatus"]}
    assert counts == {"driver": 1, "workers": 2}
    if fleet.manager is not None:
        assert manager["spec"].get("managedBy") == "kueue.x-k8s.io/multikueue"
        assert not fleet.manager.get("jobs", "-n", "team-a")["items"]  # never run in the manager
        assert not fleet.manager.get("pods", "-n", "team-a")["items"]
    wait_for(lambda: not fleet.workers[winner].get("jobsets", "-n", "team-a")["items"], 30, "the worker JobSet deleted")


@pytest.mark.parametrize("fleet", [{"lost_timeout": 45.0}], indirect=True)
def test_kill_9_of_the_winning_agent_neither_loses_nor_reruns_the_jobset(fleet: Fleet) -> None:
    fleet.submit(jobset("steady-set", "6s"))
    winner = jobset_winner(fleet, "steady-set")
    wait_for(lambda: fleet.recorders[winner].pods_of("team-a/steady-set-workers-1"), 30, "pods running")
    assert not fleet.recorders[winner].jobset_complete("team-a/steady-set")  # killed mid-run
    fleet.agents[winner].kill()
    fleet.agents[winner] = agent(winner, fleet.proxies[winner].address, fleet.workers[winner],
                                 fleet.tmp / f"{winner}-agent-2.log").start()
    wait_for(lambda: fleet.finished("steady-set"), 90, "the hub's workload finished")
    assert_jobset_ran_once(fleet, "steady-set")
    assert "restored 1 workload copies" in fleet.agents[winner].log()


@pytest.mark.parametrize("fleet", [{"lost_timeout": 45.0}, {"lost_timeout": 45.0, "hub": "embedded"}], indirect=True,
                         ids=["manager-cluster", "embedded-hub"])
def test_kill_9_of_the_hub_neither_loses_nor_reruns_the_jobset(fleet: Fleet) -> None:
    fleet.submit(jobset("kept-set", "6s"))
    winner = jobset_winner(fleet, "kept-set")
    wait_for(lambda: fleet.recorders[winner].pods_of("team-a/kept-set-workers-1"), 30, "pods running")
    assert not fleet.recorders[winner].jobset_complete("team-a/kept-set")  # the hub dies mid-run
    fleet.hub.kill()
    fleet.hub = Proc(fleet.hub.cmd, fleet.hub.log_path).start()
    wait_for(lambda: fleet.mkhub("get", "clusterqueues", check=False).returncode == 0, 60, "the hub serving again")
    wait_for(lambda: fleet.finished("kept-set"), 90, "the hub's workload finished")
    assert_jobset_ran_once(fleet, "kept-set")

    def mirrored() -> bool:
        conditions = (manager_jobset(fleet, "kept-set").get("status") or {}).get("conditions") or []
        return any(c["type"] == "Completed" and c["status"] == "True" for c in conditions)

    wait_for(mirrored, 30, "the manager JobSet Completed")
