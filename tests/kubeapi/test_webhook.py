"""Kueue's Job webhook (hub.service.webhook) on recorded AdmissionReview v1 requests, and the
dev-cluster's side of admission (hub.kubeapi.webhooks): rules, selectors, the HTTPS call,
failurePolicy, denials and patches."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hub.api.config import parse_configuration
from hub.federation import tls
from hub.kubeapi.errors import ApiError
from hub.kubeapi.resources import BY_KIND
from hub.kubeapi.webhooks import WebhookCaller, rule_matches, selector_matches
from hub.service.apply import ensure_namespace
from hub.service.webhook import Getter, ReviewError, Webhook, review, server_context
from hub.store import SQLiteStore
from hub.store.interface import Object

from .conftest import make_store

FIXTURES = Path(__file__).parent / "webhook"

STORED: dict[tuple[str, str, str], Object] = {
    ("LocalQueue", "team-a", "user-queue"): {"spec": {"clusterQueue": "cluster-queue"}},
    ("ClusterQueue", "", "cluster-queue"): {"spec": {}},
    ("LocalQueue", "team-a", "mk-queue"): {"spec": {"clusterQueue": "mk-cq"}},
    ("ClusterQueue", "", "mk-cq"): {"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "mk-check"}]}}},
    ("AdmissionCheck", "", "mk-check"): {"spec": {"controllerName": "kueue.x-k8s.io/multikueue"}},
}


def lookup(kind: str, namespace: str, name: str) -> Object | None:
    return STORED.get((kind, namespace, name))


def answer(fixture: str, get: Getter = lookup) -> dict[str, Any]:
    request = json.loads((FIXTURES / fixture).read_text())
    out = review(request, get)
    assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
    assert out["response"]["uid"] == request["request"]["uid"]
    return out["response"]  # type: ignore[no-any-return]


def patch_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    assert response["allowed"] is True
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    return json.loads(base64.b64decode(response["patch"]))  # type: ignore[no-any-return]


def test_a_queued_job_is_created_suspended() -> None:
    assert patch_of(answer("create-queued-job.json")) == [{"op": "add", "path": "/spec/suspend", "value": True}]
    assert patch_of(answer("create-queued-job-suspend-false.json")) == [
        {"op": "replace", "path": "/spec/suspend", "value": True}
    ]


def test_a_job_of_a_multikueue_queue_gets_managed_by() -> None:
    assert patch_of(answer("create-multikueue-job.json")) == [
        {"op": "add", "path": "/spec/managedBy", "value": "kueue.x-k8s.io/multikueue"},
        {"op": "add", "path": "/spec/suspend", "value": True},
    ]
    # a Job naming its own manager keeps it (Kueue defaults managedBy only when unset)
    assert patch_of(answer("create-job-managed-by-other.json")) == [{"op": "add", "path": "/spec/suspend", "value": True}]


def test_a_job_naming_its_own_controller_is_handed_to_multikueue() -> None:
    # Kueue's CanDefaultManagedBy: unset, or kubernetes.io/job-controller (the same as unset).
    request = json.loads((FIXTURES / "create-multikueue-job.json").read_text())
    request["request"]["object"]["spec"]["managedBy"] = "kubernetes.io/job-controller"
    assert patch_of(review(request, lookup)["response"]) == [
        {"op": "replace", "path": "/spec/managedBy", "value": "kueue.x-k8s.io/multikueue"},
        {"op": "add", "path": "/spec/suspend", "value": True},
    ]


def jobset_review(queue: str, managed_by: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "busybox"}]}}}}}]}
    if managed_by is not None:
        spec["managedBy"] = managed_by
    request = json.loads((FIXTURES / "create-multikueue-job.json").read_text())
    request["request"].update({
        "kind": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"},
        "resource": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "resource": "jobsets"},
        "object": {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                   "metadata": {"name": "js", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": queue}},
                   "spec": spec},
    })
    return request


def test_jobsets_are_suspended_and_handed_to_multikueue_as_jobs_are() -> None:
    jobsets = parse_configuration({"integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]}})
    assert patch_of(review(jobset_review("user-queue"), lookup, jobsets)["response"]) == [
        {"op": "add", "path": "/spec/suspend", "value": True}]
    assert patch_of(review(jobset_review("mk-queue", "jobset.sigs.k8s.io/jobset-controller"), lookup, jobsets)["response"]) == [
        {"op": "replace", "path": "/spec/managedBy", "value": "kueue.x-k8s.io/multikueue"},
        {"op": "add", "path": "/spec/suspend", "value": True}]
    assert patch_of(review(jobset_review("mk-queue", "example.com/other"), lookup, jobsets)["response"]) == [
        {"op": "add", "path": "/spec/suspend", "value": True}]
    # Without the jobset framework (the default Configuration), JobSets are not Kueue's.
    assert patch_of(review(jobset_review("user-queue"), lookup)["response"]) == []


def test_a_queue_unknown_to_the_hub_is_no_multikueue_queue() -> None:
    assert patch_of(answer("create-multikueue-job.json", lambda kind, ns, name: None)) == [
        {"op": "add", "path": "/spec/suspend", "value": True}
    ]


def test_a_bad_queue_label_is_refused_naming_the_field() -> None:
    response = answer("create-bad-queue-label.json")
    assert response["allowed"] is False and "patch" not in response
    assert response["status"]["code"] == 403
    message = response["status"]["message"]
    assert message.startswith('metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "Not_A_Name": ')


def test_jobs_kueue_does_not_manage_and_updates_are_left_alone() -> None:
    assert answer("create-unqueued-job.json") == {"uid": "705ab4f5-6393-11e8-b7cc-42010a800007", "allowed": True}
    assert patch_of(answer("update-queued-job.json")) == []  # the hub unsuspends Jobs with updates


def _review_with(fixture: str, config: dict[str, Any], namespaces: dict[str, dict[str, str]]) -> dict[str, Any]:
    def get(kind: str, namespace: str, name: str) -> Object | None:
        if kind == "Namespace":
            return {"metadata": {"name": name, "labels": namespaces[name]}} if name in namespaces else None
        return lookup(kind, namespace, name)

    request = json.loads((FIXTURES / fixture).read_text())
    return review(request, get, parse_configuration(config))["response"]  # type: ignore[no-any-return]


def test_the_configuration_decides_which_jobs_the_webhook_suspends() -> None:
    suspend = [{"op": "add", "path": "/spec/suspend", "value": True}]
    # manageJobsWithoutQueueName: an unqueued Job is suspended too, in a selected namespace only
    assert patch_of(_review_with("create-unqueued-job.json", {"manageJobsWithoutQueueName": True}, {})) == suspend
    system = {"manageJobsWithoutQueueName": True, "namespace": "team-a"}
    assert patch_of(_review_with("create-unqueued-job.json", system, {})) == []
    # the selector is respected even for a queued Job; batch/job left out of the frameworks is never touched
    opt_in = {"managedJobsNamespaceSelector": {"matchLabels": {"kueue": "yes"}}}
    assert patch_of(_review_with("create-queued-job.json", opt_in, {"team-a": {}})) == []
    assert patch_of(_review_with("create-queued-job.json", opt_in, {"team-a": {"kueue": "yes"}})) == suspend
    assert patch_of(_review_with("create-queued-job.json", {"integrations": {"frameworks": ["pod"]}}, {})) == []


@pytest.mark.parametrize(
    "body, why",
    [
        ({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1", "request": {"uid": "x"}}, "v1beta1"),
        ({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {}}, "uid"),
        ({"kind": "Job"}, "AdmissionReview"),
        ([], "AdmissionReview"),
    ],
)
def test_what_is_no_admission_review_is_refused(body: Any, why: str) -> None:
    with pytest.raises(ReviewError, match=why):
        review(body, lookup)


# --- rules and selectors of a MutatingWebhookConfiguration --------------------------------------


def test_rules_match_group_version_operation_resource_and_scope() -> None:
    jobs = BY_KIND["Job"]
    rule = {"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["jobs"]}
    assert rule_matches(rule, jobs, "v1", "CREATE")
    assert not rule_matches(rule, jobs, "v1", "UPDATE")
    assert not rule_matches({**rule, "apiGroups": [""]}, jobs, "v1", "CREATE")
    assert not rule_matches({**rule, "resources": ["pods"]}, jobs, "v1", "CREATE")
    assert not rule_matches({**rule, "scope": "Cluster"}, jobs, "v1", "CREATE")
    star = {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}
    assert rule_matches(star, jobs, "v1", "CREATE")


def test_label_selectors() -> None:
    labels = {"kubernetes.io/metadata.name": "team-a", "kueue.x-k8s.io/queue-name": "q"}
    assert selector_matches(None, labels) and selector_matches({}, labels)
    assert selector_matches({"matchLabels": {"kubernetes.io/metadata.name": "team-a"}}, labels)
    assert not selector_matches({"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}, labels)
    exists = {"matchExpressions": [{"key": "kueue.x-k8s.io/queue-name", "operator": "Exists"}]}
    assert selector_matches(exists, labels) and not selector_matches(exists, {})
    not_in = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["team-a"]}]}
    assert not selector_matches(not_in, labels) and selector_matches(not_in, {"kubernetes.io/metadata.name": "b"})


# --- the HTTPS call, end to end over real sockets -----------------------------------------------


class Served:
    def __init__(self, certs: Path, get: Getter) -> None:
        self.loop = asyncio.new_event_loop()
        self.hook = Webhook(get)
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.port = asyncio.run_coroutine_threadsafe(
            self.hook.start("127.0.0.1", 0, server_context(certs)), self.loop
        ).result(30)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.hook.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def certs(tmp_path: Path) -> Path:
    tls.make_certs(tmp_path / "certs", [])
    return tmp_path / "certs"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = make_store(tmp_path / "cluster.db")
    ensure_namespace(s, "team-a")
    try:
        yield s
    finally:
        s.close()


def configuration(url: str, ca: bytes, **hook: Any) -> Object:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "mkhub-job-webhook"},
        "webhooks": [{
            "name": "mjob.kb.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "clientConfig": {"url": url, "caBundle": base64.b64encode(ca).decode()},
            "rules": [{"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["jobs"]}],
            "objectSelector": {"matchExpressions": [{"key": "kueue.x-k8s.io/queue-name", "operator": "Exists"}]},
            **hook,
        }],
    }


def a_job(name: str, queue: str | None) -> Object:
    request = json.loads((FIXTURES / "create-queued-job.json").read_text())["request"]["object"]
    request["metadata"]["name"] = name
    if queue is None:
        request["metadata"].pop("labels")
    else:
        request["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = queue
    return request  # type: ignore[no-any-return]


def test_the_dev_cluster_calls_the_webhook_and_applies_its_patch(certs: Path, store: SQLiteStore) -> None:
    served = Served(certs, lookup)
    try:
        ca = (certs / "ca.crt").read_bytes()
        store.create(configuration(f"https://127.0.0.1:{served.port}/mutate-batch-v1-job", ca))
        caller = WebhookCaller(store)
        jobs = BY_KIND["Job"]
        out = caller(jobs, "v1", a_job("sample", "user-queue"))
        assert out["spec"]["suspend"] is True
        out = caller(jobs, "v1", a_job("remote", "mk-queue"))
        assert (out["spec"]["suspend"], out["spec"]["managedBy"]) == (True, "kueue.x-k8s.io/multikueue")
        plain = a_job("plain", None)
        assert caller(jobs, "v1", plain) == plain  # not selected: never sent
        with pytest.raises(ApiError) as refused:
            caller(jobs, "v1", a_job("bad", "Not_A_Name"))
        assert refused.value.code == 403
        assert refused.value.message.startswith(
            'admission webhook "mjob.kb.io" denied the request: metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value'
        )
    finally:
        served.close()


def test_a_webhook_with_another_ca_is_not_trusted(certs: Path, store: SQLiteStore, tmp_path: Path) -> None:
    served = Served(certs, lookup)
    try:
        other, _ = tls.make_ca("another CA")
        store.create(configuration(f"https://127.0.0.1:{served.port}/mutate-batch-v1-job", other))
        with pytest.raises(ApiError) as failed:
            WebhookCaller(store)(BY_KIND["Job"], "v1", a_job("sample", "user-queue"))
        assert failed.value.code == 500 and 'failed calling webhook "mjob.kb.io"' in failed.value.message
    finally:
        served.close()


def test_an_unreachable_webhook_fails_the_create_unless_its_policy_is_ignore(certs: Path, store: SQLiteStore) -> None:
    from hub.demo.processes import free_port

    ca = (certs / "ca.crt").read_bytes()
    url = f"https://127.0.0.1:{free_port()}/mutate-batch-v1-job"
    store.create(configuration(url, ca, timeoutSeconds=2))
    caller = WebhookCaller(store)
    with pytest.raises(ApiError) as failed:
        caller(BY_KIND["Job"], "v1", a_job("sample", "user-queue"))
    assert failed.value.code == 500 and failed.value.reason == "InternalError"
    assert failed.value.message.startswith('Internal error occurred: failed calling webhook "mjob.kb.io": failed to call webhook')
    current = store.get("MutatingWebhookConfiguration", "", "mkhub-job-webhook")
    assert current is not None
    current["webhooks"][0]["failurePolicy"] = "Ignore"
    store.update(current)
    job = a_job("sample", "user-queue")
    assert caller(BY_KIND["Job"], "v1", job) == job


def test_a_job_controlled_by_a_managed_jobset_is_left_to_it() -> None:
    # Kueue's IsOwnerManagedByKueue: the JobSet's Workload accounts for its Jobs.
    request = json.loads((FIXTURES / "create-queued-job.json").read_text())
    request["request"]["object"]["metadata"]["ownerReferences"] = [
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js", "uid": "u", "controller": True}]
    jobsets = parse_configuration({"integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]}})
    assert patch_of(review(request, lookup, jobsets)["response"]) == []
    # Without the jobset framework, the JobSet is not Kueue's, so its queued Job is.
    assert patch_of(review(request, lookup)["response"]) == [{"op": "add", "path": "/spec/suspend", "value": True}]
