"""OpenAPI v3 schemas of Kueue's kinds, v1beta2 (the internal and storage form).

One function per kind returns the whole object's schema (apiVersion, kind,
metadata, spec, status). Enumerations come from the typed model in
:mod:`hub.api.queues`, :mod:`hub.api.workload` and :mod:`hub.api.others`; limits
follow :mod:`hub.api.validation`. :mod:`.versions` derives v1beta1 from these.
"""

from __future__ import annotations

from ..others import MULTIKUEUE_CONTROLLER
from ..queues import (
    BEST_EFFORT_FIFO,
    BORROW_WITHIN_COHORT_POLICIES,
    FUNGIBILITY_PREFERENCES,
    MAY_STOP_SEARCH,
    NEVER,
    QUEUEING_STRATEGIES,
    RECLAIM_POLICIES,
    STOP_NONE,
    STOP_POLICIES,
    TRY_NEXT_FLAVOR,
    WITHIN_CQ_POLICIES,
)
from ..queues import FUNGIBILITY_POLICIES as FUNGIBILITY
from ..validation import MAX_POD_SETS
from ..workload import (
    CHECK_STATES,
    DEFAULT_POD_SET_NAME,
    POD_PRIORITY_CLASS_GROUP,
    POD_PRIORITY_CLASS_KIND,
    WORKLOAD_PRIORITY_CLASS_GROUP,
    WORKLOAD_PRIORITY_CLASS_KIND,
)
from .core import conditions, label_selector, pod_template, resource_list, taint, toleration
from .dsl import (
    DNS_LABEL,
    DNS_SUBDOMAIN,
    Schema,
    array,
    boolean,
    integer,
    name_ref,
    obj,
    quantity,
    string,
    string_map,
    time,
)
from .kueue_stored import (
    concurrent_admission_policy,
    delayed_topology_request,
    topology_assignment,
    topology_request,
    unhealthy_nodes,
)

API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object. "
    "Servers convert recognized schemas to the latest internal value."
)
KIND_DOC = "Kind is a string value representing the REST resource this object represents. In CamelCase."


def top(description: str, properties: dict[str, Schema]) -> Schema:
    """An object's root schema: apiVersion, kind and metadata, then its own fields."""
    return obj(
        {
            "apiVersion": string(API_VERSION_DOC),
            "kind": string(KIND_DOC),
            "metadata": {"type": "object"},
            **properties,
        },
        description,
    )


def fair_sharing(owner: str) -> Schema:
    return obj(
        {
            "weight": quantity(
                f"Share of the cohort's unused quota this {owner} gets relative to its siblings; "
                "0 makes it the first to be preempted.",
                default=1,
            )
        },
        f"Fair sharing properties of the {owner}.",
    )


def _resource_quota() -> Schema:
    return obj(
        {
            "borrowingLimit": quantity("Most of this resource that may be borrowed from the cohort; unset is unlimited."),
            "lendingLimit": quantity("Most of the unused nominal quota that may be lent to the cohort; unset is all."),
            "name": string("Name of the resource, as listed in coveredResources."),
            "nominalQuota": quantity("Quantity of this resource available to admitted workloads."),
        },
        "Quota of one resource in one flavor.",
        required=("name", "nominalQuota"),
    )


def resource_groups(owner: str) -> Schema:
    flavor = obj(
        {
            "name": name_ref("Name of a ResourceFlavor."),
            "resources": array(_resource_quota(), "Quotas of the covered resources, in the same order.",
                               max_items=64, min_items=1, map_keys=("name",)),
        },
        "Quotas of one flavor for the group's covered resources.",
        required=("name", "resources"),
    )
    group = obj(
        {
            "coveredResources": array(string(), "Resources the group's flavors give quota for.",
                                      max_items=64, min_items=1),
            "flavors": array(flavor, "Flavors in the order they are tried.",
                             max_items=64, min_items=1, map_keys=("name",)),
        },
        "Resources that share the same list of flavors.",
        required=("coveredResources", "flavors"),
    )
    return array(group, f"The quota of the {owner}, as groups of resources sharing flavors.", max_items=16)


def _usage(description: str, *, borrowed: bool) -> Schema:
    fields: dict[str, Schema] = {
        "name": string("Name of the resource."),
        "total": quantity("Total quantity of the resource in use or reserved."),
    }
    if borrowed:
        fields["borrowed"] = quantity("Quantity above the nominal quota, borrowed from the cohort.")
    resource = obj(fields, required=("name",))
    flavor = obj(
        {
            "name": name_ref("Name of the flavor."),
            "resources": array(resource, "Usage per resource.", max_items=64, map_keys=("name",)),
        },
        required=("name", "resources"),
    )
    return array(flavor, description, max_items=64, map_keys=("name",))


def _fair_sharing_status(*, admission: bool = False) -> Schema:
    fields: dict[str, Schema] = {
        "weightedShare": integer("Usage above nominal quota, divided by the weight.", fmt="int64")
    }
    if admission:
        fields["admissionFairSharingStatus"] = obj(
            {
                "consumedResources": resource_list("Decayed resource consumption of the queue's workloads."),
                "lastUpdate": time("When consumedResources was last updated."),
            },
            "Admission fair sharing state of the queue.",
            required=("consumedResources", "lastUpdate"),
        )
    return obj(fields, "Fair sharing status.", required=("weightedShare",))


def resource_flavor() -> Schema:
    spec = obj(
        {
            "nodeLabels": string_map("Labels the nodes of this flavor carry; added to admitted pods' node selector.",
                                     max_properties=8, atomic=True),
            "nodeTaints": array(taint(), "Taints the nodes of this flavor carry.", max_items=8),
            "tolerations": array(toleration(), "Tolerations added to pods admitted with this flavor.",
                                 max_items=8),
            "topologyName": name_ref("Name of the Topology of this flavor's nodes."),
        },
        "The flavor's node labels, taints, tolerations and topology.",
    )
    return top("ResourceFlavor is the Schema for the resourceflavors API.", {"spec": spec})


def cluster_queue() -> Schema:
    check_rule = obj(
        {
            "name": string("Name of the AdmissionCheck.", max_length=316, min_length=1),
            "onFlavors": array(name_ref(), "Flavors the check applies to; empty means all.",
                               max_items=64, list_type="set"),
        },
        required=("name",),
    )
    spec = obj(
        {
            "admissionChecksStrategy": obj(
                {"admissionChecks": array(check_rule, "Admission checks and the flavors they apply to.",
                                          max_items=64, min_items=1, map_keys=("name",))},
                "Admission checks every workload admitted here must pass.",
                required=("admissionChecks",),
            ),
            "admissionScope": obj(
                {"admissionMode": string("How workloads are ordered for admission.",
                                         enum=("UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"))},
                "Admission fair sharing settings.",
                required=("admissionMode",),
            ),
            "cohortName": name_ref("Cohort this ClusterQueue belongs to; it borrows from and lends to it."),
            "concurrentAdmissionPolicy": concurrent_admission_policy(),
            "fairSharing": fair_sharing("ClusterQueue"),
            "flavorFungibility": obj(
                {
                    "preference": string("Whether to prefer borrowing or preemption when both are possible.",
                                         enum=FUNGIBILITY_PREFERENCES),
                    "whenCanBorrow": string("Stop at the first flavor that fits by borrowing, or try the next.",
                                            enum=FUNGIBILITY, default=MAY_STOP_SEARCH),
                    "whenCanPreempt": string("Stop at the first flavor that fits by preempting, or try the next.",
                                             enum=FUNGIBILITY, default=TRY_NEXT_FLAVOR),
                },
                "How the flavor search treats borrowing and preemption.",
                default={},
            ),
            "namespaceSelector": label_selector(
                "Namespaces whose LocalQueues may submit here; unset selects none, {} selects all."
            ),
            "preemption": obj(
                {
                    "borrowWithinCohort": obj(
                        {
                            "maxPriorityThreshold": integer("Highest priority that may be preempted while borrowing."),
                            "policy": string("Whether to preempt in the cohort while borrowing.",
                                             enum=BORROW_WITHIN_COHORT_POLICIES, default=NEVER),
                        },
                        "Preemption in the cohort while borrowing.",
                        default={},
                    ),
                    "reclaimWithinCohort": string("Whether to preempt borrowers in the cohort to reclaim quota.",
                                                  enum=RECLAIM_POLICIES, default=NEVER),
                    "withinClusterQueue": string("Whether to preempt lower-priority workloads in this ClusterQueue.",
                                                 enum=WITHIN_CQ_POLICIES, default=NEVER),
                },
                "Preemption policies.",
                default={},
            ),
            "queueingStrategy": string("Order of pending workloads.", enum=QUEUEING_STRATEGIES,
                                       default=BEST_EFFORT_FIFO),
            "resourceGroups": resource_groups("ClusterQueue"),
            "stopPolicy": string("Hold stops admitting; HoldAndDrain also evicts admitted workloads.",
                                 enum=STOP_POLICIES, default=STOP_NONE),
        },
        "ClusterQueueSpec defines the quota and policies of the ClusterQueue.",
    )
    status = obj(
        {
            "admittedWorkloads": integer("Admitted workloads not finished yet."),
            "conditions": conditions("Latest observations of the ClusterQueue's state (Active)."),
            "fairSharing": _fair_sharing_status(),
            "flavorsReservation": _usage("Quota reserved by workloads, per flavor.", borrowed=True),
            "flavorsUsage": _usage("Quota used by admitted workloads, per flavor.", borrowed=True),
            "pendingWorkloads": integer("Workloads waiting for quota."),
            "reservingWorkloads": integer("Workloads holding a quota reservation."),
        },
        "ClusterQueueStatus defines the observed state of the ClusterQueue.",
    )
    return top("ClusterQueue is the Schema for the clusterQueue API.", {"spec": spec, "status": status})


def cohort() -> Schema:
    spec = obj(
        {
            "fairSharing": fair_sharing("Cohort"),
            "parentName": name_ref("Parent Cohort; its quota is shared with this Cohort's subtree."),
            "resourceGroups": resource_groups("Cohort"),
        },
        "CohortSpec defines the Cohort's parent and the quota it adds to its subtree.",
    )
    status = obj({"fairSharing": _fair_sharing_status()}, "CohortStatus defines the observed state of the Cohort.")
    return top("Cohort is the Schema for the cohorts API.", {"spec": spec, "status": status})


def local_queue() -> Schema:
    spec = obj(
        {
            "clusterQueue": name_ref("The ClusterQueue workloads of this LocalQueue are admitted by."),
            "fairSharing": fair_sharing("LocalQueue"),
            "stopPolicy": string("Hold stops admitting; HoldAndDrain also evicts admitted workloads.",
                                 enum=STOP_POLICIES, default=STOP_NONE),
        },
        "LocalQueueSpec defines the ClusterQueue the LocalQueue submits to.",
    )
    status = obj(
        {
            "admittedWorkloads": integer("Admitted workloads not finished yet."),
            "conditions": conditions("Latest observations of the LocalQueue's state (Active)."),
            "fairSharing": _fair_sharing_status(admission=True),
            "flavorsReservation": _usage("Quota reserved by this queue's workloads, per flavor.", borrowed=False),
            "flavorsUsage": _usage("Quota used by this queue's admitted workloads, per flavor.", borrowed=False),
            "pendingWorkloads": integer("Workloads waiting for quota."),
            "reservingWorkloads": integer("Workloads holding a quota reservation."),
        },
        "LocalQueueStatus defines the observed state of the LocalQueue.",
    )
    return top("LocalQueue is the Schema for the localQueues API.", {"spec": spec, "status": status})


def _pod_set() -> Schema:
    return obj(
        {
            "count": integer("Number of pods in the pod set.", minimum=0, default=1),
            "minCount": integer("Fewest pods the pod set may run with (partial admission).", minimum=1),
            "name": string("Name of the pod set.", pattern=DNS_LABEL, max_length=63, default=DEFAULT_POD_SET_NAME),
            "template": pod_template("The pod template of the pod set."),
            "topologyRequest": topology_request(v1beta2=True),
        },
        "A set of identical pods.",
        required=("template",),
    )


def _admission() -> Schema:
    assignment = obj(
        {
            "count": integer("Pods the assignment is for.", minimum=0),
            "delayedTopologyRequest": delayed_topology_request(),
            "topologyAssignment": topology_assignment(v1beta2=True),
            "flavors": string_map("The flavor assigned to each resource.",
                                  values=string(pattern=DNS_SUBDOMAIN, max_length=253)),
            "name": string("Name of the pod set.", pattern=DNS_LABEL, max_length=63, default=DEFAULT_POD_SET_NAME),
            "resourceUsage": resource_list("Total resources reserved for the pod set's pods."),
        },
    )
    return obj(
        {
            "clusterQueue": name_ref("ClusterQueue that reserved quota for the workload."),
            "podSetAssignments": array(assignment, "Flavor assignment of each pod set.",
                                       max_items=MAX_POD_SETS, map_keys=("name",)),
        },
        "Where and with which flavors the workload holds quota.",
    )


def _pod_set_update() -> Schema:
    return obj(
        {
            "annotations": string_map("Annotations added to the pod set's pods.", max_properties=8),
            "labels": string_map("Labels added to the pod set's pods.", max_properties=8),
            "name": string("Name of the pod set.", pattern=DNS_LABEL, max_length=63),
            "nodeSelector": string_map("Node selector terms added to the pod set's pods.", max_properties=8),
            "tolerations": array(toleration(), "Tolerations added to the pod set's pods.", max_items=8),
        },
        "Changes an admission check makes to one pod set.",
        required=("name",),
    )


def workload() -> Schema:
    spec = obj(
        {
            "active": boolean("False deactivates the workload: it is evicted and not admitted again.", default=True),
            "maximumExecutionTimeSeconds": integer("Seconds the workload may stay admitted before it is deactivated.",
                                                   minimum=1),
            "podSets": array(_pod_set(), "The pod sets of the workload.", max_items=MAX_POD_SETS, min_items=1,
                             map_keys=("name",)),
            "preemptionGates": array(
                obj({"name": string("Name of the gate.", max_length=63, min_length=1)}, required=("name",)),
                "Gates that must open before the workload may preempt others.", max_items=8, map_keys=("name",),
            ),
            "priority": integer("Priority value; set from the priority class when one is referenced."),
            "priorityClassRef": obj(
                {
                    "group": string("API group of the priority class.",
                                    enum=(WORKLOAD_PRIORITY_CLASS_GROUP, POD_PRIORITY_CLASS_GROUP)),
                    "kind": string("Kind of the priority class.",
                                   enum=(WORKLOAD_PRIORITY_CLASS_KIND, POD_PRIORITY_CLASS_KIND)),
                    "name": string("Name of the priority class.", pattern=DNS_SUBDOMAIN,
                                   max_length=253, min_length=1),
                },
                "The WorkloadPriorityClass or PriorityClass the priority comes from.",
                required=("group", "kind", "name"),
            ),
            "queueName": name_ref("The LocalQueue the workload is submitted to."),
        },
        "WorkloadSpec defines the desired state of the Workload.",
    )
    check = obj(
        {
            "lastTransitionTime": time("When the state last changed."),
            "message": string("Why the check is in this state.", max_length=32768),
            "name": string("Name of the AdmissionCheck.", max_length=316, min_length=1),
            "podSetUpdates": array(_pod_set_update(), "Changes to the pod sets once the check is Ready.",
                                   max_items=MAX_POD_SETS),
            "requeueAfterSeconds": integer("Delay before a Retry is acted on.", minimum=0),
            "retryCount": integer("Times the check has been retried.", minimum=0),
            "state": string("State of the check.", enum=CHECK_STATES),
        },
        required=("lastTransitionTime", "message", "name", "state"),
    )
    eviction = obj(
        {
            "count": integer("How many times.", minimum=0),
            "reason": string("Eviction reason.", max_length=316),
            "underlyingCause": string("Underlying cause of the eviction.", max_length=316),
        },
        required=("count", "reason", "underlyingCause"),
    )
    status = obj(
        {
            "accumulatedPastExecutionTimeSeconds": integer("Seconds the workload ran before its last eviction."),
            "admission": _admission(),
            "admissionChecks": array(check, "States of the workload's admission checks.", max_items=8,
                                     map_keys=("name",)),
            "clusterName": string("The worker cluster the workload was dispatched to.", max_length=256),
            "conditions": conditions("Latest observations: QuotaReserved, Admitted, Evicted, Finished..."),
            "preemptionGates": array(
                obj({"lastTransitionTime": time("When the gate last changed position."),
                     "name": string("Name of the gate.", max_length=63, min_length=1),
                     "position": string("Whether the gate is open.", enum=("Closed", "Open"))},
                    required=("lastTransitionTime", "name", "position")),
                "Positions of the workload's preemption gates.", max_items=8, map_keys=("name",),
            ),
            "nominatedClusterNames": array(string(max_length=256), "Worker clusters the workload is offered to.",
                                           max_items=20),
            "reclaimablePods": array(
                obj({"count": integer("Pods no longer needed.", minimum=0),
                     "name": string("Pod set name.", pattern=DNS_LABEL, max_length=63)},
                    required=("count", "name")),
                "Pods of each pod set that finished and whose quota can be released.",
                max_items=MAX_POD_SETS, map_keys=("name",),
            ),
            "requeueState": obj(
                {"count": integer("Times the workload was requeued.", minimum=0),
                 "requeueAt": time("When the workload may be queued again.")},
                "Backoff state after evictions.",
            ),
            "resourceRequests": array(
                obj({"name": string(pattern=DNS_LABEL, max_length=63),
                     "resources": resource_list("Total requests of the pod set.")},
                    required=("name",)),
                "Total resource requests of each pod set.", max_items=MAX_POD_SETS, map_keys=("name",),
            ),
            "unhealthyNodes": unhealthy_nodes(),
            "schedulingStats": obj(
                {"evictions": array(eviction, "Evictions by reason.", max_items=256,
                                    map_keys=("reason", "underlyingCause"))},
                "Scheduling statistics.",
            ),
        },
        "WorkloadStatus defines the observed state of the Workload.",
    )
    return top("Workload is the Schema for the workloads API.", {"spec": spec, "status": status})


def workload_priority_class() -> Schema:
    return top(
        "WorkloadPriorityClass is the Schema for the workloadPriorityClass API.",
        {
            "description": string("What the priority class is for.", max_length=2048),
            "value": integer("The priority value workloads of this class get; higher is more important."),
        },
    ) | {"required": ["value"]}


def admission_check() -> Schema:
    spec = obj(
        {
            "controllerName": string(f"Controller that runs the check, e.g. {MULTIKUEUE_CONTROLLER}.",
                                     max_length=253, min_length=1),
            "parameters": obj(
                {
                    "apiGroup": string("API group of the parameters object.", pattern=DNS_SUBDOMAIN,
                                       max_length=253, min_length=1),
                    "kind": string("Kind of the parameters object.", pattern=r"^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$",
                                   max_length=63, min_length=1),
                    "name": string("Name of the parameters object.", pattern=DNS_LABEL, max_length=63,
                                   min_length=1),
                },
                "Reference to the check's parameters object.",
                required=("apiGroup", "kind", "name"),
            ),
        },
        "AdmissionCheckSpec defines the controller and parameters of the check.",
        required=("controllerName",),
    )
    status = obj({"conditions": conditions("Latest observations of the check's state (Active).")},
                 "AdmissionCheckStatus defines the observed state of the AdmissionCheck.")
    return top("AdmissionCheck is the Schema for the admissionchecks API.", {"spec": spec, "status": status})


def multikueue_config() -> Schema:
    spec = obj(
        {
            "clusters": array(string(max_length=256), "Names of the MultiKueueClusters workloads are dispatched to.",
                              max_items=20, min_items=1),
            "quotaManagement": string("Who manages the worker clusters' quota.", enum=("Manual", "Automated")),
        },
        "MultiKueueConfigSpec lists the worker clusters.",
        required=("clusters",),
    )
    return top("MultiKueueConfig is the Schema for the multikueue API.", {"spec": spec})


def kube_config_source() -> Schema:
    return obj(
        {
            "location": string("Where the kubeconfig is: a Secret name or a file path.", max_length=256,
                               min_length=1),
            "locationType": string("Secret or Path.", enum=("Secret", "Path"), default="Secret"),
        },
        "A kubeconfig to reach the worker cluster.",
        required=("location",),
    )


def cluster_profile_ref() -> Schema:
    return obj({"name": string("Name of the ClusterProfile.", max_length=256, min_length=1)},
               "A ClusterProfile naming the worker cluster.", required=("name",))


def fleet_status() -> Schema:
    """mkhub's own field (hub.federation.fleet): the worker as the hub sees it."""
    count = integer("Workloads.", minimum=0)
    row = obj(
        {k: string(d) for k, d in (("clusterQueue", "The worker's ClusterQueue."), ("flavor", "ResourceFlavor."),
                                   ("resource", "Resource name."), ("nominal", "Nominal quota (quantity)."),
                                   ("usage", "Quota in use (quantity)."))},
        "Quota and usage of one flavor and resource of a worker ClusterQueue.",
    )
    return obj(
        {
            "connected": boolean("An agent for this cluster is connected."),
            "since": time("When the agent connected or disconnected last."),
            "lastHeartbeat": time("When the agent was last heard from (to 10 seconds)."),
            "capacityVersion": integer("The capacity report version the agent sends; 0: none.", minimum=0),
            "workloads": obj({"pending": count, "admitted": count, "running": count},
                             "Workloads pending and admitted in the worker's queues, and hub workloads running there."),
            "quota": array(row, "Quota per ClusterQueue, flavor and resource, from the agent's last capacity report."),
            "topology": array(obj({"flavor": string("The TAS ResourceFlavor."), "level": string("The level's node label."),
                                   "domains": integer("How many domains the level has.", minimum=0),
                                   "largestFree": string_map("The most one domain of the level has free, per resource "
                                                             "(quantities).")},
                                  "One topology level of a worker's TAS flavor."),
                              "Per TAS flavor and level, the most one domain has free now (topology-aware scheduling)."),
        },
        "mkhub: the worker as the hub sees it (capacity reports, connection).",
    )


def multikueue_cluster() -> Schema:
    spec = obj(
        {
            "clusterSource": obj(
                {"clusterProfileRef": cluster_profile_ref(), "kubeConfig": kube_config_source()},
                "How to reach the worker cluster: exactly one of kubeConfig or clusterProfileRef.",
            )
        },
        "MultiKueueClusterSpec says how to reach the worker cluster.",
        required=("clusterSource",),
    )
    status = obj({"conditions": conditions("Latest observations of the connection (Active)."),
                  "fleet": fleet_status()},
                 "MultiKueueClusterStatus defines the observed state of the MultiKueueCluster.")
    return top("MultiKueueCluster is the Schema for the multikueue API.", {"spec": spec, "status": status})


SCHEMAS = {
    "ResourceFlavor": resource_flavor,
    "ClusterQueue": cluster_queue,
    "Cohort": cohort,
    "LocalQueue": local_queue,
    "Workload": workload,
    "WorkloadPriorityClass": workload_priority_class,
    "AdmissionCheck": admission_check,
    "MultiKueueConfig": multikueue_config,
    "MultiKueueCluster": multikueue_cluster,
}
"""Kueue kind -> its v1beta2 schema function."""
