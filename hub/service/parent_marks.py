"""Kueue's Deployment, StatefulSet and LeaderWorkerSet webhooks in the embedded hub.

On a cluster the hub's webhook (:mod:`hub.service.webhook`) marks a managed parent's pod template
so that its controller's Pods are gated and queued. The embedded hub has no admission webhooks:
``mkhub apply`` does the same marking here, on create and on every update (a re-applied manifest
has no marks; without them the template, hence the ReplicaSet, would change). The Pods the
simulated controllers then create go through the pod webhook's work in
:class:`hub.service.apply.Applier` (:mod:`hub.service.embedded_operators`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hub.api.config import Configuration
from hub.api.jobkinds import leaderworkerset as lws
from hub.api.jobkinds.framework import Manifest
from hub.api.jobkinds.parents import object_labels
from hub.api.jobkinds.serving import DEPLOYMENT, STATEFULSET
from hub.api.jobkinds.serving import default as serving_default
from hub.api.jobkinds.serving import managed as serving_managed
from hub.api.others import QUEUE_NAME_LABEL
from hub.store.interface import Store

FRAMEWORK_OF = {"Deployment": DEPLOYMENT, "StatefulSet": STATEFULSET, lws.KIND: lws.FRAMEWORK}


def mark_parent(config: Configuration, manifest: Manifest, namespace_labels: Mapping[str, str] | None) -> Manifest:
    """The manifest as Kueue's webhook for its kind leaves it: the templates marked when Kueue
    manages it, else unchanged."""
    kind = str(manifest.get("kind") or "")
    framework = FRAMEWORK_OF.get(kind)
    if framework is None:
        return manifest
    if framework == lws.FRAMEWORK:
        return lws.default(manifest) if lws.managed(config, manifest, namespace_labels) else manifest
    if serving_managed(config, framework, manifest, namespace_labels):
        return serving_default(framework, manifest)
    return manifest


def unmanaged_warning(config: Configuration, manifest: Manifest, ref: str) -> str | None:
    """Why a parent Kueue does not manage will not run in the embedded hub (nothing runs its Pods)."""
    framework = FRAMEWORK_OF.get(str(manifest.get("kind") or ""))
    if framework is None:
        return None
    if framework not in config.frameworks:
        return f'{ref}: the "{framework}" framework is not enabled in the hub\'s Configuration: Kueue does ' \
               "not manage it and mkhub will not run its Pods"
    if not object_labels(manifest).get(QUEUE_NAME_LABEL) and not config.manage_jobs_without_queue_name:
        return f"{ref} has no {QUEUE_NAME_LABEL} label: Kueue does not manage it and mkhub will not run its Pods"
    return None


class ParentWebhooks:
    """The same marking for the embedded hub's Kubernetes API (``mkhub serve --kube-listen``):
    ``kubectl apply`` of a Deployment, StatefulSet or LeaderWorkerSet, as the mutating webhooks
    (:class:`hub.kubeapi.writes.Webhooks`) a cluster would call. A write of a subresource
    (``kubectl scale``) passes no webhook, as on a cluster."""

    def __init__(self, store: Store, config: Configuration) -> None:
        self.store = store
        self.config = config

    def configured(self) -> bool:
        return True

    def may_call(self, res: Any, version: str, operation: str, subresource: str = "") -> bool:
        return not subresource and res.kind in FRAMEWORK_OF

    def __call__(self, res: Any, version: str, obj: Manifest, user: str = "", *, old: Manifest | None = None,
                 subresource: str = "") -> Manifest:
        if subresource or obj.get("kind") not in FRAMEWORK_OF:
            return obj
        meta = obj.get("metadata")
        namespace = str(meta.get("namespace") or "") if isinstance(meta, dict) else ""
        ns = self.store.get("Namespace", "", namespace)
        labels = ((ns or {}).get("metadata") or {}).get("labels") or {} if ns is not None else None
        return mark_parent(self.config, obj, labels)
