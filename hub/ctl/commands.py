"""The client commands of ``mkhub``: apply, create -f, get, describe, delete, top, api-resources.

Each takes the parsed arguments and a connected :class:`ControlClient`, writes
results to stdout and problems to stderr (one line each), and returns the
exit code.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from hub.api.registry import KINDS, KindInfo, resolve_kind
from hub.service.field_check import field_validation
from hub.service.manifests import ManifestError, read_documents
from hub.service.naming import resource_name
from mkhub.v1 import control_pb2 as pb

from . import printers
from .client import CliError, ControlClient
from .output import Output, custom_columns, jsonpath, sort_objects

Object = dict[str, Any]

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def _err(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def _obj_name(ref: pb.ObjectRef) -> str:
    return f"{printers.type_name(ref.kind)}/{ref.name}"


# --------------------------------------------------------------------------- reading -f


def read_sources(paths: list[str], recursive: bool = False, stdin: TextIO | None = None) -> list[tuple[str, str]]:
    """(source name, text) for every file named, directory listed, or ``-`` (stdin)."""
    out: list[tuple[str, str]] = []
    for raw in paths:
        if raw == "-":
            out.append(("<stdin>", (stdin or sys.stdin).read()))
            continue
        path = Path(raw)
        if path.is_dir():
            pattern = "**/*" if recursive else "*"
            files = sorted(p for p in path.glob(pattern) if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
            if not files:
                raise CliError(f"no manifests (*.yaml, *.yml, *.json) in {raw}")
            out.extend((str(p), p.read_text()) for p in files)
        elif path.is_file():
            out.append((raw, path.read_text()))
        else:
            raise CliError(f'the path "{raw}" does not exist')
    return out


def _joined(sources: list[tuple[str, str]]) -> tuple[str, str]:
    """Check YAML syntax file by file (errors then name the file), then join into one request."""
    for name, text in sources:
        try:
            read_documents(text, name)
        except ManifestError as exc:
            raise CliError(str(exc)) from None
    return "\n---\n".join(text for _, text in sources), ", ".join(name for name, _ in sources)


# --------------------------------------------------------------------------- apply / create


def _report_apply(reply: pb.ApplyResponse) -> int:
    """kubectl's report: one line per object on stdout, each failure on stderr; non-zero if any failed."""
    for warning in reply.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    for r in reply.results:
        if r.error:
            print(r.error if r.error.startswith("Error from server") else f"error: {r.error}", file=sys.stderr)
        else:
            printers.write(sys.stdout, f"{_obj_name(r.object)} {r.action}")
    return 1 if reply.rejected else 0


def apply(args: argparse.Namespace, client: ControlClient) -> int:
    text, source = _joined(read_sources(args.filename, args.recursive))
    return _report_apply(client.apply(text, namespace=args.namespace or "", source=source, dry_run=args.dry_run,
                                      field_validation=_validate(args)))


def _validate(args: argparse.Namespace) -> str:
    """kubectl's ``--validate`` (strict by default) as the API server's fieldValidation."""
    try:
        return field_validation(str(getattr(args, "validate", "") or ""))
    except ValueError as exc:
        raise CliError(str(exc)) from None


def create(args: argparse.Namespace, client: ControlClient) -> int:
    """``create -f``: like apply, but an existing object is an error and generateName is filled in."""
    if not args.filename:
        raise CliError("create needs -f FILE, or one of: mkhub create localqueue|clusterqueue NAME ... (see --help)")
    text, source = _joined(read_sources(args.filename, args.recursive))
    reply = client.apply(text, namespace=args.namespace or "", source=source, dry_run=args.dry_run, create=True,
                         field_validation=_validate(args))
    return _report_apply(reply)


# --------------------------------------------------------------------------- get


def _resolve(kind: str) -> KindInfo:
    info = resolve_kind(kind)
    if info is None:
        raise CliError(f'the server doesn\'t have a resource type "{kind}"')
    return info


def targets(kind_arg: str | None, names: list[str]) -> list[tuple[KindInfo, list[str]]]:
    """``cq,lq``, ``cq NAME...`` or ``cq/NAME lq/NAME`` into (kind, names) groups, in the order given."""
    if not kind_arg:
        raise CliError("You must specify the type of resource: mkhub api-resources lists them")
    tokens = [kind_arg, *names]
    if "/" in kind_arg:
        groups: dict[str, tuple[KindInfo, list[str]]] = {}
        for token in tokens:
            kind, sep, name = token.partition("/")
            if not sep or not name:
                raise CliError(f'there is no need to specify a resource type as a separate argument when passing TYPE/NAME: "{token}"')
            info = _resolve(kind)
            groups.setdefault(info.kind, (info, []))[1].append(name)
        return list(groups.values())
    out: list[tuple[KindInfo, list[str]]] = []
    for kind in kind_arg.split(","):
        if kind:
            info = _resolve(kind)
            if all(info.kind != seen.kind for seen, _ in out):
                out.append((info, list(names)))
    return out


def _fetch(args: argparse.Namespace, client: ControlClient, info: KindInfo, names: list[str]) -> tuple[list[Object], int, int]:
    """(objects, resourceVersion to watch from, exit code) for one kind."""
    if names:
        objects, code = [], 0
        for name in names:
            try:
                objects.append(client.get(info.kind, name, args.namespace or ""))
            except CliError as exc:
                print(exc, file=sys.stderr)
                code = 1
        return objects, 0, code
    _, _, objects, rv = client.list_with_version(
        info.kind, namespace=args.namespace or "", all_namespaces=args.all_namespaces, selector=args.selector or ""
    )
    return objects, rv, 0


def _no_resources(args: argparse.Namespace, infos: list[KindInfo]) -> None:
    namespaced = any(i.namespaced for i in infos)
    where = "" if not namespaced or args.all_namespaces else f" in {args.namespace or 'default'} namespace"
    print(f"No resources found{where}.", file=sys.stderr)


def get(args: argparse.Namespace, client: ControlClient) -> int:
    out = Output.parse(args.output)
    groups = targets(args.kind, args.names)
    if args.watch and len(groups) > 1:
        raise CliError("you may only specify a single resource type with --watch")
    now = time.time()
    code = 0
    fetched: list[tuple[KindInfo, list[Object]]] = []
    rv = 0
    for info, names in groups:
        objects, rv, failed = _fetch(args, client, info, names)
        code = code or failed
        if args.sort_by:
            objects = sort_objects(objects, args.sort_by)
        fetched.append((info, objects))
    everything = [o for _, objects in fetched for o in objects]
    single = len(groups) == 1 and len(groups[0][1]) == 1 and len(everything) == 1
    if not everything and not any(names for _, names in groups) and not args.watch:
        if out.kind in ("yaml", "json"):  # kubectl prints an empty List, and scripts parse it
            printers.write(sys.stdout, printers.dump(printers.as_list([]), out.kind))
            return code
        _no_resources(args, [i for i, _ in fetched])
        return code
    if out.kind in ("yaml", "json"):
        if everything:
            printers.write(sys.stdout, printers.dump(everything[0] if single else printers.as_list(everything), out.kind))
    elif out.kind == "name":
        printers.write(sys.stdout, printers.names(everything))
    elif out.kind == "jsonpath":
        if everything:  # as kubectl: exactly what the template says, no newline added
            sys.stdout.write(jsonpath(out.arg, everything[0] if single else printers.as_list(everything)))
    elif out.kind == "custom-columns":
        printers.write(sys.stdout, custom_columns(out, everything, header=not args.no_headers))
    else:
        tables = []
        for info, objects in fetched:
            if objects:
                prefix = f"{printers.type_name(info.kind)}/" if len(groups) > 1 else ""
                if out.kind == "wide" and info.kind == "Workload":
                    printers.mark_positions(objects, client.pending_workloads(all_queues=True, limit=2**31 - 1))
                tables.append(_table(args, out, info, objects, now, header=not args.no_headers, prefix=prefix))
        printers.write(sys.stdout, "\n\n".join(tables))
    if args.watch:
        info, names = groups[0]
        return _watch(args, client, out, info, names, rv, printed=bool(everything) or args.no_headers) or code
    return code


def _table(
    args: argparse.Namespace, out: Output, info: KindInfo, objects: list[Object], now: float, *, header: bool, prefix: str = ""
) -> str:
    return printers.table(
        info.kind,
        objects,
        now=now,
        wide=out.kind == "wide",
        namespace_column=args.all_namespaces and info.namespaced,
        header=header,
        show_labels=args.show_labels,
        name_prefix=prefix,
    )


def _watch(
    args: argparse.Namespace, client: ControlClient, out: Output, info: KindInfo, names: list[str], rv: int, *, printed: bool
) -> int:
    """Print every later change of the kind (``get -w``) until interrupted; one line (or document) per change."""
    if names and len(names) > 1:
        raise CliError("watch is only supported on individual resources and resource collections, but 2+ resources were found")
    if not rv:
        _, _, _, rv = client.list_with_version(info.kind, namespace=args.namespace or "", all_namespaces=args.all_namespaces)
    header = printed
    for _event_type, obj in client.watch(
        info.kind,
        namespace=args.namespace or "",
        all_namespaces=args.all_namespaces,
        selector=args.selector or "",
        resource_version=rv,
        name=names[0] if names else "",
    ):
        if out.kind in ("yaml", "json"):
            text = printers.dump(obj, out.kind) + ("\n---" if out.kind == "yaml" else "")
        elif out.kind == "name":
            text = printers.names([obj])
        elif out.kind == "jsonpath":
            text = jsonpath(out.arg, obj)
        elif out.kind == "custom-columns":
            text = custom_columns(out, [obj], header=False)
        else:
            text = _table(args, out, info, [obj], time.time(), header=not header)
            header = True
        printers.write(sys.stdout, text)
        sys.stdout.flush()
    return 0


# --------------------------------------------------------------------------- api-resources


def api_resources(args: argparse.Namespace) -> int:
    rows = [["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]]
    for info in sorted(KINDS.values(), key=lambda i: i.plural):
        version = info.api_versions[-1] if info.api_versions[0].startswith("kueue.") else info.api_versions[0]
        rows.append([info.plural, ",".join(info.short_names), version, str(info.namespaced).lower(), info.kind])
    if args.output == "name":
        printers.write(sys.stdout, "\n".join(resource_name(i) for i in sorted(KINDS.values(), key=lambda i: i.plural)))
    else:
        printers.write(sys.stdout, printers.format_table(rows))
    return 0


# --------------------------------------------------------------------------- describe


def describe(args: argparse.Namespace, client: ControlClient) -> int:
    if not args.kind:
        raise CliError("You must specify the type of resource to describe: mkhub api-resources lists them")
    kind = _resolve(args.kind).kind
    names = list(args.names)
    if not names:
        _, _, objects = client.list(kind, namespace=args.namespace or "")
        names = [o["metadata"]["name"] for o in objects]
        if not names:
            print(f"No resources found in {args.namespace or 'default'} namespace.", file=sys.stderr)
            return 0
    code = 0
    texts = []
    for name in names:
        try:
            info = client.describe(kind, name, args.namespace or "")
        except CliError as exc:
            print(exc, file=sys.stderr)
            code = 1
            continue
        from . import describe as describe_view  # loaded by the one command that prints it

        texts.append(describe_view.render(info, time.time()))
    if texts:
        print("\n\n".join(texts))
    return code


# --------------------------------------------------------------------------- delete


def delete(args: argparse.Namespace, client: ControlClient) -> int:
    if args.filename:
        text, source = _joined(read_sources(args.filename, args.recursive))
        results = list(client.delete(manifests=text, source=source, namespace=args.namespace or "").results)
    else:
        if not args.kind:
            raise CliError("delete needs KIND NAME..., KIND -l SELECTOR, KIND --all or -f FILE")
        groups = targets(args.kind, args.names)
        every = args.all or bool(args.selector)
        if every and args.names:
            raise CliError("name cannot be provided when a selector or --all is specified")
        if not every and not any(names for _, names in groups):
            raise CliError(f"resource(s) were provided, but no name was specified (or use -l SELECTOR or --all): mkhub delete {args.kind} NAME")
        results = []
        for info, names in groups:
            if every:
                _, _, objects, _ = client.list_with_version(
                    info.kind, namespace=args.namespace or "", all_namespaces=args.all_namespaces, selector=args.selector or ""
                )
                pairs = [(str(o["metadata"].get("namespace") or ""), str(o["metadata"]["name"])) for o in objects]
            else:
                pairs = [(args.namespace or "", name) for name in names]
            for namespace, name in pairs:
                results.extend(client.delete(info.kind, name, namespace).results)
        if not results:
            _no_resources(args, [info for info, _ in groups])
            return 0
    code = 0
    for r in results:
        if r.error:
            print(f"Error from server (NotFound): {r.error}" if r.error.endswith("not found") else f"error: {r.error}", file=sys.stderr)
            code = 1
        else:
            printers.write(sys.stdout, f'{printers.type_name(r.object.kind)} "{r.object.name}" deleted')
            if r.warning:
                print(f"Warning: {r.warning}", file=sys.stderr)
    return code


# --------------------------------------------------------------------------- top


def logs(args: argparse.Namespace, client: ControlClient) -> int:
    """``mkhub logs job/NAME``: as kubectl logs, one pod's lines as they are, several pods' prefixed."""
    kind, _, name = str(args.target).rpartition("/")
    kind = {"": "job", "job": "job", "jobs": "job", "job.batch": "job", "jobs.batch": "job",
            "workload": "workload", "workloads": "workload", "wl": "workload"}.get(kind.lower(), kind)
    if kind not in ("job", "workload") or not name:
        raise CliError(f"logs: {args.target}: give job/NAME or workload/NAME")
    tail = args.tail if args.tail >= 0 else None
    for chunk in client.logs(kind, name, namespace=args.namespace, container=args.container, follow=args.follow, tail=tail):
        prefix = f"[pod/{chunk.pod}/{chunk.container}] " if args.prefix or chunk.prefixed else ""
        for line in chunk.lines:
            print(f"{prefix}{line}", flush=args.follow)
    return 0


def top(args: argparse.Namespace, client: ControlClient) -> int:
    from . import top as top_view

    live = not args.once and sys.stdout.isatty()
    try:
        for snap in client.top(interval=args.interval, once=args.once):
            text = top_view.render(snap)
            if live:
                sys.stdout.write("\x1b[H\x1b[2J" + text + "\n")
            else:
                print(text + ("" if args.once else "\n"))
            sys.stdout.flush()
            if args.once:
                break
    except KeyboardInterrupt:
        return 0
    return 0
