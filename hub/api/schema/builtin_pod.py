"""The whole of core/v1 PodSpec and batch/v1 JobSpec/JobStatus, field for field, as Kubernetes
defines them (k8s.io/api core/v1 and batch/v1 types, through v1.34), so that
``fieldValidation`` can check and prune a Job's (or a Deployment's) pod template as the API
server does: every field Kubernetes has is declared, and anything else is unknown.

Legacy in-tree volume plugins (awsElasticBlockStore, cephfs, ...) and the few sources whose
inner fields mkhub never reads are declared with ``x-kubernetes-preserve-unknown-fields``:
accepted whole, never refused. :func:`complete_pod` replaces the compact definitions of
:mod:`hub.api.schema.builtin` and :mod:`hub.api.schema.builtin_stored` by these.
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
    _list,
    _map,
    _obj,
    _s,
    _time,
    ref,
)

_STR = {"type": "string", "default": ""}


def _strings(description: str) -> Schema:
    return _list(dict(_STR), description, list_type="atomic")


def _any(description: str) -> Schema:
    return {"description": description, "type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _c(name: str) -> Schema:
    return ref(f"{CORE}.{name}")


def _named_list(item: str, description: str, key: str = "name") -> Schema:
    return _list(_c(item), description, merge_key=key, list_type="map", keys=(key,))


def _atomic(item: str, description: str) -> Schema:
    return _list(_c(item), description, list_type="atomic")


def _container_fields(ephemeral: bool) -> dict[str, Schema]:
    out: dict[str, Schema] = {
        "args": _strings("Arguments to the entrypoint."),
        "command": _strings("Entrypoint array."),
        "env": _named_list("EnvVar", "Environment variables."),
        "envFrom": _atomic("EnvFromSource", "Sources of environment variables."),
        "image": _s("Container image name."),
        "imagePullPolicy": _s("Always, Never or IfNotPresent."),
        "lifecycle": _c("Lifecycle"),
        "livenessProbe": _c("Probe"),
        "name": _s("Name of the container, unique within the pod."),
        "ports": _list(_c("ContainerPort"), "Ports the container exposes.", merge_key="containerPort",
                       list_type="map", keys=("containerPort", "protocol")),
        "readinessProbe": _c("Probe"),
        "resizePolicy": _atomic("ContainerResizePolicy", "How each resource is resized in place."),
        "resources": _c("ResourceRequirements"),
        "restartPolicy": _s("Always makes an init container a sidecar."),
        "restartPolicyRules": _atomic("ContainerRestartRule", "Exit codes that restart the container."),
        "securityContext": _c("SecurityContext"),
        "startupProbe": _c("Probe"),
        "stdin": _bool("Allocate a buffer for stdin."),
        "stdinOnce": _bool("Close stdin after the first attach."),
        "terminationMessagePath": _s("File the termination message is read from."),
        "terminationMessagePolicy": _s("File or FallbackToLogsOnError."),
        "tty": _bool("Allocate a TTY."),
        "volumeDevices": _named_list("VolumeDevice", "Block devices of the container.", "devicePath"),
        "volumeMounts": _named_list("VolumeMount", "Volumes mounted into the container.", "mountPath"),
        "workingDir": _s("Working directory of the container."),
    }
    if ephemeral:
        out["targetContainerName"] = _s("The container whose namespaces the ephemeral container joins.")
    return out


def _containers() -> dict[str, Schema]:
    key_selector = {"key": _s("The key."), "name": _s("Name of the object."), "optional": _bool("Whether it may be missing.")}
    return {
        f"{CORE}.Container": _obj("A container to run in a pod.", _container_fields(False), ("name",)),
        f"{CORE}.EphemeralContainer": _obj("A debugging container added to a running pod.", _container_fields(True),
                                           ("name",)),
        f"{CORE}.EnvVar": _obj("An environment variable.", {
            "name": _s("Name of the variable."), "value": _s("Value of the variable."),
            "valueFrom": _c("EnvVarSource")}, ("name",)),
        f"{CORE}.EnvVarSource": _obj("A source for an environment variable's value.", {
            "configMapKeyRef": _obj("A key of a ConfigMap.", dict(key_selector), ("key",)),
            "fieldRef": _c("ObjectFieldSelector"),
            "fileKeyRef": _obj("A key of an env file in a volume.", {
                "key": _s("The key."), "optional": _bool("Whether it may be missing."),
                "path": _s("Path of the file in the volume."), "volumeName": _s("The volume.")},
                ("volumeName", "path", "key")),
            "resourceFieldRef": _c("ResourceFieldSelector"),
            "secretKeyRef": _obj("A key of a Secret.", dict(key_selector), ("key",)),
        }),
        f"{CORE}.ObjectFieldSelector": _obj("A field of the pod.", {
            "apiVersion": _s("Version of the schema the path is in."), "fieldPath": _s("Path of the field.")},
            ("fieldPath",)),
        f"{CORE}.ResourceFieldSelector": _obj("A resource of a container.", {
            "containerName": _s("The container."), "divisor": ref(QUANTITY), "resource": _s("The resource.")},
            ("resource",)),
        f"{CORE}.EnvFromSource": _obj("All keys of a ConfigMap or Secret as environment variables.", {
            "configMapRef": _obj("The ConfigMap.", {"name": _s("Its name."), "optional": _bool("Whether it may be missing.")}),
            "prefix": _s("Prefix of the variables' names."),
            "secretRef": _obj("The Secret.", {"name": _s("Its name."), "optional": _bool("Whether it may be missing.")})}),
        f"{CORE}.Lifecycle": _obj("Actions on container lifecycle events.", {
            "postStart": _c("LifecycleHandler"), "preStop": _c("LifecycleHandler"),
            "stopSignal": _s("The signal that stops the container.")}),
        f"{CORE}.LifecycleHandler": _obj("One action of a lifecycle hook.", {
            "exec": _c("ExecAction"), "httpGet": _c("HTTPGetAction"),
            "sleep": _obj("Sleep.", {"seconds": _int("Seconds to sleep.", "int64")}, ("seconds",)),
            "tcpSocket": _c("TCPSocketAction")}),
        f"{CORE}.ExecAction": _obj("Run a command in the container.", {"command": _strings("The command.")}),
        f"{CORE}.HTTPGetAction": _obj("An HTTP GET request.", {
            "host": _s("Host name (default: the pod IP)."),
            "httpHeaders": _list(_obj("A header.", {"name": _s("Name."), "value": _s("Value.")}, ("name", "value")),
                                 "Headers to send.", list_type="atomic"),
            "path": _s("Path to request."), "port": ref(INT_OR_STRING), "protocol": _s("The HTTP protocol version."),
            "scheme": _s("HTTP (default) or HTTPS.")}, ("port",)),
        f"{CORE}.GRPCAction": _obj("A gRPC health check.", {
            "mode": _s("How the check is made."), "port": _int("Port number of the gRPC service."),
            "service": _s("Service name in the HealthCheckRequest.")}, ("port",)),
        f"{CORE}.TCPSocketAction": _obj("Open a TCP connection.", {
            "host": _s("Host (default: the pod IP)."), "port": ref(INT_OR_STRING)}, ("port",)),
        f"{CORE}.Probe": _obj("A health check the kubelet runs against a container.", {
            "exec": _c("ExecAction"),
            "failureThreshold": _int("Consecutive failures before the probe fails."),
            "grpc": _c("GRPCAction"), "httpGet": _c("HTTPGetAction"),
            "initialDelaySeconds": _int("Seconds before the first probe."),
            "periodSeconds": _int("Seconds between probes."),
            "successThreshold": _int("Consecutive successes before the probe passes."),
            "tcpSocket": _c("TCPSocketAction"),
            "terminationGracePeriodSeconds": _int("Grace period when the probe fails.", "int64"),
            "timeoutSeconds": _int("Seconds before a probe times out.")}),
        f"{CORE}.ContainerResizePolicy": _obj("How a resource is resized.", {
            "resourceName": _s("cpu or memory."), "restartPolicy": _s("NotRequired or RestartContainer.")},
            ("resourceName", "restartPolicy")),
        f"{CORE}.ContainerRestartRule": _obj("A rule restarting the container on exit codes.", {
            "action": _s("Restart."),
            "exitCodes": _obj("Exit codes.", {"operator": _s("In or NotIn."),
                                             "values": _list({"type": "integer", "format": "int32"}, "Codes.",
                                                             list_type="set")}, ("operator",))}, ("action",)),
        f"{CORE}.ResourceRequirements": _obj("Compute resources required by a container.", {
            "claims": _named_list("ResourceClaim", "Dynamic resource claims the container uses."),
            "limits": _map("Most of each resource the container may use.", ref(QUANTITY)),
            "requests": _map("Least of each resource the container needs; what Kueue counts.", ref(QUANTITY))}),
        f"{CORE}.ResourceClaim": _obj("A claim of the pod the container uses.", {
            "name": _s("Name of the pod's claim."), "request": _s("One request of the claim.")}, ("name",)),
        f"{CORE}.SecurityContext": _obj("Security options of a container.", {
            "allowPrivilegeEscalation": _bool("Whether a process can gain more privileges than its parent."),
            "appArmorProfile": _c("AppArmorProfile"),
            "capabilities": _obj("Capabilities to add and drop.", {
                "add": _strings("Capabilities to add."), "drop": _strings("Capabilities to drop.")}),
            "privileged": _bool("Run as privileged."),
            "procMount": _s("Default or Unmasked."),
            "readOnlyRootFilesystem": _bool("Mount the root filesystem read-only."),
            "runAsGroup": _int("Group ID of the entrypoint.", "int64"),
            "runAsNonRoot": _bool("Refuse to start a container whose user is root."),
            "runAsUser": _int("User ID of the entrypoint.", "int64"),
            "seLinuxOptions": _c("SELinuxOptions"),
            "seccompProfile": _c("SeccompProfile"),
            "windowsOptions": _c("WindowsSecurityContextOptions")}),
        f"{CORE}.SELinuxOptions": _obj("An SELinux context.", {
            "level": _s("Level."), "role": _s("Role."), "type": _s("Type."), "user": _s("User.")}),
        f"{CORE}.SeccompProfile": _obj("A seccomp profile.", {
            "localhostProfile": _s("Profile file on the node."), "type": _s("RuntimeDefault, Localhost or Unconfined.")},
            ("type",)),
        f"{CORE}.AppArmorProfile": _obj("An AppArmor profile.", {
            "localhostProfile": _s("Profile on the node."), "type": _s("RuntimeDefault, Localhost or Unconfined.")},
            ("type",)),
        f"{CORE}.WindowsSecurityContextOptions": _obj("Windows options.", {
            "gmsaCredentialSpec": _s("GMSA credential spec."), "gmsaCredentialSpecName": _s("Its name."),
            "hostProcess": _bool("Run as a host process."), "runAsUserName": _s("User name.")}),
        f"{CORE}.VolumeDevice": _obj("A block device.", {
            "devicePath": _s("Path inside the container."), "name": _s("The volume.")}, ("name", "devicePath")),
        f"{CORE}.VolumeMount": _obj("A volume mounted into a container.", {
            "bindMountOptions": _strings("Options of the bind mount."),
            "mountPath": _s("Path inside the container."),
            "mountPropagation": _s("None, HostToContainer or Bidirectional."),
            "name": _s("Name of the volume."), "readOnly": _bool("Mount read-only."),
            "recursiveReadOnly": _s("Disabled, IfPossible or Enabled."),
            "subPath": _s("Path within the volume."), "subPathExpr": _s("subPath with $(VAR) expansion.")},
            ("name", "mountPath")),
    }


_LEGACY_VOLUMES = (
    "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "fc", "flexVolume", "flocker",
    "gcePersistentDisk", "gitRepo", "glusterfs", "iscsi", "photonPersistentDisk", "portworxVolume", "quobyte",
    "rbd", "scaleIO", "storageos", "vsphereVolume",
)


def _volumes() -> dict[str, Schema]:
    items = _atomic("KeyToPath", "Keys to project (default: all).")
    default_user = _int("Owner of the files (user ID).", "int64")
    downward_files = _atomic("DownwardAPIVolumeFile", "Fields of the pod as files.")
    projection = _obj("One source of a projected volume.", {
        "clusterTrustBundle": _any("A ClusterTrustBundle's certificates."),
        "configMap": _obj("A ConfigMap's keys.", {"items": items, "name": _s("Its name."),
                                                   "optional": _bool("Whether it may be missing.")}),
        "downwardAPI": _obj("Fields of the pod.", {"items": downward_files}),
        "podCertificate": _any("A certificate for the pod."),
        "secret": _obj("A Secret's keys.", {"items": items, "name": _s("Its name."),
                                             "optional": _bool("Whether it may be missing.")}),
        "serviceAccountToken": _obj("A service account token.", {
            "audience": _s("Audience of the token."), "expirationSeconds": _int("Validity.", "int64"),
            "path": _s("Path of the file."), "user": default_user}, ("path",)),
    })
    volume = _obj("A named volume the containers of a pod can mount.", {
        "name": _s("Name of the volume, unique within the pod."),
        "configMap": _obj("A ConfigMap's keys as files.", {
            "defaultMode": _int("Mode bits of the files."), "defaultUser": default_user, "items": items,
            "name": _s("Name of the ConfigMap."),
            "optional": _bool("Whether the ConfigMap may be missing.")}),
        "csi": _obj("A volume of a CSI driver.", {
            "driver": _s("The driver."), "fsType": _s("Filesystem type."),
            "nodePublishSecretRef": _c("LocalObjectReference"), "readOnly": _bool("Mount read-only."),
            "volumeAttributes": _map("Driver-specific attributes.")}, ("driver",)),
        "downwardAPI": _obj("Fields of the pod as files.", {
            "defaultMode": _int("Mode bits of the files."), "defaultUser": default_user, "items": downward_files}),
        "emptyDir": _obj("A directory that lives as long as the pod.", {
            "medium": _s("Empty (node storage) or Memory."), "mode": _int("Mode bits of the directory."),
            "sizeLimit": ref(QUANTITY)}),
        "ephemeral": _obj("A volume with the pod's lifetime, from a claim template.", {
            "volumeClaimTemplate": _any("The PersistentVolumeClaim template.")}),
        "hostPath": _obj("A file or directory of the node.", {
            "path": _s("Path on the node."), "type": _s("What must be there.")}, ("path",)),
        "image": _obj("An OCI image's content.", {"pullPolicy": _s("Always, Never or IfNotPresent."),
                                                    "reference": _s("The image.")}),
        "nfs": _obj("An NFS mount.", {"path": _s("Exported path."), "readOnly": _bool("Mount read-only."),
                                       "server": _s("The server.")}, ("server", "path")),
        "persistentVolumeClaim": _obj("A PersistentVolumeClaim in the pod's namespace.", {
            "claimName": _s("Name of the claim."), "readOnly": _bool("Mount read-only.")}, ("claimName",)),
        "projected": _obj("Several sources in one directory.", {
            "defaultMode": _int("Mode bits of the files."), "defaultUser": default_user,
            "sources": _list(projection, "The sources.", list_type="atomic")}),
        "secret": _obj("A Secret's keys as files.", {
            "defaultMode": _int("Mode bits of the files."), "defaultUser": default_user, "items": items,
            "optional": _bool("Whether the Secret may be missing."), "secretName": _s("Name of the Secret.")}),
        **{name: _any(f"The in-tree {name} volume plugin.") for name in _LEGACY_VOLUMES},
    }, ("name",))
    return {
        f"{CORE}.Volume": volume,
        f"{CORE}.KeyToPath": _obj("A key projected to a file.", {
            "key": _s("The key."), "mode": _int("File mode bits."), "path": _s("Relative path of the file."),
            "user": _int("Owner of the file (user ID).", "int64")}, ("key", "path")),
        f"{CORE}.DownwardAPIVolumeFile": _obj("A field of the pod as a file.", {
            "fieldRef": _c("ObjectFieldSelector"), "mode": _int("File mode bits."),
            "path": _s("Relative path of the file."), "resourceFieldRef": _c("ResourceFieldSelector"),
            "user": _int("Owner of the file (user ID).", "int64")}, ("path",)),
    }


def _scheduling() -> dict[str, Schema]:
    requirement = _obj("A selector requirement on node labels or fields.", {
        "key": _s("The label key."), "operator": _s("In, NotIn, Exists, DoesNotExist, Gt or Lt."),
        "values": _strings("The values.")}, ("key", "operator"))
    term = _obj("Requirements a node must all meet.", {
        "matchExpressions": _atomic("NodeSelectorRequirement", "By node labels."),
        "matchFields": _atomic("NodeSelectorRequirement", "By node fields.")})
    pod_term = _obj("Pods this pod should (or should not) be co-located with.", {
        "labelSelector": ref(f"{META}.LabelSelector"), "matchLabelKeys": _strings("Label keys taken from the pod."),
        "mismatchLabelKeys": _strings("Label keys that must not match."),
        "namespaceSelector": ref(f"{META}.LabelSelector"), "namespaces": _strings("Namespaces of the pods."),
        "topologyKey": _s("The node label that defines co-location.")}, ("topologyKey",))
    weighted = _obj("A weighted pod affinity term.", {"podAffinityTerm": _c("PodAffinityTerm"),
                                                       "weight": _int("Weight, 1-100.")}, ("weight", "podAffinityTerm"))
    pod_affinity = {
        "preferredDuringSchedulingIgnoredDuringExecution": _atomic("WeightedPodAffinityTerm", "Preferred terms."),
        "requiredDuringSchedulingIgnoredDuringExecution": _atomic("PodAffinityTerm", "Required terms."),
    }
    return {
        f"{CORE}.Affinity": _obj("Node, pod and anti-affinity scheduling constraints.", {
            "nodeAffinity": _c("NodeAffinity"), "podAffinity": _c("PodAffinity"),
            "podAntiAffinity": _c("PodAntiAffinity")}),
        f"{CORE}.NodeAffinity": _obj("Node affinity.", {
            "preferredDuringSchedulingIgnoredDuringExecution": _atomic("PreferredSchedulingTerm", "Preferred terms."),
            "requiredDuringSchedulingIgnoredDuringExecution": _c("NodeSelector")}),
        f"{CORE}.NodeSelector": _obj("Terms of which a node must meet one.", {
            "nodeSelectorTerms": _atomic("NodeSelectorTerm", "The terms, ORed.")}, ("nodeSelectorTerms",)),
        f"{CORE}.NodeSelectorTerm": term,
        f"{CORE}.NodeSelectorRequirement": requirement,
        f"{CORE}.PreferredSchedulingTerm": _obj("A weighted node selector term.", {
            "preference": _c("NodeSelectorTerm"), "weight": _int("Weight, 1-100.")}, ("weight", "preference")),
        f"{CORE}.PodAffinity": _obj("Pod affinity.", dict(pod_affinity)),
        f"{CORE}.PodAntiAffinity": _obj("Pod anti-affinity.", dict(pod_affinity)),
        f"{CORE}.PodAffinityTerm": pod_term,
        f"{CORE}.WeightedPodAffinityTerm": weighted,
        f"{CORE}.Toleration": _obj("The pod tolerates taints matching key, value and effect.", {
            "effect": _s("NoSchedule, PreferNoSchedule or NoExecute; empty matches all."),
            "key": _s("Taint key to match."), "operator": _s("Exists or Equal (the default)."),
            "tolerationSeconds": _int("How long a NoExecute taint is tolerated.", "int64"),
            "value": _s("Taint value to match.")}),
        f"{CORE}.TopologySpreadConstraint": _obj("How pods spread over topology domains.", {
            "labelSelector": ref(f"{META}.LabelSelector"), "matchLabelKeys": _strings("Label keys taken from the pod."),
            "maxSkew": _int("Most difference between domains."), "minDomains": _int("Least eligible domains."),
            "nodeAffinityPolicy": _s("Honor or Ignore."), "nodeTaintsPolicy": _s("Honor or Ignore."),
            "topologyKey": _s("The node label of the domains."),
            "whenUnsatisfiable": _s("DoNotSchedule or ScheduleAnyway.")},
            ("maxSkew", "topologyKey", "whenUnsatisfiable")),
    }


def _pod_spec() -> dict[str, Schema]:
    return {
        f"{CORE}.PodSpec": _obj("PodSpec is the description of a pod.", {
            "activeDeadlineSeconds": _int("Seconds a pod may run before it is failed.", "int64"),
            "affinity": _c("Affinity"),
            "automountServiceAccountToken": _bool("Mount the service account's token."),
            "containers": _named_list("Container", "Containers of the pod; at least one."),
            "dnsConfig": _obj("DNS parameters.", {
                "nameservers": _strings("DNS servers."),
                "options": _list(_obj("A resolver option.", {"name": _s("Name."), "value": _s("Value.")}),
                                 "Resolver options.", list_type="atomic"),
                "searches": _strings("Search domains.")}),
            "dnsPolicy": _s("ClusterFirst, ClusterFirstWithHostNet, Default or None."),
            "enableServiceLinks": _bool("Inject Services' addresses as environment variables."),
            "ephemeralContainers": _named_list("EphemeralContainer", "Debugging containers."),
            "evictionResponders": _list(_any("A component asked before the pod is evicted."), "Eviction responders.",
                                        list_type="atomic"),
            "hostAliases": _list(_obj("An /etc/hosts entry.", {"hostnames": _strings("Names."), "ip": _s("IP.")},
                                      ("ip",)), "Extra /etc/hosts entries.", merge_key="ip", list_type="map",
                                 keys=("ip",)),
            "hostIPC": _bool("Use the node's IPC namespace."),
            "hostNetwork": _bool("Use the node's network namespace."),
            "hostPID": _bool("Use the node's PID namespace."),
            "hostUsers": _bool("Use the node's user namespace."),
            "hostname": _s("The pod's hostname."),
            "hostnameOverride": _s("The hostname the pod sees."),
            "imagePullSecrets": _named_list("LocalObjectReference", "Secrets to pull the images with."),
            "initContainers": _named_list("Container", "Containers run in order before the main containers."),
            "nodeName": _s("The node the pod is bound to."),
            "nodeSelector": _map("Labels a node must have for the pod to fit on it.") | {"x-kubernetes-map-type": "atomic"},
            "os": _obj("The pod's operating system.", {"name": _s("linux or windows.")}, ("name",)),
            "overhead": _map("Resources the pod's runtime takes on top of its containers.", ref(QUANTITY)),
            "preemptionPolicy": _s("PreemptLowerPriority or Never."),
            "priority": _int("The pod's priority value."),
            "priorityClassName": _s("The pod's PriorityClass."),
            "readinessGates": _atomic("PodReadinessGate", "Extra conditions for readiness."),
            "resourceClaims": _named_list("PodResourceClaim", "Dynamic resource claims of the pod."),
            "resources": _c("ResourceRequirements"),
            "restartPolicy": _s("Always, OnFailure or Never."),
            "runtimeClassName": _s("The RuntimeClass to run the pod with."),
            "schedulerName": _s("The scheduler that places the pod."),
            "schedulingGates": _named_list("PodSchedulingGate", "Gates that keep the pod from being scheduled."),
            "schedulingGroup": _any("The scheduling group the pod belongs to."),
            "securityContext": _c("PodSecurityContext"),
            "serviceAccount": _s("Deprecated alias of serviceAccountName."),
            "serviceAccountName": _s("The service account the pod runs as."),
            "setHostnameAsFQDN": _bool("The hostname is the pod's FQDN."),
            "shareProcessNamespace": _bool("One process namespace for all containers."),
            "subdomain": _s("The pod's subdomain."),
            "terminationGracePeriodSeconds": _int("Grace period for termination.", "int64"),
            "tolerations": _atomic("Toleration", "The pod's tolerations."),
            "topologySpreadConstraints": _list(_c("TopologySpreadConstraint"), "How pods spread over domains.",
                                               merge_key="topologyKey", list_type="map",
                                               keys=("topologyKey", "whenUnsatisfiable")),
            "volumes": _named_list("Volume", "Volumes the containers can mount."),
        }, ("containers",)),
        f"{CORE}.PodReadinessGate": _obj("A readiness gate.", {"conditionType": _s("The pod condition.")},
                                         ("conditionType",)),
        f"{CORE}.PodResourceClaim": _obj("A dynamic resource claim of the pod.", {
            "name": _s("Name within the pod."), "resourceClaimName": _s("An existing ResourceClaim."),
            "resourceClaimTemplateName": _s("A ResourceClaimTemplate.")}, ("name",)),
        f"{CORE}.PodSchedulingGate": _obj("A scheduling gate.", {"name": _s("Name of the gate.")}, ("name",)),
        f"{CORE}.LocalObjectReference": _obj("A reference to an object of the same namespace.", {
            "name": _s("Name of the referent.")}),
        f"{CORE}.PodSecurityContext": _obj("Security options of every container of a pod.", {
            "appArmorProfile": _c("AppArmorProfile"),
            "fsGroup": _int("Group that owns the pod's volumes.", "int64"),
            "fsGroupChangePolicy": _s("OnRootMismatch or Always."),
            "runAsGroup": _int("Group ID of the entrypoints.", "int64"),
            "runAsNonRoot": _bool("Refuse to start containers whose user is root."),
            "runAsUser": _int("User ID of the entrypoints.", "int64"),
            "seLinuxChangePolicy": _s("Recursive or MountOption."),
            "seLinuxOptions": _c("SELinuxOptions"),
            "seccompProfile": _c("SeccompProfile"),
            "supplementalGroups": _list({"type": "integer", "format": "int64", "default": 0}, "Extra groups.",
                                        list_type="atomic"),
            "supplementalGroupsPolicy": _s("Merge or Strict."),
            "sysctls": _list(_obj("A sysctl.", {"name": _s("Name."), "value": _s("Value.")}, ("name", "value")),
                             "Namespaced sysctls.", list_type="atomic"),
            "windowsOptions": _c("WindowsSecurityContextOptions")}),
    }


def _job() -> dict[str, Schema]:
    exit_codes = _obj("Container exit codes a rule matches.", {
        "containerName": _s("Only this container."), "operator": _s("In or NotIn."),
        "values": _list({"type": "integer", "format": "int32"}, "Exit codes.", list_type="set")},
        ("operator", "values"))
    rule = _obj("A pod failure policy rule.", {
        "action": _s("FailJob, FailIndex, Ignore or Count."),
        "onExitCodes": exit_codes,
        "onPodConditions": _list(_obj("A pod condition a rule matches.", {"status": _s("True, False or Unknown."),
                                                                          "type": _s("The condition.")}, ("type",)),
                                 "Pod conditions.", list_type="atomic")}, ("action",))
    return {
        f"{BATCH}.JobSpec": _obj("JobSpec describes how the job execution will look like.", {
            "activeDeadlineSeconds": _int("Seconds the job may be active before it is failed.", "int64"),
            "backoffLimit": _int("Retries before the job is marked failed (default 6)."),
            "backoffLimitPerIndex": _int("Retries per index of an Indexed job."),
            "completionMode": _s("NonIndexed (default) or Indexed."),
            "completions": _int("Successfully finished pods needed."),
            "managedBy": _s("The controller that manages the job; MultiKueue's for remote execution."),
            "manualSelector": _bool("Whether the selector is set by hand."),
            "maxFailedIndexes": _int("Failed indexes before the job fails."),
            "parallelism": _int("Most pods running at once (default 1)."),
            "podFailurePolicy": _obj("How pod failures count.", {
                "rules": _list(rule, "The rules, in order.", list_type="atomic")}, ("rules",)),
            "podReplacementPolicy": _s("TerminatingOrFailed or Failed."),
            "scheduling": _any("How the job's pods are scheduled together."),
            "selector": ref(f"{META}.LabelSelector", "Selects the job's pods; set by the server."),
            "successPolicy": _obj("When the job succeeds early.", {
                "rules": _list(_obj("A success rule.", {"succeededCount": _int("Succeeded indexes needed."),
                                                        "succeededIndexes": _s("Indexes that must succeed.")}),
                               "The rules.", list_type="atomic")}, ("rules",)),
            "suspend": _bool("True suspends the job: no pods are created and running ones are deleted."),
            "template": ref(f"{CORE}.PodTemplateSpec", "The pod the job runs."),
            "ttlSecondsAfterFinished": _int("Seconds after which a finished job is deleted."),
        }, ("template",)),
        f"{BATCH}.JobStatus": _obj("JobStatus represents the current state of a job.", {
            "active": _int("Pods pending or running."),
            "completedIndexes": _s("Completed indexes of an Indexed job."),
            "completionTime": _time("When the job completed."),
            "conditions": _list(ref(f"{BATCH}.JobCondition"), "Latest observations.", list_type="atomic"),
            "failed": _int("Pods that reached phase Failed."),
            "failedIndexes": _s("Failed indexes."),
            "ready": _int("Active pods with the Ready condition."),
            "startTime": _time("When the job controller started the job."),
            "succeeded": _int("Pods that reached phase Succeeded."),
            "terminating": _int("Pods being terminated."),
            "uncountedTerminatedPods": _obj("Finished pods not yet counted.", {
                "failed": _list({"type": "string", "default": ""}, "UIDs.", list_type="set"),
                "succeeded": _list({"type": "string", "default": ""}, "UIDs.", list_type="set")}),
        }),
    }


def complete_pod(defs: dict[str, Schema]) -> None:
    """Replace the compact pod, Job, Namespace and Event definitions by complete ones."""
    defs.update(_containers())
    defs.update(_volumes())
    defs.update(_scheduling())
    defs.update(_pod_spec())
    defs.update(_job())
    ns_status = defs[f"{CORE}.NamespaceStatus"]["properties"]
    ns_status["conditions"] = _list(_obj("A namespace condition.", {
        "lastTransitionTime": _time("When it last changed."), "message": _s("Details."), "reason": _s("Reason."),
        "status": _s("True, False or Unknown."), "type": _s("The condition.")}, ("type", "status")),
        "Current conditions.", merge_key="type", list_type="map", keys=("type",))
    event = defs[f"{CORE}.Event"]["properties"]
    event["related"] = ref(f"{CORE}.ObjectReference", "A secondary object.")
    event["series"] = _obj("Data about a series of events.", {
        "count": _int("Occurrences so far."), "lastObservedTime": ref(f"{META}.MicroTime")})
