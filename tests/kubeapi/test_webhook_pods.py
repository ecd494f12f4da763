"""Kueue's pod webhook (hub.service.webhook at /mutate--v1-pod) on AdmissionReview v1 requests: a
managed Pod gets Kueue's defaults as a JSONPatch, an invalid one is refused (create and update),
others pass untouched; and the manifest registers it as Kueue's config does."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from hub.api.config import parse_configuration
from hub.api.jobkinds.pod import MANAGED_LABEL, POD, POD_FINALIZER, SCHEDULING_GATE
from hub.service.webhook import review, webhook_path
from hub.store.interface import Object

ROOT = Path(__file__).resolve().parents[2]
PODS_ON = parse_configuration({"integrations": {"frameworks": ["batch/job", "pod"]}})
POD_OBJ: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
    "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]},
}


def nothing(kind: str, namespace: str, name: str) -> Object | None:
    return None


def ask(obj: dict[str, Any], operation: str = "CREATE", old: dict[str, Any] | None = None,
        config: Any = PODS_ON) -> dict[str, Any]:
    request: dict[str, Any] = {"uid": "u1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                               "operation": operation, "namespace": "team-a", "object": obj}
    if old is not None:
        request["oldObject"] = old
    out = review({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}, nothing, config)
    return out["response"]  # type: ignore[no-any-return]


def patched(obj: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    """RFC 6902 add/replace/remove on maps, as the API server applies the webhook's patch."""
    assert response["allowed"] is True
    out = copy.deepcopy(obj)
    for op in json.loads(base64.b64decode(response.get("patch") or "W10=")):
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        target = out
        for p in parents:
            target = target[p]
        if op["op"] == "remove":
            del target[last]
        else:
            target[last] = op["value"]
    return out


def test_the_pod_webhook_is_at_kueues_path() -> None:
    assert webhook_path(POD) == "/mutate--v1-pod"


def test_a_managed_pod_is_gated_and_marked() -> None:
    out = patched(POD_OBJ, ask(POD_OBJ))
    assert out["spec"]["schedulingGates"] == [{"name": SCHEDULING_GATE}]
    assert out["metadata"]["labels"][MANAGED_LABEL] == "true"
    assert out["metadata"]["finalizers"] == [POD_FINALIZER]


def test_a_pod_created_with_generate_name_is_gated_and_left_unnamed() -> None:
    # kube-apiserver generates the name after mutating admission: Kueue's webhook sees none
    unnamed = copy.deepcopy(POD_OBJ)
    del unnamed["metadata"]["name"]
    unnamed["metadata"]["generateName"] = "kueue-sleep-"
    out = patched(unnamed, ask(unnamed))
    assert out["spec"]["schedulingGates"] == [{"name": SCHEDULING_GATE}]
    assert out["metadata"]["finalizers"] == [POD_FINALIZER]
    assert "name" not in out["metadata"] and out["metadata"]["generateName"] == "kueue-sleep-"


def test_pods_kueue_does_not_manage_pass_untouched() -> None:
    assert "patch" not in ask(POD_OBJ, config=parse_configuration({}))  # the pod framework is off
    owned = copy.deepcopy(POD_OBJ)
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u",
                                             "controller": True}]
    response = ask(owned)
    assert response["allowed"] is True and "patch" not in response


def test_an_invalid_pod_is_refused_on_create_and_a_running_pods_queue_is_immutable() -> None:
    bad = copy.deepcopy(POD_OBJ)
    bad["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] = "g"
    response = ask(bad)
    assert response["allowed"] is False and response["status"]["code"] == 403
    assert "kueue.x-k8s.io/pod-group-total-count" in response["status"]["message"]
    moved = copy.deepcopy(POD_OBJ)
    moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other"
    response = ask(moved, "UPDATE", old=POD_OBJ)  # ungated: it runs
    assert response["allowed"] is False and "field is immutable" in response["status"]["message"]


@pytest.mark.parametrize("selector_label", ["kueue.x-k8s.io/queue-name", "kueue.x-k8s.io/pod-group-name"])
def test_the_manifest_sends_pods_with_kueues_labels_to_the_pod_path(selector_label: str) -> None:
    docs = list(yaml.safe_load_all((ROOT / "manifests/base/webhook.yaml").read_text()))
    hooks = [h for d in docs for h in d["webhooks"] if h["clientConfig"]["service"]["path"] == "/mutate--v1-pod"]
    selected = [h for h in hooks if {"key": selector_label, "operator": "Exists"} in h["objectSelector"]["matchExpressions"]]
    assert selected and all(r["resources"] == ["pods"] and set(r["operations"]) == {"CREATE", "UPDATE"}
                            for h in selected for r in h["rules"])
