"""``mkagent``: a worker cluster's agent as a process.

    mkagent --hub hub.example.com:7443 --cluster worker-1 --tls-dir certs/agents/worker-1 --objects worker-1/

It loads the cluster's own queues (``--objects``), dials the hub over mutual
TLS (:class:`worker_agent.link.HubLink`: Hello, heartbeats, reconnect with
backoff, replay), and runs the local engine on the wall clock: every message
from the hub and every due timer (simulated pods, backoffs) wakes the loop,
which runs the cluster's ClusterController (whose
:class:`worker_agent.agent.Agent` plugin applies the hub's items) in batches
of a few milliseconds (:mod:`hub.federation.pacing`) and flushes the agent's
reports after each batch. Everything runs on one asyncio loop. With
``--data-dir`` the copies and their runs survive a restart
(:mod:`worker_agent.state`). SIGTERM/SIGINT: close the stream cleanly, save
state, exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client.core import Metric

from hub.api.config import Configuration, parse_duration
from hub.api.workload import Workload
from hub.configfile import load_configuration_file
from hub.controllers.cluster import ClusterController
from hub.engine.engine import Engine
from hub.federation import tls
from hub.federation.pacing import cycles_for
from hub.federation.server import is_loopback_address
from hub.obs import tracing
from hub.obs.federation import agent_gauges
from hub.obs.logs import LOG_FORMATS, configure_logging
from hub.obs.process import ProcessObs
from hub.obs.server import parse_listen
from hub.store.interface import StoreError
from hub.tuning import GcPacer, tune_gc
from mkhub.v1 import federation_pb2 as pb

from .agent import Agent
from .capacity import DEFAULT_INTERVAL as CAPACITY_INTERVAL
from .link import HubLink
from .objects import ObjectsError, load_objects
from .runner import DEFAULT_DURATION, sim_pods
from .simlogs import SimLogs
from .state import AgentState

if TYPE_CHECKING:  # the Kubernetes client loads only in Kubernetes mode: an embedded agent starts faster
    from .kube.mode import KubeConnection, KubeMode

log = logging.getLogger("mkagent")

MAX_IDLE = 30.0
# Scheduling work per event-loop turn before the reports so far go out.
BATCH_BUDGET = 0.005


@dataclass(frozen=True, slots=True)
class AgentOptions:
    hub: str
    cluster: str
    objects: Path | None
    tls_dir: Path | None = None
    insecure: bool = False
    server_name: str | None = None
    data_dir: Path | None = None
    default_duration: float = DEFAULT_DURATION
    config: Configuration = Configuration()
    metrics_listen: str | None = None  # HOST:PORT for /metrics; None: off
    fencing: bool = True
    run_log: Path | None = None
    # The worker's own API server (``--kubeconfig`` / ``--in-cluster``); None: embedded mode.
    kube: KubeConnection | None = None


def _version() -> str:
    with contextlib.suppress(metadata.PackageNotFoundError):
        return metadata.version("mkhub")
    return "dev"


class AgentProcess:
    """The agent's engine, controller and link, driven on the running event loop."""

    def __init__(self, opts: AgentOptions, now: float) -> None:
        self.gc = GcPacer()
        self.opts = opts
        config = opts.config
        self.engine = Engine(config, now)
        self.pods = sim_pods(self._duration_of, default_duration=opts.default_duration)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._wake_queued = False
        partial = config.gate("PartialAdmission")
        self.kube: KubeMode | None = None
        if opts.kube is not None:
            from .kube.mode import KubeMode

            self.kube = KubeMode(
                opts.kube, self.engine, self.pods, origin=config.multikueue.origin, partial_admission=partial,
                gc_interval=config.multikueue.gc_interval, wake=self._wake_threadsafe,
            )
            self.controller = self.kube.controller
            loaded = self.kube.load(now)
            log.info("loaded %d Kueue objects from the worker's API server", loaded)
        else:
            self.controller = ClusterController(self.engine, self.pods)
        self.obs = ProcessObs("mkagent", _version())
        self.controller.observer = self.obs.observer
        if opts.objects is not None:
            for obj in load_objects(opts.objects, partial_admission=partial):
                self.controller.apply(obj, now)
        self.agent = Agent(
            opts.cluster,
            self.controller,
            origin=config.multikueue.origin,
            version=_version(),
            partial_admission=partial,
            auto_flush=False,  # run() flushes once per batch of cycles
            capacity_interval=CAPACITY_INTERVAL,
        )
        self.state = AgentState(opts.data_dir, opts.cluster) if opts.data_dir is not None else None
        if self.state is not None:
            restored = self.state.restore(self.agent, self.pods, now)
            if restored:
                log.info("restored %d workload copies from %s", restored, self.state.path)
            self.agent.on_change = self.state.mark
        self.wake = asyncio.Event()
        self.agent.notify = self.wake.set  # the link calls handlers on this same loop
        credentials = None
        if not opts.insecure:
            assert opts.tls_dir is not None
            credentials = tls.agent_channel_credentials(opts.tls_dir, opts.cluster)
        self.link = HubLink(
            opts.hub, self.agent, credentials=credentials, insecure=opts.insecure, server_name=opts.server_name
        )
        self.agent.send = self.link.send
        if self.kube is not None:
            restored = self.kube.attach(self.agent, self.link.endpoint.send_control, now)
            if restored:
                log.info("restored %d workload copies from the worker's Workloads", restored)
            logs = self.kube.logs
            assert logs is not None
            self.link.endpoint.on_logs = logs.on_item
        else:
            self.link.endpoint.on_logs = SimLogs(self.agent, self.link.endpoint.send_control, opts.default_duration).on_item
            self.agent.serves_logs = True
        self.agent.observer = self.obs.for_agent()
        self.obs.collect_engine(self._on_loop)
        self._run_log = open(opts.run_log, "a", encoding="utf-8") if opts.run_log is not None else None  # noqa: SIM115
        if self._run_log is not None:
            self.agent.gate.record = self._record

    def _wake_threadsafe(self) -> None:
        """The worker's watch thread has events queued: wake the loop, once per burst (a wake-up
        already on its way takes every event queued before it runs; each call_soon_threadsafe
        is a write to the loop's self-pipe)."""
        loop = self.loop
        if loop is not None and not self._wake_queued:
            self._wake_queued = True
            loop.call_soon_threadsafe(self._woken)

    def _woken(self) -> None:
        self._wake_queued = False  # first: an event queued after this wakes the loop again
        self.wake.set()

    def _on_loop(self, fn: Callable[[Engine], list[Metric]]) -> list[Metric]:
        """Run ``fn(engine)`` on the agent's event loop (scrapes come on the metrics server's thread)."""
        loop = self.loop
        if loop is None:
            return []
        done: concurrent.futures.Future[list[Metric]] = concurrent.futures.Future()

        def run() -> None:
            try:
                names = {v: k.removeprefix("LOCAL_STATE_").lower() for k, v in pb.LocalState.items()}
                done.set_result([*fn(self.engine), *agent_gauges(self.link.connected, self.agent.held(), names)])
            except BaseException as exc:
                done.set_exception(exc)

        loop.call_soon_threadsafe(run)
        return done.result(timeout=30)

    def _record(self, key: str, event: str, why: str) -> None:
        """One JSON line per run start and end, with the wall-clock time (``--run-log``)."""
        assert self._run_log is not None
        line = {"time": time.time(), "cluster": self.opts.cluster, "workload": key, "event": event, "why": why}
        self._run_log.write(json.dumps(line) + "\n")
        self._run_log.flush()

    def fence_due(self) -> float | None:
        """The ``monotonic`` time at which the running workloads must be stopped, if any run."""
        after = self.link.fence_after()
        heard = self.link.heard_by_hub
        if not self.opts.fencing or after is None or heard is None or not self.agent.any_running():
            return None
        return heard + after

    def _fence_if_due(self) -> None:
        due = self.fence_due()
        mono = time.monotonic()
        if due is not None and mono >= due:
            heard = self.link.heard_by_hub
            self.agent.fence(time.time(), mono - heard if heard is not None else 0.0)

    def _duration_of(self, wl: Workload) -> float | None:
        return self.agent.duration_of(wl)

    def next_due(self, now: float) -> float | None:
        times = [t for t in (self.pods.next_due(), self.engine.next_wakeup(), self.agent.capacity_due()) if t is not None]
        if self.state is not None:
            due = self.state.due(now)
            if due is not None:
                times.append(due)
        if self.kube is not None:
            gc = self.kube.due()
            if gc is not None:
                times.append(now + max(0.0, gc - time.monotonic()))
        return min(times) if times else None

    async def run(self, stop: asyncio.Event) -> None:
        self.loop = asyncio.get_running_loop()
        self.obs.serve_metrics(self.opts.metrics_listen)
        await self.link.start()
        log.info("agent for cluster %s dialling hub %s", self.opts.cluster, self.opts.hub)
        stopping = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                self.wake.clear()
                self._fence_if_due()  # before the cycles: a run cut off must not go on
                more = cycles_for(self.controller, time.time, BATCH_BUDGET)
                now = time.time()
                self.agent.flush(now)
                if self.kube is not None:
                    self.kube.after_flush(self.link.endpoint.sessions, time.monotonic())
                self.gc.after_round()
                if self.state is not None:
                    self.state.save_if_due(self.agent, now)
                if more:
                    await asyncio.sleep(0)  # these reports go out while the next cycles run
                    continue
                due = self.next_due(now)
                timeout = MAX_IDLE if due is None else min(MAX_IDLE, max(0.0, due - time.time()))
                fence = self.fence_due()
                if fence is not None:
                    timeout = min(timeout, max(0.0, fence - time.monotonic()) + 0.01)
                woken = asyncio.ensure_future(self.wake.wait())
                await asyncio.wait({woken, stopping}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                woken.cancel()
        finally:
            stopping.cancel()
            await self.link.stop()
            if self.kube is not None:
                self.kube.after_flush(self.link.endpoint.sessions, time.monotonic())
                await asyncio.to_thread(self.kube.close)
            self.obs.stop()
            if self.state is not None:
                self.state.save(self.agent, time.time())
            if self._run_log is not None:
                self._run_log.close()


async def run_agent(opts: AgentOptions) -> int:
    process = AgentProcess(opts, time.time())
    tune_gc()  # the loaded queues and restored copies are long-lived
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await process.run(stop)
    log.info("agent stopped")
    return 0


def parse_args(argv: Sequence[str] | None) -> AgentOptions:
    parser = argparse.ArgumentParser(
        prog="mkagent", description="The mkhub worker agent: local admission of the hub's workloads in one cluster."
    )
    parser.add_argument("--version", action="version", version=f"mkagent {_version()}")
    parser.add_argument("--hub", required=True, metavar="HOST:PORT", help="the hub's federation endpoint")
    parser.add_argument("--cluster", required=True, help="the MultiKueueCluster this agent serves (its certificate's name)")
    auth = parser.add_mutually_exclusive_group(required=True)
    auth.add_argument("--tls-dir", type=Path, help="the agent's own directory from `mkhub certs --agent NAME` (DIR/agents/NAME: ca.crt, NAME.crt, NAME.key)")
    auth.add_argument("--insecure", action="store_true", help="plaintext to a loopback hub (testing only)")
    parser.add_argument("--server-name", help="expected name in the hub's certificate, when --hub is an address it does not list")
    parser.add_argument("--objects", type=Path, help="the cluster's own queues: a manifest file or a directory "
                        "(embedded mode; with --kubeconfig, extra objects on top of the cluster's)")
    parser.add_argument("--kubeconfig", type=Path, help="run on this worker cluster's API server: its Kueue objects, "
                        "Workload copies and Jobs live there")
    parser.add_argument("--context", help="the kubeconfig context (default: its current one)")
    parser.add_argument("--in-cluster", action="store_true", help="run on the API server of the cluster the agent runs in")
    parser.add_argument("--data-dir", type=Path, help="keep workload copies and runs across agent restarts here")
    parser.add_argument("--default-duration", default="1s", help="how long a simulated workload runs without mkhub.dev/sim-duration")
    parser.add_argument("--config", type=Path, help="the cluster's Kueue Configuration (YAML)")
    parser.add_argument(
        "--fencing", action=argparse.BooleanOptionalAction, default=True,
        help="stop running workloads when the hub has not heard this agent for its workerLostTimeout minus "
        "the margin it announces, so that a workload never runs twice (default: on)",
    )
    parser.add_argument("--run-log", type=Path, help="append one JSON line per workload run start and end here")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"], help="log verbosity (default info)")
    parser.add_argument("--log-format", default="text", choices=LOG_FORMATS, help="log lines as text (default) or JSON objects")
    parser.add_argument("--metrics-listen", metavar="HOST:PORT",
                        help="serve Prometheus /metrics here, e.g. 127.0.0.1:9091 (default: off)")
    args = parser.parse_args(argv)
    configure_logging(args.log_level, args.log_format)
    try:
        if args.metrics_listen:
            parse_listen(args.metrics_listen)
        tracing.configure_from_env("mkagent")
        tls.validate_cluster_name(args.cluster)
        duration = parse_duration(args.default_duration)
        config = load_configuration_file(args.config)
    except ValueError as exc:
        parser.error(str(exc))
    if args.insecure and not is_loopback_address(args.hub):
        parser.error(f"--insecure only dials a loopback hub, not {args.hub}")
    if args.kubeconfig is not None and args.in_cluster:
        parser.error("give either --kubeconfig FILE or --in-cluster, not both")
    if args.in_cluster and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        parser.error("--in-cluster needs KUBERNETES_SERVICE_HOST (run inside a pod) or give --kubeconfig FILE")
    kube = None
    if args.kubeconfig is not None or args.in_cluster:
        if args.data_dir is not None:
            parser.error("--data-dir is for embedded mode; with --kubeconfig the worker's Workloads are the agent's state")
        from .kube.mode import KubeConnection

        kube = KubeConnection(args.kubeconfig, args.context)
    elif args.objects is None:
        parser.error("one of --objects DIR (embedded mode) or --kubeconfig FILE / --in-cluster is required")
    return AgentOptions(
        hub=args.hub,
        cluster=args.cluster,
        objects=args.objects,
        tls_dir=args.tls_dir,
        insecure=args.insecure,
        server_name=args.server_name,
        data_dir=args.data_dir,
        default_duration=duration,
        config=config,
        metrics_listen=args.metrics_listen,
        fencing=args.fencing,
        run_log=args.run_log,
        kube=kube,
    )


def main(argv: Sequence[str] | None = None) -> int:
    opts = parse_args(argv)
    try:
        return asyncio.run(run_agent(opts))
    except ObjectsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
        print(f"error: the worker's API server: {exc}", file=sys.stderr)
        return 1
    except (FileNotFoundError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
