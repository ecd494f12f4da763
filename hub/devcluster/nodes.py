"""The dev-cluster's nodes: names, labels and taints, and the one scheduling rule it
has — a pod fits a node when the node matches the pod's nodeSelector and required
node affinity, and the pod tolerates every NoSchedule/NoExecute taint of the node.

Nodes come from a YAML file (``--nodes FILE``)::

    nodes:
    - name: cpu-1
      labels: {cloud.example.com/pool: cpu}
    - name: gpu-1
      labels: {cloud.example.com/pool: gpu}
      taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
      allocatable: {cpu: 8, memory: 64Gi, nvidia.com/gpu: 4}

or from a topology spec (``--nodes blocks=2,racks=4,hosts=8,gpu=8``: :func:`parse_node_spec`). A node
with ``allocatable`` takes a pod only while the requests of the pods bound to it, and the pod's,
fit (``pods`` counts one a pod), as kube-scheduler's NodeResourcesFit; one without is unlimited.

They are served read-only as ``v1`` Node objects (``kubectl get nodes``): :func:`sync_nodes`
writes them at start and removes the ones no longer listed, each Ready, with the
addresses the kubelet reports for its pods (``hostIP``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hub.api.errors import FieldErrors
from hub.api.meta import Taint, read_node_selector_terms, read_taints, read_tolerations
from hub.api.pods import read_pod_template
from hub.api.quantity import QuantityError, format_quantity, resource_value
from hub.api.reader import Reader
from hub.store.interface import AlreadyExists, Conflict, NotFound, Object, Store

HOSTNAME_LABEL = "kubernetes.io/hostname"
KUBELET_VERSION = "v1.32.0-mkhub"
NODE_LEASE_NAMESPACE = "kube-node-lease"
REPELLING_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    allocatable: Mapping[str, int] = field(default_factory=dict)  # empty: no resource limit

    @property
    def all_labels(self) -> dict[str, str]:
        """The labels a kubelet registers (hostname, os, arch) plus the configured ones."""
        return {HOSTNAME_LABEL: self.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", **self.labels}


DEFAULT_NODES = (Node("dev-node-1"),)


class NodesError(ValueError):
    """A malformed node list; the message names the file, the field and why."""


KIND_API = "kind.x-k8s.io/"
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
KIND_ALLOCATABLE = {"cpu": "8", "memory": "64Gi", "pods": "110"}


def _kind_nodes(doc: Mapping[str, Any]) -> list[Any]:
    """The nodes of a kind cluster configuration (``kind: Cluster``, as Kueue's TAS example
    kind-cluster.yaml), named as kind names them: ``kind-control-plane`` (tainted, as kubeadm
    taints it), ``kind-worker``, ``kind-worker2``...; each with the allocatable of a topology
    spec's host (a kind node has its machine's; a simulated one needs some for TAS to count)."""
    items = doc.get("nodes") or [{"role": "control-plane"}]
    if not isinstance(items, list):
        raise NodesError("kind cluster configuration: nodes must be a list")
    out: list[Any] = []
    seen = {"control-plane": 0, "worker": 0}
    for item in items:
        if not isinstance(item, Mapping):
            out.append(item)
            continue
        role = "control-plane" if item.get("role", "control-plane") == "control-plane" else "worker"
        seen[role] += 1
        name = f"kind-{role}" + (str(seen[role]) if seen[role] > 1 else "")
        node: dict[str, Any] = {"name": name, "labels": dict(item.get("labels") or {}), "allocatable": dict(KIND_ALLOCATABLE)}
        if role == "control-plane":
            node["labels"][CONTROL_PLANE_LABEL] = ""
            node["taints"] = [{"key": CONTROL_PLANE_LABEL, "effect": "NoSchedule"}]
        out.append(node)
    return out


def parse_nodes(doc: Any, source: str = "nodes") -> tuple[Node, ...]:
    """Nodes from ``{"nodes": [...]}`` (or a bare list, or a kind cluster configuration)."""
    if isinstance(doc, Mapping) and doc.get("kind") == "Cluster" and str(doc.get("apiVersion", "")).startswith(KIND_API):
        doc = {"nodes": _kind_nodes(doc)}
    items = doc.get("nodes") if isinstance(doc, Mapping) else doc
    if not isinstance(items, list) or not items:
        raise NodesError(f"{source}: expected a non-empty list under 'nodes'")
    errs = FieldErrors()
    nodes: list[Node] = []
    seen: set[str] = set()
    root = Reader({"nodes": items}, "", errs)
    for r in root.items("nodes"):
        name = r.string("name")
        if not name:
            errs.required(r.at("name"))
        elif name in seen:
            errs.add(r.at("name"), f'Duplicate value: "{name}"')
        seen.add(name)
        nodes.append(Node(name, r.string_map("labels"), tuple(read_taints(r, "taints")), r.resource_list("allocatable")))
    if errs:
        first = errs.items[0]
        raise NodesError(f"{source}: {first}")
    return tuple(nodes)


def load_nodes(path: Path | None) -> tuple[Node, ...]:
    if path is None:
        return DEFAULT_NODES
    if not path.exists() and "=" in str(path):
        return parse_node_spec(str(path))  # a topology spec rather than a file
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise NodesError(f"{path}: {exc}") from None
    return parse_nodes(doc, str(path))


def pod_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """What a pod takes from its node's allocatable: its effective requests, and one of ``pods``."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    info = read_pod_template(Reader({"spec": spec}, "", FieldErrors()))
    return {**dict(info.per_pod_requests), "pods": 1}


def insufficient(node: Node, wanted: Mapping[str, int], used: Mapping[str, int]) -> str:
    """The first resource ``node`` lacks room for ("" when all fit, or it has no allocatable)."""
    if not node.allocatable:
        return ""
    for resource, amount in sorted(wanted.items()):
        if amount > 0 and used.get(resource, 0) + amount > node.allocatable.get(resource, 0):
            return resource
    return ""


def unfit_reason(pod: Mapping[str, Any], node: Node) -> str:
    """Why ``pod`` cannot run on ``node`` ("" when it can), in the scheduler's words."""
    errs = FieldErrors()
    spec = Reader(pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}, "spec", errs)
    labels = node.all_labels
    for key, value in spec.string_map("nodeSelector").items():
        if labels.get(key) != value:
            return "didn't match Pod's node affinity/selector"
    terms = read_node_selector_terms(spec)
    if terms and not any(all(req.matches(labels) for req in term.match_expressions) for term in terms):
        return "didn't match Pod's node affinity/selector"
    tolerations = read_tolerations(spec, "tolerations")
    for taint in node.taints:
        if taint.effect in REPELLING_EFFECTS and not any(t.tolerates(taint) for t in tolerations):
            shown = f"{taint.key}: {taint.value}" if taint.value else taint.key
            return f"had untolerated taint {{{shown}}}"
    return ""


def pick_node(
    pod: Mapping[str, Any], nodes: tuple[Node, ...], load: Mapping[str, int],
    used: Mapping[str, Mapping[str, int]] | None = None,
) -> tuple[Node | None, str]:
    """The least-loaded node that fits the pod and has room for it (ties by name), or None
    and the scheduler's message."""
    wanted = pod_requests(pod) if any(n.allocatable for n in nodes) else {}
    reasons: dict[str, int] = {}
    short: dict[str, int] = {}
    fitting = []
    for n in nodes:
        why = unfit_reason(pod, n)
        lacking = "" if why else insufficient(n, wanted, (used or {}).get(n.name, {}))
        if why:
            reasons[f"node(s) {why}"] = reasons.get(f"node(s) {why}", 0) + 1
        elif lacking:
            short[f"Insufficient {lacking}"] = short.get(f"Insufficient {lacking}", 0) + 1
        else:
            fitting.append(n)
    if fitting:
        return min(fitting, key=lambda n: (load.get(n.name, 0), n.name)), ""
    detail = ", ".join(f"{count} {why}" for why, count in sorted({**reasons, **short}.items()))
    # kube-scheduler then tries preemption: evicting pods never fixes a selector or a taint, and
    # the simulated cluster has no lower-priority pods to evict for room.
    total = len(nodes)
    after = [f"{sum(short.values())} No preemption victims found for incoming pod"] if short else []
    after += [f"{sum(reasons.values())} Preemption is not helpful for scheduling"] if reasons else []
    return None, (f"0/{total} nodes are available: {detail}. preemption: 0/{total} nodes are available: "
                  f"{', '.join(after)}.")


def host_ip(nodes: tuple[Node, ...], name: str) -> str:
    """The node's InternalIP: 10.0.<1-based position by name>.1."""
    names = sorted(n.name for n in nodes)
    return f"10.0.{names.index(name) + 1 if name in names else 1}.1"


def node_object(node: Node, nodes: tuple[Node, ...], stamp: str) -> Object:
    """The ``v1`` Node a kubelet would register for ``node``, Ready since ``stamp``."""
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
             "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}
    spec: dict[str, Any] = {}
    if node.taints:
        spec["taints"] = [{"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect}
                          for t in node.taints]
    resources = {r: format_quantity(r, v) for r, v in sorted(node.allocatable.items())}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "labels": node.all_labels},
        "spec": spec,
        "status": {
            **({"capacity": resources, "allocatable": dict(resources)} if resources else {}),
            "conditions": [ready],
            "addresses": [{"type": "InternalIP", "address": host_ip(nodes, node.name)},
                          {"type": "Hostname", "address": node.name}],
            "nodeInfo": {"kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": "", "operatingSystem": "linux",
                         "architecture": "amd64", "osImage": "mkhub dev-cluster (simulated)",
                         "kernelVersion": "", "containerRuntimeVersion": "mkhub-sim://1",
                         "machineID": "", "systemUUID": "", "bootID": ""},
        },
    }


def _node_lease(node: Object, stamp: str) -> Object:
    """The kubelet's heartbeat Lease in kube-node-lease, owned by its Node (``kubectl describe node``)."""
    name = node["metadata"]["name"]
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": NODE_LEASE_NAMESPACE, "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}]},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": stamp.replace("Z", ".000000Z")}}


def sync_nodes(store: Store, nodes: tuple[Node, ...], stamp: str) -> None:
    """Make the stored Nodes those of ``nodes``: create, refresh labels/taints/allocatable, delete the rest."""
    stored = {o["metadata"]["name"]: o for o in store.list("Node", "")[0]}
    for node in nodes:
        want = node_object(node, nodes, stamp)
        current = stored.pop(node.name, None)
        try:
            if current is None:
                created = store.create({k: v for k, v in want.items() if k != "status"})
                store.update_status({**created, "status": want["status"]})
                with contextlib.suppress(AlreadyExists):
                    store.create(_node_lease(created, stamp))
            else:
                if (current["metadata"].get("labels") != want["metadata"]["labels"]
                        or current.get("spec") != want["spec"]):
                    meta = {**current["metadata"], "labels": want["metadata"]["labels"]}
                    current = store.update({**current, "metadata": meta, "spec": want["spec"]})
                status = current.get("status") or {}
                if status.get("allocatable") != want["status"].get("allocatable"):
                    resources = {k: want["status"][k] for k in ("capacity", "allocatable") if k in want["status"]}
                    kept = {k: v for k, v in status.items() if k not in ("capacity", "allocatable")}
                    store.update_status({**current, "status": {**kept, **resources}})
        except (AlreadyExists, Conflict, NotFound):
            continue  # written meanwhile: the next start corrects it
    for name in stored:
        with contextlib.suppress(NotFound):
            store.delete("Node", "", name)
        with contextlib.suppress(NotFound):
            store.delete("Lease", NODE_LEASE_NAMESPACE, name)


# --------------------------------------------------------------------------- topology specs


BLOCK_LABEL = "cloud.provider.com/topology-block"
RACK_LABEL = "cloud.provider.com/topology-rack"
GROUP_LABEL = "cloud.provider.com/node-group"
GPU = "nvidia.com/gpu"
MAX_NODES = 10_000  # a simulated cluster's nodes are all rewritten at each start
_LEVELS = ("blocks", "racks", "hosts")
_RESOURCES = {"cpu": "cpu", "memory": "memory", "pods": "pods", "gpu": GPU}
_DEFAULTS = {"cpu": "8", "memory": "64Gi", "pods": "110", "gpu": "0", "group": "tas-group"}
KEYS = (*_LEVELS, *_RESOURCES, "group")


def _parse(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep or not key:
            raise NodesError(f"--nodes {text}: expected KEY=VALUE pairs separated by commas, got {part.strip()!r}")
        if key not in KEYS:
            raise NodesError(f"--nodes {text}: unknown key {key!r} (known: {', '.join(KEYS)})")
        if key in out:
            raise NodesError(f"--nodes {text}: {key} given twice")
        out[key] = value.strip()
    return out


def parse_node_spec(text: str) -> tuple[Node, ...]:
    """The Nodes of a topology spec (``--nodes blocks=2,racks=4,hosts=8,gpu=8``); :class:`NodesError`
    names the key and why for a bad one.

    ``blocks`` blocks of ``racks`` racks of ``hosts`` hosts (a level left out is not there:
    ``racks=2,hosts=4`` is 8 hosts in 2 racks), each host a Node labelled as Kueue's TAS examples
    label them: ``cloud.provider.com/topology-block`` (``b1``...), ``cloud.provider.com/topology-rack``
    (``b1-r1``..., unique across blocks), ``kubernetes.io/hostname`` (the name, ``b1-r1-h1``...), and
    ``cloud.provider.com/node-group: tas-group``, what the examples' ResourceFlavor selects
    (``group=NAME`` another, ``group=`` none); allocatable ``cpu`` (8), ``memory`` (64Gi), ``pods``
    (110) and ``gpu`` (0) ``nvidia.com/gpu``.
    """
    given = _parse(text)
    counts: dict[str, int] = {}
    for level in _LEVELS:
        if level not in given:
            continue
        value = given[level]
        if not value.isdigit() or int(value) < 1:
            raise NodesError(f"--nodes {text}: {level} must be a positive integer, got {value!r}")
        counts[level] = int(value)
    if "hosts" not in counts:
        raise NodesError(f"--nodes {text}: hosts is required (hosts per rack, or in all)")
    total = counts.get("blocks", 1) * counts.get("racks", 1) * counts["hosts"]
    if total > MAX_NODES:
        raise NodesError(f"--nodes {text}: {total} nodes is more than the {MAX_NODES} a dev-cluster simulates")
    allocatable: dict[str, int] = {}
    for key, resource in _RESOURCES.items():
        value = given.get(key, _DEFAULTS[key])
        try:
            amount = resource_value(resource, value)
        except QuantityError as exc:
            raise NodesError(f"--nodes {text}: {key}: {exc}") from None
        if amount < 0:
            raise NodesError(f"--nodes {text}: {key} must not be negative, got {value!r}")
        if amount or resource != GPU:
            allocatable[resource] = amount
    group = given.get("group", _DEFAULTS["group"])
    nodes = []
    for b in range(1, counts.get("blocks", 1) + 1):
        for r in range(1, counts.get("racks", 1) + 1):
            for h in range(1, counts["hosts"] + 1):
                parts, labels = [], {}
                if "blocks" in counts:
                    parts.append(f"b{b}")
                    labels[BLOCK_LABEL] = "-".join(parts)
                if "racks" in counts:
                    parts.append(f"r{r}")
                    labels[RACK_LABEL] = "-".join(parts)
                name = "-".join([*parts, f"h{h}"])
                if group:
                    labels[GROUP_LABEL] = group
                labels[HOSTNAME_LABEL] = name
                nodes.append(Node(name, labels, (), dict(allocatable)))
    return tuple(nodes)
