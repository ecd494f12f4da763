"""The command line of mkhub's client commands (get, apply, create, ...), kubectl's way.

Options may come before or after the positional arguments (``mkhub get wl -n
team-a NAME -o wide``): every subcommand parser reads its arguments
intermixed. Kinds complete from the registry (argcomplete).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable
from typing import Any

# The -o values of `mkhub get` (hub.ctl.output reads them).
FORMATS = ("wide", "yaml", "json", "name", "jsonpath=TEMPLATE", "custom-columns=HEADER:PATH,...")


class IntermixedParser(argparse.ArgumentParser):
    """A subcommand parser whose options and positionals may come in any order, as kubectl's flags."""

    _inside = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._inside:
            return super().parse_known_args(args, namespace)
        self._inside = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        except TypeError:  # a parser with REMAINDER or nested subcommands: the plain order
            return super().parse_known_args(args, namespace)
        finally:
            self._inside = False


def kind_names(prefix: str = "", **_: Any) -> Iterable[str]:
    """Completion of KIND: every kind's plural and short names (``cq,lq`` continues after a comma)."""
    from hub.api.registry import KINDS

    head, _comma, last = prefix.rpartition(",")
    names = sorted({n for info in KINDS.values() for n in (info.plural, *info.short_names)})
    return [(head + "," if head else "") + n for n in names if n.startswith(last)]


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")


def connection_flags(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """--server/--tls-dir/--insecure/--timeout, accepted before or after the subcommand."""

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


def _namespace(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--namespace", default="", help='namespace (default "default")')


def _kind(parser: argparse.ArgumentParser, nargs: str | None = None, help_text: str = "") -> None:
    action = parser.add_argument(
        "kind", nargs=nargs, metavar="KIND", help=help_text or "kind, plural or short name (wl, cq, lq, rf, job, ns, ...); `mkhub api-resources` lists them"
    )
    action.completer = kind_names  # type: ignore[attr-defined]


def _files(parser: argparse.ArgumentParser, required: bool) -> None:
    parser.add_argument(
        "-f", "--filename", action="append", required=required, help="a manifest file, a directory of them, or - for stdin (repeatable)"
    )
    parser.add_argument("-R", "--recursive", action="store_true", help="read directories recursively")


def _validate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--validate", nargs="?", const="strict", default="strict", metavar="strict|warn|ignore",
        help="unknown fields: strict (or true, the default) refuses the object naming the field, "
             "warn drops them with a warning, ignore (or false) drops them",
    )


Command = Callable[[str], Callable[[argparse.Namespace], int]]


def add_client_commands(sub: Any, client_command: Command, offline: Callable[[str], Callable[[argparse.Namespace], int]]) -> None:
    """The subcommands that talk to a hub (plus api-resources, which only reads the registry)."""

    def parser(name: str, help_text: str, **kw: Any) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=help_text[:1].upper() + help_text[1:] + ".", **kw)
        return p

    apply = parser("apply", "create or update objects from manifests, each on its own as kubectl does")
    _files(apply, required=True)
    apply.add_argument("--dry-run", action="store_true", help="validate and report what would change; store nothing")
    _validate(apply)
    _namespace(apply)
    connection_flags(apply, suppress=True)
    apply.set_defaults(func=client_command("apply"))

    create = parser("create", "create objects from manifests (refuses existing names; fills in metadata.generateName)")
    _files(create, required=False)
    create.add_argument("--dry-run", action="store_true", help="validate only; store nothing")
    _validate(create)
    _namespace(create)
    connection_flags(create, suppress=True)
    create.set_defaults(func=client_command("create"))
    what = create.add_subparsers(dest="what", metavar="localqueue|clusterqueue", parser_class=IntermixedParser)
    lq = what.add_parser("localqueue", aliases=["lq"], help="create a LocalQueue (kueuectl's flags)", description="Create a LocalQueue.")
    lq.add_argument("name", metavar="NAME", help="the LocalQueue's name")
    lq.add_argument("-c", "--clusterqueue", required=True, help="the ClusterQueue it submits to")
    lq.add_argument("-i", "--ignore-unknown-cq", action="store_true", help="create it even if the ClusterQueue does not exist yet")
    lq.add_argument("--dry-run", action="store_true", help="validate only; store nothing")
    _namespace(lq)
    connection_flags(lq, suppress=True)
    lq.set_defaults(func=client_command("modify.create_local_queue"))
    cq = what.add_parser("clusterqueue", aliases=["cq"], help="create a ClusterQueue (kueuectl's flags)", description="Create a ClusterQueue.")
    cq.add_argument("name", metavar="NAME", help="the ClusterQueue's name")
    cq.add_argument("--cohort", help="the cohort it borrows from and lends to")
    cq.add_argument("--queuing-strategy", choices=("BestEffortFIFO", "StrictFIFO"), help="queueing strategy (default BestEffortFIFO)")
    cq.add_argument("--namespace-selector", metavar="KEY=VALUE[,...]", help="namespaces it admits from (default: all)")
    cq.add_argument("--reclaim-within-cohort", choices=("Never", "LowerPriority", "Any"), help="preemption.reclaimWithinCohort")
    cq.add_argument(
        "--preemption-within-cluster-queue", choices=("Never", "LowerPriority", "LowerOrNewerEqualPriority"), help="preemption.withinClusterQueue"
    )
    quota = "FLAVOR:RESOURCE=QTY[;RESOURCE=QTY][,FLAVOR:...]"
    cq.add_argument("--nominal-quota", metavar=quota, help='quotas per flavor, e.g. "default-flavor:cpu=9;memory=36Gi"')
    cq.add_argument("--borrowing-limit", metavar=quota, help="borrowing limits per flavor and resource")
    cq.add_argument("--lending-limit", metavar=quota, help="lending limits per flavor and resource")
    cq.add_argument("--dry-run", action="store_true", help="validate only; store nothing")
    connection_flags(cq, suppress=True)
    cq.set_defaults(func=client_command("modify.create_cluster_queue"))

    get = parser("get", "list objects or show some (several kinds at once: get cq,lq)")
    _kind(get, help_text="kinds (cq,lq), a kind, or KIND/NAME; `mkhub api-resources` lists them")
    get.add_argument("names", nargs="*", metavar="NAME", help="objects to show (all when none)")
    _namespace(get)
    get.add_argument("-A", "--all-namespaces", action="store_true", help="list across all namespaces")
    get.add_argument("-o", "--output", metavar="FORMAT", help=f"output format: {', '.join(FORMATS)}")
    get.add_argument("-l", "--selector", help="label selector, e.g. app=x,tier!=web")
    get.add_argument("-w", "--watch", action="store_true", help="after listing, print every change until interrupted")
    get.add_argument("--sort-by", metavar="JSONPATH", help="sort by a field, e.g. .metadata.creationTimestamp")
    get.add_argument("--show-labels", action="store_true", help="add a LABELS column")
    get.add_argument("--no-headers", action="store_true", help="tables without their header line")
    connection_flags(get, suppress=True)
    get.set_defaults(func=client_command("get"))

    describe = parser("describe", "show an object in detail, with why a workload waits")
    _kind(describe, nargs="?")
    describe.add_argument("names", nargs="*", metavar="NAME", help="objects to describe (all of the kind when none)")
    _namespace(describe)
    connection_flags(describe, suppress=True)
    describe.set_defaults(func=client_command("describe"))

    delete = parser("delete", "delete objects by name, by label selector, all of a kind, or from manifests")
    _kind(delete, nargs="?")
    delete.add_argument("names", nargs="*", metavar="NAME", help="objects to delete")
    _files(delete, required=False)
    delete.add_argument("-l", "--selector", help="delete the objects these labels select")
    delete.add_argument("--all", action="store_true", help="delete every object of the kind (in the namespace)")
    delete.add_argument("-A", "--all-namespaces", action="store_true", help="with -l or --all: in every namespace")
    _namespace(delete)
    connection_flags(delete, suppress=True)
    delete.set_defaults(func=client_command("delete"))

    label = parser("label", "set (KEY=VALUE) or remove (KEY-) labels of objects")
    _kind(label)
    label.add_argument("names", nargs="+", metavar="NAME|KEY=VALUE|KEY-", help="object names, then label changes")
    label.add_argument("--overwrite", action="store_true", help="allow changing the value of an existing label")
    _namespace(label)
    connection_flags(label, suppress=True)
    label.set_defaults(func=client_command("modify.label"))

    patch = parser("patch", "change fields of objects with a JSON merge patch")
    _kind(patch)
    patch.add_argument("names", nargs="+", metavar="NAME", help="objects to patch")
    patch.add_argument("-p", "--patch", required=True, help='the patch (JSON or YAML), e.g. \'{"spec":{"stopPolicy":"Hold"}}\'')
    patch.add_argument("--type", default="merge", choices=("merge",), help="patch type: merge (RFC 7386), the one Kueue's kinds take")
    _namespace(patch)
    connection_flags(patch, suppress=True)
    patch.set_defaults(func=client_command("modify.patch"))

    edit = parser("edit", "edit objects in $KUBE_EDITOR or $EDITOR (default vi), then apply the result")
    _kind(edit)
    edit.add_argument("names", nargs="+", metavar="NAME", help="objects to edit")
    _namespace(edit)
    connection_flags(edit, suppress=True)
    edit.set_defaults(func=client_command("modify.edit"))

    for verb, text in (
        ("stop", "stop workloads (spec.active=false) or queues (spec.stopPolicy), as kueuectl does"),
        ("resume", "resume stopped workloads or queues, as kueuectl does"),
    ):
        p = parser(verb, text)
        _kind(p, help_text="workload, localqueue or clusterqueue (or wl, lq, cq)")
        p.add_argument("names", nargs="+", metavar="NAME", help=f"objects to {verb}")
        if verb == "stop":
            p.add_argument(
                "--keep-already-running", action="store_true", help="queues: stopPolicy Hold (admitted workloads keep running) instead of HoldAndDrain"
            )
        _namespace(p)
        connection_flags(p, suppress=True)
        p.set_defaults(func=client_command(f"modify.{verb}"))

    logs = parser("logs", "print the pod logs of a Job that runs on a worker cluster (relayed by its agent), as kubectl logs")
    logs.add_argument("target", metavar="job/NAME", help="job/NAME (or NAME: a Job), or workload/NAME")
    logs.add_argument("-n", "--namespace", default="", help="the namespace (default: default)")
    logs.add_argument("-f", "--follow", action="store_true", help="keep streaming new lines until the pods end")
    logs.add_argument("-c", "--container", default="", help="only this container")
    logs.add_argument("--tail", type=int, default=-1, help="only the last N lines of each pod (default -1: all)")
    logs.add_argument("--prefix", action="store_true", help="prefix each line with its pod and container (default: when there are several)")
    connection_flags(logs, suppress=True)
    logs.set_defaults(func=client_command("logs"))

    top = parser("top", "live ClusterQueue usage against quota, pending and admitted workloads, workers")
    top.add_argument("--once", action="store_true", help="print one snapshot and exit")
    top.add_argument("--interval", type=float, default=1.0, help="seconds between refreshes (default 1)")
    connection_flags(top, suppress=True)
    top.set_defaults(func=client_command("top"))

    resources = parser("api-resources", "list the kinds the hub serves, with short names and API versions")
    resources.add_argument("-o", "--output", choices=("name",), help="name: only resource.group names")
    resources.set_defaults(func=offline("api_resources"))
