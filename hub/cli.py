"""The ``mkhub`` command.

Hub:     mkhub serve --data-dir DIR [--listen HOST:PORT] [--kube-listen HOST:PORT] [--config FILE] (--tls-dir DIR | --insecure)
         mkhub certs --out DIR [--agent NAME]...
Client:  mkhub apply -f FILE|DIR|-   mkhub get KIND [NAME...]   mkhub describe KIND NAME
         mkhub delete KIND NAME | -f FILE   mkhub top [--once]
         (with --server HOST:PORT and --tls-dir DIR or --insecure; env MKHUB_SERVER, MKHUB_TLS_DIR, MKHUB_INSECURE)
Tools:   mkhub simulate SCENARIO...   mkhub bench store [...]   mkhub manifests crds [--out DIR]
         mkhub demo [--jobs N] [--workers N] [--keep] [--seed N]
         mkhub dev-cluster --data-dir DIR [--listen 127.0.0.1:PORT] [--nodes FILE]

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
}


def _bench(args: argparse.Namespace) -> int:
    import importlib

    module_name = BENCHMARKS.get(args.target)
    if module_name is None:
        print(f"error: unknown benchmark {args.target!r}; available: {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    result: int = importlib.import_module(module_name).main(args.rest)
    return result


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
    opts = DevClusterOptions(
        data_dir=Path(args.data_dir),
        listen=args.listen,
        nodes_file=Path(args.nodes) if args.nodes else None,
        sim_duration=sim_duration,
    )
    return dev_cluster_main(opts)


def _manifests(args: argparse.Namespace) -> int:
    from hub.service.crdgen import manifests_main

    return manifests_main(args)


def _demo(args: argparse.Namespace) -> int:
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
    from hub.service.serve import DEFAULT_LISTEN, INSECURE_LISTEN, ServeOptions, serve_main

    configure_logging(args.log_level, args.log_format)
    if args.insecure == bool(args.tls_dir):
        print("error: give exactly one of --tls-dir DIR (mutual TLS) or --insecure (loopback only)", file=sys.stderr)
        return 2
    try:
        config = load_config(Path(args.config) if args.config else None)
        sim_duration = parse_duration(args.sim_duration)
        if args.metrics_listen:
            parse_listen(args.metrics_listen)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    opts = ServeOptions(
        data_dir=Path(args.data_dir),
        listen=args.listen or (INSECURE_LISTEN if args.insecure else DEFAULT_LISTEN),
        config=config,
        tls_dir=Path(args.tls_dir) if args.tls_dir else None,
        insecure=args.insecure,
        sim_duration=sim_duration,
        metrics_listen=args.metrics_listen,
        kube_listen=args.kube_listen or "",
    )
    return serve_main(opts)


def _client_command(name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from hub.ctl import commands
        from hub.ctl.client import CliError, ControlClient, open_channel

        try:
            with open_channel(args.server, insecure=args.insecure, tls_dir=args.tls_dir) as channel:
                client = ControlClient(channel, server=args.server, timeout=args.timeout)
                result: int = getattr(commands, name)(args, client)
                return result
        except CliError as exc:
            message = str(exc)
            print(message if message.startswith("Error from server") else f"error: {message}", file=sys.stderr)
            return 1
        except (OSError, UnicodeDecodeError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130

    return run


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")


def _connection_flags(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """--server/--tls-dir/--insecure, accepted before or after the subcommand."""

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("connection")
    group.add_argument(
        "--server", "-s", default=default(os.environ.get("MKHUB_SERVER", "127.0.0.1:7443")), help="the hub's HOST:PORT (env MKHUB_SERVER)"
    )
    group.add_argument("--tls-dir", default=default(os.environ.get("MKHUB_TLS_DIR")), help="directory from `mkhub certs` (env MKHUB_TLS_DIR)")
    group.add_argument(
        "--insecure", action="store_true", default=default(_env_flag("MKHUB_INSECURE")), help="plaintext, for a hub on loopback (env MKHUB_INSECURE=1)"
    )
    group.add_argument("--timeout", type=float, default=default(60.0), help="seconds to wait for the hub (default 60)")


def _namespace_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--namespace", default="", help='namespace (default "default")')


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mkhub", description="A MultiKueue federation hub speaking Kueue's API.")
    _connection_flags(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = sub.add_parser("simulate", help="run Kueue conformance scenario files against the engine")
    sim.add_argument("paths", nargs="+", help="scenario files or folders")
    sim.add_argument("--json", action="store_true", help="print the final state of every workload")
    sim.set_defaults(func=_simulate)

    serve = sub.add_parser("serve", help="run the hub (embedded store, engine, gRPC federation and control services)")
    serve.add_argument("--data-dir", required=True, help="where the hub keeps its state (created if missing)")
    serve.add_argument("--listen", default=None, help="HOST:PORT to serve on (default [::]:7443; 127.0.0.1:7443 with --insecure)")
    serve.add_argument("--config", default=None, help="Kueue Configuration file (YAML)")
    serve.add_argument("--tls-dir", default=None, help="certificates from `mkhub certs` (mutual TLS)")
    serve.add_argument("--insecure", action="store_true", help="plaintext on a loopback address (tests, demos)")
    serve.add_argument(
        "--kube-listen", default=None, metavar="HOST:PORT",
        help="also serve the Kubernetes API for kubectl on HOST:PORT (mutual TLS as --tls-dir; kubeconfig from `mkhub certs`)",
    )
    serve.add_argument("--sim-duration", default="5s", help="run time of simulated workloads without a mkhub.dev/sim-duration annotation")
    serve.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    serve.add_argument("--log-format", default="text", choices=("text", "json"), help="log lines as text (default) or JSON objects")
    serve.add_argument("--metrics-listen", default=None, metavar="HOST:PORT",
                       help="serve Prometheus /metrics here, e.g. 127.0.0.1:9090 (default: off)")
    serve.set_defaults(func=_serve)

    certs = sub.add_parser("certs", help="create the CA and certificates for the hub, the CLI and agents", add_help=False)
    certs.add_argument("rest", nargs=argparse.REMAINDER)
    certs.set_defaults(func=_certs)

    apply = sub.add_parser("apply", help="create or update objects from manifests (all or nothing)")
    apply.add_argument("-f", "--filename", action="append", required=True, help="a file, a directory or - for stdin (repeatable)")
    apply.add_argument("-R", "--recursive", action="store_true", help="read directories recursively")
    apply.add_argument("--dry-run", action="store_true", help="validate only")
    _namespace_flag(apply)
    _connection_flags(apply, suppress=True)
    apply.set_defaults(func=_client_command("apply"))

    get = sub.add_parser("get", help="list objects or show some")
    get.add_argument("kind", help="kind, plural or short name (wl, cq, lq, rf, job, ns, ...)")
    get.add_argument("names", nargs="*", metavar="NAME")
    _namespace_flag(get)
    get.add_argument("-A", "--all-namespaces", action="store_true")
    get.add_argument("-o", "--output", choices=("wide", "yaml", "json", "name"))
    get.add_argument("-l", "--selector", help="label selector, e.g. app=x,tier!=web")
    _connection_flags(get, suppress=True)
    get.set_defaults(func=_client_command("get"))

    describe = sub.add_parser("describe", help="show an object in detail, with why a workload waits")
    describe.add_argument("kind")
    describe.add_argument("names", nargs="*", metavar="NAME")
    _namespace_flag(describe)
    _connection_flags(describe, suppress=True)
    describe.set_defaults(func=_client_command("describe"))

    delete = sub.add_parser("delete", help="delete objects by name or from manifests")
    delete.add_argument("kind", nargs="?")
    delete.add_argument("names", nargs="*", metavar="NAME")
    delete.add_argument("-f", "--filename", action="append", help="a file, a directory or - (repeatable)")
    delete.add_argument("-R", "--recursive", action="store_true")
    _namespace_flag(delete)
    _connection_flags(delete, suppress=True)
    delete.set_defaults(func=_client_command("delete"))

    top = sub.add_parser("top", help="live ClusterQueue usage against quota, pending and admitted workloads, workers")
    top.add_argument("--once", action="store_true", help="print one snapshot and exit")
    top.add_argument("--interval", type=float, default=1.0, help="seconds between refreshes (default 1)")
    _connection_flags(top, suppress=True)
    top.set_defaults(func=_client_command("top"))

    dev = sub.add_parser(
        "dev-cluster", help="a local stand-in for a Kubernetes cluster: the Kubernetes API plus simulated Jobs and pods"
    )
    dev.add_argument("--data-dir", required=True, help="state (SQLite) and the kubeconfig go here")
    dev.add_argument("--listen", default="127.0.0.1:6443", help="loopback HOST:PORT of the API (default 127.0.0.1:6443; port 0 picks one)")
    dev.add_argument("--nodes", help="YAML file listing nodes (name, labels, taints); default one node, dev-node-1")
    dev.add_argument("--sim-duration", default="5s", help="run time of pods without a mkhub.dev/sim-duration annotation")
    dev.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    dev.set_defaults(func=_dev_cluster)

    manifests = sub.add_parser("manifests", help="write generated manifests (CRDs) to files")
    manifests_sub = manifests.add_subparsers(dest="what", required=True)
    crds = manifests_sub.add_parser("crds", help="the CustomResourceDefinitions of every Kueue kind, one file per kind")
    crds.add_argument("--out", default="manifests/crds", help="output directory (default manifests/crds)")
    crds.set_defaults(func=_manifests)

    demo = sub.add_parser(
        "demo", help="start a hub and two worker agents on loopback and run a burst of GPU jobs through them"
    )
    # Options only: importing hub.demo.run here would slow every other command down.
    demo.add_argument("--jobs", type=int, default=40, help="how many GPU jobs to run (default 40)")
    demo.add_argument("--workers", type=int, default=2, help="how many worker agents (default 2)")
    demo.add_argument("--keep", action="store_true", help="keep the working directory (logs, store, certificates)")
    demo.add_argument("--seed", type=int, default=1, help="seed of the job mix (default 1)")
    demo.add_argument("--manifests", type=Path, default=None, help=argparse.SUPPRESS)
    demo.set_defaults(func=_demo)

    bench = sub.add_parser(
        "bench", help="benchmarks: mkhub bench engine|store|dispatch|transport|kueue-perf|serve [--json] (--help per benchmark)", add_help=False
    )
    bench.add_argument("target", help="what to measure: engine, store, dispatch, transport, kueue-perf, serve")
    bench.add_argument("rest", nargs=argparse.REMAINDER)
    bench.set_defaults(func=_bench)
    return parser


# Commands whose options belong to another parser: everything after the name is passed on.
_PASS_THROUGH = ("certs", "bench")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in _PASS_THROUGH and not (argv[0] == "bench" and len(argv) < 2):
        rest = argv[1:]
        if argv[0] == "bench":
            return _bench(argparse.Namespace(target=rest[0], rest=rest[1:]))
        return _certs(argparse.Namespace(rest=rest))
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
