"""OpenAPI schemas of the built-in kinds a deployment of mkhub uses and the dev-cluster
stores without acting on them: core/v1 ServiceAccount, Secret, ConfigMap and Service,
apps/v1 Deployment, rbac.authorization.k8s.io/v1 ClusterRole, ClusterRoleBinding, Role
and RoleBinding, admissionregistration.k8s.io/v1 Mutating- and ValidatingWebhookConfiguration,
apiregistration.k8s.io/v1 APIService; and the
pod fields a Deployment's template uses (ports, probes, volumes, security contexts).

Written from Kubernetes' API reference, under Kubernetes' definition names, for the
fields of each kind (a field not described here is refused as unknown, so the
descriptions cover what manifests commonly set; rarely used volume sources are typed
``object`` without their inner fields).
"""

from __future__ import annotations

from .builtin import (
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
RBAC = "io.k8s.api.rbac.v1"
ADMISSION = "io.k8s.api.admissionregistration.v1"
APIREGISTRATION = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1"

_STR = {"type": "string", "default": ""}


def _strings(description: str) -> Schema:
    return _list(dict(_STR), description, list_type="atomic")


def _any(description: str) -> Schema:
    return {"description": description, "type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _pod_parts() -> dict[str, Schema]:
    """Definitions the pod template of a Deployment refers to."""
    probe = _obj("A health check the kubelet runs against a container.", {
        "exec": _obj("Run a command in the container.", {"command": _strings("The command and its arguments.")}),
        "failureThreshold": _int("Consecutive failures before the probe counts as failed (default 3)."),
        "grpc": ref(f"{CORE}.GRPCAction", "Call the gRPC health service (grpc.health.v1) on a port."),
        "httpGet": ref(f"{CORE}.HTTPGetAction", "An HTTP GET request."),
        "initialDelaySeconds": _int("Seconds after the container started before the first probe."),
        "periodSeconds": _int("Seconds between probes (default 10)."),
        "successThreshold": _int("Consecutive successes before the probe counts as passed (default 1)."),
        "tcpSocket": _obj("Open a TCP connection.", {
            "host": _s("Host to connect to (default: the pod IP)."),
            "port": ref(INT_OR_STRING, "Port number or name.")}, ("port",)),
        "terminationGracePeriodSeconds": _int("Grace period when the probe fails.", "int64"),
        "timeoutSeconds": _int("Seconds before a probe times out (default 1)."),
    })
    key_to_path = _obj("A key of a Secret or ConfigMap projected to a file.", {
        "key": _s("The key."), "mode": _int("File mode bits."), "path": _s("Relative path of the file.")},
        ("key", "path"))
    volume = _obj("A named volume the containers of a pod can mount.", {
        "name": _s("Name of the volume, unique within the pod."),
        "configMap": _obj("A ConfigMap's keys as files.", {
            "defaultMode": _int("Mode bits of the files."),
            "items": _list(ref(f"{CORE}.KeyToPath"), "Keys to project (default: all).", list_type="atomic"),
            "name": _s("Name of the ConfigMap."),
            "optional": _bool("Whether the ConfigMap may be missing.")}),
        "secret": _obj("A Secret's keys as files.", {
            "defaultMode": _int("Mode bits of the files."),
            "items": _list(ref(f"{CORE}.KeyToPath"), "Keys to project (default: all).", list_type="atomic"),
            "optional": _bool("Whether the Secret may be missing."),
            "secretName": _s("Name of the Secret.")}),
        "emptyDir": _obj("A directory that lives as long as the pod.", {
            "medium": _s("Empty (node storage) or Memory."),
            "sizeLimit": ref(QUANTITY, "Most space the volume may use.")}),
        "persistentVolumeClaim": _obj("A PersistentVolumeClaim in the pod's namespace.", {
            "claimName": _s("Name of the claim."), "readOnly": _bool("Mount read-only.")}, ("claimName",)),
        "hostPath": _obj("A file or directory of the node.", {
            "path": _s("Path on the node."), "type": _s("What must be there: Directory, File, ...")}, ("path",)),
        "projected": _any("Several sources (Secrets, ConfigMaps, the downward API, tokens) in one directory."),
        "downwardAPI": _any("Fields of the pod as files."),
        "csi": _any("A volume of a CSI driver."),
        "ephemeral": _any("A volume with the pod's lifetime, from a claim template."),
        "nfs": _any("An NFS mount."),
    }, ("name",))
    security = _obj("Security options of a container.", {
        "allowPrivilegeEscalation": _bool("Whether a process can gain more privileges than its parent."),
        "capabilities": _obj("Capabilities to add and drop.", {
            "add": _strings("Capabilities to add."), "drop": _strings("Capabilities to drop (e.g. ALL).")}),
        "privileged": _bool("Run as privileged."),
        "procMount": _s("Default or Unmasked."),
        "readOnlyRootFilesystem": _bool("Mount the root filesystem read-only."),
        "runAsGroup": _int("Group ID of the entrypoint.", "int64"),
        "runAsNonRoot": _bool("Refuse to start a container whose user is root."),
        "runAsUser": _int("User ID of the entrypoint.", "int64"),
        "seccompProfile": ref(f"{CORE}.SeccompProfile", "The seccomp profile."),
        "seLinuxOptions": _any("SELinux context."),
        "appArmorProfile": _any("AppArmor profile."),
    })
    pod_security = _obj("Security options of every container of a pod.", {
        "fsGroup": _int("Group that owns the pod's volumes.", "int64"),
        "fsGroupChangePolicy": _s("OnRootMismatch or Always."),
        "runAsGroup": _int("Group ID of the containers' entrypoints.", "int64"),
        "runAsNonRoot": _bool("Refuse to start containers whose user is root."),
        "runAsUser": _int("User ID of the containers' entrypoints.", "int64"),
        "seccompProfile": ref(f"{CORE}.SeccompProfile", "The seccomp profile."),
        "supplementalGroups": _list({"type": "integer", "format": "int64", "default": 0}, "Extra groups.",
                                    list_type="atomic"),
        "sysctls": _list(_obj("A sysctl.", {"name": _s("Name."), "value": _s("Value.")}, ("name", "value")),
                         "Namespaced sysctls.", list_type="atomic"),
        "seLinuxOptions": _any("SELinux context."),
        "appArmorProfile": _any("AppArmor profile."),
    })
    source_ref = _obj("A ConfigMap or Secret of the pod's namespace.", {
        "name": _s("Its name."), "optional": _bool("Whether it may be missing.")})
    return {
        f"{CORE}.ContainerPort": _obj("A port a container listens on.", {
            "containerPort": _int("Port number on the pod's IP address."),
            "hostIP": _s("Host IP to bind to."),
            "hostPort": _int("Port on the host."),
            "name": _s("IANA service name of the port, unique within the pod."),
            "protocol": {**_s("TCP (default), UDP or SCTP."), "default": "TCP"},
        }, ("containerPort",)),
        f"{CORE}.Probe": probe,
        f"{CORE}.GRPCAction": _obj("A gRPC health check.", {
            "port": _int("Port number of the gRPC service (numbers only)."),
            "service": {**_s("Service name sent in the HealthCheckRequest (default: the server's overall health)."),
                        "default": ""},
        }, ("port",)),
        f"{CORE}.HTTPGetAction": _obj("An HTTP GET request.", {
            "host": _s("Host name (default: the pod IP)."),
            "httpHeaders": _list(_obj("A header.", {"name": _s("Name."), "value": _s("Value.")}, ("name", "value")),
                                 "Headers to send.", list_type="atomic"),
            "path": _s("Path to request."),
            "port": ref(INT_OR_STRING, "Port number or name."),
            "scheme": _s("HTTP (default) or HTTPS."),
        }, ("port",)),
        f"{CORE}.VolumeMount": _obj("A volume mounted into a container.", {
            "mountPath": _s("Path inside the container."),
            "mountPropagation": _s("None, HostToContainer or Bidirectional."),
            "name": _s("Name of the volume."),
            "readOnly": _bool("Mount read-only."),
            "recursiveReadOnly": _s("Disabled, IfPossible or Enabled."),
            "subPath": _s("Path within the volume (default: its root)."),
            "subPathExpr": _s("subPath with $(VAR) expansion."),
        }, ("name", "mountPath")),
        f"{CORE}.Volume": volume,
        f"{CORE}.KeyToPath": key_to_path,
        f"{CORE}.SecurityContext": security,
        f"{CORE}.PodSecurityContext": pod_security,
        f"{CORE}.SeccompProfile": _obj("A seccomp profile.", {
            "localhostProfile": _s("Profile file on the node, for type Localhost."),
            "type": _s("RuntimeDefault, Localhost or Unconfined.")}, ("type",)),
        f"{CORE}.EnvFromSource": _obj("All keys of a ConfigMap or Secret as environment variables.", {
            "configMapRef": source_ref, "prefix": _s("Prefix of the variables' names."), "secretRef": source_ref}),
        f"{CORE}.LocalObjectReference": _obj("A reference to an object of the same namespace.", {
            "name": _s("Name of the referent.")}),
    }


def extend_pod(defs: dict[str, Schema]) -> None:
    """Add the fields of containers and pods that Deployments use to the compact Pod schemas."""
    container = defs[f"{CORE}.Container"]["properties"]
    container.update({
        "envFrom": _list(ref(f"{CORE}.EnvFromSource"), "Sources of environment variables.", list_type="atomic"),
        "lifecycle": _any("Hooks run after start and before stop."),
        "livenessProbe": ref(f"{CORE}.Probe", "The container is restarted when this fails."),
        "ports": _list(ref(f"{CORE}.ContainerPort"), "Ports the container exposes.", merge_key="containerPort",
                       list_type="map", keys=("containerPort", "protocol")),
        "readinessProbe": ref(f"{CORE}.Probe", "The container takes traffic only while this passes."),
        "securityContext": ref(f"{CORE}.SecurityContext", "Security options of the container."),
        "startupProbe": ref(f"{CORE}.Probe", "The other probes wait until this passes."),
        "stdin": _bool("Allocate a buffer for stdin."),
        "terminationMessagePath": _s("File the termination message is read from."),
        "terminationMessagePolicy": _s("File or FallbackToLogsOnError."),
        "tty": _bool("Allocate a TTY."),
        "volumeMounts": _list(ref(f"{CORE}.VolumeMount"), "Volumes mounted into the container.",
                              merge_key="mountPath", list_type="map", keys=("mountPath",)),
    })
    pod = defs[f"{CORE}.PodSpec"]["properties"]
    pod.update({
        "automountServiceAccountToken": _bool("Mount the service account's token."),
        "dnsPolicy": _s("ClusterFirst (default), ClusterFirstWithHostNet, Default or None."),
        "enableServiceLinks": _bool("Inject Services' addresses as environment variables."),
        "hostname": _s("The pod's hostname."),
        "hostNetwork": _bool("Use the node's network namespace."),
        "imagePullSecrets": _list(ref(f"{CORE}.LocalObjectReference"), "Secrets to pull the images with.",
                                  merge_key="name", list_type="map", keys=("name",)),
        "preemptionPolicy": _s("PreemptLowerPriority or Never."),
        "runtimeClassName": _s("The RuntimeClass to run the pod with."),
        "schedulerName": _s("The scheduler that places the pod."),
        "securityContext": ref(f"{CORE}.PodSecurityContext", "Security options of every container."),
        "serviceAccount": _s("Deprecated alias of serviceAccountName."),
        "shareProcessNamespace": _bool("One process namespace for all containers."),
        "subdomain": _s("The pod's subdomain."),
        "topologySpreadConstraints": _list(_any("A topology spread constraint."), "How pods spread over domains.",
                                           list_type="atomic"),
        "volumes": _list(ref(f"{CORE}.Volume"), "Volumes the containers can mount.", merge_key="name",
                         list_type="map", keys=("name",)),
    })


def _core() -> dict[str, Schema]:
    port = _obj("A port a Service exposes.", {
        "appProtocol": _s("Application protocol of the port (e.g. kubernetes.io/h2c)."),
        "name": _s("Name of the port, unique within the Service."),
        "nodePort": _int("Port on every node, for types NodePort and LoadBalancer."),
        "port": _int("Port the Service exposes."),
        "protocol": {**_s("TCP (default), UDP or SCTP."), "default": "TCP"},
        "targetPort": ref(INT_OR_STRING, "Port number or name on the pods (default: port)."),
    }, ("port",))
    service_spec = _obj("ServiceSpec describes a Service.", {
        "allocateLoadBalancerNodePorts": _bool("Allocate node ports for a LoadBalancer."),
        "clusterIP": _s("The virtual IP, None for a headless Service, or empty to allocate one."),
        "clusterIPs": _strings("The virtual IPs, one per IP family."),
        "externalIPs": _strings("Node IPs that also accept traffic for the Service."),
        "externalName": _s("DNS name, for type ExternalName."),
        "externalTrafficPolicy": _s("Cluster or Local."),
        "healthCheckNodePort": _int("Health check node port of a LoadBalancer with Local traffic policy."),
        "internalTrafficPolicy": _s("Cluster or Local."),
        "ipFamilies": _strings("IPv4 and/or IPv6."),
        "ipFamilyPolicy": _s("SingleStack, PreferDualStack or RequireDualStack."),
        "loadBalancerClass": _s("The load balancer implementation."),
        "loadBalancerIP": _s("Deprecated: the load balancer's IP."),
        "loadBalancerSourceRanges": _strings("Client CIDRs a load balancer accepts."),
        "ports": _list(ref(f"{CORE}.ServicePort"), "The ports the Service exposes.", merge_key="port",
                       list_type="map", keys=("port", "protocol")),
        "publishNotReadyAddresses": _bool("Publish pods that are not ready."),
        "selector": _map("Pods with these labels receive the Service's traffic.") | {"x-kubernetes-map-type": "atomic"},
        "sessionAffinity": _s("None (default) or ClientIP."),
        "sessionAffinityConfig": _any("Client IP affinity settings."),
        "trafficDistribution": _s("PreferClose: prefer endpoints near the client."),
        "type": _s("ClusterIP (default), NodePort, LoadBalancer or ExternalName."),
    })
    return {
        f"{CORE}.ServiceAccount": _kind("", "v1", "ServiceAccount", "An identity for processes in pods.", {
            "automountServiceAccountToken": _bool("Mount a token in pods of this account by default."),
            "imagePullSecrets": _list(ref(f"{CORE}.LocalObjectReference"), "Secrets to pull images with.",
                                      list_type="atomic"),
            "secrets": _list(ref(f"{CORE}.ObjectReference"), "Secrets pods of this account may use.",
                             merge_key="name", list_type="map", keys=("name",)),
        }),
        f"{CORE}.Secret": _kind("", "v1", "Secret", "Secret holds secret data of a type (e.g. kubernetes.io/tls).", {
            "data": _map("Keys to base64-encoded values.", {"type": "string", "format": "byte"}),
            "immutable": _bool("Whether the data can no longer change."),
            "stringData": _map("Keys to plain values, merged into data on write."),
            "type": _s("Opaque (default), kubernetes.io/tls (tls.crt, tls.key), ..."),
        }),
        f"{CORE}.ConfigMap": _kind("", "v1", "ConfigMap", "ConfigMap holds configuration data for pods.", {
            "binaryData": _map("Keys to base64-encoded binary values.", {"type": "string", "format": "byte"}),
            "data": _map("Keys to values."),
            "immutable": _bool("Whether the data can no longer change."),
        }),
        f"{CORE}.Service": _kind("", "v1", "Service", "A named, load-balanced address for a set of pods.", {
            "spec": ref(f"{CORE}.ServiceSpec", "The Service's ports, selector and type."),
            "status": _obj("The Service's observed state.", {
                "conditions": _list(_any("A condition."), "Current conditions.", list_type="atomic"),
                "loadBalancer": _any("The load balancer's ingress points."),
            }),
        }),
        f"{CORE}.ServiceSpec": service_spec,
        f"{CORE}.ServicePort": port,
        **{f"{CORE}.{k}List": _list_kind("", "v1", k, f"{CORE}.{k}")
           for k in ("ServiceAccount", "Secret", "ConfigMap", "Service")},
    }


def _apps() -> dict[str, Schema]:
    condition = _obj("A condition of a Deployment: Available, Progressing or ReplicaFailure.", {
        "lastTransitionTime": _time("When the condition last changed."),
        "lastUpdateTime": _time("When the condition was last updated."),
        "message": _s("Human-readable details."),
        "reason": _s("Reason for the last transition."),
        "status": _s("True, False or Unknown."),
        "type": _s("Available, Progressing or ReplicaFailure."),
    }, ("type", "status"))
    return {
        f"{APPS}.Deployment": _kind("apps", "v1", "Deployment", "A set of identical pods, rolled out declaratively.", {
            "spec": ref(f"{APPS}.DeploymentSpec", "The desired pods."),
            "status": ref(f"{APPS}.DeploymentStatus", "The observed rollout."),
        }),
        f"{APPS}.DeploymentList": _list_kind("apps", "v1", "Deployment", f"{APPS}.Deployment"),
        f"{APPS}.DeploymentSpec": _obj("DeploymentSpec describes the desired pods.", {
            "minReadySeconds": _int("Seconds a new pod must be ready to count as available."),
            "paused": _bool("Whether the rollout is paused."),
            "progressDeadlineSeconds": _int("Seconds before a stalled rollout is reported (default 600)."),
            "replicas": _int("Number of pods (default 1)."),
            "revisionHistoryLimit": _int("Old ReplicaSets to keep (default 10)."),
            "selector": ref(f"{META}.LabelSelector", "Selects the Deployment's pods; must match the template's labels."),
            "strategy": _obj("How pods are replaced.", {
                "rollingUpdate": _obj("Rolling update parameters.", {
                    "maxSurge": ref(INT_OR_STRING, "Pods above replicas during the update (number or percent)."),
                    "maxUnavailable": ref(INT_OR_STRING, "Pods that may be unavailable (number or percent)."),
                }),
                "type": _s("RollingUpdate (default) or Recreate."),
            }),
            "template": ref(f"{CORE}.PodTemplateSpec", "The pods to create."),
        }, ("selector", "template")),
        f"{APPS}.DeploymentStatus": _obj("DeploymentStatus is the observed rollout.", {
            "availableReplicas": _int("Pods available for minReadySeconds."),
            "collisionCount": _int("Hash collisions of the template."),
            "conditions": _list(ref(f"{APPS}.DeploymentCondition"), "Current conditions.",
                                merge_key="type", list_type="map", keys=("type",)),
            "observedGeneration": _int("The generation observed.", "int64"),
            "readyReplicas": _int("Pods with the Ready condition."),
            "replicas": _int("Pods of the Deployment."),
            "terminatingReplicas": _int("Pods being terminated."),
            "unavailableReplicas": _int("Pods still needed for 100% availability."),
            "updatedReplicas": _int("Pods of the current template."),
        }),
        f"{APPS}.DeploymentCondition": condition,
    }


def _rbac() -> dict[str, Schema]:
    rule = _obj("Verbs allowed on resources (or non-resource URLs).", {
        "apiGroups": _strings("API groups of the resources; \"\" is the core group."),
        "nonResourceURLs": _strings("URL paths (ClusterRoles only)."),
        "resourceNames": _strings("Names the rule is limited to (default: all)."),
        "resources": _strings("Resources, e.g. jobs or clusterqueues/status."),
        "verbs": _strings("get, list, watch, create, update, patch, delete, deletecollection, ..."),
    }, ("verbs",))
    subject = _obj("A user, group or service account a role is bound to.", {
        "apiGroup": _s("rbac.authorization.k8s.io for User and Group; empty for ServiceAccount."),
        "kind": _s("User, Group or ServiceAccount."),
        "name": _s("Name of the subject."),
        "namespace": _s("Namespace of a ServiceAccount."),
    }, ("kind", "name"))
    subject["x-kubernetes-map-type"] = "atomic"
    role_ref = _obj("The role a binding grants.", {
        "apiGroup": _s("rbac.authorization.k8s.io."),
        "kind": _s("Role or ClusterRole."),
        "name": _s("Name of the role."),
    }, ("apiGroup", "kind", "name"))
    role_ref["x-kubernetes-map-type"] = "atomic"
    rules = _list(ref(f"{RBAC}.PolicyRule"), "The rules of the role.", list_type="atomic")
    subjects = _list(ref(f"{RBAC}.Subject"), "Who the role is granted to.", list_type="atomic")
    binding = {"roleRef": ref(f"{RBAC}.RoleRef", "The role granted (cannot change)."), "subjects": subjects}
    out = {
        f"{RBAC}.PolicyRule": rule,
        f"{RBAC}.Subject": subject,
        f"{RBAC}.RoleRef": role_ref,
        f"{RBAC}.ClusterRole": _kind("rbac.authorization.k8s.io", "v1", "ClusterRole",
                                     "A cluster-wide set of permissions.", {
            "aggregationRule": _obj("Roles whose rules this role takes up.", {
                "clusterRoleSelectors": _list(ref(f"{META}.LabelSelector"), "Selects the ClusterRoles.",
                                              list_type="atomic")}),
            "rules": rules,
        }),
        f"{RBAC}.Role": _kind("rbac.authorization.k8s.io", "v1", "Role", "A namespaced set of permissions.",
                              {"rules": rules}),
        f"{RBAC}.ClusterRoleBinding": _kind("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding",
                                            "Grants a ClusterRole in every namespace.", binding)
        | {"required": ["roleRef"]},
        f"{RBAC}.RoleBinding": _kind("rbac.authorization.k8s.io", "v1", "RoleBinding",
                                     "Grants a Role or ClusterRole in one namespace.", binding)
        | {"required": ["roleRef"]},
    }
    for kind in ("ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"):
        out[f"{RBAC}.{kind}List"] = _list_kind("rbac.authorization.k8s.io", "v1", kind, f"{RBAC}.{kind}")
    return out


def _admission() -> dict[str, Schema]:
    group = "admissionregistration.k8s.io"
    rule = _obj("The operations and resources a webhook is called for.", {
        "apiGroups": _strings("API groups; * for all."),
        "apiVersions": _strings("API versions; * for all."),
        "operations": _strings("CREATE, UPDATE, DELETE, CONNECT or *."),
        "resources": _strings("Resources, e.g. jobs; * for all."),
        "scope": _s("Cluster, Namespaced or * (default)."),
    })
    client = _obj("How the API server reaches the webhook.", {
        "caBundle": {"description": "PEM CA bundle that signs the webhook's certificate.", "type": "string",
                     "format": "byte"},
        "service": _obj("A Service in the cluster.", {
            "name": _s("Name of the Service."),
            "namespace": _s("Namespace of the Service."),
            "path": _s("URL path of the webhook."),
            "port": _int("Port of the Service (default 443)."),
        }, ("namespace", "name")),
        "url": _s("https URL of a webhook outside the cluster."),
    })
    webhook = _obj("A mutating admission webhook.", {
        "admissionReviewVersions": _strings("AdmissionReview versions the webhook accepts, e.g. v1."),
        "clientConfig": ref(f"{ADMISSION}.WebhookClientConfig", "How to reach the webhook."),
        "failurePolicy": _s("Fail (default) or Ignore when the call fails."),
        "matchConditions": _list(_obj("A CEL condition.", {"expression": _s("CEL expression."), "name": _s("Name.")},
                                      ("name", "expression")), "Conditions for the call.", merge_key="name",
                                 list_type="map", keys=("name",)),
        "matchPolicy": _s("Exact or Equivalent (default)."),
        "name": _s("Fully qualified name of the webhook, e.g. mjob.kb.io."),
        "namespaceSelector": ref(f"{META}.LabelSelector", "Namespaces whose objects are sent."),
        "objectSelector": ref(f"{META}.LabelSelector", "Objects that are sent, by label."),
        "reinvocationPolicy": _s("Never (default) or IfNeeded."),
        "rules": _list(ref(f"{ADMISSION}.RuleWithOperations"), "What the webhook is called for.", list_type="atomic"),
        "sideEffects": _s("None or NoneOnDryRun."),
        "timeoutSeconds": _int("Seconds before the call times out (default 10)."),
    }, ("name", "clientConfig", "sideEffects", "admissionReviewVersions"))
    # A validating webhook has the same fields but reinvocationPolicy (it never changes the object).
    validating = {**webhook, "description": "A validating admission webhook.",
                  "properties": {k: v for k, v in webhook["properties"].items() if k != "reinvocationPolicy"}}
    return {
        f"{ADMISSION}.RuleWithOperations": rule,
        f"{ADMISSION}.WebhookClientConfig": client,
        f"{ADMISSION}.MutatingWebhook": webhook,
        f"{ADMISSION}.MutatingWebhookConfiguration": _kind(group, "v1", "MutatingWebhookConfiguration",
                                                           "Admission webhooks that may change objects.", {
            "webhooks": _list(ref(f"{ADMISSION}.MutatingWebhook"), "The webhooks, called in order.",
                              merge_key="name", list_type="map", keys=("name",)),
        }),
        f"{ADMISSION}.MutatingWebhookConfigurationList": _list_kind(
            group, "v1", "MutatingWebhookConfiguration", f"{ADMISSION}.MutatingWebhookConfiguration"),
        f"{ADMISSION}.ValidatingWebhook": validating,
        f"{ADMISSION}.ValidatingWebhookConfiguration": _kind(group, "v1", "ValidatingWebhookConfiguration",
                                                             "Admission webhooks that may refuse objects.", {
            "webhooks": _list(ref(f"{ADMISSION}.ValidatingWebhook"), "The webhooks, all called.",
                              merge_key="name", list_type="map", keys=("name",)),
        }),
        f"{ADMISSION}.ValidatingWebhookConfigurationList": _list_kind(
            group, "v1", "ValidatingWebhookConfiguration", f"{ADMISSION}.ValidatingWebhookConfiguration"),
    }


def _apiregistration() -> dict[str, Schema]:
    group = "apiregistration.k8s.io"
    spec = _obj("Where the API server finds the group version and how it trusts it.", {
        "caBundle": {"description": "PEM CA bundle that signs the serving certificate of the API server behind it.",
                     "type": "string", "format": "byte", "x-kubernetes-list-type": "atomic"},
        "group": _s("The API group name this server hosts."),
        "groupPriorityMinimum": _int("Priority of the group in discovery (at least this; higher first)."),
        "insecureSkipTLSVerify": _bool("Skip the TLS check of the server (strongly discouraged)."),
        "service": _obj("The Service of the API server; absent: served by this API server (Local).", {
            "name": _s("Name of the Service."),
            "namespace": _s("Namespace of the Service."),
            "port": _int("Port of the Service (default 443)."),
        }),
        "version": _s("The API version this server hosts, e.g. v1beta1."),
        "versionPriority": _int("Order of this version within its group (higher first)."),
    }, ("groupPriorityMinimum", "versionPriority"))
    condition = _obj("A condition of an APIService: Available.", {
        "lastTransitionTime": _time("When the condition last changed status."),
        "message": _s("Why, for a human."),
        "reason": _s("Why, in one CamelCase word."),
        "status": _s("True, False or Unknown."),
        "type": _s("Available."),
    }, ("type", "status"))
    return {
        f"{APIREGISTRATION}.APIServiceSpec": spec,
        f"{APIREGISTRATION}.APIServiceCondition": condition,
        f"{APIREGISTRATION}.APIService": _kind(group, "v1", "APIService",
                                               "A server for one group version, that this API server proxies to.", {
            "spec": ref(f"{APIREGISTRATION}.APIServiceSpec", "The group version and its server."),
            "status": _obj("Whether it is available.", {
                "conditions": _list(ref(f"{APIREGISTRATION}.APIServiceCondition"), "Current conditions.",
                                    merge_key="type", list_type="map", keys=("type",)),
            }),
        }),
        f"{APIREGISTRATION}.APIServiceList": _list_kind(group, "v1", "APIService", f"{APIREGISTRATION}.APIService"),
    }


def stored_definitions() -> dict[str, Schema]:
    """The definitions of the stored built-in kinds and the pod parts they use (fresh dicts)."""
    return {**_pod_parts(), **_core(), **_apps(), **_rbac(), **_admission(), **_apiregistration()}
