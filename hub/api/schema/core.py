"""Schemas shared by Kueue's kinds and the built-in kinds: conditions, selectors,
taints, tolerations and a compact pod template.

The pod template names the fields mkhub reads (containers and their resources,
node selection, priority) and keeps every other field as written
(``x-kubernetes-preserve-unknown-fields``), so nothing a user sets is pruned.
"""

from __future__ import annotations

from .dsl import (
    DNS_SUBDOMAIN,
    Schema,
    array,
    boolean,
    integer,
    obj,
    open_obj,
    quantity,
    string,
    string_map,
    time,
)

QUALIFIED_NAME = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")


def condition() -> Schema:
    """metav1.Condition, with the API server's own constraints."""
    return obj(
        {
            "lastTransitionTime": time("When the condition last changed from one status to another."),
            "message": string("A human-readable message about the transition.", max_length=32768),
            "observedGeneration": integer(
                "The .metadata.generation the condition was set for.", fmt="int64", minimum=0
            ),
            "reason": string(
                "A CamelCase, machine-readable reason for the last transition.",
                pattern=REASON, max_length=1024, min_length=1,
            ),
            "status": string("Status of the condition.", enum=("True", "False", "Unknown")),
            "type": string("Type of the condition, in CamelCase.", pattern=QUALIFIED_NAME, max_length=316),
        },
        "Condition contains details for one aspect of the current state of this object.",
        required=("lastTransitionTime", "message", "reason", "status", "type"),
    )


def conditions(description: str) -> Schema:
    return array(condition(), description, max_items=16, map_keys=("type",))


def label_selector(description: str) -> Schema:
    requirement = obj(
        {
            "key": string("The label key the selector applies to."),
            "operator": string("How the key relates to the values: In, NotIn, Exists or DoesNotExist."),
            "values": array(string(), "Values for In and NotIn; empty for Exists and DoesNotExist."),
        },
        "A selector requirement: a key, an operator and values.",
        required=("key", "operator"),
    )
    return obj(
        {
            "matchExpressions": array(requirement, "Label selector requirements, ANDed."),
            "matchLabels": string_map("Labels that must all be present with these values."),
        },
        description,
        map_type="atomic",
    )


def taint() -> Schema:
    return obj(
        {
            "effect": string("Effect of the taint on pods that do not tolerate it.", enum=TAINT_EFFECTS),
            "key": string("The taint key."),
            "timeAdded": time("When the taint was added (NoExecute taints only)."),
            "value": string("The taint value."),
        },
        "A taint: nodes of this flavor repel pods that do not tolerate it.",
        required=("effect", "key"),
    )


def toleration() -> Schema:
    return obj(
        {
            "effect": string("Taint effect to match; empty matches every effect."),
            "key": string("Taint key to match; empty with operator Exists matches every taint."),
            "operator": string("Equal (the default) or Exists.", enum=TOLERATION_OPERATORS),
            "tolerationSeconds": integer("How long a NoExecute taint is tolerated.", fmt="int64"),
            "value": string("Taint value to match with operator Equal."),
        },
        "A toleration: the pod tolerates taints matching key, value and effect.",
    )


def resource_list(description: str) -> Schema:
    return string_map(description, values=quantity())


def resource_requirements(description: str) -> Schema:
    return obj(
        {
            "claims": array(
                obj({"name": string(), "request": string()}, required=("name",)),
                "Dynamic resource claims used by the container.", map_keys=("name",),
            ),
            "limits": resource_list("The maximum amount of compute resources allowed."),
            "requests": resource_list("The minimum amount of compute resources required."),
        },
        description,
    )


def _named(description: str) -> Schema:
    """An item of a list keyed by name whose other fields are kept as written."""
    out = open_obj(description, {"name": string("Name of the item.")})
    out["required"] = ["name"]
    return out


def container(description: str) -> Schema:
    out = open_obj(
        description,
        {
            "args": array(string(), "Arguments to the entrypoint."),
            "command": array(string(), "Entrypoint array."),
            "env": array(_named("An environment variable."), "Environment variables.", map_keys=("name",)),
            "image": string("Container image name."),
            "name": string("Name of the container, a DNS label unique within the pod."),
            "resources": resource_requirements("Compute resources required by this container."),
            "restartPolicy": string("Always makes an init container a sidecar."),
        },
    )
    out["required"] = ["name"]
    return out


def object_meta_template() -> Schema:
    """The metadata of an embedded template (as controller-gen writes it)."""
    return obj(
        {
            "annotations": string_map(),
            "finalizers": array(string()),
            "labels": string_map(),
            "name": string(),
            "namespace": string(),
        },
        "Standard object's metadata.",
    )


def pod_spec(description: str) -> Schema:
    out = open_obj(
        description,
        {
            "activeDeadlineSeconds": integer("Seconds a pod may run before it is failed.", fmt="int64"),
            "affinity": open_obj("Scheduling constraints (node, pod and anti-affinity)."),
            "containers": array(container("A container of the pod."),
                                "Containers of the pod; at least one.", map_keys=("name",)),
            "initContainers": array(container("An init container of the pod."),
                                    "Containers run in order before the main containers.", map_keys=("name",)),
            "nodeName": string("The node the pod is bound to."),
            "nodeSelector": string_map("Labels a node must have for the pod to fit it.", atomic=True),
            "overhead": resource_list("Resources the pod's runtime takes on top of its containers."),
            "priority": integer("The pod's priority value."),
            "priorityClassName": string("The pod's PriorityClass."),
            "resources": resource_requirements("Pod-level resource requirements."),
            "restartPolicy": string("Always, OnFailure or Never.", enum=("Always", "OnFailure", "Never")),
            "schedulingGates": array(obj({"name": string()}, required=("name",)),
                                     "Gates that keep the pod from being scheduled.", map_keys=("name",)),
            "serviceAccountName": string("The service account the pod runs as."),
            "terminationGracePeriodSeconds": integer("Grace period for termination.", fmt="int64"),
            "tolerations": array(toleration(), "The pod's tolerations."),
            "volumes": array(_named("A volume."), "Volumes the containers can mount.", map_keys=("name",)),
        },
    )
    out["required"] = ["containers"]
    return out


def pod_template(description: str) -> Schema:
    return obj(
        {
            "metadata": object_meta_template(),
            "spec": pod_spec("Specification of the desired behavior of the pod."),
        },
        description,
    )


def dns_name(description: str) -> Schema:
    return string(description, pattern=DNS_SUBDOMAIN, max_length=253)


__all__ = [
    "boolean",
    "condition",
    "conditions",
    "container",
    "dns_name",
    "label_selector",
    "pod_spec",
    "pod_template",
    "resource_list",
    "taint",
    "toleration",
]
