"""Commands that change one stored object: label, patch, edit, kueuectl's stop/resume and
``create localqueue|clusterqueue``.

Each reads the object from the hub, changes it here, and sends it back through
Apply, so the hub validates the result exactly as it validates a manifest (an
immutable field changed by a patch is refused with the same one line).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from typing import Any

import yaml

from hub.api.registry import KindInfo

from . import printers
from .client import CliError, ControlClient
from .commands import targets

Object = dict[str, Any]

# Kubernetes' label syntax: an optional DNS-subdomain prefix, a name of at most 63 characters.
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _one(args: argparse.Namespace, kind: str, names: list[str]) -> list[tuple[KindInfo, str]]:
    out = [(info, name) for info, group in targets(kind, names) for name in group]
    if not out:
        raise CliError(f"resource(s) were provided, but no name was specified: mkhub {args.command} {kind} NAME")
    return out


def _send(client: ControlClient, obj: Object, namespace: str) -> str:
    """Apply the changed object; the hub's action (configured/unchanged), or raise its error."""
    reply = client.apply(json.dumps(obj), namespace=namespace, source=f"{obj.get('kind')}/{obj['metadata'].get('name')}")
    for warning in reply.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    result = reply.results[0]
    if result.error:
        raise CliError(result.error)
    return str(result.action)


def _ref(obj: Object) -> str:
    return f"{printers.type_name(str(obj.get('kind', '')))}/{obj['metadata']['name']}"


# --------------------------------------------------------------------------- label


def _label_changes(tokens: list[str]) -> tuple[list[str], dict[str, str], list[str]]:
    """Names, labels to set (key=value) and labels to remove (key-) of ``mkhub label``'s arguments."""
    names: list[str] = []
    adds: dict[str, str] = {}
    removes: list[str] = []
    for token in tokens:
        if "=" in token:
            key, _, value = token.partition("=")
            _check_label(key, value)
            adds[key] = value
        elif token.endswith("-") and len(token) > 1:
            removes.append(token[:-1])
        else:
            names.append(token)
    if not adds and not removes:
        raise CliError("at least one label update is required: KEY=VALUE to set, KEY- to remove")
    return names, adds, removes


def _check_label(key: str, value: str) -> None:
    prefix, _, name = key.rpartition("/")
    if not _LABEL_NAME.match(name) or (prefix and (len(prefix) > 253 or not _LABEL_PREFIX.match(prefix))):
        raise CliError(f'invalid label key "{key}": a name of at most 63 alphanumerics, "-", "_" or ".", with an optional DNS prefix')
    if value and not _LABEL_NAME.match(value):
        raise CliError(f'invalid label value "{value}" for "{key}": at most 63 alphanumerics, "-", "_" or ".", starting and ending with an alphanumeric')


def label(args: argparse.Namespace, client: ControlClient) -> int:
    names, adds, removes = _label_changes(args.names)
    for info, name in _one(args, args.kind, names):
        obj = client.get(info.kind, name, args.namespace or "")
        labels: dict[str, str] = dict(obj["metadata"].get("labels") or {})
        for key, value in adds.items():
            if key in labels and labels[key] != value and not args.overwrite:
                raise CliError(f"'{key}' already has a value ({labels[key]}), and --overwrite is false")
        before = dict(labels)
        labels.update(adds)
        for key in removes:
            labels.pop(key, None)
        if labels == before:
            printers.write(sys.stdout, f"{_ref(obj)} not labeled")
            continue
        obj["metadata"]["labels"] = labels
        _send(client, obj, args.namespace or "")
        printers.write(sys.stdout, f"{_ref(obj)} {'labeled' if adds else 'unlabeled'}")
    return 0


# --------------------------------------------------------------------------- patch


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: maps merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def patch(args: argparse.Namespace, client: ControlClient) -> int:
    try:
        change = json.loads(args.patch) if args.patch.lstrip().startswith(("{", "[")) else yaml.safe_load(args.patch)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise CliError(f"unable to parse the patch {args.patch!r}: {exc}") from None
    if not isinstance(change, dict):
        raise CliError("a merge patch must be a JSON object, e.g. '{\"spec\":{\"stopPolicy\":\"Hold\"}}'")
    for info, name in _one(args, args.kind, args.names):
        obj = client.get(info.kind, name, args.namespace or "")
        patched = merge_patch(obj, change)
        if patched == obj:
            printers.write(sys.stdout, f"{_ref(obj)} patched (no change)")
            continue
        action = _send(client, patched, args.namespace or "")
        printers.write(sys.stdout, f"{_ref(obj)} patched" + (" (no change)" if action == "unchanged" else ""))
    return 0


# --------------------------------------------------------------------------- edit


def _editor() -> list[str]:
    for var in ("KUBE_EDITOR", "EDITOR"):
        value = os.environ.get(var)
        if value:
            return shlex.split(value)
    return ["vi"]


_EDIT_HEADER = (
    "# Please edit the object below. Lines beginning with a '#' will be ignored,\n"
    "# and an empty file will abort the edit. Status and server fields are ignored.\n"
    "#\n"
)


def edit(args: argparse.Namespace, client: ControlClient) -> int:
    for info, name in _one(args, args.kind, args.names):
        obj = client.get(info.kind, name, args.namespace or "")
        original = printers.dump(obj, "yaml")
        with tempfile.NamedTemporaryFile("w", prefix="mkhub-edit-", suffix=".yaml", delete=False) as f:
            f.write(_EDIT_HEADER + original + "\n")
            path = f.name
        try:
            done = subprocess.run([*_editor(), path], check=False)
        except OSError as exc:
            raise CliError(f"cannot start the editor ({' '.join(_editor())}): {exc}; set EDITOR") from None
        if done.returncode != 0:
            raise CliError(f"the editor exited with code {done.returncode}; nothing changed (your copy: {path})")
        with open(path) as f:
            text = "".join(line for line in f if not line.lstrip().startswith("#"))
        if not text.strip():
            os.unlink(path)
            print("Edit cancelled, no changes made.", file=sys.stderr)
            continue
        try:
            edited = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise CliError(f"the edited file is not YAML ({exc}); your copy: {path}") from None
        if edited == obj:
            os.unlink(path)
            print("Edit cancelled, no changes made.", file=sys.stderr)
            continue
        try:
            _send(client, edited, args.namespace or "")
        except CliError as exc:
            raise CliError(f"{exc}\nA copy of your changes has been stored to {path}") from None
        os.unlink(path)
        printers.write(sys.stdout, f"{_ref(obj)} edited")
    return 0


# --------------------------------------------------------------------------- stop / resume (kueuectl)

_STOPPABLE = {"Workload", "LocalQueue", "ClusterQueue"}


def _stop_or_resume(args: argparse.Namespace, client: ControlClient, stop: bool) -> int:
    for info, name in _one(args, args.kind, args.names):
        if info.kind not in _STOPPABLE:
            raise CliError(f"{args.command} works on workloads, localqueues and clusterqueues, not {info.plural}")
        obj = client.get(info.kind, name, args.namespace or "")
        spec = obj.setdefault("spec", {})
        if info.kind == "Workload":
            spec["active"] = not stop
        elif stop:
            spec["stopPolicy"] = "Hold" if args.keep_already_running else "HoldAndDrain"
        else:
            spec["stopPolicy"] = "None"
        _send(client, obj, args.namespace or "")
        printers.write(sys.stdout, f"{_ref(obj)} {'stopped' if stop else 'resumed'}")
    return 0


def stop(args: argparse.Namespace, client: ControlClient) -> int:
    return _stop_or_resume(args, client, True)


def resume(args: argparse.Namespace, client: ControlClient) -> int:
    return _stop_or_resume(args, client, False)


# --------------------------------------------------------------------------- create localqueue|clusterqueue


def create_local_queue(args: argparse.Namespace, client: ControlClient) -> int:
    namespace = args.namespace or "default"
    if not args.ignore_unknown_cq:
        try:
            client.get("ClusterQueue", args.clusterqueue)
        except CliError:
            raise CliError(f'ClusterQueue "{args.clusterqueue}" not found; create it first or pass --ignore-unknown-cq') from None
    obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": args.name, "namespace": namespace},
        "spec": {"clusterQueue": args.clusterqueue},
    }
    return _create_one(client, obj, namespace, args.dry_run)


def _flavor_quotas(text: str | None, option: str) -> dict[str, dict[str, str]]:
    """kueuectl's ``FLAVOR:RES=QTY;RES=QTY,FLAVOR:...`` into {flavor: {resource: quantity}}."""
    out: dict[str, dict[str, str]] = {}
    if not text:
        return out
    for part in text.split(","):
        flavor, sep, resources = part.partition(":")
        if not sep or not flavor or not resources:
            raise CliError(f'{option}: expected FLAVOR:RESOURCE=QUANTITY[;RESOURCE=QUANTITY][,FLAVOR:...], got "{part}"')
        for item in resources.split(";"):
            res, sep, qty = item.partition("=")
            if not sep or not res or not qty:
                raise CliError(f'{option}: expected RESOURCE=QUANTITY in "{part}", got "{item}"')
            out.setdefault(flavor, {})[res] = qty
    return out


def cluster_queue_manifest(args: argparse.Namespace) -> Object:
    nominal = _flavor_quotas(args.nominal_quota, "--nominal-quota")
    borrowing = _flavor_quotas(args.borrowing_limit, "--borrowing-limit")
    lending = _flavor_quotas(args.lending_limit, "--lending-limit")
    for option, limits in (("--borrowing-limit", borrowing), ("--lending-limit", lending)):
        for flavor, resources in limits.items():
            for res in resources:
                if res not in nominal.get(flavor, {}):
                    raise CliError(f"{option}: {flavor}:{res} has no --nominal-quota")
    # Flavors covering the same resources share a resource group, as kueuectl builds them.
    groups: dict[tuple[str, ...], list[Object]] = {}
    for flavor, resources in nominal.items():
        rows = []
        for res, qty in resources.items():
            row: Object = {"name": res, "nominalQuota": qty}
            if res in borrowing.get(flavor, {}):
                row["borrowingLimit"] = borrowing[flavor][res]
            if res in lending.get(flavor, {}):
                row["lendingLimit"] = lending[flavor][res]
            rows.append(row)
        groups.setdefault(tuple(resources), []).append({"name": flavor, "resources": rows})
    spec: Object = {"namespaceSelector": {}}
    if args.namespace_selector:
        labels = {}
        for pair in args.namespace_selector.split(","):
            key, sep, value = pair.partition("=")
            if not sep or not key:
                raise CliError(f'--namespace-selector: expected KEY=VALUE[,KEY=VALUE], got "{pair}"')
            labels[key] = value
        spec["namespaceSelector"] = {"matchLabels": labels}
    if args.cohort:
        spec["cohortName"] = args.cohort
    # kueuectl writes these three even when not given, with Kueue's defaults.
    spec["queueingStrategy"] = args.queuing_strategy or "BestEffortFIFO"
    spec["preemption"] = {
        "reclaimWithinCohort": args.reclaim_within_cohort or "Never",
        "withinClusterQueue": args.preemption_within_cluster_queue or "Never",
    }
    spec["resourceGroups"] = [{"coveredResources": list(key), "flavors": flavors} for key, flavors in groups.items()]
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": args.name}, "spec": spec}


def create_cluster_queue(args: argparse.Namespace, client: ControlClient) -> int:
    return _create_one(client, cluster_queue_manifest(args), "", args.dry_run)


def _create_one(client: ControlClient, obj: Object, namespace: str, dry_run: bool) -> int:
    reply = client.apply(json.dumps(obj), namespace=namespace, source=obj["kind"], dry_run=dry_run, create=True)
    for warning in reply.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    result = reply.results[0]
    if result.error:
        raise CliError(result.error)
    printers.write(sys.stdout, f"{_ref(obj)} {result.action}")
    return 0
