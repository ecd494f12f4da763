"""Built-in kinds the API server stores and serves without acting on them.

A deployment of mkhub (``manifests/``) uses Kubernetes' own kinds beside Kueue's:
ServiceAccounts, Secrets, ConfigMaps, Services, Deployments, RBAC roles and bindings,
the webhook configurations; Kueue's examples use ReplicaSets, StatefulSets, CronJobs,
PriorityClasses and ValidatingAdmissionPolicies. ``mkhub dev-cluster`` (and the hub's ``--kube-listen``)
keep them like any object — created, read, listed, watched, patched (strategic merge,
server-side apply), deleted — and check every write against the kind's schema
(:mod:`hub.api.schema.builtin_stored`: unknown fields refused with ``fieldValidation=Strict``),
so ``kubectl apply -k manifests/overlays/...`` works against them. The API server itself
runs nothing: no endpoints for Services, no authorization from RBAC objects, no CEL of
ValidatingAdmissionPolicies; in the dev-cluster, APIServices are proxied
(:mod:`hub.kubeapi.aggregator`) and Deployments, ReplicaSets, StatefulSets and CronJobs
have simulated controllers (:mod:`hub.devcluster.apps`, :mod:`hub.devcluster.cronjobs`).

One row per kind: adding a kind here serves it (discovery, REST paths, OpenAPI), once its
schema is described under :attr:`StoredKind.definition`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StoredKind:
    kind: str
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool
    definition: str  # Kubernetes' OpenAPI definition name
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    has_status: bool = False


_CORE = "io.k8s.api.core.v1"
_RBAC = "rbac.authorization.k8s.io"

STORED_KINDS: tuple[StoredKind, ...] = (
    StoredKind("ServiceAccount", "", "v1", "serviceaccounts", True, f"{_CORE}.ServiceAccount", ("sa",)),
    StoredKind("Secret", "", "v1", "secrets", True, f"{_CORE}.Secret"),
    StoredKind("ConfigMap", "", "v1", "configmaps", True, f"{_CORE}.ConfigMap", ("cm",)),
    StoredKind("Service", "", "v1", "services", True, f"{_CORE}.Service", ("svc",), ("all",), True),
    StoredKind("Deployment", "apps", "v1", "deployments", True, "io.k8s.api.apps.v1.Deployment", ("deploy",),
               ("all",), True),
    # Run by the dev-cluster's simulated controllers (hub.devcluster.apps, hub.devcluster.cronjobs); the API
    # rules kube-apiserver applies to them are in hub.kubeapi.appsrules; the three apps kinds have `scale`.
    StoredKind("ReplicaSet", "apps", "v1", "replicasets", True, "io.k8s.api.apps.v1.ReplicaSet", ("rs",), ("all",), True),
    StoredKind("StatefulSet", "apps", "v1", "statefulsets", True, "io.k8s.api.apps.v1.StatefulSet", ("sts",), ("all",),
               True),
    StoredKind("CronJob", "batch", "v1", "cronjobs", True, "io.k8s.api.batch.v1.CronJob", ("cj",), ("all",), True),
    StoredKind("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", False,
               "io.k8s.api.scheduling.v1.PriorityClass", ("pc",)),
    StoredKind("ClusterRole", _RBAC, "v1", "clusterroles", False, "io.k8s.api.rbac.v1.ClusterRole"),
    StoredKind("ClusterRoleBinding", _RBAC, "v1", "clusterrolebindings", False, "io.k8s.api.rbac.v1.ClusterRoleBinding"),
    StoredKind("Role", _RBAC, "v1", "roles", True, "io.k8s.api.rbac.v1.Role"),
    StoredKind("RoleBinding", _RBAC, "v1", "rolebindings", True, "io.k8s.api.rbac.v1.RoleBinding"),
    # mkhub dev-cluster also calls their webhooks on create and update, as an API server does (hub.kubeapi.webhooks).
    StoredKind("MutatingWebhookConfiguration", "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
               False, "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration"),
    StoredKind("ValidatingWebhookConfiguration", "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
               False, "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration"),
    # Stored only: no CEL is evaluated.
    StoredKind("ValidatingAdmissionPolicy", "admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", False,
               "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy", (), ("api-extensions",), True),
    StoredKind("ValidatingAdmissionPolicyBinding", "admissionregistration.k8s.io", "v1",
               "validatingadmissionpolicybindings", False,
               "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding", (), ("api-extensions",)),
    # mkhub dev-cluster proxies them and sets their Available condition (hub.kubeapi.aggregator).
    StoredKind("APIService", "apiregistration.k8s.io", "v1", "apiservices", False,
               "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService", (), ("api-extensions",), True),
    # Dynamic Resource Allocation: the hub counts the devices pods claim through them (hub.controllers.dra);
    # no driver allocates anything here.
    StoredKind("DeviceClass", "resource.k8s.io", "v1", "deviceclasses", False, "io.k8s.api.resource.v1.DeviceClass"),
    StoredKind("ResourceClaim", "resource.k8s.io", "v1", "resourceclaims", True, "io.k8s.api.resource.v1.ResourceClaim",
               (), (), True),
    StoredKind("ResourceClaimTemplate", "resource.k8s.io", "v1", "resourceclaimtemplates", True,
               "io.k8s.api.resource.v1.ResourceClaimTemplate"),
)

BY_KIND: dict[str, StoredKind] = {k.kind: k for k in STORED_KINDS}
