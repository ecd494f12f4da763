"""OpenAPI v3 schemas of the Kueue kinds mkhub stores without acting on (:mod:`hub.api.passive`).

Kept apart from :data:`.kueue.SCHEMAS` because they are not in mkhub's generated CRDs;
the Kubernetes API still needs them: kubectl validates a file by finding each object's
kind in the OpenAPI v3 document of its group-version, and a kind missing there sends it
to the OpenAPI v2 fallback, which fails the whole file. Fields and limits follow
Kueue's CRDs (``kueue.x-k8s.io_topologies.yaml``, ``..._provisioningrequestconfigs.yaml``).
"""

from __future__ import annotations

from collections.abc import Callable

from .dsl import DNS_SUBDOMAIN, Schema, array, integer, obj, string, string_map
from .kueue import top

# A qualified label key (an optional DNS-subdomain prefix and a name), as Kueue's markers spell it.
LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
POD_SET_MERGE_POLICIES = ("IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements")


def topology() -> Schema:
    level = obj(
        {"nodeLabel": string("Name of the node label of this topology level.", pattern=LABEL_KEY,
                             max_length=316, min_length=1)},
        "One level of the hierarchy.", required=("nodeLabel",),
    )
    spec = obj(
        {"levels": array(level, "Levels of the topology, from the widest to the narrowest.",
                         max_items=16, min_items=1)},
        "The topology's levels.", required=("levels",),
    )
    return top("Topology is the Schema for the topology API.", {"spec": spec})


def provisioning_request_config() -> Schema:
    selector = obj(
        {
            "key": string("Node label key the selector sets.", pattern=LABEL_KEY, max_length=317, min_length=1),
            "valueFromProvisioningClassDetail": string(
                "Key of the ProvisioningRequest's class details the value is read from.",
                max_length=32768, min_length=1),
        },
        required=("key", "valueFromProvisioningClassDetail"),
    )
    retry = obj(
        {
            "backoffLimitCount": integer("Retries before the admission check is Rejected.", default=3),
            "backoffBaseSeconds": integer("Base of the exponential backoff between retries.", default=60),
            "backoffMaxSeconds": integer("Longest backoff between retries.", default=1800),
        },
        "How a failed or expired ProvisioningRequest is retried.",
        default={"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800},
    )
    spec = obj(
        {
            "managedResources": array(string(), "Resources the cluster autoscaler manages.", max_items=100,
                                      list_type="set"),
            "parameters": string_map("Parameters passed to the ProvisioningRequest.",
                                     values={"type": "string", "maxLength": 255}, max_properties=100),
            "podSetMergePolicy": string("How pod sets are merged before being sent.", enum=POD_SET_MERGE_POLICIES),
            "podSetUpdates": obj(
                {"nodeSelector": array(selector, "Node selectors added to the admitted pod sets.", max_items=8,
                                       map_keys=("key",))},
                "Updates of the workload's pod sets once provisioned.",
            ),
            "provisioningClassName": string("The ProvisioningRequest's class.", pattern=DNS_SUBDOMAIN,
                                            max_length=253, min_length=1),
            "retryStrategy": retry,
        },
        "The ProvisioningRequests made for a workload.", required=("provisioningClassName",),
    )
    return top("ProvisioningRequestConfig is the Schema for the provisioningrequestconfig API.", {"spec": spec})


PASSIVE_SCHEMAS: dict[str, Callable[[], Schema]] = {
    "Topology": topology,
    "ProvisioningRequestConfig": provisioning_request_config,
}
"""The same schema in every served version (v1beta1 and v1beta2 agree on these kinds)."""
