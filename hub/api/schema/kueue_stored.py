"""Schemas of Kueue's fields that mkhub serves and keeps as written without acting on them
(hub/api/kueue_fields.txt says why, field by field): the
topology-aware-scheduling parts of a Workload, and v1beta1's deprecated status fields.

Served so that Kueue's manifests (and kubectl's strict field validation) find every
field of Kueue's types; the constraints follow Kueue's validation markers.
"""

from __future__ import annotations

from .core import resource_list, taint
from .dsl import Schema, array, boolean, integer, name_ref, obj, string, string_map, time

NOT_ACTED = "Stored as written; mkhub does not act on it."
CONCURRENT_MODES = ("TryPreferredFlavors", "RetainFirstAdmission")


def concurrent_admission_policy() -> Schema:
    """ClusterQueue spec.concurrentAdmissionPolicy (v1beta2 only)."""
    constraints = obj(
        {"lastAcceptableFlavorName": name_ref("Least preferred flavor a workload may migrate to.")},
        "Limits on the migration to more preferred flavors.",
    )
    migration = obj(
        {
            "constraints": constraints,
            "mode": string("Whether an admitted workload keeps trying more preferred flavors.",
                           enum=CONCURRENT_MODES, max_length=253),
        },
        "How workloads move to more preferred flavors once admitted.",
        required=("mode",),
    )
    return obj({"migration": migration},
               "Concurrent admission: a workload pursues several flavors at once, through one variant per flavor "
               "(with the ConcurrentAdmission feature gate).",
               required=("migration",))


def topology_request(*, v1beta2: bool) -> Schema:
    """Workload spec.podSets[].topologyRequest."""
    fields: dict[str, Schema] = {
        "podIndexLabel": string("Label holding a pod's index within its pod set.", max_length=317),
        "podSetGroupName": string("Pod sets with the same group name are placed together.", max_length=256),
        "podSetSliceRequiredTopology": string("Level each slice of the pod set must fit in.", max_length=63),
        "podSetSliceSize": integer("Pods per slice.", minimum=1),
        "preferred": string("Level the pod set should fit in, if it can.", max_length=63),
        "required": string("Level the pod set must fit in.", max_length=63),
        "subGroupCount": integer("Number of sub-groups of the pod set.", minimum=0),
        "subGroupIndexLabel": string("Label holding a pod's sub-group index.", max_length=317),
        "unconstrained": boolean("Place the pods anywhere in the topology."),
    }
    if v1beta2:
        constraint = obj(
            {"size": integer("Pods per slice.", minimum=1),
             "topology": string("Level the slice must fit in.", max_length=63, min_length=1)},
            required=("size", "topology"),
        )
        fields["podsetSliceRequiredTopologyConstraints"] = array(
            constraint, "Slices of the pod set, each required to fit in a level.", max_items=3)
    return obj(fields, f"Topology-aware scheduling request of the pod set. {NOT_ACTED}")


def topology_assignment(*, v1beta2: bool) -> Schema:
    """Workload status.admission.podSetAssignments[].topologyAssignment: v1beta2's compressed
    slices, v1beta1's list of domains."""
    levels = array(string(max_length=317), "Node label keys of the levels, highest first.",
                   max_items=16, min_items=1)
    if not v1beta2:
        domain = obj(
            {"count": integer("Pods in the domain.", minimum=1),
             "values": array(string(), "The domain's value at each level.", max_items=16, min_items=1)},
            required=("count", "values"),
        )
        return obj({"domains": array(domain, "Domains the pods are placed in."), "levels": levels},
                   f"Topology domains assigned to the pod set's pods. {NOT_ACTED}", required=("domains", "levels"))
    individual = obj(
        {"prefix": string("Common prefix of the values.", max_length=63),
         "roots": array(string(max_length=63), "Values without prefix and suffix, one per domain.",
                        max_items=100000, min_items=1),
         "suffix": string("Common suffix of the values.", max_length=63)},
        "Values per domain.",
        required=("roots",),
    )
    values = obj({"individual": individual, "universal": string("One value for every domain.", max_length=63)})
    counts = obj(
        {"individual": array(integer(minimum=1), "Pods in each domain.", max_items=100000, min_items=1),
         "universal": integer("Pods in every domain.", minimum=1)},
        "Pods per domain.",
    )
    piece = obj(
        {"domainCount": integer("Domains of the slice.", minimum=1),
         "podCounts": counts,
         "valuesPerLevel": array(values, "The domains' values at each level.", max_items=16, min_items=1)},
        required=("domainCount", "podCounts", "valuesPerLevel"),
    )
    return obj({"levels": levels, "slices": array(piece, "Slices of domains.", max_items=1000)},
               f"Topology domains assigned to the pod set's pods. {NOT_ACTED}", required=("levels", "slices"))


def delayed_topology_request() -> Schema:
    return string(f"State of a delayed topology request. {NOT_ACTED}", enum=("Pending", "Ready"), max_length=7)


def unhealthy_nodes() -> Schema:
    return array(obj({"name": string("Name of the node.", max_length=63)}, required=("name",)),
                 "Assigned nodes that failed (topology-aware scheduling): the next scheduling cycle replaces them.",
                 max_items=8, map_keys=("name",))


def admission_fair_sharing_status() -> Schema:
    """v1beta1's status.fairSharing.admissionFairSharingStatus of ClusterQueue and Cohort."""
    return obj(
        {"consumedResources": resource_list("Decayed resource consumption."),
         "lastUpdate": time("When consumedResources was last updated.")},
        f"Admission fair sharing state. {NOT_ACTED}",
        required=("consumedResources", "lastUpdate"),
    )


def pending_workloads_status() -> Schema:
    """v1beta1 ClusterQueue status.pendingWorkloadsStatus (deprecated in Kueue since v0.14)."""
    head = obj({"name": string("Name of the workload."), "namespace": string("Namespace of the workload.")},
               required=("name", "namespace"))
    return obj(
        {"clusterQueuePendingWorkload": array(head, "Head of the queue."),
         "lastChangeTime": time("When the list last changed.")},
        "Deprecated by Kueue (no longer written since v0.14); mkhub serves the visibility API instead.",
        required=("lastChangeTime",),
    )


def local_queue_flavors() -> Schema:
    """v1beta1 LocalQueue status.flavors (deprecated by Kueue, gone in v1beta2)."""
    topology = obj(
        {"levels": array(string(), "Node label keys of the levels.", max_items=16, min_items=1),
         "name": name_ref("Name of the Topology.")},
        required=("levels", "name"),
    )
    flavor = obj(
        {
            "name": name_ref("Name of the flavor."),
            "nodeLabels": string_map("Labels of the flavor's nodes.", max_properties=8, atomic=True),
            "nodeTaints": array(taint(), "Taints of the flavor's nodes.", max_items=8),
            "resources": array(string(), "Resources the flavor gives quota for.", max_items=64, list_type="set"),
            "topology": topology,
        },
        required=("name",),
    )
    return array(flavor, "Deprecated by Kueue (removed in v1beta2); not written by mkhub.",
                 max_items=64, map_keys=("name",))
