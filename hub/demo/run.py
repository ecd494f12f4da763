"""``mkhub demo``: a hub and its worker agents on loopback, and a burst of GPU jobs through them.

Nothing is simulated but the pods: certificates from ``mkhub certs``, a real
``mkhub serve`` and real ``mkagent`` processes talking gRPC over mutual TLS,
the hub's SQLite store in a temporary directory, the sample manifests of
``manifests/samples/multikueue``. Every figure printed (progress, where each
job ran, waits) is read back from the hub through its control service.

The demo owns its child processes: whatever happens (a failure, Ctrl-C,
SIGTERM) they are stopped with SIGTERM, waited for, and killed if they do not
stop; a failure names the process and prints the end of its log.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

import grpc
import yaml

from hub.api.annotations import SIM_DURATION_ANNOTATION
from hub.api.meta import parse_time
from hub.api.quantity import resource_value
from hub.ctl.client import CliError, ControlClient
from hub.ctl.printers import format_table
from hub.paths import samples_dir
from hub.service.certs import certs_main

from .processes import AgentProcess, HubProcess, free_port

SAMPLES = samples_dir() / "multikueue"  # package data in a wheel, the repository's in a checkout
GPU = "nvidia.com/gpu"
TEAMS = ("team-a", "team-b")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
DURATION_ANNOTATION = SIM_DURATION_ANNOTATION
# How long each step may take before the demo gives up (generous: a busy 2-core machine).
START_TIMEOUT = 45.0
POLL = 0.25


class DemoError(Exception):
    """A step failed; ``process`` names the child whose log explains it (if any)."""

    def __init__(self, message: str, process: str | None = None) -> None:
        super().__init__(message)
        self.process = process


class Interrupted(Exception):
    """SIGTERM, SIGHUP or Ctrl-C."""


@dataclass(frozen=True, slots=True)
class JobPlan:
    name: str
    team: str
    gpus: int
    duration: float
    high: bool

    def manifest(self) -> dict[str, Any]:
        labels = {QUEUE_LABEL: "gpu-queue"}
        if self.high:
            labels[PRIORITY_LABEL] = "high"
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": self.name,
                "namespace": self.team,
                "labels": labels,
                "annotations": {DURATION_ANNOTATION: f"{round(self.duration * 1000)}ms"},
            },
            "spec": {
                "parallelism": 1,
                "completions": 1,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "trainer",
                                "image": "registry.example/trainer:latest",
                                "resources": {"requests": {"cpu": "1", "memory": "4Gi", GPU: str(self.gpus)}},
                            }
                        ],
                    }
                },
            },
        }


def plan_jobs(count: int, seed: int) -> list[JobPlan]:
    """A reproducible mix: both teams, 1/2/4 GPUs, 1-3 s runs; about one in ten high-priority
    (those come last: they are submitted mid-burst, when the fleet is full)."""
    rng = random.Random(seed)
    high = max(1, round(count / 10)) if count >= 3 else 0
    plans = []
    for i in range(count):
        plans.append(
            JobPlan(
                name=f"gpu-{i + 1:03d}",
                team=rng.choice(TEAMS),
                gpus=rng.choices((1, 2, 4), weights=(4, 4, 2))[0],
                duration=rng.choice((1.0, 1.5, 2.0, 2.5, 3.0)),
                high=i >= count - high,
            )
        )
    return plans


# ---------------------------------------------------------------------------------- manifests


def hub_manifests(samples: Path, workers: int) -> str:
    """The sample hub.yaml, unchanged for two workers; otherwise with one MultiKueueCluster per
    worker and each team's GPU quota scaled to the fleet (the sample sizes it for two)."""
    text = (samples / "hub.yaml").read_text()
    if workers == 2:
        return text
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    names = worker_names(workers)
    template = next(d for d in docs if d["kind"] == "MultiKueueCluster")
    out: list[dict[str, Any]] = []
    for doc in docs:
        if doc["kind"] == "MultiKueueCluster":
            if doc["metadata"]["name"] == template["metadata"]["name"]:
                for name in names:
                    cluster = yaml.safe_load(yaml.safe_dump(template))
                    cluster["metadata"]["name"] = name
                    cluster["spec"]["kubeConfig"]["location"] = f"{name}-kubeconfig"
                    out.append(cluster)
            continue
        if doc["kind"] == "MultiKueueConfig":
            doc["spec"]["clusters"] = names
        if doc["kind"] == "ClusterQueue":
            for group in doc["spec"]["resourceGroups"]:
                for flavor in group["flavors"]:
                    for res in flavor["resources"]:
                        if res["name"] == GPU:
                            res["nominalQuota"] = worker_gpus(samples, 1) * workers // len(TEAMS)
        out.append(doc)
    return yaml.safe_dump_all(out, sort_keys=False)


def worker_names(workers: int) -> list[str]:
    return [f"worker-{i}" for i in range(1, workers + 1)]


def worker_objects(samples: Path, index: int) -> Path:
    """worker-N.yaml of the samples; workers beyond those reuse worker-1's queues."""
    path = samples / f"worker-{index}.yaml"
    return path if path.exists() else samples / "worker-1.yaml"


def worker_gpus(samples: Path, index: int) -> int:
    """The GPUs a worker's own ClusterQueues hold (its capacity)."""
    total = 0
    for doc in yaml.safe_load_all(worker_objects(samples, index).read_text()):
        if not doc or doc.get("kind") != "ClusterQueue":
            continue
        for group in doc["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                for res in flavor["resources"]:
                    if res["name"] == GPU:
                        total += resource_value(GPU, res["nominalQuota"])  # a count: GPUs are not milli-units
    return total


# ---------------------------------------------------------------------------------- reading the hub


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    """The condition of that type if it is True."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_ and cond.get("status") == "True":
            return dict(cond)
    return None


def owner_job(wl: dict[str, Any]) -> str | None:
    for ref in wl["metadata"].get("ownerReferences") or []:
        if ref.get("kind") == "Job":
            return str(ref.get("name"))
    return None


@dataclass
class Progress:
    """Where the hub says the jobs are."""

    total: int
    pending: int = 0  # waiting for the hub's quota
    reserved: int = 0  # holding hub quota, dispatched to the workers, none has admitted it yet
    admitted: int = 0  # admitted in the hub's own cluster, its pods not ready yet (waitForPodsReady's PodsReady=False)
    running: Counter[str] = field(default_factory=Counter)  # worker (or "hub") -> workloads started there
    finished: int = 0
    failed: int = 0

    @classmethod
    def of(cls, total: int, workloads: Sequence[dict[str, Any]]) -> Progress:
        p = cls(total)
        seen = 0
        for wl in workloads:
            if owner_job(wl) is None:
                continue
            seen += 1
            finished = condition(wl, "Finished")
            if finished is not None:
                p.finished += 1
                p.failed += finished.get("reason") == "Failed"
            elif condition(wl, "Admitted") is not None:
                worker = (wl.get("status") or {}).get("clusterName")
                waiting = any(c.get("type") == "PodsReady" for c in (wl.get("status") or {}).get("conditions") or []) \
                    and condition(wl, "PodsReady") is None
                if worker is None and waiting:
                    p.admitted += 1
                else:  # a worker's admission starts it there (its pods' readiness is the worker's)
                    p.running[str(worker or "hub")] += 1
            elif condition(wl, "QuotaReserved") is not None:
                p.reserved += 1
            else:
                p.pending += 1
        p.pending += max(0, total - seen)  # Jobs whose Workload the hub has not created yet
        return p

    def line(self, elapsed: float, workers: Sequence[str], width: int = 20) -> str:
        done = width * self.finished // max(1, self.total)
        where = ", ".join(f"{w} {self.running.get(w, 0)}" for w in workers)
        failed = f" ({self.failed} failed)" if self.failed else ""
        return (
            f"{elapsed:5.1f}s [{'#' * done}{'.' * (width - done)}] {self.finished:>3}/{self.total} finished{failed} | "
            f"pending {self.pending:>3} | reserved {self.reserved:>2} | admitted {self.admitted:>2} | "
            f"running {sum(self.running.values()):>2} ({where})"
        )


# ---------------------------------------------------------------------------------- the demo


class Demo:
    def __init__(self, args: argparse.Namespace, out: TextIO = sys.stdout) -> None:
        self.jobs: int = args.jobs
        self.workers = worker_names(args.workers)
        self.keep: bool = args.keep
        self.seed: int = args.seed
        self.samples: Path = args.manifests
        self.out = out
        self.tty = out.isatty()
        self.workdir = Path(tempfile.mkdtemp(prefix="mkhub-demo-"))
        self.certs = self.workdir / "certs"
        self.hub: HubProcess | None = None
        self.agents: dict[str, AgentProcess] = {}
        self.t0 = time.monotonic()
        self._live = False  # a progress line is on screen without its newline

    # --- output

    def say(self, text: str = "") -> None:
        self._end_live()
        print(text, file=self.out, flush=True)

    def step(self, label: str, text: str) -> None:
        self.say(f"  {label:<8} {text}")

    def live(self, text: str) -> None:
        if self.tty:
            width = shutil.get_terminal_size((160, 24)).columns - 1
            self.out.write(f"\r\033[K{text[:width]}")
            self.out.flush()
            self._live = True
        else:
            print(text, file=self.out, flush=True)

    def _end_live(self) -> None:
        if self._live:
            self.out.write("\n")
            self._live = False

    # --- processes

    def processes(self) -> list[tuple[str, HubProcess | AgentProcess]]:
        """Agents first: stopped first, they say goodbye to a live hub."""
        hub: list[tuple[str, HubProcess | AgentProcess]] = [("hub", self.hub)] if self.hub is not None else []
        return [*self.agents.items(), *hub]

    def check_alive(self) -> None:
        for name, proc in self.processes():
            code = proc.proc.poll() if proc.proc is not None else None
            if code is not None:
                how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
                raise DemoError(f"{name} {how} in the middle of the demo", name)

    def log_path(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    def stop_all(self) -> list[tuple[str, int | None]]:
        """SIGTERM to every child, then wait (and SIGKILL what does not stop)."""
        codes: list[tuple[str, int | None]] = []
        ordered = self.processes()
        for _, proc in ordered:
            if proc.proc is not None and proc.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.proc.terminate()
        for name, proc in ordered:
            if proc.proc is None:
                continue
            try:
                codes.append((name, proc.proc.wait(timeout=15)))
            except Exception:  # noqa: BLE001 - whatever happened, leave no child behind
                proc.proc.kill()
                codes.append((name, proc.proc.wait(timeout=15)))
        return codes

    # --- steps

    def run(self) -> int:
        self.say(
            f"mkhub demo: a hub and {_plural(len(self.workers), 'worker agent')} on loopback (mutual TLS), "
            f"{_plural(self.jobs, 'GPU job')}"
        )
        self.step("workdir", f"{self.workdir}" + ("" if self.keep else " (removed at the end; --keep keeps it)"))
        self.issue_certs()
        port = free_port()
        self.start_hub(port)
        with self.hub_channel() as channel:
            client = ControlClient(channel, server=f"127.0.0.1:{port}", timeout=30.0)
            self.apply_queues(client)
            self.start_agents(port, client)
            plans = plan_jobs(self.jobs, self.seed)
            self.burst(client, plans)
            workloads = client.list("Workload", all_namespaces=True)[2]
            jobs = client.list("Job", all_namespaces=True)[2]
        failed = self.summary(plans, workloads, jobs)
        if failed:
            raise DemoError(f"{_plural(failed, 'job')} failed; see the workloads with --keep")
        self.look_around(port)
        if self.keep:
            self.wait_for_ctrl_c()
        return 0

    def look_around(self, port: int) -> None:
        """The commands to see what the demo did, against this hub (live with --keep)."""
        how = (
            "The hub and agents keep running until Ctrl-C; in another terminal:"
            if self.keep
            else "To look around, run the demo with --keep: the hub and agents then stay up (until Ctrl-C) for:"
        )
        self.say(how)
        certs = self.workdir / "certs"
        for line in (
            f"export MKHUB_SERVER=127.0.0.1:{port} MKHUB_TLS_DIR={certs}",
            "mkhub get clusterqueues,localqueues -A",
            "mkhub get workloads -A -o wide",
            "mkhub get multikueueclusters",
            "mkhub describe workload -n team-a $(mkhub get workloads -n team-a -o name | head -1 | cut -d/ -f2)",
            "mkhub top",
        ):
            self.say(f"  {line}")

    def wait_for_ctrl_c(self) -> None:
        try:
            while True:
                self.check_alive()
                time.sleep(POLL * 4)
        except (KeyboardInterrupt, Interrupted):
            self.say("Ctrl-C: stopping the hub and agents")

    def issue_certs(self) -> None:
        begin = time.monotonic()
        agents = [arg for name in self.workers for arg in ("--agent", name)]
        with contextlib.redirect_stdout(io.StringIO()):
            code = certs_main(["--out", str(self.certs), *agents])
        if code != 0:
            raise DemoError(f"mkhub certs failed with code {code}")
        self.step("certs", f"CA, hub, admin and {_plural(len(self.workers), 'agent certificate')} ({time.monotonic() - begin:.1f}s)")

    def start_hub(self, port: int) -> None:
        begin = time.monotonic()
        self.hub = HubProcess(self.workdir / "hub", port=port, tls_dir=self.certs, log_path=self.log_path("hub"))
        try:
            self.hub.start(timeout=START_TIMEOUT)
        except (RuntimeError, TimeoutError) as exc:
            raise DemoError(str(exc), "hub") from None
        self.step("hub", f"mkhub serve on 127.0.0.1:{port}, healthy in {time.monotonic() - begin:.1f}s")

    @contextlib.contextmanager
    def hub_channel(self) -> Iterator[grpc.Channel]:
        assert self.hub is not None
        with self.hub.channel() as channel:
            yield channel

    def apply_queues(self, client: ControlClient) -> None:
        text = hub_manifests(self.samples, len(self.workers))
        result = client.apply(text, source="hub.yaml")
        errors = [f"{r.object.kind} {r.object.name}: {r.error}" for r in result.results if r.error]
        if result.rejected or errors:
            raise DemoError("the hub refused hub.yaml: " + "; ".join(errors or ["rejected"]), "hub")
        kinds = Counter(r.object.kind for r in result.results)
        gpus = sum(worker_gpus(self.samples, i) for i in range(1, len(self.workers) + 1))
        self.step(
            "queues",
            f"hub.yaml applied: {_plural(kinds['ClusterQueue'], 'ClusterQueue')} (cohort research), AdmissionCheck "
            f"multikueue, {_plural(kinds['MultiKueueCluster'], 'MultiKueueCluster')}; the workers hold {gpus} A100s",
        )

    def start_agents(self, port: int, client: ControlClient) -> None:
        begin = time.monotonic()
        for i, name in enumerate(self.workers, start=1):
            self.agents[name] = AgentProcess(
                name,
                f"127.0.0.1:{port}",
                worker_objects(self.samples, i),
                tls_dir=self.certs / "agents" / name,  # only its own key, certificate and the CA certificate
                data_dir=self.workdir / name,
                log_path=self.log_path(name),
            ).start()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            self.check_alive()
            inactive = [n for n in self.workers if condition(client.get("MultiKueueCluster", n), "Active") is None]
            check = condition(client.get("AdmissionCheck", "multikueue"), "Active")
            if not inactive and check is not None:
                break
            if time.monotonic() > deadline:
                raise DemoError(f"{', '.join(inactive) or 'the admission check'} not Active in {START_TIMEOUT:.0f}s", (inactive or ["hub"])[0])
            time.sleep(0.1)
        self.step("agents", f"{', '.join(self.workers)} connected over mTLS and Active in {time.monotonic() - begin:.1f}s")

    def burst(self, client: ControlClient, plans: list[JobPlan]) -> None:
        """Submit the jobs (high-priority ones mid-burst) and show progress until all finished."""
        first = [p for p in plans if not p.high]
        late = [p for p in plans if p.high]
        teams = Counter(p.team for p in first)
        gpus = sorted({p.gpus for p in plans})
        runs = min(p.duration for p in plans), max(p.duration for p in plans)
        self.step(
            "jobs",
            f"{len(first)} submitted ({', '.join(f'{t} {n}' for t, n in sorted(teams.items()))}; "
            f"{'/'.join(map(str, gpus))} GPUs, {runs[0]:g}-{runs[1]:g}s each)"
            + (f"; {_plural(len(late), 'high-priority job')} will follow mid-burst" if late else ""),
        )
        self.say()
        self.submit(client, first)
        begin = time.monotonic()
        capacity = sum(worker_gpus(self.samples, i) for i in range(1, len(self.workers) + 1))
        # Generous: three times the ideal packing of the jobs' GPU-seconds onto the fleet.
        budget = START_TIMEOUT + 3.0 * sum(p.duration * p.gpus for p in plans) / max(1, capacity)
        late_after = math.ceil(len(first) / 4)
        last_line = ""
        last_print = 0.0
        while True:
            self.check_alive()
            workloads = client.list("Workload", all_namespaces=True)[2]
            submitted = len(plans) - len(late)
            progress = Progress.of(submitted, workloads)
            elapsed = time.monotonic() - begin
            if late and progress.finished >= late_after:
                self.submit(client, late)
                self.say(f"{elapsed:5.1f}s {_plural(len(late), 'high-priority job')} submitted: ahead of everything pending")
                late = []
                continue
            line = progress.line(elapsed, self.workers)
            done = not late and progress.finished == len(plans)
            # On a terminal the line updates in place; in a log, a line a second when something changed.
            state = line.split("]", 1)[1]
            if self.tty or (state != last_line and (done or time.monotonic() - last_print >= 1.0)):
                self.live(line)
                last_line, last_print = state, time.monotonic()
            if done:
                self._end_live()
                break
            if elapsed > budget:
                raise DemoError(f"only {progress.finished} of {len(plans)} jobs finished in {budget:.0f}s", "hub")
            time.sleep(POLL)

    def submit(self, client: ControlClient, plans: list[JobPlan]) -> None:
        result = client.apply(yaml.safe_dump_all([p.manifest() for p in plans]), source="demo jobs")
        errors = [f"{r.object.name}: {r.error}" for r in result.results if r.error]
        if result.rejected or errors:
            raise DemoError("the hub refused the jobs: " + "; ".join(errors or ["rejected"]), "hub")

    def summary(self, plans: list[JobPlan], workloads: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> int:
        """Print what the hub recorded (every time is the hub's); returns how many jobs failed."""
        by_job = {(p.team, p.name): p for p in plans}
        created = {(j["metadata"]["namespace"], j["metadata"]["name"]): parse_time(j["metadata"]["creationTimestamp"]) for j in jobs}
        per_worker: Counter[str] = Counter()
        gpu_seconds: dict[str, float] = {}
        team_jobs: Counter[str] = Counter()
        waits: dict[str, list[float]] = {t: [] for t in TEAMS}
        high_waits: list[float] = []
        normal_waits: list[float] = []
        worst: tuple[float, str] = (0.0, "")
        evictions: Counter[str] = Counter()
        failed = 0
        last_done = 0.0
        for wl in workloads:
            ns, job = wl["metadata"]["namespace"], owner_job(wl)
            plan = by_job.get((ns, job or ""))
            admitted, finished = condition(wl, "Admitted"), condition(wl, "Finished")
            if plan is None or finished is None:
                continue
            status = wl.get("status") or {}
            worker = str(status.get("clusterName") or "?")
            per_worker[worker] += 1
            team_jobs[ns] += 1
            failed += finished.get("reason") == "Failed"
            last_done = max(last_done, parse_time(finished["lastTransitionTime"]))
            for ev in (status.get("schedulingStats") or {}).get("evictions") or []:
                evictions[str(ev.get("reason") or "?")] += int(ev.get("count", 0))
            if admitted is None:
                continue
            admitted_at, done_at = parse_time(admitted["lastTransitionTime"]), parse_time(finished["lastTransitionTime"])
            gpu_seconds[worker] = gpu_seconds.get(worker, 0.0) + plan.gpus * (done_at - admitted_at)
            wait = admitted_at - created.get((ns, plan.name), admitted_at)
            waits[ns].append(wait)
            (high_waits if plan.high else normal_waits).append(wait)
            worst = max(worst, (wait, f"{ns}/{plan.name}, {plan.gpus} GPU{'s' if plan.gpus > 1 else ''}"))
        makespan = last_done - min(created.values(), default=last_done)
        capacity = sum(worker_gpus(self.samples, i) for i in range(1, len(self.workers) + 1))
        self.say()
        self.say(
            f"All {_plural(sum(per_worker.values()), 'job')} finished in {makespan:.1f}s (first submission to last completion)"
            + (f", {failed} failed" if failed else ", none failed")
            + "."
        )
        rows = [["WORKER", "JOBS", "GPU-SECONDS"]]
        for name in self.workers:
            rows.append([name, str(per_worker.get(name, 0)), f"{gpu_seconds.get(name, 0.0):.1f}"])
        self.say()
        self.say(_indent(format_table(rows)))
        self.say()
        rows = [["TEAM", "JOBS", "MEAN WAIT", "MAX WAIT"]]
        for team in TEAMS:
            w = waits[team]
            rows.append([team, str(team_jobs.get(team, 0)), _seconds(_mean(w)), _seconds(max(w) if w else None)])
        self.say(_indent(format_table(rows)))
        self.say()
        used = sum(gpu_seconds.values())
        self.say(
            f"  Wait is submission to admission on a worker. Longest: {worst[0]:.1f}s ({worst[1]})."
            if worst[1]
            else "  No admissions recorded."
        )
        if high_waits:
            self.say(
                f"  High-priority jobs waited {_seconds(_mean(high_waits))} on average, the others {_seconds(_mean(normal_waits))}."
            )
        if makespan > 0 and capacity:
            self.say(f"  The {capacity} GPUs were busy {100 * used / (capacity * makespan):.0f}% of the time.")
        if evictions:
            reasons = ", ".join(f"{reason} {n}" for reason, n in evictions.most_common())
            self.say(
                f"  Evictions: {sum(evictions.values())} ({reasons}), as hub.yaml's preemption policies allow (a team "
                "reclaiming the GPUs it lent, a high-priority job); evicted jobs were queued again and ran later."
            )
        else:
            self.say("  No evictions.")
        return failed

    def close(self, failed: bool) -> None:
        codes = self.stop_all()
        if codes:
            self.say(
                "Stopped "
                + ", ".join(f"{name} (exit {'?' if code is None else code})" for name, code in codes)
                + f"; total wall time {time.monotonic() - self.t0:.1f}s."
            )
        if self.keep or failed:
            self.say(f"Logs and data: {self.workdir}")
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def report(self, err: DemoError) -> None:
        self.say(f"error: {err}")
        if err.process is None:
            return
        path = self.log_path(err.process)
        tail = path.read_text(errors="replace").splitlines()[-25:] if path.exists() else []
        self.say(f"--- last lines of {err.process}'s log ({path}) ---")
        for line in tail:
            self.say(line)
        self.say("---")


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signal.Signals(signum).name)


def main(args: argparse.Namespace) -> int:
    """``mkhub demo`` (options parsed by hub.cli)."""
    args.manifests = args.manifests or SAMPLES
    if args.jobs < 1 or not 1 <= args.workers <= 16:
        print("error: --jobs must be at least 1 and --workers between 1 and 16", file=sys.stderr)
        return 2
    if not (args.manifests / "hub.yaml").exists():
        print(f"error: the sample manifests are not in {args.manifests} (run the demo from a clone of mkhub)", file=sys.stderr)
        return 2
    # Installed for SIGINT too: a shell may start the demo with SIGINT ignored (a background job).
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    demo = Demo(args)
    failed = True
    try:
        code = demo.run()
        failed = False
        return code
    except DemoError as err:
        demo.report(err)
        return 1
    except CliError as err:
        demo.report(DemoError(f"talking to the hub: {err}", "hub"))
        return 1
    except (KeyboardInterrupt, Interrupted):
        demo.say("interrupted: stopping the hub and agents")
        failed = False  # nothing to investigate: clean up unless --keep
        return 130
    finally:
        # A second Ctrl-C must not leave the children behind: stopping them is not interruptible.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        try:
            demo.close(failed)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
