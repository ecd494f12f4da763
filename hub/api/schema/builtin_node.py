"""OpenAPI schema of core/v1 Node, under Kubernetes' definition names.

The API serves Nodes read-only (the dev-cluster writes them from ``--nodes``); the schema
is in the OpenAPI documents so that ``kubectl explain node`` works and a file holding a
Node is validated against the v3 document (a kind missing there sends kubectl to the
v2 fallback, which fails the whole file). Written from Kubernetes' API reference.
"""

from __future__ import annotations

from .builtin import CORE, QUANTITY, Schema, _bool, _kind, _list, _list_kind, _map, _obj, _s, _time, ref


def node_definitions() -> dict[str, Schema]:
    resources = _map("Quantities by resource name.", ref(QUANTITY))
    return {
        f"{CORE}.Taint": _obj("A node's taint: pods that do not tolerate it are repelled.", {
            "effect": _s("NoSchedule, PreferNoSchedule or NoExecute."),
            "key": _s("The taint key."),
            "timeAdded": _time("When a NoExecute taint was added."),
            "value": _s("The taint value."),
        }, ("key", "effect")),
        f"{CORE}.NodeSpec": _obj("NodeSpec describes the attributes a node is created with.", {
            "podCIDR": _s("The pod IP range of the node."),
            "podCIDRs": _list({"type": "string", "default": ""}, "The pod IP ranges of the node.",
                              list_type="set"),
            "providerID": _s("The node's ID in the cloud provider."),
            "taints": _list(ref(f"{CORE}.Taint"), "The node's taints.", list_type="atomic"),
            "unschedulable": _bool("Whether new pods are kept off the node."),
        }),
        f"{CORE}.NodeCondition": _obj("The node's condition of one type.", {
            "lastHeartbeatTime": _time("Last time the condition was probed."),
            "lastTransitionTime": _time("Last time the condition changed status."),
            "message": _s("Details of the last transition."),
            "reason": _s("Reason of the last transition."),
            "status": _s("True, False or Unknown."),
            "type": _s("Ready, MemoryPressure, DiskPressure, PIDPressure, NetworkUnavailable."),
        }, ("type", "status")),
        f"{CORE}.NodeAddress": _obj("An address of the node.", {
            "address": _s("The address."), "type": _s("Hostname, InternalIP, ExternalIP, ..."),
        }, ("type", "address")),
        f"{CORE}.NodeSystemInfo": _obj("Facts the kubelet reports about the node.", {
            name: _s(f"The node's {name}.") for name in (
                "architecture", "bootID", "containerRuntimeVersion", "kernelVersion", "kubeProxyVersion",
                "kubeletVersion", "machineID", "operatingSystem", "osImage", "systemUUID")
        }),
        f"{CORE}.NodeStatus": _obj("The node's most recently observed status.", {
            "addresses": _list(ref(f"{CORE}.NodeAddress"), "The node's addresses.", merge_key="type",
                               list_type="map", keys=("type",)),
            "allocatable": dict(resources, description="Resources available to pods."),
            "capacity": dict(resources, description="The node's total resources."),
            "conditions": _list(ref(f"{CORE}.NodeCondition"), "The node's conditions.", merge_key="type",
                                list_type="map", keys=("type",)),
            "nodeInfo": ref(f"{CORE}.NodeSystemInfo", "Facts about the node."),
            "phase": _s("Deprecated: the node's lifecycle phase."),
        }),
        f"{CORE}.Node": _kind("", "v1", "Node", "Node is a worker machine in Kubernetes.", {
            "spec": ref(f"{CORE}.NodeSpec", "The node's attributes."),
            "status": ref(f"{CORE}.NodeStatus", "The node's observed status."),
        }),
        f"{CORE}.NodeList": _list_kind("", "v1", "Node", f"{CORE}.Node"),
    }
