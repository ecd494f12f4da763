"""Kueue's AppWrapper and SparkApplication webhooks as the hub serves them: suspended on create,
MultiKueue's managedBy for an AppWrapper (none for a SparkApplication: Kueue has no adapter for it),
a component the AppWrapper owns left alone, and the paths manifests/base/webhook.yaml registers."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from hub.api.config import parse_configuration
from hub.api.jobkinds import ADAPTERS
from hub.service.webhook import review, webhook_path

from .test_webhook import FIXTURES, lookup, patch_of

ROOT = Path(__file__).resolve().parents[2]
APPWRAPPERS = parse_configuration({"integrations": {"frameworks": ["batch/job", "workload.codeflare.dev/appwrapper"]}})
SPARK = parse_configuration({"integrations": {"frameworks": ["batch/job", "sparkoperator.k8s.io/sparkapplication"]},
                             "featureGates": {"SparkApplicationIntegration": True}})


def request_for(obj: dict[str, Any], group: str, version: str, resource: str) -> dict[str, Any]:
    request = json.loads((FIXTURES / "create-multikueue-job.json").read_text())
    request["request"].update({"kind": {"group": group, "version": version, "kind": obj["kind"]},
                               "resource": {"group": group, "version": version, "resource": resource},
                               "object": obj})
    return request


def appwrapper(queue: str) -> dict[str, Any]:
    return {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
            "metadata": {"name": "aw", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": queue}},
            "spec": {"components": [{"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}}


def test_appwrappers_are_suspended_and_handed_to_multikueue() -> None:
    aw = request_for(appwrapper("user-queue"), "workload.codeflare.dev", "v1beta2", "appwrappers")
    assert patch_of(review(aw, lookup, APPWRAPPERS)["response"]) == [{"op": "add", "path": "/spec/suspend", "value": True}]
    mk = request_for(appwrapper("mk-queue"), "workload.codeflare.dev", "v1beta2", "appwrappers")
    assert patch_of(review(mk, lookup, APPWRAPPERS)["response"]) == [
        {"op": "add", "path": "/spec/managedBy", "value": "kueue.x-k8s.io/multikueue"},
        {"op": "add", "path": "/spec/suspend", "value": True}]
    assert patch_of(review(aw, lookup)["response"]) == []  # not without its framework


def test_a_job_an_appwrapper_owns_is_not_queued_on_its_own() -> None:
    request = json.loads((FIXTURES / "create-queued-job.json").read_text())
    owned = copy.deepcopy(request)
    owned["request"]["object"]["metadata"]["ownerReferences"] = [
        {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "name": "aw", "uid": "u", "controller": True}]
    assert patch_of(review(owned, lookup, APPWRAPPERS)["response"]) == []
    # Kueue's rule needs the owner's framework enabled: without it the Job is queued as any other.
    without = parse_configuration({"integrations": {"frameworks": ["batch/job"]}})
    assert patch_of(review(owned, lookup, without)["response"]) == [{"op": "add", "path": "/spec/suspend", "value": True}]


def test_spark_applications_are_suspended_without_managed_by() -> None:
    app = yaml.safe_load((ROOT / "e2e" / "kueue-examples" / "sample-sparkapplication.yaml").read_text())
    app["metadata"].update(namespace="team-a", labels={"kueue.x-k8s.io/queue-name": "mk-queue"})
    request = request_for(app, "sparkoperator.k8s.io", "v1beta2", "sparkapplications")
    assert patch_of(review(request, lookup, SPARK)["response"]) == [{"op": "add", "path": "/spec/suspend", "value": True}]


def test_webhook_yaml_registers_kueues_paths_for_both() -> None:
    hooks = yaml.safe_load((ROOT / "manifests/base/webhook.yaml").read_text())["webhooks"]
    paths = {h["clientConfig"]["service"]["path"]: h["rules"][0] for h in hooks}
    for framework, resource in (("workload.codeflare.dev/appwrapper", "appwrappers"),
                                ("sparkoperator.k8s.io/sparkapplication", "sparkapplications")):
        adapter = ADAPTERS[framework]
        rule = paths[webhook_path(adapter)]
        assert rule["resources"] == [resource] and rule["operations"] == ["CREATE"]
        assert f"{rule['apiGroups'][0]}/{rule['apiVersions'][0]}" == adapter.api_version
    assert webhook_path(ADAPTERS["workload.codeflare.dev/appwrapper"]) == "/mutate-workload-codeflare-dev-v1beta2-appwrapper"
