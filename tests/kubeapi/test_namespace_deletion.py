"""Namespace deletion as kube-apiserver and the namespace controller do it, driven with kubectl:
spec.finalizers ["kubernetes"], Terminating while content with finalizers remains (with the
controller's conditions), the finalize subresource, the Namespace's own metadata finalizers."""

from __future__ import annotations

import json
from typing import Any

import yaml

from .conftest import Env, Kubectl


def get(kubectl: Kubectl, *args: str) -> Any:
    done = kubectl("get", *args, "-o", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def apply(kubectl: Kubectl, *objects: dict[str, Any]) -> None:
    done = kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))
    assert done.returncode == 0, done.stderr


def config_map(name: str, namespace: str = "team", finalizers: tuple[str, ...] = ()) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def wait_deleted(kubectl: Kubectl, *what: str) -> None:
    done = kubectl("wait", "--for=delete", *what, "--timeout=60s", timeout=90)
    assert done.returncode == 0, done.stderr


def conditions(ns: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in ns["status"].get("conditions") or []}


def test_a_namespace_gets_the_kubernetes_finalizer_and_updates_keep_it(env: Env, kubectl: Kubectl) -> None:
    assert kubectl("create", "namespace", "team").returncode == 0
    ns = get(kubectl, "namespace", "team")
    assert ns["spec"]["finalizers"] == ["kubernetes"] and "finalizers" not in ns["metadata"]
    assert kubectl("patch", "namespace", "team", "--type=merge", "-p", '{"spec":{"finalizers":[]}}').returncode == 0
    assert kubectl("label", "namespace", "team", "tier=gold").returncode == 0
    ns = get(kubectl, "namespace", "team")
    assert ns["spec"]["finalizers"] == ["kubernetes"] and ns["metadata"]["labels"]["tier"] == "gold"


def test_content_with_a_finalizer_keeps_the_namespace_terminating_until_it_is_gone(env: Env, kubectl: Kubectl) -> None:
    assert kubectl("create", "namespace", "team").returncode == 0
    apply(kubectl, config_map("plain"), config_map("held", finalizers=("example.com/hold",)))
    assert kubectl("delete", "namespace", "team", "--wait=false").returncode == 0
    wait_deleted(kubectl, "configmap/plain", "-n", "team")
    held = get(kubectl, "configmap", "held", "-n", "team")
    assert held["metadata"]["deletionTimestamp"]  # deleted by the namespace controller, held by its finalizer
    ns = get(kubectl, "namespace", "team")
    assert ns["status"]["phase"] == "Terminating" and ns["spec"]["finalizers"] == ["kubernetes"]
    assert "finalizers" not in ns["metadata"]
    refused = kubectl("apply", "-f", "-", stdin=yaml.safe_dump(config_map("late")))
    assert refused.returncode != 0 and "because it is being terminated" in refused.stderr
    done = kubectl("wait", "namespace/team", "--for=condition=NamespaceFinalizersRemaining", "--timeout=60s", timeout=90)
    assert done.returncode == 0, done.stderr
    found = conditions(get(kubectl, "namespace", "team"))
    assert found["NamespaceContentRemaining"] == (
        "True", "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances")
    assert found["NamespaceFinalizersRemaining"] == (
        "True", "SomeFinalizersRemain",
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances")
    assert found["NamespaceDeletionContentFailure"][0] == "False"
    released = kubectl("patch", "configmap", "held", "-n", "team", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    assert released.returncode == 0, released.stderr
    wait_deleted(kubectl, "namespace/team")
    assert env.store.get("ConfigMap", "team", "held") is None


def test_the_namespace_waits_for_its_own_metadata_finalizers(env: Env, kubectl: Kubectl) -> None:
    apply(kubectl, {"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "team", "finalizers": ["example.com/ns-hold"]}}, config_map("plain"))
    assert kubectl("delete", "namespace", "team", "--wait=false").returncode == 0
    wait_deleted(kubectl, "configmap/plain", "-n", "team")
    done = kubectl("wait", "namespace/team", "--for=condition=NamespaceContentRemaining=False", "--timeout=60s", timeout=90)
    assert done.returncode == 0, done.stderr
    ns = get(kubectl, "namespace", "team")  # emptied: the controller's finalizer is done, the user's is not
    assert ns["spec"]["finalizers"] == [] and ns["metadata"]["finalizers"] == ["example.com/ns-hold"]
    assert ns["status"]["phase"] == "Terminating"
    released = kubectl("patch", "namespace", "team", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    assert released.returncode == 0, released.stderr
    wait_deleted(kubectl, "namespace/team")


def test_the_finalize_subresource_releases_a_namespace_that_content_holds(env: Env, kubectl: Kubectl) -> None:
    assert kubectl("create", "namespace", "team").returncode == 0
    apply(kubectl, config_map("held", finalizers=("example.com/hold",)))
    assert kubectl("delete", "namespace", "team", "--wait=false").returncode == 0
    done = kubectl("wait", "namespace/team", "--for=condition=NamespaceFinalizersRemaining", "--timeout=60s", timeout=90)
    assert done.returncode == 0, done.stderr
    ns = get(kubectl, "namespace", "team")
    ns["spec"]["finalizers"] = []
    forced = kubectl("replace", "--raw", "/api/v1/namespaces/team/finalize", "-f", "-", stdin=json.dumps(ns))
    assert forced.returncode == 0, forced.stderr
    assert "NotFound" in kubectl("get", "namespace", "team").stderr  # gone at once, as the API server does


def test_a_namespace_without_finalizers_goes_at_once(env: Env, kubectl: Kubectl) -> None:
    assert kubectl("create", "namespace", "team").returncode == 0
    ns = get(kubectl, "namespace", "team")
    ns["spec"]["finalizers"] = []
    assert kubectl("replace", "--raw", "/api/v1/namespaces/team/finalize", "-f", "-", stdin=json.dumps(ns)).returncode == 0
    assert get(kubectl, "namespace", "team")["spec"]["finalizers"] == []
    assert kubectl("delete", "namespace", "team", "--wait=false").returncode == 0
    assert "NotFound" in kubectl("get", "namespace", "team").stderr
