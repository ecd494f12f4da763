"""The ``mkhub`` command.

Hub:     mkhub serve (--data-dir DIR | --kubeconfig FILE | --in-cluster) [--listen HOST:PORT]
                     [--kube-listen HOST:PORT] [--config FILE] (--tls-dir DIR | --insecure)
         mkhub certs --out DIR [--agent NAME]...
Client:  mkhub apply|create -f FILE|DIR|-   mkhub get KIND[,KIND] [NAME...] [-w] [-o ...]   mkhub describe KIND NAME
         mkhub delete KIND NAME|-l SEL|--all | -f FILE   mkhub label|patch|edit KIND NAME ...
         mkhub stop|resume KIND NAME   mkhub create localqueue|clusterqueue NAME ...   mkhub top [--once]
         (with --server HOST:PORT and --tls-dir DIR or --insecure; env MKHUB_SERVER, MKHUB_TLS_DIR, MKHUB_INSECURE)
Tools:   mkhub simulate SCENARIO...   mkhub bench store [...]   mkhub manifests crds [--out DIR]
         mkhub api-resources   mkhub completion bash
         mkhub demo [--jobs N] [--workers N] [--keep] [--seed N] [--kubernetes]
         mkhub dev-cluster --data-dir DIR [--listen 127.0.0.1:PORT] [--nodes FILE|SPEC] [--watch-window N] [--time-scale FACTOR] [--without-operators]

Subcommands import what they need when they run, so ``mkhub simulate`` stays light.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _simulate(args: argparse.Namespace) -> int:
    from hub.sim.runner import main

    return main(args.paths, as_json=args.json)


# Benchmark name -> module with ``main(argv) -> int``; each prints its figures (``--json``: one line).
BENCHMARKS = {
    "engine": "hub.bench.engine_bench",
    "store": "hub.bench.store_bench",
    "dispatch": "hub.bench.dispatch_bench",
    "transport": "hub.bench.transport_bench",
    "kueue-perf": "hub.bench.kueue_perf",
    "serve": "hub.bench.serve_bench",
    "kube": "hub.bench.kube_main",
    "tas": "hub.bench.tas_bench",
    "ui": "hub.bench.ui_bench",
}


def _bench(args: argparse.Namespace) -> int:
    import importlib

    module_name = BENCHMARKS.get(args.target)
    if module_name is None:
        print(f"error: unknown benchmark {args.target!r}; available: {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    result: int = importlib.import_module(module_name).main(args.rest)
    return result


def parse_time_scale(text: str) -> float | None:
    """``--time-scale``: a factor from 0.001 to 3600; None when malformed or out of range."""
    try:
        scale = float(text)
    except ValueError:
        return None
    return scale if 0.001 <= scale <= 3600 else None  # also refuses nan and inf


def _dev_cluster(args: argparse.Namespace) -> int:
    import logging

    from hub.api.config import parse_duration
    from hub.service.devcluster import DevClusterOptions, dev_cluster_main

    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    try:
        sim_duration = parse_duration(args.sim_duration)
    except ValueError as exc:
        print(f"error: --sim-duration: {exc}", file=sys.stderr)
        return 2
    time_scale = parse_time_scale(args.time_scale)
    if time_scale is None:
        print(f"error: --time-scale {args.time_scale!r}: must be a number from 0.001 to 3600 (how many times "
              "faster than real time the simulated controllers' clock runs)", file=sys.stderr)
        return 2
    opts = DevClusterOptions(
        data_dir=Path(args.data_dir),
        listen=args.listen,
        nodes_file=Path(args.nodes) if args.nodes else None,
        sim_duration=sim_duration,
        proxy_client_cert=Path(args.proxy_client_cert_file) if args.proxy_client_cert_file else None,
        proxy_client_key=Path(args.proxy_client_key_file) if args.proxy_client_key_file else None,
        watch_window=args.watch_window,
        operators=not args.without_operators,
        time_scale=time_scale,
    )
    if (opts.proxy_client_cert is None) != (opts.proxy_client_key is None):
        print("error: give both --proxy-client-cert-file and --proxy-client-key-file, or neither", file=sys.stderr)
        return 2
    return dev_cluster_main(opts)


def _manifests(args: argparse.Namespace) -> int:
    from hub.service.crdgen import manifests_main

    return manifests_main(args)


def _demo(args: argparse.Namespace) -> int:
    if args.kubernetes:
        from hub.demo.kube import main as kube_main

        return kube_main(args)
    from hub.demo.run import main

    return main(args)


def _certs(args: argparse.Namespace) -> int:
    from hub.service.certs import certs_main

    return certs_main(args.rest)


def _serve(args: argparse.Namespace) -> int:

    from hub.api.config import parse_duration
    from hub.configfile import load_configuration_file as load_config
    from hub.obs.logs import configure_logging
    from hub.obs.server import parse_listen

    configure_logging(args.log_level, args.log_format)
    if args.insecure == bool(args.tls_dir):
        print("error: give exactly one of --tls-dir DIR (mutual TLS) or --insecure (loopback only)", file=sys.stderr)
        return 2
    try:
        config = load_config(Path(args.config) if args.config else None)
        sim_duration = parse_duration(args.sim_duration)
        if args.metrics_listen:
            parse_listen(args.metrics_listen)
        if args.health_listen:
            parse_listen(args.health_listen)
        durations = [parse_duration(d) for d in (args.lease_duration, args.renew_deadline, args.retry_period)]
        if (args.kubeconfig or args.in_cluster) and args.leader_elect == "true":
            from hub.store.kube.lease import LeaseConfig

            LeaseConfig("check", lease_duration=durations[0], renew_deadline=durations[1], retry_period=durations[2])
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    kube = None
    if args.kubeconfig or args.in_cluster:
        from hub.service.kubemode import KubeOptions, client_rate_limit, open_early, watched_job_kinds

        kube_qps, kube_burst = client_rate_limit(args.kube_qps, args.kube_burst, config.client_connection)
        if kube_qps > 0 and kube_burst < 1:  # a token bucket that never lets a request through
            print(f"error: --kube-burst {kube_burst}: must be at least 1 while --kube-qps is positive", file=sys.stderr)
            return 2

        kube = KubeOptions(
            kubeconfig=Path(args.kubeconfig) if args.kubeconfig else None,
            context=args.kube_context,
            qps=kube_qps, burst=kube_burst,
            leader_elect=args.leader_elect == "true",
            lease_name=args.lease_name,
            lease_namespace=args.lease_namespace,
            lease_duration=durations[0],
            renew_deadline=durations[1],
            retry_period=durations[2],
            job_kinds=watched_job_kinds(config),
            tas=config.gate("TopologyAwareScheduling"),
        )
        open_early(kube)  # the API server lists while the rest of the hub imports
    elif not args.data_dir:
        print("error: give --data-dir DIR (embedded store) or --kubeconfig FILE / --in-cluster (Kubernetes store)", file=sys.stderr)
        return 2
    from hub.service.serve import DEFAULT_LISTEN, INSECURE_LISTEN, ServeOptions, serve_main

    opts = ServeOptions(
        kube_store=kube,
        data_dir=Path(args.data_dir or "."),
        listen=args.listen or (INSECURE_LISTEN if args.insecure else DEFAULT_LISTEN),
        config=config,
        tls_dir=Path(args.tls_dir) if args.tls_dir else None,
        insecure=args.insecure,
        sim_duration=sim_duration,
        metrics_listen=args.metrics_listen,
        kube_listen=args.kube_listen or "",
        health_listen=args.health_listen or "",
        webhook_listen=args.webhook_listen or "",
        webhook_tls_dir=Path(args.webhook_tls_dir) if args.webhook_tls_dir else None,
        visibility_listen=args.visibility_listen or "",
        visibility_client_ca=Path(args.visibility_client_ca) if args.visibility_client_ca else None,
        **_ui_options(args),
    )
    return serve_main(opts)


def _ui_options(args: argparse.Namespace) -> dict[str, Any]:
    """The dashboard's part of ServeOptions: its starter is imported only with --ui-listen."""
    if not args.ui_listen:
        return {}
    from hub.ui.server import start

    return {"ui_listen": args.ui_listen, "ui": start, "ui_tokens": Path(args.ui_tokens) if args.ui_tokens else None}


def _ui(args: argparse.Namespace) -> int:
    if args.action == "screenshots":  # a hub, two agents and a browser: the demo's layer
        from hub.demo.ui_shots import screenshots_main

        return screenshots_main(Path(args.out))
    from hub.ui.cli import ui_main

    return ui_main(args)


def _client_command(name: str) -> Callable[[argparse.Namespace], int]:
    """A command that talks to the hub: ``name`` is a function of hub.ctl.commands (``modify.x``: of hub.ctl.modify)."""

    def run(args: argparse.Namespace) -> int:
        import importlib

        from hub.ctl.client import CliError, ControlClient, open_channel

        module_name, _, func = name.rpartition(".")
        module = importlib.import_module(f"hub.ctl.{module_name or 'commands'}")
        try:
            with open_channel(args.server, insecure=args.insecure, tls_dir=args.tls_dir) as channel:
                client = ControlClient(channel, server=args.server, timeout=args.timeout, insecure=args.insecure)
                result: int = getattr(module, func)(args, client)
                return result
        except CliError as exc:
            message = str(exc)
            print(message if message.startswith("Error from server") else f"error: {message}", file=sys.stderr)
            return 1
        except BrokenPipeError:
            raise  # main() handles a closed stdout
        except (OSError, UnicodeDecodeError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130

    return run


def _offline_command(name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from hub.ctl import commands

        result: int = getattr(commands, name)(args)
        return result

    return run


def _completion(args: argparse.Namespace) -> int:
    from argcomplete.shell_integration import shellcode

    sys.stdout.write(shellcode(["mkhub", "mkagent"], shell=args.shell))
    return 0


def _version_text() -> str:
    from importlib import metadata

    try:
        return f"mkhub {metadata.version('mkhub')}"
    except metadata.PackageNotFoundError:
        return "mkhub dev"


class _Version(argparse.Action):
    """--version, reading the installed metadata only when asked."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **_: Any) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(_version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    from hub.ctl.args import IntermixedParser, add_client_commands, connection_flags

    parser = argparse.ArgumentParser(prog="mkhub", description="A MultiKueue federation hub speaking Kueue's API.")
    parser.add_argument("--version", action=_Version)
    connection_flags(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=IntermixedParser)

    def parser_for(name: str, help_text: str, **kw: Any) -> argparse.ArgumentParser:
        description = help_text[:1].upper() + help_text[1:] + "."
        p: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=description, **kw)
        return p

    sim = parser_for("simulate", "run Kueue conformance scenario files against the engine")
    sim.add_argument("paths", nargs="+", help="scenario files or folders")
    sim.add_argument("--json", action="store_true", help="print the final state of every workload")
    sim.set_defaults(func=_simulate)

    serve = parser_for("serve", "run the hub (embedded store, engine, gRPC federation and control services)")
    serve.add_argument("--data-dir", default=None, help="where the hub keeps its state (created if missing; embedded store)")
    serve.add_argument("--kubeconfig", default=None, help="keep objects in the Kubernetes API server this kubeconfig names")
    serve.add_argument("--in-cluster", action="store_true", help="keep objects in the API server of the cluster we run in")
    serve.add_argument("--kube-context", default=None, help="kubeconfig context (default: its current context)")
    serve.add_argument("--kube-qps", type=float, default=None,
                       help="client-side rate limit to the API server (0: none; default: the --config file's "
                       "clientConnection.qps, else 500)")
    serve.add_argument("--kube-burst", type=int, default=None,
                       help="burst above --kube-qps (default: clientConnection.burst, else 1000)")
    serve.add_argument("--leader-elect", choices=("true", "false"), default="true", help="wait for the leader Lease before running")
    serve.add_argument("--lease-name", default="mkhub-hub-leader", help="the coordination.k8s.io/v1 Lease to hold")
    serve.add_argument("--lease-namespace", default="default", help="its namespace")
    serve.add_argument("--lease-duration", default="15s", help="a standby takes over after this long without renewal")
    serve.add_argument("--renew-deadline", default="10s", help="the leader stops when it cannot renew for this long")
    serve.add_argument("--retry-period", default="2s", help="how often to renew or try to acquire")
    serve.add_argument("--listen", default=None, help="HOST:PORT to serve on (default 127.0.0.1:7443: loopback only; 0.0.0.0:7443 lets other machines in)")
    serve.add_argument("--config", default=None, help="Kueue Configuration file (YAML)")
    serve.add_argument("--tls-dir", default=None, help="certificates from `mkhub certs` (mutual TLS)")
    serve.add_argument("--insecure", action="store_true", help="plaintext on a loopback address (tests, demos)")
    serve.add_argument(
        "--kube-listen", default=None, metavar="HOST:PORT",
        help="also serve the Kubernetes API for kubectl on HOST:PORT (mutual TLS as --tls-dir; kubeconfig from `mkhub certs`)",
    )
    serve.add_argument(
        "--webhook-listen", default=None, metavar="HOST:PORT",
        help="serve Kueue's Job mutating webhook on HOST:PORT (HTTPS with the hub certificate of --webhook-tls-dir)",
    )
    serve.add_argument("--webhook-tls-dir", default=None, metavar="DIR",
                       help="the webhook's certificate (DIR/hub.crt, DIR/hub.key of `mkhub certs`; default: --tls-dir)")
    serve.add_argument(
        "--visibility-listen", default=None, metavar="HOST:PORT",
        help="serve Kueue's visibility API (visibility.kueue.x-k8s.io) on HOST:PORT for an APIService (HTTPS with "
        "the hub certificate of --webhook-tls-dir)",
    )
    serve.add_argument("--visibility-client-ca", default=None, metavar="FILE",
                       help="with --visibility-listen: require client certificates signed by FILE (the API server's "
                       "requestheader CA); default: no client certificate asked")
    serve.add_argument("--sim-duration", default="5s", help="run time of simulated workloads without a mkhub.dev/sim-duration annotation")
    serve.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"), help="log verbosity (default info)")
    serve.add_argument("--log-format", default="text", choices=("text", "json"), help="log lines as text (default) or JSON objects")
    serve.add_argument("--metrics-listen", default=None, metavar="HOST:PORT",
                       help="serve Prometheus /metrics here, e.g. 127.0.0.1:9090 (default: off)")
    serve.add_argument("--health-listen", default=None, metavar="HOST:PORT",
                       help="plaintext gRPC health for Kubernetes grpc probes: service 'liveness' (alive, also "
                       "as a standby) and '' (ready: leading and serving) (default: off)")
    serve.add_argument("--ui-listen", default=None, metavar="HOST:PORT",
                       help="serve the web dashboard here (HTTPS with the hub certificate; default: off)")
    serve.add_argument("--ui-tokens", default=None, metavar="FILE",
                       help="the dashboard's token hashes (`mkhub ui token`; default DATA_DIR/ui-tokens)")
    serve.set_defaults(func=_serve)

    ui = parser_for("ui", "the web dashboard: `mkhub ui token` (a bearer token), `mkhub ui screenshots`")
    ui.add_argument("action", choices=("token", "screenshots"), help="what to do")
    ui.add_argument("--data-dir", default=".", help="the hub's data dir (token: its hashes go to DATA_DIR/ui-tokens)")
    ui.add_argument("--tokens-file", default=None, metavar="FILE", help="token: append the hash here instead")
    ui.add_argument("--out", default="docs/screenshots", help="screenshots: the folder for the PNGs")
    ui.set_defaults(func=_ui)

    certs = parser_for("certs", "create the CA and certificates for the hub, the CLI and agents (mkhub certs --help)", add_help=False)
    certs.add_argument("rest", nargs=argparse.REMAINDER, help="options of mkhub certs")
    certs.set_defaults(func=_certs)

    add_client_commands(sub, _client_command, _offline_command)

    dev = parser_for("dev-cluster", "a local stand-in for a Kubernetes cluster: the Kubernetes API plus simulated Jobs and pods")
    dev.add_argument("--data-dir", required=True, help="state (SQLite) and the kubeconfig go here")
    dev.add_argument("--listen", default="127.0.0.1:6443", help="loopback HOST:PORT of the API (default 127.0.0.1:6443; port 0 picks one)")
    dev.add_argument("--nodes", help="YAML file listing nodes (name, labels, taints, allocatable), or a topology spec "
                     "such as blocks=2,racks=4,hosts=8,gpu=8 (also cpu, memory, pods, group); default one node, dev-node-1")
    dev.add_argument(
        "--watch-window", type=int, default=os.environ.get("MKHUB_WATCH_WINDOW") or "1000", metavar="N",
        help="changes kept for watches to resume from and continue pages (kube-apiserver's watch cache; default "
        "$MKHUB_WATCH_WINDOW or 1000); older resourceVersions get 410 Expired",
    )
    dev.add_argument("--sim-duration", default="5s", help="run time of pods without a mkhub.dev/sim-duration annotation")
    dev.add_argument(
        "--time-scale", default=os.environ.get("MKHUB_DEV_CLUSTER_TIME_SCALE") or "1", metavar="FACTOR",
        help="debug, for tests: the simulated controllers' clock (CronJob schedules, pod run times, Job and pod "
        "timestamps) runs FACTOR times as fast as real time from the start (default $MKHUB_DEV_CLUSTER_TIME_SCALE or 1)",
    )
    dev.add_argument("--without-operators", action="store_true",
                     help="no CRDs of the operators the dev-cluster simulates (JobSet, LeaderWorkerSet, Kubeflow "
                          "training, KubeRay, Tekton, Argo Workflows, ...) nor their controllers (a cluster without them)")
    dev.add_argument("--proxy-client-cert-file", default=None, metavar="FILE",
                     help="client certificate presented to the servers of APIServices (as kube-apiserver's flag)")
    dev.add_argument("--proxy-client-key-file", default=None, metavar="FILE", help="its key")
    dev.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"], help="log verbosity (default warning)")
    dev.set_defaults(func=_dev_cluster)

    manifests = parser_for("manifests", "write generated manifests (CRDs) to files")
    manifests_sub = manifests.add_subparsers(dest="what", required=True, metavar="crds", parser_class=IntermixedParser)
    crds = manifests_sub.add_parser(
        "crds", help="the CustomResourceDefinitions of every Kueue kind, one file per kind",
        description="Write the CustomResourceDefinitions of every Kueue kind, one file per kind.",
    )
    crds.add_argument("--out", default="manifests/crds", help="output directory (default manifests/crds)")
    crds.set_defaults(func=_manifests)

    demo = parser_for("demo", "start a hub and worker agents on loopback and run a burst of GPU jobs through them")
    # Options only: importing hub.demo here would slow every other command down.
    demo.add_argument("--jobs", type=int, default=40, help="how many GPU jobs to run (default 40)")
    demo.add_argument("--workers", type=int, default=2, help="how many worker agents (default 2)")
    demo.add_argument("--keep", action="store_true", help="afterwards keep the hub and agents running (until Ctrl-C) and the working directory")
    demo.add_argument("--seed", type=int, default=1, help="seed of the job mix (default 1)")
    demo.add_argument("--kubernetes", action="store_true",
                      help="three dev clusters (manager, worker-1, worker-2) driven with kubectl; the hub and agents in Kubernetes mode")
    demo.add_argument("--manifests", type=Path, default=None, help=argparse.SUPPRESS)
    demo.set_defaults(func=_demo)

    bench = parser_for(
        "bench", "benchmarks: mkhub bench engine|store|dispatch|transport|kueue-perf|serve|kube|tas [--json] (--help per benchmark)", add_help=False
    )
    bench.add_argument("target", help="what to measure: engine, store, dispatch, transport, kueue-perf, serve, kube, tas")
    bench.add_argument("rest", nargs=argparse.REMAINDER, help="options of the benchmark")
    bench.set_defaults(func=_bench)

    completion = parser_for("completion", 'print the shell completion script of mkhub and mkagent: eval "$(mkhub completion bash)"')
    completion.add_argument("shell", choices=("bash", "zsh", "fish", "tcsh"), help="the shell to complete in")
    completion.set_defaults(func=_completion)
    return parser


# Commands whose options belong to another parser: everything after the name is passed on.
_PASS_THROUGH = ("certs", "bench")


def _run(argv: list[str]) -> int:
    if argv and argv[0] in _PASS_THROUGH and not (argv[0] == "bench" and len(argv) < 2):
        rest = argv[1:]
        if argv[0] == "bench":
            return _bench(argparse.Namespace(target=rest[0], rest=rest[1:]))
        return _certs(argparse.Namespace(rest=rest))
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:
        import argcomplete

        argcomplete.autocomplete(parser)
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # gRPC's C core logs failed TLS handshakes at info level to stderr; the CLI explains them in one line instead.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    try:
        code = _run(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader went away (`mkhub get ... | head -1`): not an error of the command. Point stdout
        # at /dev/null so that the interpreter's final flush does not complain again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
