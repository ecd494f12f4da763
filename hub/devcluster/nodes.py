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

    @property
    def all_labels(self) -> dict[str, str]:
        """The labels a kubelet registers (hostname, os, arch) plus the configured ones."""
        return {HOSTNAME_LABEL: self.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", **self.labels}


DEFAULT_NODES = (Node("dev-node-1"),)


class NodesError(ValueError):
    """A malformed node list; the message names the file, the field and why."""


def parse_nodes(doc: Any, source: str = "nodes") -> tuple[Node, ...]:
    """Nodes from ``{"nodes": [...]}`` (or a bare list)."""
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
        nodes.append(Node(name, r.string_map("labels"), tuple(read_taints(r, "taints"))))
    if errs:
        first = errs.items[0]
        raise NodesError(f"{source}: {first}")
    return tuple(nodes)


def load_nodes(path: Path | None) -> tuple[Node, ...]:
    if path is None:
        return DEFAULT_NODES
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise NodesError(f"{path}: {exc}") from None
    return parse_nodes(doc, str(path))


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


def pick_node(pod: Mapping[str, Any], nodes: tuple[Node, ...], load: Mapping[str, int]) -> tuple[Node | None, str]:
    """The least-loaded fitting node (ties by name), or None and the scheduler's message."""
    fitting = [n for n in nodes if not unfit_reason(pod, n)]
    if fitting:
        return min(fitting, key=lambda n: (load.get(n.name, 0), n.name)), ""
    reasons: dict[str, int] = {}
    for n in nodes:
        why = unfit_reason(pod, n)
        reasons[why] = reasons.get(why, 0) + 1
    detail = ", ".join(f"{count} node(s) {why}" for why, count in sorted(reasons.items()))
    # kube-scheduler then tries preemption: evicting pods never fixes a selector or a taint.
    total = len(nodes)
    return None, (f"0/{total} nodes are available: {detail}. preemption: 0/{total} nodes are available: "
                  f"{total} Preemption is not helpful for scheduling.")


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
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "labels": node.all_labels},
        "spec": spec,
        "status": {
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
    """Make the stored Nodes those of ``nodes``: create, refresh labels/taints, delete the rest."""
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
            elif (current["metadata"].get("labels") != want["metadata"]["labels"]
                  or current.get("spec") != want["spec"]):
                meta = {**current["metadata"], "labels": want["metadata"]["labels"]}
                store.update({**current, "metadata": meta, "spec": want["spec"]})
        except (AlreadyExists, Conflict, NotFound):
            continue  # written meanwhile: the next start corrects it
    for name in stored:
        with contextlib.suppress(NotFound):
            store.delete("Node", "", name)
        with contextlib.suppress(NotFound):
            store.delete("Lease", NODE_LEASE_NAMESPACE, name)
