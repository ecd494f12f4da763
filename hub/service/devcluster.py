"""``mkhub dev-cluster``: the embedded store, the Kubernetes API (hub.kubeapi) and the
dev-cluster controllers (hub.devcluster) in one process — a local stand-in for a
Kubernetes cluster. State lives in ``DIR/cluster.db`` and survives restarts; the
kubeconfig is written to ``DIR/kubeconfig`` (plain HTTP on a loopback address).
APIServices are proxied to their servers (:mod:`hub.kubeapi.aggregator`), e.g. the hub's
visibility API (``manifests/dev-cluster/visibility.yaml``).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hub.devcluster import operators
from hub.devcluster.nodes import Node, NodesError, load_nodes
from hub.devcluster.podbased_crds import podbased_crds
from hub.devcluster.runtime import DevCluster, scaled_clock
from hub.kubeapi import Authorizer, KubeAPI
from hub.kubeapi.aggregator import Aggregator
from hub.kubeapi.errors import ApiError
from hub.kubeapi.reads import Target
from hub.kubeapi.resources import BY_KIND
from hub.kubeapi.webhooks import VALIDATING, WebhookCaller
from hub.kubeapi.writes import Options
from hub.store import SQLiteStore, StoreError
from hub.store.interface import AlreadyExists, InvalidObject, Object, ObjectKey, Store

from .apply import Applier, ensure_namespace
from .kubeserve import is_loopback, split_address, start_kube_api, stop_kube_api

log = logging.getLogger("mkhub.devcluster")

DB_FILE = "cluster.db"
KUBECONFIG_FILE = "kubeconfig"
DEFAULT_LISTEN = "127.0.0.1:6443"
# Changes kept for watches to resume from and continue pages to read (the change log). Like
# kube-apiserver's watch cache it is short: a client that falls further behind gets 410 Expired
# and lists again, so clients meet that path here as they would on a real cluster.
DEFAULT_WATCH_WINDOW = 1000
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass(frozen=True)
class DevClusterOptions:
    data_dir: Path
    listen: str = DEFAULT_LISTEN
    nodes_file: Path | None = None
    sim_duration: float = 5.0
    proxy_client_cert: Path | None = None  # presented to APIService backends (hub.kubeapi.aggregator)
    proxy_client_key: Path | None = None
    watch_window: int = DEFAULT_WATCH_WINDOW
    operators: bool = True  # JobSet's and LeaderWorkerSet's CRDs and simulated controllers (hub.devcluster.operators)
    time_scale: float = 1.0  # the controllers' clock runs this many times as fast as real time (--time-scale)


def kubeconfig_text(server: str) -> str:
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: mkhub-dev\n  cluster:\n    server: {server}\n"
        "users:\n- name: mkhub-dev-admin\n  user: {}\n"
        "contexts:\n- name: mkhub-dev\n  context:\n    cluster: mkhub-dev\n    user: mkhub-dev-admin\n    namespace: default\n"
        "current-context: mkhub-dev\n"
    )


def write_kubeconfig(path: Path, server: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(kubeconfig_text(server), encoding="utf-8")
    tmp.replace(path)


def usage(opts: DevClusterOptions, server: str, nodes: tuple[Node, ...]) -> str:
    kc = opts.data_dir / KUBECONFIG_FILE
    return (
        f"mkhub dev-cluster: Kubernetes API on {server}, {len(nodes)} node(s) "
        f"({', '.join(n.name for n in nodes)}), state in {opts.data_dir / DB_FILE}\n"
        f"  export KUBECONFIG={kc}\n"
        f"  kubectl apply -f manifests/crds/      # Kueue's CRDs (the kinds are built in; this records them)\n"
        f"  kubectl apply -f manifests/dev-cluster/hello-job.yaml\n"
        f"  kubectl get nodes,jobs,pods\n"
        + ("  kubectl get jobsets,leaderworkersets,rayjobs,rayclusters,rayservices    # simulated operators (--without-operators: none)\n" if opts.operators else "")
        + f"  mkhub serve --kubeconfig {kc} ...     # a hub on this cluster\n"
        + "Simulated pods only: no real containers, no kube-proxy, no scheduler beyond the node check, "
        "admission webhooks by clientConfig.url only, APIServices by ExternalName (or clusterIP) Services. "
        "Ctrl-C stops it; state is kept.\n"
    )


def _kube_api(store: Store) -> KubeAPI:
    """hub.kubeapi with the checks of ``mkhub apply``, minus the hub's warning that Jobs without
    a queue-name label never run (here the Job controller runs them), and the webhooks of the
    stored Mutating- and ValidatingWebhookConfigurations called on create and update: a queued
    Job is suspended by the hub's webhook (``mkhub serve --webhook-listen``), as Kueue's is in a
    real cluster."""
    applier = Applier(store, suspend_queued_jobs=False)

    def admit(manifest: Object, current: Object | None, *, owned: bool = False) -> tuple[Object, list[str]]:
        out, warnings = applier.admit(manifest, current, owned=owned)
        return out, [w for w in warnings if "mkhub will not run it" not in w]

    api = KubeAPI(store, admit, authorizer=Authorizer(None))
    api.writer.mutating = WebhookCaller(store)  # e.g. the hub's Job webhook (manifests/base/webhook.yaml)
    api.writer.validating = WebhookCaller(store, VALIDATING)
    api.inline_writes = True  # its own SQLite store: writes without the hop to a thread (hub.kubeapi.server)
    return api


def api_create(api: KubeAPI) -> Callable[[Object], Object]:
    """Create an object through the API's writer, as a controller's client does (validation,
    defaults, admission webhooks); store errors for the controllers' handling."""

    def create(obj: Object) -> Object:
        kind, group = str(obj["kind"]), str(obj.get("apiVersion") or "").rpartition("/")[0]
        # A built-in kind, or one a CRD serves (a Tekton TaskRun, an AppWrapper's component).
        res = BY_KIND.get(kind) or next((r for r in api.crds.resources() if r.kind == kind and r.group == group), None)
        if res is None:  # no CRD serves it here (an AppWrapper's component of an operator not installed)
            raise StoreError(f'no resource type for kind "{kind}" in version "{obj.get("apiVersion")}"')
        version = str(obj.get("apiVersion", "")).rpartition("/")[2]
        target = Target(res, version if version in res.versions else res.preferred, str(obj["metadata"].get("namespace") or ""))
        try:
            return api.writer.create(target, obj, Options(field_manager="kube-controller-manager", manager_given=True)).obj
        except ApiError as exc:
            if exc.reason == "AlreadyExists":
                raise AlreadyExists(ObjectKey.of(obj)) from None
            raise InvalidObject(exc.message) from None

    return create


async def run(opts: DevClusterOptions) -> int:
    host, _ = split_address(opts.listen)
    if not is_loopback(host):
        raise ValueError(f"--listen {opts.listen}: the dev-cluster serves plain HTTP, on a loopback address only")
    if opts.watch_window < 1:
        raise ValueError(f"--watch-window {opts.watch_window}: must be at least 1 (changes kept for watches)")
    nodes = load_nodes(opts.nodes_file)
    opts.data_dir.mkdir(parents=True, exist_ok=True)
    store = SQLiteStore(opts.data_dir / DB_FILE, log_retention=opts.watch_window, watch_cache=min(4096, opts.watch_window))
    api = None
    aggregator: Aggregator | None = None
    checker: asyncio.Task[None] | None = None
    stop = asyncio.Event()
    stop_controllers = threading.Event()
    thread: threading.Thread | None = None
    try:
        for ns in SYSTEM_NAMESPACES:
            ensure_namespace(store, ns)
        if opts.operators:
            operators.install(store)  # before the API starts: served (Established) from its first request
            operators.install(store, podbased_crds())  # Tekton, Argo Workflows, Sandbox, Flux MiniCluster
        api = _kube_api(store)
        clock = scaled_clock(opts.time_scale) if opts.time_scale != 1.0 else time.time
        cluster = DevCluster(store, nodes, default_duration=opts.sim_duration, operators=opts.operators,
                             create=api_create(api), clock=clock, clock_rate=opts.time_scale)
        cluster.start()  # catches up with what happened while it was down, before serving

        def controllers() -> None:
            try:
                cluster.run(stop_controllers)
            finally:
                cluster.close()

        thread = threading.Thread(target=controllers, name="devcluster-controllers", daemon=True)
        thread.start()
        client_cert = (opts.proxy_client_cert, opts.proxy_client_key) if opts.proxy_client_cert and opts.proxy_client_key else None
        aggregator = Aggregator(store, client_cert=client_cert)
        api.extra_groups = aggregator.extra_groups
        api.proxy = aggregator.proxy
        api.pod_log_lines = cluster.kubelet.log_lines
        checker = asyncio.create_task(aggregator.run(stop))
        port = await start_kube_api(api, opts.listen, tls_dir=None, insecure=True)
        server = f"http://{host}:{port}"
        write_kubeconfig(opts.data_dir / KUBECONFIG_FILE, server)
        print(usage(opts, server, nodes), flush=True)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        log.info("shutting down")
        return 0
    finally:
        stop.set()
        if checker is not None:
            await asyncio.gather(checker, return_exceptions=True)
        await stop_kube_api(api)
        if aggregator is not None:
            await aggregator.close()
        stop_controllers.set()
        if thread is not None:
            await asyncio.to_thread(thread.join, 10)
        store.close()


def dev_cluster_main(opts: DevClusterOptions) -> int:
    try:
        return asyncio.run(run(opts))
    except (StoreError, OSError, ValueError, NodesError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
