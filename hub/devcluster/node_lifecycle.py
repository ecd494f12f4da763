"""Nodes changed through the API, as a cluster's control plane follows them: ``kubectl delete node``,
``kubectl taint node``, ``kubectl cordon`` and a status patch that makes a node not Ready.

- **Scheduler**: the kubelet's nodes are the stored Nodes (their labels, taints, allocatable); a node
  not Ready carries ``node.kubernetes.io/not-ready`` (the node lifecycle controller's taints,
  NoSchedule and NoExecute) and a cordoned one ``node.kubernetes.io/unschedulable:NoSchedule``
  (TaintNodesByCondition), so no new pod is bound there unless it tolerates them.
- **PodGC**: the pods bound to a deleted node are deleted (kube-controller-manager's orphaned pods).
- **Taint manager**: the pods of a node with a ``NoExecute`` taint they do not tolerate are deleted.
  Unlike a cluster, no pod here carries the DefaultTolerationSeconds admission plugin's 300-second
  tolerations of ``not-ready`` / ``unreachable``: a not-Ready node's pods go at once.

A deleted pod's Job makes a new one, as on a cluster.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable

from hub.api.errors import FieldErrors, ValidationError
from hub.api.meta import Taint, Toleration, read_tolerations
from hub.api.reader import Reader
from hub.api.registry import parse_object
from hub.api.tas_kinds import Node as ApiNode
from hub.store.interface import EventType, NotFound, Object, Store, WatchEvent

from .nodes import Node

log = logging.getLogger(__name__)

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def scheduling_node(obj: Object) -> Node | None:
    """The scheduler's view of a stored Node (None: one that does not parse, logged)."""
    try:
        parsed = parse_object(obj)
    except ValidationError as exc:
        log.warning("dev-cluster: ignoring Node %s: %s", obj["metadata"].get("name"), exc)
        return None
    assert isinstance(parsed, ApiNode)
    taints = list(parsed.taints)
    if not parsed.ready:
        taints += [Taint(NOT_READY_TAINT, "", "NoSchedule"), Taint(NOT_READY_TAINT, "", "NoExecute")]
    if parsed.unschedulable:
        taints.append(Taint(UNSCHEDULABLE_TAINT, "", "NoSchedule"))
    return Node(parsed.meta.name, dict(parsed.meta.labels), tuple(taints), dict(parsed.allocatable))


def _tolerations(pod: Object) -> list[Toleration]:
    spec = pod.get("spec")
    return read_tolerations(Reader(spec if isinstance(spec, dict) else {}, "spec", FieldErrors()), "tolerations")


def evicted_by(node: Node | None, pods: Iterable[Object]) -> list[Object]:
    """The live pods bound to ``node`` that go: all of them when it is gone (PodGC), else those not
    tolerating one of its NoExecute taints (the taint manager)."""
    out = []
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or pod["metadata"].get("deletionTimestamp"):
            continue
        if node is None:
            out.append(pod)
            continue
        tolerations = _tolerations(pod)
        if any(t.effect == "NoExecute" and not any(tol.tolerates(t) for tol in tolerations) for t in node.taints):
            out.append(pod)
    return out


class NodeLifecycle:
    """Follows Node events into the kubelet's nodes; deletes the pods a node's change evicts."""

    def __init__(self, store: Store, nodes: tuple[Node, ...]) -> None:
        self.store = store
        self.configured = nodes  # --nodes: what the dev-cluster registers at each start
        self.nodes = {n.name: n for n in nodes}

    def load(self) -> tuple[Node, ...]:
        """The stored Nodes, once :func:`~.nodes.sync_nodes` wrote ``--nodes`` (re-registered at a restart, as
        kubelets re-register theirs; a status patched not Ready stays)."""
        for obj in self.store.list("Node")[0]:
            node = scheduling_node(obj)
            if node is not None:
                self.nodes[node.name] = node
        return tuple(self.nodes[n] for n in sorted(self.nodes))

    def handle(self, event: WatchEvent) -> tuple[Node, ...] | None:
        """A Node event: the kubelet's new nodes (None: unchanged)."""
        name = str(event.object["metadata"].get("name") or "")
        node = None if event.type == EventType.DELETED else scheduling_node(event.object)
        if node is None and event.type != EventType.DELETED:
            return None
        if self.nodes.get(name) == node:
            return None
        if node is None:
            self.nodes.pop(name, None)
        else:
            self.nodes[name] = node
        bound = [p for p in self.store.list("Pod")[0] if (p.get("spec") or {}).get("nodeName") == name]
        for pod in evicted_by(node, bound):
            meta = pod["metadata"]
            log.info("dev-cluster: deleting pod %s/%s of node %s (%s)", meta.get("namespace"), meta["name"], name,
                     "deleted" if node is None else "NoExecute taint")
            with contextlib.suppress(NotFound):
                self.store.delete("Pod", meta.get("namespace", ""), meta["name"])
        return tuple(self.nodes[n] for n in sorted(self.nodes))

