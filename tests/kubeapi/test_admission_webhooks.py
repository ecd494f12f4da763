"""Validating admission webhooks, and mutating webhooks on UPDATE, as kube-apiserver calls them,
driven with kubectl against the dev-cluster's API (hub.kubeapi with hub.kubeapi.webhooks wired
in as ``mkhub dev-cluster`` wires it)."""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from hub.federation import tls
from hub.kubeapi.resources import BY_KIND
from hub.kubeapi.webhooks import VALIDATING, WebhookCaller, rule_matches
from hub.service.devcluster import _kube_api
from hub.service.webhook import server_context

from .conftest import Env, Kubectl

Decide = Callable[[dict[str, Any]], dict[str, Any]]


class HookServer:
    """An HTTPS admission webhook: answers each AdmissionReview with ``decide(request)``; keeps the requests."""

    def __init__(self, certs: Path) -> None:
        self.requests: list[dict[str, Any]] = []
        self.decide: dict[str, Decide] = {}
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = review["request"]
                owner.requests.append({"path": self.path, **request})
                answer = {"uid": request["uid"], "allowed": True, **owner.decide[self.path](request)}
                body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": answer})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context: ssl.SSLContext = server_context(certs)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.ca = base64.b64encode((certs / "ca.crt").read_bytes()).decode()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.server.server_address[1]}{path}"

    def calls(self, path: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] == path]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hooks(tmp_path: Path) -> Iterator[HookServer]:
    tls.make_certs(tmp_path / "certs", [])
    server = HookServer(tmp_path / "certs")
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def cluster(env: Env) -> Env:
    """The test API server with the dev-cluster's webhook callers."""
    wired = _kube_api(env.store).writer
    env.server.api.writer.mutating = wired.mutating
    env.server.api.writer.validating = wired.validating
    return env


def configuration(kind: str, name: str, hooks: HookServer, path: str, operations: list[str],
                  resources: tuple[str, ...] = ("configmaps",), **more: Any) -> str:
    hook = {
        "name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None",
        "clientConfig": {"url": hooks.url(path), "caBundle": hooks.ca},
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": operations, "resources": list(resources)}],
        **more,
    }
    return yaml.safe_dump({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                           "metadata": {"name": name.replace(".", "-")}, "webhooks": [hook]})


def config_map(name: str, **labels: str) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": name, "namespace": "default", "labels": labels}, "data": {"k": "v"}})


def add_label(key: str, value: str) -> Decide:
    def decide(request: dict[str, Any]) -> dict[str, Any]:
        labels = request["object"]["metadata"].get("labels")
        op: dict[str, Any] = ({"op": "add", "path": f"/metadata/labels/{key}", "value": value} if labels is not None
                              else {"op": "add", "path": "/metadata/labels", "value": {key: value}})
        return {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps([op]).encode()).decode()}
    return decide


def deny_unless_labelled(key: str, message: str) -> Decide:
    def decide(request: dict[str, Any]) -> dict[str, Any]:
        if key in (request["object"]["metadata"].get("labels") or {}):
            return {}
        return {"allowed": False, "status": {"message": message}}
    return decide


def test_a_validating_webhook_refuses_a_create_with_its_message(cluster: Env, kubectl: Kubectl, hooks: HookServer) -> None:
    hooks.decide["/validate"] = deny_unless_labelled("team", "every ConfigMap needs a team label")
    assert kubectl("apply", "-f", "-", stdin=configuration(
        "ValidatingWebhookConfiguration", "team.example.com", hooks, "/validate", ["CREATE"])).returncode == 0
    refused = kubectl("apply", "-f", "-", stdin=config_map("orphan"))
    assert refused.returncode != 0
    assert "Error from server (Forbidden)" in refused.stderr
    assert 'admission webhook "team.example.com" denied the request: every ConfigMap needs a team label' in refused.stderr
    assert "NotFound" in kubectl("get", "configmap", "orphan").stderr
    assert kubectl("apply", "-f", "-", stdin=config_map("owned", team="a")).returncode == 0
    assert [(c["operation"], c["name"]) for c in hooks.calls("/validate")] == [("CREATE", "orphan"), ("CREATE", "owned")]


def test_validating_webhooks_see_the_object_after_the_mutating_ones(cluster: Env, kubectl: Kubectl,
                                                                    hooks: HookServer) -> None:
    hooks.decide["/mutate"] = add_label("team", "platform")
    hooks.decide["/validate"] = deny_unless_labelled("team", "every ConfigMap needs a team label")
    for kind, name, path in (("ValidatingWebhookConfiguration", "team.example.com", "/validate"),
                             ("MutatingWebhookConfiguration", "default-team.example.com", "/mutate")):
        assert kubectl("apply", "-f", "-", stdin=configuration(kind, name, hooks, path, ["CREATE"])).returncode == 0
    done = kubectl("apply", "-f", "-", stdin=config_map("plain"))
    assert done.returncode == 0, done.stderr
    assert hooks.calls("/validate")[0]["object"]["metadata"]["labels"] == {"team": "platform"}
    stored = json.loads(kubectl("get", "configmap", "plain", "-o", "json").stdout)
    assert stored["metadata"]["labels"] == {"team": "platform"}


def test_a_validating_webhook_refuses_an_update_and_sees_the_old_object(cluster: Env, kubectl: Kubectl,
                                                                        hooks: HookServer) -> None:
    def frozen(request: dict[str, Any]) -> dict[str, Any]:
        if request["oldObject"]["data"] != request["object"]["data"]:
            return {"allowed": False, "status": {"code": 422, "reason": "Invalid", "message": "data is immutable"}}
        return {}

    hooks.decide["/frozen"] = frozen
    assert kubectl("apply", "-f", "-", stdin=config_map("settings")).returncode == 0
    assert kubectl("apply", "-f", "-", stdin=configuration(
        "ValidatingWebhookConfiguration", "frozen.example.com", hooks, "/frozen", ["UPDATE"])).returncode == 0
    refused = kubectl("patch", "configmap", "settings", "--type=merge", "-p", '{"data":{"k":"changed"}}')
    assert refused.returncode != 0
    # kubectl words a 422 Invalid as "The request is invalid: MESSAGE"
    assert refused.stderr.startswith("The request is invalid: ")
    assert 'admission webhook "frozen.example.com" denied the request: data is immutable' in refused.stderr
    assert json.loads(kubectl("get", "configmap", "settings", "-o", "json").stdout)["data"] == {"k": "v"}
    assert kubectl("label", "configmap", "settings", "touched=yes").returncode == 0  # data unchanged: allowed
    assert [c["operation"] for c in hooks.calls("/frozen")] == ["UPDATE", "UPDATE"]


def test_built_in_update_rules_refuse_before_validating_webhooks_are_called(cluster: Env, kubectl: Kubectl,
                                                                            hooks: HookServer) -> None:
    """kube-apiserver validates an update (hub.kubeapi.updaterules) before validating admission."""
    hooks.decide["/validate"] = lambda request: {"allowed": False, "status": {"message": "no updates"}}
    assert kubectl("apply", "-f", "-", stdin=configuration(
        "ValidatingWebhookConfiguration", "frozen.example.com", hooks, "/validate", ["UPDATE"])).returncode == 0
    frozen = yaml.safe_load(config_map("frozen"))
    assert kubectl("apply", "-f", "-", stdin=yaml.safe_dump({**frozen, "immutable": True})).returncode == 0
    refused = kubectl("patch", "configmap", "frozen", "-p", '{"data":{"k":"changed"}}')
    assert refused.returncode != 0
    assert 'The ConfigMap "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set' in refused.stderr
    assert hooks.calls("/validate") == []


def test_a_mutating_webhook_is_called_on_update_only_when_its_rules_say_so(cluster: Env, kubectl: Kubectl,
                                                                          hooks: HookServer) -> None:
    hooks.decide["/on-update"] = add_label("revised", "true")
    hooks.decide["/on-create"] = add_label("created", "true")
    assert kubectl("apply", "-f", "-", stdin=configuration(
        "MutatingWebhookConfiguration", "on-update.example.com", hooks, "/on-update", ["UPDATE"])).returncode == 0
    assert kubectl("apply", "-f", "-", stdin=configuration(
        "MutatingWebhookConfiguration", "on-create.example.com", hooks, "/on-create", ["CREATE"])).returncode == 0
    assert kubectl("create", "-f", "-", stdin=config_map("cm")).returncode == 0
    labels = json.loads(kubectl("get", "configmap", "cm", "-o", "json").stdout)["metadata"]["labels"]
    assert labels == {"created": "true"}
    assert kubectl("label", "configmap", "cm", "colour=blue").returncode == 0
    labels = json.loads(kubectl("get", "configmap", "cm", "-o", "json").stdout)["metadata"]["labels"]
    assert labels == {"created": "true", "colour": "blue", "revised": "true"}
    update = hooks.calls("/on-update")
    assert [c["operation"] for c in update] == ["UPDATE"] and [c["operation"] for c in hooks.calls("/on-create")] == ["CREATE"]
    assert update[0]["oldObject"]["metadata"]["labels"] == {"created": "true"}


def test_a_denial_without_a_message_or_code_reads_as_kube_apiserver_words_it(cluster: Env, hooks: HookServer) -> None:
    hooks.decide["/silent"] = lambda request: {"allowed": False}
    cluster.store.create(yaml.safe_load(configuration(
        "ValidatingWebhookConfiguration", "silent.example.com", hooks, "/silent", ["CREATE"])))
    status, _, body = cluster.raw("POST", "/api/v1/namespaces/default/configmaps", yaml.safe_load(config_map("x")))
    assert (status, body["reason"]) == (403, "Forbidden")
    assert body["message"] == 'admission webhook "silent.example.com" denied the request without explanation'


def test_status_writes_reach_only_webhooks_whose_rules_name_the_subresource() -> None:
    jobs = BY_KIND["Job"]
    rule = {"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["UPDATE"]}
    assert rule_matches({**rule, "resources": ["jobs"]}, jobs, "v1", "UPDATE")
    assert not rule_matches({**rule, "resources": ["jobs"]}, jobs, "v1", "UPDATE", "status")
    assert not rule_matches({**rule, "resources": ["*"]}, jobs, "v1", "UPDATE", "status")
    for resources in (["jobs/status"], ["jobs/*"], ["*/status"], ["*/*"]):
        assert rule_matches({**rule, "resources": resources}, jobs, "v1", "UPDATE", "status"), resources
    assert not rule_matches({**rule, "resources": ["jobs/*"]}, jobs, "v1", "UPDATE")
    assert rule_matches({**rule, "resources": ["*/*"]}, jobs, "v1", "UPDATE")
    assert not rule_matches({**rule, "resources": ["jobs"]}, jobs, "v1", "CREATE")


def test_the_dev_cluster_wires_both_kinds_of_webhook(env: Env) -> None:
    writer = _kube_api(env.store).writer
    assert isinstance(writer.mutating, WebhookCaller) and isinstance(writer.validating, WebhookCaller)
    assert writer.validating.kind == VALIDATING


def test_a_scale_reaches_no_webhook_whose_rules_name_only_the_resource(cluster: Env, kubectl: Kubectl,
                                                                      hooks: HookServer) -> None:
    """As kube-apiserver: ``kubectl scale`` writes the ``scale`` subresource; a rule for ``statefulsets``
    does not cover it (Kueue's StatefulSet webhook is not called: the template keeps its marks)."""
    hooks.decide["/sts"] = add_label("revised", "true")
    config = yaml.safe_load(configuration("MutatingWebhookConfiguration", "sts.example.com", hooks, "/sts", ["UPDATE"],
                                          ("statefulsets",)))
    config["webhooks"][0]["rules"][0]["apiGroups"] = ["apps"]
    assert kubectl("apply", "-f", "-", stdin=yaml.safe_dump(config)).returncode == 0
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default"},
           "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                    "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    assert kubectl("create", "-f", "-", stdin=yaml.safe_dump(sts)).returncode == 0
    scaled = kubectl("scale", "statefulset/db", "--replicas=0", "-n", "default")
    assert scaled.returncode == 0, scaled.stderr
    stored = json.loads(kubectl("get", "statefulset", "db", "-n", "default", "-o", "json").stdout)
    assert stored["spec"]["replicas"] == 0 and hooks.calls("/sts") == []
    assert kubectl("label", "statefulset", "db", "tier=x", "-n", "default").returncode == 0
    assert [c["operation"] for c in hooks.calls("/sts")] == ["UPDATE"]


def test_the_embedded_hubs_api_marks_a_queued_deployment_as_kueues_webhook_would(env: Env, kubectl: Kubectl) -> None:
    """``mkhub serve --kube-listen`` without a cluster: Kueue's parent webhooks run in-process
    (hub.service.parent_marks.ParentWebhooks), so the embedded hub's controllers' Pods are gated."""
    from hub.api.config import parse_configuration
    from hub.service.parent_marks import ParentWebhooks

    config = parse_configuration({"integrations": {"frameworks": ["deployment"]}})
    env.server.api.writer.mutating = ParentWebhooks(env.store, config)
    sample = Path(__file__).resolve().parents[2] / "e2e" / "kueue-examples" / "sample-deployment.yaml"
    created = kubectl("create", "-f", str(sample), "-n", "default")
    assert created.returncode == 0, created.stderr
    stored = json.loads(kubectl("get", "deployment", "nginx-deployment", "-n", "default", "-o", "json").stdout)
    marks = stored["spec"]["template"]["metadata"]
    assert marks["annotations"]["kueue.x-k8s.io/pod-suspending-parent"] == "deployment"
    assert marks["labels"]["kueue.x-k8s.io/queue-name"] == "user-queue"
    plain = yaml.safe_load(sample.read_text())
    plain["metadata"]["name"] = "unqueued"
    del plain["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    assert kubectl("create", "-f", "-", "-n", "default", stdin=yaml.safe_dump(plain)).returncode == 0
    stored = json.loads(kubectl("get", "deployment", "unqueued", "-n", "default", "-o", "json").stdout)
    assert "annotations" not in stored["spec"]["template"]["metadata"]  # not Kueue's: left alone
