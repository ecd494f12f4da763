"""OpenAPI schemas of the workload kinds beside Jobs that the dev-cluster serves: apps/v1
ReplicaSet and StatefulSet, batch/v1 CronJob, scheduling.k8s.io/v1 PriorityClass and
admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and its Binding (stored only).

Written from Kubernetes' API reference under its definition names, every field of each kind
(tests/kubeapi/test_builtin_fields.py compares them with the official client's models), so
``fieldValidation=Strict`` refuses only what kube-apiserver refuses.
"""

from __future__ import annotations

from .builtin import (
    BATCH,
    CORE,
    INT_OR_STRING,
    META,
    QUANTITY,
    Schema,
    _bool,
    _int,
    _kind,
    _list,
    _list_kind,
    _map,
    _obj,
    _s,
    _time,
    ref,
)

APPS = "io.k8s.api.apps.v1"
SCHEDULING = "io.k8s.api.scheduling.v1"
ADMISSION = "io.k8s.api.admissionregistration.v1"


def _strings(description: str) -> Schema:
    return _list({"type": "string", "default": ""}, description, list_type="atomic")


def _condition(description: str) -> Schema:
    return _obj(description, {
        "lastTransitionTime": _time("When the condition last changed."),
        "message": _s("Human-readable details."),
        "reason": _s("Reason for the last transition."),
        "status": _s("True, False or Unknown."),
        "type": _s("Type of the condition."),
    }, ("type", "status"))


def _conditions(item: str) -> Schema:
    return _list(ref(item), "Current conditions.", merge_key="type", list_type="map", keys=("type",))


def _replica_set() -> dict[str, Schema]:
    return {
        f"{APPS}.ReplicaSet": _kind("apps", "v1", "ReplicaSet", "Keeps a number of identical pods running.", {
            "spec": ref(f"{APPS}.ReplicaSetSpec", "The desired pods."),
            "status": ref(f"{APPS}.ReplicaSetStatus", "The pods observed."),
        }),
        f"{APPS}.ReplicaSetList": _list_kind("apps", "v1", "ReplicaSet", f"{APPS}.ReplicaSet"),
        f"{APPS}.ReplicaSetSpec": _obj("ReplicaSetSpec describes the desired pods.", {
            "minReadySeconds": _int("Seconds a new pod must be ready to count as available."),
            "replicas": _int("Number of pods (default 1)."),
            "selector": ref(f"{META}.LabelSelector", "Selects the pods; must match the template's labels."),
            "template": ref(f"{CORE}.PodTemplateSpec", "The pods to create."),
        }, ("selector",)),
        f"{APPS}.ReplicaSetStatus": _obj("ReplicaSetStatus is the observed state of the pods.", {
            "availableReplicas": _int("Pods available for minReadySeconds."),
            "conditions": _conditions(f"{APPS}.ReplicaSetCondition"),
            "fullyLabeledReplicas": _int("Pods whose labels match the template's."),
            "observedGeneration": _int("The generation observed.", "int64"),
            "readyReplicas": _int("Pods with the Ready condition."),
            "replicas": _int("Pods of the ReplicaSet."),
            "terminatingReplicas": _int("Pods being terminated."),
        }, ("replicas",)),
        f"{APPS}.ReplicaSetCondition": _condition("A condition of a ReplicaSet: ReplicaFailure."),
    }


def _pvc() -> dict[str, Schema]:
    spec = _obj("What a claim asks for.", {
        "accessModes": _strings("ReadWriteOnce, ReadOnlyMany, ReadWriteMany or ReadWriteOncePod."),
        "dataSource": ref(f"{CORE}.TypedLocalObjectReference", "A snapshot or claim to fill the volume from."),
        "dataSourceRef": ref(f"{CORE}.TypedObjectReference", "An object to fill the volume from."),
        "resources": _obj("The storage asked for.", {
            "limits": _map("Most storage.", ref(QUANTITY)), "requests": _map("Least storage.", ref(QUANTITY))}),
        "selector": ref(f"{META}.LabelSelector", "Volumes the claim may bind."),
        "storageClassName": _s("The StorageClass."),
        "volumeAttributesClassName": _s("The VolumeAttributesClass."),
        "volumeMode": _s("Filesystem or Block."),
        "volumeName": _s("The volume bound to the claim."),
    })
    status = _obj("The claim's observed state.", {
        "accessModes": _strings("Access modes of the bound volume."),
        "allocatedResourceStatuses": _map("Resize status per resource."),
        "allocatedResources": _map("Storage allocated.", ref(QUANTITY)),
        "capacity": _map("Capacity of the bound volume.", ref(QUANTITY)),
        "conditions": _list(_obj("A condition of a claim.", {
            "lastProbeTime": _time("Last probe."), "lastTransitionTime": _time("Last change."),
            "message": _s("Details."), "reason": _s("Reason."), "status": _s("True, False or Unknown."),
            "type": _s("Type.")}, ("type", "status")), "Current conditions.", merge_key="type",
            list_type="map", keys=("type",)),
        "currentVolumeAttributesClassName": _s("The VolumeAttributesClass in use."),
        "healthStatus": {"description": "The volume's health (alpha).", "type": "object",
                         "x-kubernetes-preserve-unknown-fields": True},
        "modifyVolumeStatus": _obj("A volume modification in progress.", {
            "status": _s("Pending, InProgress or Infeasible."),
            "targetVolumeAttributesClassName": _s("The class being applied.")}, ("status",)),
        "phase": _s("Pending, Bound or Lost."),
    })
    return {
        f"{CORE}.PersistentVolumeClaim": _kind("", "v1", "PersistentVolumeClaim", "A request for storage.", {
            "spec": ref(f"{CORE}.PersistentVolumeClaimSpec", "What is asked for."),
            "status": ref(f"{CORE}.PersistentVolumeClaimStatus", "What was bound."),
        }),
        f"{CORE}.PersistentVolumeClaimSpec": spec,
        f"{CORE}.PersistentVolumeClaimStatus": status,
        f"{CORE}.TypedLocalObjectReference": _obj("An object in the same namespace.", {
            "apiGroup": _s("Its API group."), "kind": _s("Its kind."), "name": _s("Its name.")}, ("kind", "name")),
        f"{CORE}.TypedObjectReference": _obj("An object, possibly in another namespace.", {
            "apiGroup": _s("Its API group."), "kind": _s("Its kind."), "name": _s("Its name."),
            "namespace": _s("Its namespace.")}, ("kind", "name")),
    }


def _stateful_set() -> dict[str, Schema]:
    return {
        f"{APPS}.StatefulSet": _kind("apps", "v1", "StatefulSet", "Pods with stable ordinal names and storage.", {
            "spec": ref(f"{APPS}.StatefulSetSpec", "The desired pods."),
            "status": ref(f"{APPS}.StatefulSetStatus", "The pods observed."),
        }),
        f"{APPS}.StatefulSetList": _list_kind("apps", "v1", "StatefulSet", f"{APPS}.StatefulSet"),
        f"{APPS}.StatefulSetSpec": _obj("StatefulSetSpec describes the desired pods.", {
            "minReadySeconds": _int("Seconds a new pod must be ready to count as available."),
            "ordinals": _obj("The ordinals of the pods.", {"start": _int("First ordinal (default 0).")}),
            "persistentVolumeClaimRetentionPolicy": _obj("What happens to the claims of the volume templates.", {
                "whenDeleted": _s("Retain (default) or Delete when the StatefulSet is deleted."),
                "whenScaled": _s("Retain (default) or Delete when it is scaled down.")}),
            "podManagementPolicy": _s("OrderedReady (default) or Parallel."),
            "replicas": _int("Number of pods (default 1)."),
            "revisionHistoryLimit": _int("Revisions to keep (default 10)."),
            "selector": ref(f"{META}.LabelSelector", "Selects the pods; must match the template's labels."),
            "serviceName": _s("The headless Service that names the pods."),
            "template": ref(f"{CORE}.PodTemplateSpec", "The pods to create."),
            "updateStrategy": _obj("How pods are replaced when the template changes.", {
                "rollingUpdate": _obj("Rolling update parameters.", {
                    "maxUnavailable": ref(INT_OR_STRING, "Pods that may be unavailable (number or percent)."),
                    "partition": _int("Ordinal from which pods are updated.")}),
                "type": _s("RollingUpdate (default) or OnDelete.")}),
            "volumeClaimTemplates": _list(ref(f"{CORE}.PersistentVolumeClaim"), "Claims each pod gets.",
                                          list_type="atomic"),
        }, ("selector", "template")),
        f"{APPS}.StatefulSetStatus": _obj("StatefulSetStatus is the observed state of the pods.", {
            "availableReplicas": _int("Pods available for minReadySeconds."),
            "collisionCount": _int("Hash collisions of the template."),
            "conditions": _conditions(f"{APPS}.StatefulSetCondition"),
            "currentReplicas": _int("Pods of the current revision."),
            "currentRevision": _s("The current revision."),
            "observedGeneration": _int("The generation observed.", "int64"),
            "readyReplicas": _int("Pods with the Ready condition."),
            "replicas": _int("Pods of the StatefulSet."),
            "updateRevision": _s("The revision being rolled out."),
            "updatedReplicas": _int("Pods of the update revision."),
        }, ("replicas",)),
        f"{APPS}.StatefulSetCondition": _condition("A condition of a StatefulSet."),
    }


def _cron_job() -> dict[str, Schema]:
    return {
        f"{BATCH}.CronJob": _kind("batch", "v1", "CronJob", "Runs a Job on a schedule.", {
            "spec": ref(f"{BATCH}.CronJobSpec", "The schedule and the Job."),
            "status": ref(f"{BATCH}.CronJobStatus", "The Jobs observed."),
        }),
        f"{BATCH}.CronJobList": _list_kind("batch", "v1", "CronJob", f"{BATCH}.CronJob"),
        f"{BATCH}.CronJobSpec": _obj("CronJobSpec describes the schedule and the Job.", {
            "concurrencyPolicy": _s("Allow (default), Forbid or Replace."),
            "failedJobsHistoryLimit": _int("Failed Jobs to keep (default 1)."),
            "jobTemplate": ref(f"{BATCH}.JobTemplateSpec", "The Job to create."),
            "schedule": _s("The schedule in Cron format."),
            "startingDeadlineSeconds": _int("Seconds after a missed time the Job may still start.", "int64"),
            "successfulJobsHistoryLimit": _int("Successful Jobs to keep (default 3)."),
            "suspend": _bool("Create no more Jobs."),
            "timeZone": _s("Time zone of the schedule (default: the controller's)."),
        }, ("schedule", "jobTemplate")),
        f"{BATCH}.JobTemplateSpec": _obj("The Job a CronJob creates.", {
            "metadata": ref(f"{META}.ObjectMeta", "Labels and annotations of the Jobs."),
            "spec": ref(f"{BATCH}.JobSpec", "The Job's spec."),
        }),
        f"{BATCH}.CronJobStatus": _obj("CronJobStatus: the Jobs running and the last times.", {
            "active": _list(ref(f"{CORE}.ObjectReference"), "The running Jobs.", list_type="atomic"),
            "lastScheduleTime": _time("When a Job was last scheduled."),
            "lastSuccessfulTime": _time("When a Job last succeeded."),
        }),
    }


def _priority_class() -> dict[str, Schema]:
    return {
        f"{SCHEDULING}.PriorityClass": _kind("scheduling.k8s.io", "v1", "PriorityClass",
                                             "A name for a pod priority value.", {
            "description": _s("When to use this class."),
            "globalDefault": _bool("The priority of pods that name no class."),
            "preemptionPolicy": _s("PreemptLowerPriority (default) or Never."),
            "value": _int("The priority; higher runs first."),
        }) | {"required": ["value"]},
        f"{SCHEDULING}.PriorityClassList": _list_kind("scheduling.k8s.io", "v1", "PriorityClass",
                                                      f"{SCHEDULING}.PriorityClass"),
    }


def _admission_policy() -> dict[str, Schema]:
    group = "admissionregistration.k8s.io"
    named_rule = _obj("Operations and resources, optionally by name.", {
        "apiGroups": _strings("API groups; * for all."),
        "apiVersions": _strings("API versions; * for all."),
        "operations": _strings("CREATE, UPDATE, DELETE, CONNECT or *."),
        "resourceNames": _strings("Names (default: all)."),
        "resources": _strings("Resources; * for all."),
        "scope": _s("Cluster, Namespaced or *."),
    })
    named_rule["x-kubernetes-map-type"] = "atomic"
    rules = _list(ref(f"{ADMISSION}.NamedRuleWithOperations"), "Rules.", list_type="atomic")
    match = _obj("Which requests a policy applies to.", {
        "excludeResourceRules": rules, "matchPolicy": _s("Exact or Equivalent (default)."),
        "namespaceSelector": ref(f"{META}.LabelSelector", "Namespaces whose objects match."),
        "objectSelector": ref(f"{META}.LabelSelector", "Objects that match, by label."),
        "resourceRules": rules,
    })
    match["x-kubernetes-map-type"] = "atomic"
    named_cel = _obj("A named CEL expression.", {"expression": _s("CEL expression."), "name": _s("Name.")},
                     ("name", "expression"))
    condition = _obj("A condition of a policy.", {
        "lastTransitionTime": _time("Last change."), "message": _s("Details."),
        "observedGeneration": _int("Generation observed.", "int64"), "reason": _s("Reason."),
        "status": _s("True, False or Unknown."), "type": _s("Type.")},
        ("type", "status", "lastTransitionTime", "reason", "message"))
    return {
        f"{ADMISSION}.NamedRuleWithOperations": named_rule,
        f"{ADMISSION}.MatchResources": match,
        f"{ADMISSION}.ValidatingAdmissionPolicy": _kind(group, "v1", "ValidatingAdmissionPolicy",
                                                        "CEL rules that may refuse requests (stored, not run).", {
            "spec": _obj("The policy.", {
                "auditAnnotations": _list(_obj("An audit annotation.", {
                    "key": _s("Key."), "valueExpression": _s("CEL expression.")}, ("key", "valueExpression")),
                    "Audit annotations.", list_type="atomic"),
                "failurePolicy": _s("Fail (default) or Ignore."),
                "matchConditions": _list(named_cel, "Conditions for the policy to apply.", merge_key="name",
                                         list_type="map", keys=("name",)),
                "matchConstraints": ref(f"{ADMISSION}.MatchResources", "The resources the policy is for."),
                "paramKind": _obj("The kind of the parameters.", {"apiVersion": _s("API version."), "kind": _s("Kind.")}),
                "validations": _list(_obj("A CEL check.", {
                    "expression": _s("CEL expression."), "message": _s("Message when it fails."),
                    "messageExpression": _s("CEL expression of the message."), "reason": _s("Reason.")},
                    ("expression",)), "The checks.", list_type="atomic"),
                "variables": _list(named_cel, "Variables for the expressions.", list_type="atomic"),
            }),
            "status": _obj("What the policy's type checks found.", {
                "conditions": _list(condition, "Current conditions.", list_type="map", keys=("type",)),
                "observedGeneration": _int("Generation checked.", "int64"),
                "typeChecking": _obj("Warnings of the type check.", {
                    "expressionWarnings": _list(_obj("A warning.", {
                        "fieldRef": _s("The expression's field."), "warning": _s("The warning.")},
                        ("fieldRef", "warning")), "Warnings.", list_type="atomic")}),
            }),
        }),
        f"{ADMISSION}.ValidatingAdmissionPolicyList": _list_kind(group, "v1", "ValidatingAdmissionPolicy",
                                                                 f"{ADMISSION}.ValidatingAdmissionPolicy"),
        f"{ADMISSION}.ValidatingAdmissionPolicyBinding": _kind(group, "v1", "ValidatingAdmissionPolicyBinding",
                                                               "Binds a policy to resources (stored, not run).", {
            "spec": _obj("The binding.", {
                "matchResources": ref(f"{ADMISSION}.MatchResources", "Narrows the policy's resources."),
                "paramRef": _obj("The parameters.", {
                    "name": _s("Name."), "namespace": _s("Namespace."),
                    "parameterNotFoundAction": _s("Allow or Deny."),
                    "selector": ref(f"{META}.LabelSelector", "Selects the parameters.")}),
                "policyName": _s("The policy bound."),
                "validationActions": _list({"type": "string", "default": ""}, "Deny, Warn and/or Audit.",
                                           list_type="set"),
            }),
        }),
        f"{ADMISSION}.ValidatingAdmissionPolicyBindingList": _list_kind(
            group, "v1", "ValidatingAdmissionPolicyBinding", f"{ADMISSION}.ValidatingAdmissionPolicyBinding"),
    }


def _scale() -> dict[str, Schema]:
    return {
        "io.k8s.api.autoscaling.v1.Scale": _kind("autoscaling", "v1", "Scale", "The replicas of a scalable object.", {
            "spec": _obj("The replicas wanted.", {"replicas": _int("Replicas wanted.")}),
            "status": _obj("The replicas observed.", {
                "replicas": _int("Replicas observed."), "selector": _s("Label query of the pods, in string form.")},
                ("replicas",)),
        }),
    }


def apps_definitions() -> dict[str, Schema]:
    """The definitions of this module's kinds (fresh dicts)."""
    return {**_replica_set(), **_pvc(), **_stateful_set(), **_cron_job(), **_priority_class(),
            **_admission_policy(), **_scale()}
