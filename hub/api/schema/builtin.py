"""Compact OpenAPI schemas of the built-in kinds mkhub serves, under Kubernetes' own
definition names: meta/v1 types, core/v1 Namespace, Pod and Event, batch/v1 Job,
coordination.k8s.io/v1 Lease, apiextensions.k8s.io/v1
CustomResourceDefinition.

Hand-written; the pod and Job definitions here are compact and
:mod:`hub.api.schema.builtin_pod` replaces them with complete ones (writes are checked and
pruned against those). Pod status is described only for the fields mkhub writes. References
are written ``{"$ref": "<definition name>"}``; :mod:`hub.kubeapi.openapi` rewrites
them for OpenAPI v3 (``#/components/schemas/``) or v2 (``#/definitions/``).
Lists carry the strategic-merge-patch extensions Kubernetes gives them.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
CORE = "io.k8s.api.core.v1"
BATCH = "io.k8s.api.batch.v1"
COORDINATION = "io.k8s.api.coordination.v1"
APIEXTENSIONS = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"


def ref(name: str, description: str = "") -> Schema:
    out: Schema = {"$ref": name}
    if description:
        out["description"] = description
    return out


def _s(description: str, type_: str = "string", **extra: Any) -> Schema:
    return {"description": description, "type": type_, **extra}


def _int(description: str, fmt: str = "int32") -> Schema:
    return {"description": description, "type": "integer", "format": fmt}


def _bool(description: str) -> Schema:
    return {"description": description, "type": "boolean"}


def _map(description: str, values: Schema | None = None) -> Schema:
    return {"description": description, "type": "object", "additionalProperties": values or {"type": "string", "default": ""}}


def _list(items: Schema, description: str, *, merge_key: str = "", list_type: str = "", keys: tuple[str, ...] = ()) -> Schema:
    out: Schema = {"description": description, "type": "array", "items": items}
    if list_type:
        out["x-kubernetes-list-type"] = list_type
    if keys:
        out["x-kubernetes-list-map-keys"] = list(keys)
    if merge_key:
        out["x-kubernetes-patch-merge-key"] = merge_key
        out["x-kubernetes-patch-strategy"] = "merge"
    return out


def _obj(description: str, properties: dict[str, Schema], required: tuple[str, ...] = ()) -> Schema:
    out: Schema = {"description": description, "type": "object", "properties": properties}
    if required:
        out["required"] = list(required)
    return out


def _time(description: str) -> Schema:
    return ref(f"{META}.Time", description)


def _kind(group: str, version: str, kind: str, description: str, props: dict[str, Schema]) -> Schema:
    out = _obj(
        description,
        {
            "apiVersion": _s("APIVersion defines the versioned schema of this representation of an object."),
            "kind": _s("Kind is a string value representing the REST resource this object represents."),
            "metadata": ref(f"{META}.ObjectMeta", "Standard object's metadata."),
            **props,
        },
    )
    out["x-kubernetes-group-version-kind"] = [{"group": group, "kind": kind, "version": version}]
    return out


def _list_kind(group: str, version: str, kind: str, item: str) -> Schema:
    out = _obj(
        f"{kind}List is a list of {kind} objects.",
        {
            "apiVersion": _s("APIVersion defines the versioned schema of this representation of an object."),
            "items": _list(ref(item), f"The {kind} objects."),
            "kind": _s("Kind is a string value representing the REST resource this object represents."),
            "metadata": ref(f"{META}.ListMeta", "Standard list metadata."),
        },
        ("items",),
    )
    out["x-kubernetes-group-version-kind"] = [{"group": group, "kind": f"{kind}List", "version": version}]
    return out


def _meta() -> dict[str, Schema]:
    owner = _obj(
        "OwnerReference identifies an owning object; dependents are garbage-collected with it.",
        {
            "apiVersion": _s("API version of the referent."),
            "blockOwnerDeletion": _bool("If true, the owner cannot be deleted in the foreground until this reference is removed."),
            "controller": _bool("If true, this reference points to the managing controller."),
            "kind": _s("Kind of the referent."),
            "name": _s("Name of the referent."),
            "uid": _s("UID of the referent."),
        },
        ("apiVersion", "kind", "name", "uid"),
    )
    owner["x-kubernetes-map-type"] = "atomic"
    object_meta = _obj(
        "ObjectMeta is metadata that all persisted resources must have.",
        {
            "annotations": _map("Unstructured key-value data stored with the object."),
            "creationTimestamp": _time("When the object was created; set by the server, read-only."),
            "deletionGracePeriodSeconds": _int("Seconds allowed for graceful termination.", "int64"),
            "deletionTimestamp": _time("When the object will be deleted; set by the server when deletion is requested."),
            "finalizers": _list({"type": "string", "default": ""},
                                "Must be empty before the object is deleted from the registry.",
                                merge_key="", list_type="set") | {"x-kubernetes-patch-strategy": "merge"},
            "generateName": _s("Prefix for a server-generated unique name, used when name is empty."),
            "generation": _int("A sequence number for the desired state (spec); set by the server.", "int64"),
            "labels": _map("Key-value pairs used to organize and select objects."),
            "managedFields": _list(ref(f"{META}.ManagedFieldsEntry"), "Which field manager owns which fields."),
            "name": _s("Name of the object, unique within its namespace."),
            "namespace": _s("Namespace of the object; empty for cluster-scoped objects."),
            "ownerReferences": _list(ref(f"{META}.OwnerReference"), "Objects this object depends on.",
                                     merge_key="uid", list_type="map", keys=("uid",)),
            "resourceVersion": _s("Opaque version of the object, for optimistic concurrency and watches."),
            "selfLink": _s("Deprecated; not set."),
            "uid": _s("Unique identifier of the object in time and space; set by the server."),
        },
    )
    managed = _obj(
        "ManagedFieldsEntry records the fields a manager owns.",
        {
            "apiVersion": _s("Version of the fields' schema."),
            "fieldsType": _s("Format of fieldsV1: FieldsV1."),
            "fieldsV1": ref(f"{META}.FieldsV1", "The owned fields."),
            "manager": _s("Identifier of the workflow managing these fields."),
            "operation": _s("Apply or Update."),
            "subresource": _s("The subresource the fields were written through."),
            "time": _time("When the entry was last changed."),
        },
    )
    cause = _obj("StatusCause gives details about one cause of an error.", {
        "field": _s("The field of the object that caused the error, e.g. spec.resourceGroups[0].flavors."),
        "message": _s("Human-readable description of the cause."),
        "reason": _s("Machine-readable cause, e.g. FieldValueInvalid."),
    })
    details = _obj("StatusDetails is set by the server for errors about one object.", {
        "causes": _list(ref(f"{META}.StatusCause"), "Causes of the error, one per field."),
        "group": _s("Group of the object."),
        "kind": _s("Kind of the object."),
        "name": _s("Name of the object."),
        "retryAfterSeconds": _int("Seconds to wait before retrying."),
        "uid": _s("UID of the object."),
    })
    status = _obj("Status is the return value of calls that do not return other objects.", {
        "apiVersion": _s("APIVersion of the object."),
        "code": _int("HTTP status code."),
        "details": ref(f"{META}.StatusDetails", "Extra data about the reason."),
        "kind": _s("Status."),
        "message": _s("Human-readable description of the status."),
        "metadata": ref(f"{META}.ListMeta", "Standard list metadata."),
        "reason": _s("Machine-readable reason: NotFound, AlreadyExists, Conflict, Invalid..."),
        "status": _s("Success or Failure."),
    })
    status["x-kubernetes-group-version-kind"] = [{"group": "", "kind": "Status", "version": "v1"}]
    delete_options = _obj("DeleteOptions may be given when deleting an object.", {
        "apiVersion": _s("APIVersion of the object."),
        "dryRun": _list({"type": "string", "default": ""}, "All: do not persist the deletion.", list_type="atomic"),
        "gracePeriodSeconds": _int("Seconds before the object is deleted.", "int64"),
        "kind": _s("DeleteOptions."),
        "orphanDependents": _bool("Deprecated: use propagationPolicy=Orphan."),
        "preconditions": ref(f"{META}.Preconditions", "Must be met for the deletion to proceed."),
        "propagationPolicy": _s("Orphan, Background (default) or Foreground garbage collection of dependents."),
    })
    selector_req = _obj("A label selector requirement.", {
        "key": _s("The label key."),
        "operator": _s("In, NotIn, Exists or DoesNotExist."),
        "values": _list({"type": "string", "default": ""}, "Values for In and NotIn.", list_type="atomic"),
    }, ("key", "operator"))
    selector = _obj("A label query over a set of resources.", {
        "matchExpressions": _list(ref(f"{META}.LabelSelectorRequirement"), "Requirements, ANDed.", list_type="atomic"),
        "matchLabels": _map("Labels that must all match."),
    })
    selector["x-kubernetes-map-type"] = "atomic"
    return {
        f"{META}.ObjectMeta": object_meta,
        f"{META}.ListMeta": _obj("ListMeta describes a list.", {
            "continue": _s("Token to fetch the next page, when the list was limited."),
            "remainingItemCount": _int("Items left after this page, when known.", "int64"),
            "resourceVersion": _s("The resourceVersion to watch from after this list."),
            "selfLink": _s("Deprecated; not set."),
        }),
        f"{META}.Time": {"description": "An RFC 3339 date and time, in seconds.", "type": "string", "format": "date-time"},
        f"{META}.MicroTime": {"description": "An RFC 3339 date and time, in microseconds.", "type": "string",
                              "format": "date-time"},
        f"{META}.FieldsV1": {"description": "A set of fields, as a trie in JSON.", "type": "object"},
        f"{META}.OwnerReference": owner,
        f"{META}.ManagedFieldsEntry": managed,
        f"{META}.Status": status,
        f"{META}.StatusDetails": details,
        f"{META}.StatusCause": cause,
        f"{META}.DeleteOptions": delete_options,
        f"{META}.Preconditions": _obj("Preconditions of an operation.", {
            "resourceVersion": _s("The expected resourceVersion."), "uid": _s("The expected UID.")}),
        f"{META}.LabelSelector": selector,
        f"{META}.LabelSelectorRequirement": selector_req,
        f"{META}.Patch": {"description": "A patch body: JSON patch, merge patch, strategic merge patch or apply configuration.",
                          "type": "object"},
        QUANTITY: {"description": "A fixed-point number such as 500m, 2 or 1Gi.", "type": "string"},
        INT_OR_STRING: {"description": "An integer or a string.", "type": "string", "format": "int-or-string"},
    }


def _core() -> dict[str, Schema]:
    resources = _obj("Compute resources required by a container.", {
        "limits": _map("Most of each resource the container may use.", ref(QUANTITY)),
        "requests": _map("Least of each resource the container needs; what Kueue counts.", ref(QUANTITY)),
    })
    toleration = _obj("The pod tolerates taints matching key, value and effect.", {
        "effect": _s("Taint effect to match: NoSchedule, PreferNoSchedule or NoExecute; empty matches all."),
        "key": _s("Taint key to match; empty with operator Exists matches every taint."),
        "operator": _s("Exists or Equal (the default)."),
        "tolerationSeconds": _int("How long a NoExecute taint is tolerated.", "int64"),
        "value": _s("Taint value to match with operator Equal."),
    })
    container = _obj("A container to run in a pod (simulated by the dev-cluster).", {
        "args": _list({"type": "string", "default": ""}, "Arguments to the entrypoint.", list_type="atomic"),
        "command": _list({"type": "string", "default": ""}, "Entrypoint array.", list_type="atomic"),
        "env": _list(ref(f"{CORE}.EnvVar"), "Environment variables.", merge_key="name", list_type="map", keys=("name",)),
        "image": _s("Container image name."),
        "imagePullPolicy": _s("Always, Never or IfNotPresent."),
        "name": _s("Name of the container, unique within the pod."),
        "resources": ref(f"{CORE}.ResourceRequirements", "Compute resources required by this container."),
        "restartPolicy": _s("Always makes an init container a sidecar."),
        "workingDir": _s("Working directory of the container."),
    }, ("name",))
    pod_spec = _obj("PodSpec is the description of a pod.", {
        "activeDeadlineSeconds": _int("Seconds a pod may run before it is failed.", "int64"),
        "affinity": {"description": "Node, pod and anti-affinity scheduling constraints.", "type": "object"},
        "containers": _list(ref(f"{CORE}.Container"), "Containers of the pod; at least one.",
                            merge_key="name", list_type="map", keys=("name",)),
        "initContainers": _list(ref(f"{CORE}.Container"), "Containers run in order before the main containers.",
                                merge_key="name", list_type="map", keys=("name",)),
        "nodeName": _s("The node the pod is bound to."),
        "nodeSelector": _map("Labels a node must have for the pod to fit on it.") | {"x-kubernetes-map-type": "atomic"},
        "overhead": _map("Resources the pod's runtime takes on top of its containers.", ref(QUANTITY)),
        "priority": _int("The pod's priority value."),
        "priorityClassName": _s("The pod's PriorityClass."),
        "restartPolicy": _s("Always, OnFailure or Never."),
        "schedulingGates": _list(_obj("A scheduling gate.", {"name": _s("Name of the gate.")}, ("name",)),
                                 "Gates that keep the pod from being scheduled.", merge_key="name",
                                 list_type="map", keys=("name",)),
        "serviceAccountName": _s("The service account the pod runs as."),
        "terminationGracePeriodSeconds": _int("Grace period for termination.", "int64"),
        "tolerations": _list(ref(f"{CORE}.Toleration"), "The pod's tolerations.", list_type="atomic"),
        "volumes": _list({"description": "A volume.", "type": "object"}, "Volumes the containers can mount.",
                         merge_key="name", list_type="map", keys=("name",)),
    }, ("containers",))
    pod_condition = _obj("PodCondition describes one aspect of a pod's state.", {
        "lastProbeTime": _time("When the condition was last probed."),
        "lastTransitionTime": _time("When the condition last changed."),
        "message": _s("Human-readable details."),
        "reason": _s("CamelCase reason for the last transition."),
        "status": _s("True, False or Unknown."),
        "type": _s("PodScheduled, Initialized, ContainersReady or Ready."),
    }, ("type", "status"))
    container_status = _obj("The state of one container.", {
        "image": _s("The container's image."),
        "name": _s("Name of the container."),
        "ready": _bool("Whether the container passes its readiness probe."),
        "restartCount": _int("Times the container restarted."),
        "started": _bool("Whether the container has started."),
        "state": {"description": "Details of the container's state: waiting, running or terminated.", "type": "object"},
        "lastState": {"description": "Details of the container's last termination.", "type": "object"},
        "containerID": _s("The container's ID in the runtime, <type>://<id>."),
        "imageID": _s("The image's ID."),
    }, ("name", "ready", "restartCount", "image"))
    pod_ip = _obj("An IP address allocated to the pod.", {"ip": _s("The IP address.")})
    pod_status = _obj("PodStatus is the observed state of a pod.", {
        "conditions": _list(ref(f"{CORE}.PodCondition"), "Current service state of the pod.",
                            merge_key="type", list_type="map", keys=("type",)),
        "containerStatuses": _list(ref(f"{CORE}.ContainerStatus"), "Status of each container.", list_type="atomic"),
        "initContainerStatuses": _list(ref(f"{CORE}.ContainerStatus"), "Status of each init container.", list_type="atomic"),
        "ephemeralContainerStatuses": _list(ref(f"{CORE}.ContainerStatus"), "Status of each ephemeral container.",
                                            list_type="atomic"),
        "hostIP": _s("IP of the node the pod runs on."),
        "hostIPs": _list(pod_ip, "IPs of the node the pod runs on.", list_type="atomic"),
        "podIPs": _list(pod_ip, "IPs allocated to the pod.", merge_key="ip", list_type="map", keys=("ip",)),
        "nominatedNodeName": _s("The node preemption made room on for this pod."),
        "qosClass": _s("Guaranteed, Burstable or BestEffort, from the containers' requests and limits."),
        "message": _s("Why the pod is in this phase."),
        "phase": _s("Pending, Running, Succeeded, Failed or Unknown."),
        "podIP": _s("IP of the pod."),
        "reason": _s("CamelCase reason for the pod's state."),
        "startTime": _time("When the kubelet acknowledged the pod."),
    })
    object_reference = _obj("A reference to an object.", {
        "apiVersion": _s("API version of the referent."),
        "fieldPath": _s("A path within the referent, e.g. spec.containers{name}."),
        "kind": _s("Kind of the referent."),
        "name": _s("Name of the referent."),
        "namespace": _s("Namespace of the referent."),
        "resourceVersion": _s("The referent's resourceVersion."),
        "uid": _s("UID of the referent."),
    })
    object_reference["x-kubernetes-map-type"] = "atomic"
    return {
        f"{CORE}.Namespace": _kind("", "v1", "Namespace", "Namespace provides a scope for names.", {
            "spec": ref(f"{CORE}.NamespaceSpec", "The namespace's finalizers."),
            "status": ref(f"{CORE}.NamespaceStatus", "The namespace's phase."),
        }),
        f"{CORE}.NamespaceList": _list_kind("", "v1", "Namespace", f"{CORE}.Namespace"),
        f"{CORE}.NamespaceSpec": _obj("NamespaceSpec describes a namespace.", {
            "finalizers": _list({"type": "string", "default": ""}, "Must be empty before the namespace is removed.",
                                list_type="atomic")}),
        f"{CORE}.NamespaceStatus": _obj("NamespaceStatus is the state of a namespace.", {
            "phase": _s("Active or Terminating.")}),
        f"{CORE}.Pod": _kind("", "v1", "Pod", "Pod is a collection of containers run on a node (simulated by the dev-cluster).", {
            "spec": ref(f"{CORE}.PodSpec", "Specification of the desired behavior of the pod."),
            "status": ref(f"{CORE}.PodStatus", "Most recently observed status of the pod."),
        }),
        f"{CORE}.PodList": _list_kind("", "v1", "Pod", f"{CORE}.Pod"),
        f"{CORE}.PodSpec": pod_spec,
        f"{CORE}.PodStatus": pod_status,
        f"{CORE}.PodCondition": pod_condition,
        f"{CORE}.ContainerStatus": container_status,
        f"{CORE}.PodTemplateSpec": _obj("Data a pod is created from.", {
            "metadata": ref(f"{META}.ObjectMeta", "Standard object's metadata."),
            "spec": ref(f"{CORE}.PodSpec", "Specification of the desired behavior of the pod."),
        }),
        f"{CORE}.Container": container,
        f"{CORE}.EnvVar": _obj("An environment variable.", {
            "name": _s("Name of the variable."), "value": _s("Value of the variable."),
            "valueFrom": {"description": "A source for the value.", "type": "object"}}, ("name",)),
        f"{CORE}.ResourceRequirements": resources,
        f"{CORE}.Toleration": toleration,
        f"{CORE}.ObjectReference": object_reference,
        f"{CORE}.EventSource": _obj("The component that reported an event.", {
            "component": _s("Component name."), "host": _s("Node name.")}),
        f"{CORE}.Event": _kind("", "v1", "Event", "Event is a report of an event somewhere in the cluster.", {
            "action": _s("What action was taken or failed."),
            "count": _int("Times the event occurred."),
            "eventTime": ref(f"{META}.MicroTime", "When the event first occurred."),
            "firstTimestamp": _time("When the event was first recorded."),
            "involvedObject": ref(f"{CORE}.ObjectReference", "The object the event is about."),
            "lastTimestamp": _time("When the event last occurred."),
            "message": _s("Human-readable description."),
            "reason": _s("Short, machine-readable reason for the event."),
            "reportingComponent": _s("Controller that emitted the event."),
            "reportingInstance": _s("Instance of the controller."),
            "source": ref(f"{CORE}.EventSource", "The component reporting the event."),
            "type": _s("Normal or Warning."),
        }) | {"required": ["metadata", "involvedObject"]},
        f"{CORE}.EventList": _list_kind("", "v1", "Event", f"{CORE}.Event"),
    }


def _batch() -> dict[str, Schema]:
    job_condition = _obj("JobCondition describes the current state of a job.", {
        "lastProbeTime": _time("When the condition was last checked."),
        "lastTransitionTime": _time("When the condition last changed."),
        "message": _s("Human-readable details."),
        "reason": _s("CamelCase reason for the last transition."),
        "status": _s("True, False or Unknown."),
        "type": _s("Complete, Failed, Suspended, FailureTarget or SuccessCriteriaMet."),
    }, ("type", "status"))
    return {
        f"{BATCH}.Job": _kind("batch", "v1", "Job", "Job represents the configuration of a single job.", {
            "spec": ref(f"{BATCH}.JobSpec", "Specification of the desired behavior of the job."),
            "status": ref(f"{BATCH}.JobStatus", "Current status of the job."),
        }),
        f"{BATCH}.JobList": _list_kind("batch", "v1", "Job", f"{BATCH}.Job"),
        f"{BATCH}.JobSpec": _obj("JobSpec describes how the job execution will look like.", {
            "activeDeadlineSeconds": _int("Seconds the job may be active before it is failed.", "int64"),
            "backoffLimit": _int("Retries before the job is marked failed (default 6)."),
            "completionMode": _s("NonIndexed (default) or Indexed."),
            "completions": _int("Successfully finished pods needed; unset means any one success with parallelism."),
            "managedBy": _s("The controller that manages the job; set to MultiKueue's for remote execution."),
            "manualSelector": _bool("Whether the selector is set by hand."),
            "parallelism": _int("Most pods running at once (default 1)."),
            "podFailurePolicy": {"description": "How pod failures count toward the backoff limit.", "type": "object"},
            "selector": ref(f"{META}.LabelSelector", "Selects the job's pods; set by the server."),
            "suspend": _bool("True suspends the job: no pods are created and running ones are deleted."),
            "template": ref(f"{CORE}.PodTemplateSpec", "The pod the job runs."),
            "ttlSecondsAfterFinished": _int("Seconds after which a finished job is deleted."),
        }, ("template",)),
        f"{BATCH}.JobStatus": _obj("JobStatus represents the current state of a job.", {
            "active": _int("Pods pending or running."),
            "completionTime": _time("When the job completed; set only when it succeeded."),
            "conditions": _list(ref(f"{BATCH}.JobCondition"), "Latest observations of the job's state.",
                                list_type="atomic"),
            "failed": _int("Pods that reached phase Failed."),
            "ready": _int("Active pods with the Ready condition."),
            "startTime": _time("When the job controller started the job (or resumed it)."),
            "succeeded": _int("Pods that reached phase Succeeded."),
            "terminating": _int("Pods being terminated."),
        }),
        f"{BATCH}.JobCondition": job_condition,
    }


def _coordination() -> dict[str, Schema]:
    return {
        f"{COORDINATION}.Lease": _kind("coordination.k8s.io", "v1", "Lease", "Lease defines a lease concept.", {
            "spec": ref(f"{COORDINATION}.LeaseSpec", "Specification of the lease."),
        }),
        f"{COORDINATION}.LeaseList": _list_kind("coordination.k8s.io", "v1", "Lease", f"{COORDINATION}.Lease"),
        f"{COORDINATION}.LeaseSpec": _obj("LeaseSpec is the specification of a lease.", {
            "acquireTime": ref(f"{META}.MicroTime", "When the current lease was acquired."),
            "holderIdentity": _s("Identity of the holder of the lease."),
            "leaseDurationSeconds": _int("Seconds candidates wait before forcing the lease."),
            "leaseTransitions": _int("Times the lease changed holders."),
            "preferredHolder": _s("Holder the lease should go to next (coordinated leader election)."),
            "renewTime": ref(f"{META}.MicroTime", "When the holder last renewed the lease."),
            "strategy": _s("Strategy for picking the leader (coordinated leader election)."),
        }),
    }


def _apiextensions() -> dict[str, Schema]:
    names = _obj("Names of the custom resource.", {
        "categories": _list({"type": "string", "default": ""}, "Groups of resources (kubectl get all).", list_type="atomic"),
        "kind": _s("The serialized kind, in CamelCase."),
        "listKind": _s("The serialized kind of lists."),
        "plural": _s("The plural name, in the URL path."),
        "shortNames": _list({"type": "string", "default": ""}, "Short names kubectl accepts.", list_type="atomic"),
        "singular": _s("The singular name."),
    }, ("plural", "kind"))
    version = {"description": "A version of the resource: name, served, storage, schema, subresources, "
                              "additionalPrinterColumns.", "type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        f"{APIEXTENSIONS}.CustomResourceDefinition": _kind(
            "apiextensions.k8s.io", "v1", "CustomResourceDefinition",
            "CustomResourceDefinition represents a resource served by the API server.", {
                "spec": ref(f"{APIEXTENSIONS}.CustomResourceDefinitionSpec", "The resource's group, names and versions."),
                "status": {"description": "Observed state of the definition.", "type": "object"},
            }) | {"required": ["spec"]},
        f"{APIEXTENSIONS}.CustomResourceDefinitionList": _list_kind(
            "apiextensions.k8s.io", "v1", "CustomResourceDefinition", f"{APIEXTENSIONS}.CustomResourceDefinition"),
        f"{APIEXTENSIONS}.CustomResourceDefinitionSpec": _obj("The resource's group, names, scope and versions.", {
            "conversion": {"description": "How versions are converted.", "type": "object"},
            "group": _s("The API group of the resource."),
            "names": ref(f"{APIEXTENSIONS}.CustomResourceDefinitionNames", "Names of the resource."),
            "preserveUnknownFields": _bool("Deprecated: keep unknown fields."),
            "scope": _s("Cluster or Namespaced."),
            "versions": _list(version, "The versions served.", list_type="atomic"),
        }, ("group", "names", "scope", "versions")),
        f"{APIEXTENSIONS}.CustomResourceDefinitionNames": names,
    }


def builtin_definitions() -> dict[str, Schema]:
    """Every built-in definition, by Kubernetes' name (fresh dicts on every call)."""
    return {**_meta(), **_core(), **_batch(), **_coordination(), **_apiextensions()}
