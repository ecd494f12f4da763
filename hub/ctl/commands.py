"""The client commands of ``mkhub``: apply, get, describe, delete, top.

Each takes the parsed arguments and a connected :class:`ControlClient`, writes
results to stdout and problems to stderr (one line each), and returns the
exit code.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TextIO

from hub.api.registry import resolve_kind
from hub.service.manifests import ManifestError, read_documents
from mkhub.v1 import control_pb2 as pb

from . import describe as describe_view
from . import printers
from . import top as top_view
from .client import CliError, ControlClient

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


# --------------------------------------------------------------------------- apply


def apply(args: argparse.Namespace, client: ControlClient) -> int:
    text, source = _joined(read_sources(args.filename, args.recursive))
    reply = client.apply(text, namespace=args.namespace or "", source=source, dry_run=args.dry_run)
    for warning in reply.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    bad = [r for r in reply.results if r.error]
    for r in bad:
        _err(r.error)
    if reply.rejected:
        if len(bad) < len(reply.results):
            _err(f"nothing was applied: {len(bad)} of {len(reply.results)} objects are invalid")
        return 1
    for r in reply.results:
        print(f"{_obj_name(r.object)} {r.action}")
    return 0


# --------------------------------------------------------------------------- get


def _resolve(kind: str) -> str:
    info = resolve_kind(kind)
    if info is None:
        raise CliError(f'the server doesn\'t have a resource type "{kind}"')
    return info.kind


def get(args: argparse.Namespace, client: ControlClient) -> int:
    kind = _resolve(args.kind)
    now = time.time()
    code = 0
    if args.names:
        objects = []
        for name in args.names:
            try:
                objects.append(client.get(kind, name, args.namespace or ""))
            except CliError as exc:
                print(exc, file=sys.stderr)
                code = 1
        namespaced = bool(objects and objects[0]["metadata"].get("namespace"))
        single = len(args.names) == 1
    else:
        kind, namespaced, objects = client.list(
            kind, namespace=args.namespace or "", all_namespaces=args.all_namespaces, selector=args.selector or ""
        )
        single = False
        if not objects:
            where = "" if not namespaced or args.all_namespaces else f" in {args.namespace or 'default'} namespace"
            print(f"No resources found{where}.", file=sys.stderr)
            return 0
    if not objects:
        return code
    fmt = args.output or ""
    if fmt in ("yaml", "json"):
        data = objects[0] if single else printers.as_list(objects)
        printers.write(sys.stdout, printers.dump(data, fmt))
    elif fmt == "name":
        printers.write(sys.stdout, printers.names(objects))
    else:
        if fmt == "wide" and kind == "Workload":
            printers.mark_positions(objects, client.pending_workloads(all_queues=True, limit=2**31 - 1))
        printers.write(
            sys.stdout,
            printers.table(kind, objects, now=now, wide=fmt == "wide", namespace_column=args.all_namespaces and namespaced),
        )
    return code


# --------------------------------------------------------------------------- describe


def describe(args: argparse.Namespace, client: ControlClient) -> int:
    kind = _resolve(args.kind)
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
        texts.append(describe_view.render(info, time.time()))
    if texts:
        print("\n\n".join(texts))
    return code


# --------------------------------------------------------------------------- delete


def delete(args: argparse.Namespace, client: ControlClient) -> int:
    if args.filename:
        text, source = _joined(read_sources(args.filename, args.recursive))
        reply = client.delete(manifests=text, source=source, namespace=args.namespace or "")
    else:
        if not args.kind or not args.names:
            raise CliError("delete needs KIND NAME... or -f FILE")
        kind = _resolve(args.kind)
        results = []
        for name in args.names:
            results.extend(client.delete(kind, name, args.namespace or "").results)
        reply = pb.DeleteResponse(results=results)
    code = 0
    for r in reply.results:
        if r.error:
            print(f"Error from server (NotFound): {r.error}" if r.error.endswith("not found") else f"error: {r.error}", file=sys.stderr)
            code = 1
        else:
            print(f'{printers.type_name(r.object.kind)} "{r.object.name}" deleted')
    return code


# --------------------------------------------------------------------------- top


def top(args: argparse.Namespace, client: ControlClient) -> int:
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
