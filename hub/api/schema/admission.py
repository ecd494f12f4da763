"""The documentation schema of ``admissionregistration.k8s.io/v1`` MutatingWebhookConfiguration
(stored by ``mkhub dev-cluster``, whose webhooks it calls: :mod:`hub.kubeapi.webhooks`)."""

from __future__ import annotations

from typing import Any

from .builtin import _kind, _list, _list_kind

ADMISSION = "io.k8s.api.admissionregistration.v1"
Schema = dict[str, Any]


def admission_definitions() -> dict[str, Schema]:
    group = "admissionregistration.k8s.io"
    loose = {"description": "See Kubernetes' admissionregistration.k8s.io/v1 MutatingWebhook.", "type": "object",
             "x-kubernetes-preserve-unknown-fields": True}
    return {
        f"{ADMISSION}.MutatingWebhookConfiguration": _kind(
            group, "v1", "MutatingWebhookConfiguration", "Admission webhooks that may change objects.", {
                "webhooks": _list(loose, "The webhooks, called in order.", merge_key="name", list_type="map",
                                  keys=("name",)),
            }),
        f"{ADMISSION}.MutatingWebhookConfigurationList": _list_kind(
            group, "v1", "MutatingWebhookConfiguration", f"{ADMISSION}.MutatingWebhookConfiguration"),
    }

