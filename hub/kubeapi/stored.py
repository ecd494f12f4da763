"""Built-in kinds the API server stores and serves without acting on them.

A deployment of mkhub (``manifests/``) uses Kubernetes' own kinds beside Kueue's:
ServiceAccounts, Secrets, ConfigMaps, Services, Deployments, RBAC roles and bindings,
the webhook configurations. ``mkhub dev-cluster`` (and the hub's ``--kube-listen``)
keep them like any object — created, read, listed, watched, patched (strategic merge,
server-side apply), deleted — and check every write against the kind's schema
(:mod:`hub.api.schema.builtin_stored`: unknown fields refused with ``fieldValidation=Strict``),
so ``kubectl apply -k manifests/overlays/...`` works against them. Nothing runs: no
pods for Deployments, no endpoints for Services, no authorization from RBAC objects
(APIServices are the exception in the dev-cluster: see :mod:`hub.kubeapi.aggregator`).

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
    StoredKind("ClusterRole", _RBAC, "v1", "clusterroles", False, "io.k8s.api.rbac.v1.ClusterRole"),
    StoredKind("ClusterRoleBinding", _RBAC, "v1", "clusterrolebindings", False, "io.k8s.api.rbac.v1.ClusterRoleBinding"),
    StoredKind("Role", _RBAC, "v1", "roles", True, "io.k8s.api.rbac.v1.Role"),
    StoredKind("RoleBinding", _RBAC, "v1", "rolebindings", True, "io.k8s.api.rbac.v1.RoleBinding"),
    # mkhub dev-cluster also calls their webhooks on create and update, as an API server does (hub.kubeapi.webhooks).
    StoredKind("MutatingWebhookConfiguration", "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
               False, "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration"),
    StoredKind("ValidatingWebhookConfiguration", "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
               False, "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration"),
    # mkhub dev-cluster proxies them and sets their Available condition (hub.kubeapi.aggregator).
    StoredKind("APIService", "apiregistration.k8s.io", "v1", "apiservices", False,
               "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService", (), ("api-extensions",), True),
)

BY_KIND: dict[str, StoredKind] = {k.kind: k for k in STORED_KINDS}
