"""Update rules of the built-in kinds as kube-apiserver enforces them (pkg/apis/core/validation
ValidatePodUpdate, ValidateConfigMapUpdate, ValidateSecretUpdate, ValidateServiceUpdate,
ValidateEventUpdate; apps' Deployment strategy): refused with 422 Invalid naming the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hub.kubeapi.updaterules import prepare_update, update_errors

from .conftest import Env, Kubectl

MERGE = "application/merge-patch+json"
PODS = "/api/v1/namespaces/default/pods"


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u-1"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}], **spec},
    }


def changed(obj: dict[str, Any], **spec: Any) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    new["spec"].update(spec)
    return new


def pod_errs(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [str(e) for e in update_errors("", "Pod", old, new)]


# --- Pod -------------------------------------------------------------------------------------


def test_pod_image_labels_and_equal_spec_are_accepted() -> None:
    stored = pod(initContainers=[{"name": "i", "image": "init"}])
    new = changed(stored, containers=[{"name": "c", "image": "busybox:2"}], initContainers=[{"name": "i", "image": "init:2"}])
    new["metadata"]["labels"] = {"a": "b"}
    assert pod_errs(stored, new) == []
    assert pod_errs(stored, changed(stored, nodeSelector={}, tolerations=None)) == []  # Go's zero values


@pytest.mark.parametrize("field,value", [
    ("nodeName", "n1"), ("restartPolicy", "Always"), ("nodeSelector", {"a": "b"}), ("serviceAccountName", "sa"),
    ("containers", [{"name": "c", "image": "busybox", "command": ["sleep"]}]),
])
def test_pod_spec_is_otherwise_immutable(field: str, value: Any) -> None:
    stored = pod()
    errs = pod_errs(stored, changed(stored, **{field: value}))
    assert len(errs) == 1 and errs[0].startswith("spec: Forbidden: pod updates may not change fields other than "
                                                 "`spec.containers[*].image`,`spec.initContainers[*].image`,")
    assert f"changed: spec.{field}" in errs[0] and "\n" not in errs[0]


def test_pod_containers_may_not_be_added_and_images_must_be_set() -> None:
    stored = pod()
    added = changed(stored, containers=[{"name": "c", "image": "busybox"}, {"name": "d", "image": "x"}])
    assert pod_errs(stored, added) == ["spec.containers: Forbidden: pod updates may not add or remove containers"]
    assert pod_errs(stored, changed(stored, containers=[{"name": "c"}])) == ["spec.containers[0].image: Required value"]
    assert pod_errs(stored, changed(stored, containers=[{"name": "c", "image": " x"}])) == [
        'spec.containers[0].image: Invalid value: " x": must not have leading or trailing whitespace']


def test_pod_active_deadline_is_set_once_then_only_lowered() -> None:
    stored = pod()
    assert pod_errs(stored, changed(stored, activeDeadlineSeconds=60)) == []
    set_ = pod(activeDeadlineSeconds=60)
    assert pod_errs(set_, changed(set_, activeDeadlineSeconds=30)) == []
    assert pod_errs(set_, changed(set_, activeDeadlineSeconds=90)) == [
        "spec.activeDeadlineSeconds: Invalid value: 90: must be less than or equal to previous value"]
    unset = copy.deepcopy(set_)
    del unset["spec"]["activeDeadlineSeconds"]
    assert pod_errs(set_, unset) == [
        "spec.activeDeadlineSeconds: Invalid value: None: must not update from a positive integer to nil value"]
    assert "must be between 0 and 2147483647" in pod_errs(stored, changed(stored, activeDeadlineSeconds=-1))[0]


def test_pod_tolerations_only_grow_and_gates_only_shrink() -> None:
    spot = {"key": "spot", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}
    stored = pod(tolerations=[spot], schedulingGates=[{"name": "g1"}, {"name": "g2"}])
    more = changed(stored, tolerations=[{**spot, "tolerationSeconds": 5}, {"key": "x", "operator": "Exists"}],
                   schedulingGates=[{"name": "g2"}])
    assert pod_errs(stored, more) == []
    assert pod_errs(stored, changed(stored, tolerations=[])) == [
        "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"]
    assert pod_errs(stored, changed(stored, schedulingGates=[{"name": "g1"}, {"name": "g3"}])) == [
        "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'g3'"]


def test_gated_pod_may_gain_node_selector_entries_only() -> None:
    gated = pod(schedulingGates=[{"name": "g"}], nodeSelector={"a": "1"})
    assert pod_errs(gated, changed(gated, nodeSelector={"a": "1", "b": "2"})) == []
    errs = pod_errs(gated, changed(gated, nodeSelector={"a": "2"}))
    assert len(errs) == 1 and errs[0].startswith("spec.nodeSelector: Invalid value: ")
    assert errs[0].endswith("only additions to spec.nodeSelector are allowed (no mutations or deletions)")
    ungated = pod(nodeSelector={"a": "1"})
    assert "spec: Forbidden" in pod_errs(ungated, changed(ungated, nodeSelector={"a": "1", "b": "2"}))[0]


def test_gated_pod_node_affinity_terms_only_gain_requirements() -> None:
    zone = {"key": "zone", "operator": "In", "values": ["a"]}
    rack = {"key": "rack", "operator": "In", "values": ["r1"]}

    def required(*terms: Any) -> dict[str, Any]:
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}

    free = pod(schedulingGates=[{"name": "g"}])
    assert pod_errs(free, changed(free, affinity=required({"matchExpressions": [zone]}))) == []
    gated = pod(schedulingGates=[{"name": "g"}], affinity=required({"matchExpressions": [zone]}))
    assert pod_errs(gated, changed(gated, affinity=required({"matchExpressions": [zone, rack]}))) == []
    errs = pod_errs(gated, changed(gated, affinity=required({"matchExpressions": [rack]})))
    assert len(errs) == 1 and errs[0].startswith(
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]: Invalid value: ")
    assert errs[0].endswith("only additions are allowed (no mutations or deletions)")
    errs = pod_errs(gated, changed(gated, affinity=required({"matchExpressions": [zone]}, {"matchExpressions": [rack]})))
    assert len(errs) == 1 and errs[0].endswith("no additions/deletions to non-empty NodeSelectorTerms list are allowed")
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
    pod_affinity = {**required({"matchExpressions": [zone]}), "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    assert "spec: Forbidden" in pod_errs(gated, changed(gated, affinity=pod_affinity))[0]
    ungated = pod(affinity=required({"matchExpressions": [zone]}))
    assert "spec: Forbidden" in pod_errs(ungated, changed(ungated, affinity=required({"matchExpressions": [zone, rack]})))[0]


def test_pod_termination_grace_may_go_from_negative_to_one() -> None:
    stored = pod(terminationGracePeriodSeconds=-1)
    assert pod_errs(stored, changed(stored, terminationGracePeriodSeconds=1)) == []
    assert "spec: Forbidden" in pod_errs(stored, changed(stored, terminationGracePeriodSeconds=2))[0]


def test_pod_status_keeps_qos_and_terminated_containers() -> None:
    done = {"name": "c", "state": {"terminated": {"exitCode": 0}}}
    stored = {**pod(), "status": {"qosClass": "BestEffort", "containerStatuses": [done]}}
    running = {**stored, "status": {"qosClass": "BestEffort", "containerStatuses": [{"name": "c", "state": {"running": {}}}]}}
    assert [str(e) for e in update_errors("", "Pod", stored, running, status=True)] == [
        "status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state"]
    always = {**stored, "spec": {**stored["spec"], "restartPolicy": "Always"}}
    assert update_errors("", "Pod", always, {**running, "spec": always["spec"]}, status=True) == []
    qos = {**stored, "status": {**stored["status"], "qosClass": "Burstable"}}
    assert [e.path for e in update_errors("", "Pod", stored, qos, status=True)] == ["status.qosClass"]


# --- ConfigMap, Secret, Service, Deployment, Event, Namespace ----------------------------------


def test_immutable_configmap_and_secret_are_frozen() -> None:
    cm = {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}, "immutable": True}
    assert update_errors("", "ConfigMap", cm, {**cm, "metadata": {"name": "c", "labels": {"x": "y"}}}) == []
    errs = [str(e) for e in update_errors("", "ConfigMap", cm, {**cm, "data": {"a": "2"}, "immutable": False})]
    assert errs == ["immutable: Forbidden: field is immutable when `immutable` is set",
                    "data: Forbidden: field is immutable when `immutable` is set"]
    mutable = {**cm, "immutable": False}
    assert update_errors("", "ConfigMap", mutable, {**mutable, "data": {"a": "2"}, "immutable": True}) == []
    secret = {"kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "dg=="}, "immutable": True}
    assert [e.path for e in update_errors("", "Secret", secret, {**secret, "data": {}})] == ["data"]
    typed = {"kind": "Secret", "metadata": {"name": "s"}, "type": "Opaque"}
    assert [str(e) for e in update_errors("", "Secret", typed, {**typed, "type": "kubernetes.io/tls"})] == [
        'type: Invalid value: "kubernetes.io/tls": field is immutable']
    assert update_errors("", "Secret", typed, {**typed, "type": None}) == []  # defaulted to Opaque


def svc(**spec: Any) -> dict[str, Any]:
    return {"kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}], **spec}}


def test_service_cluster_ip_never_changes_once_set() -> None:
    stored = svc(clusterIP="10.0.0.1")
    errs = [str(e) for e in update_errors("", "Service", stored, svc(clusterIP="10.0.0.2"))]
    assert errs == ["spec.clusterIPs[0]: Invalid value: ['10.0.0.2']: may not change once set"]
    omitted = svc()
    prepare_update("", "Service", stored, omitted)  # an update that omits it keeps it
    assert omitted["spec"]["clusterIP"] == "10.0.0.1" and update_errors("", "Service", stored, omitted) == []
    assert update_errors("", "Service", svc(), svc(clusterIP="10.0.0.3")) == []  # unset -> set
    external = svc(type="ExternalName", externalName="x.example")
    assert update_errors("", "Service", stored, external) == []
    assert update_errors("", "Service", external, svc(clusterIP="10.0.0.9")) == []
    dual = svc(clusterIP="10.0.0.1", clusterIPs=["10.0.0.1", "fd00::1"])
    assert update_errors("", "Service", stored, dual) == []  # a secondary may be added
    errs = [str(e) for e in update_errors("", "Service", dual, svc(clusterIP="10.0.0.1", clusterIPs=["10.0.0.1"]))]
    assert errs == ["spec.ipFamilyPolicy: Invalid value: None: must be set to 'SingleStack' when releasing the secondary clusterIP"]
    single = svc(clusterIP="10.0.0.1", clusterIPs=["10.0.0.1"], ipFamilyPolicy="SingleStack")
    assert update_errors("", "Service", dual, single) == []
    v4 = svc(clusterIP="10.0.0.1", ipFamilies=["IPv4"])
    assert update_errors("", "Service", v4, svc(clusterIP="10.0.0.1", ipFamilies=["IPv4", "IPv6"])) == []
    assert [str(e) for e in update_errors("", "Service", v4, svc(clusterIP="10.0.0.1", ipFamilies=["IPv6"]))] == [
        "spec.ipFamilies[0]: Invalid value: ['IPv6']: may not change once set"]
    lb = svc(type="LoadBalancer", clusterIP="10.0.0.1", loadBalancerClass="a.example/lb")
    assert [e.path for e in update_errors("", "Service", lb, {**lb, "spec": {**lb["spec"], "loadBalancerClass": "b.example/lb"}})] == [
        "spec.loadBalancerClass"]


def test_deployment_selector_event_series_and_namespace_phase() -> None:
    dep = {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}}}
    assert update_errors("apps", "Deployment", dep, {**dep, "spec": {**dep["spec"], "replicas": 3}}) == []
    moved = {**dep, "spec": {**dep["spec"], "selector": {"matchLabels": {"a": "c"}}}}
    assert [e.path for e in update_errors("apps", "Deployment", dep, moved)] == ["spec.selector"]
    old_style = {"kind": "Event", "metadata": {"name": "e"}, "reason": "R", "count": 1}
    assert update_errors("", "Event", old_style, {**old_style, "count": 2}) == []
    new_style = {**old_style, "eventTime": "2026-01-01T00:00:00.000000Z"}
    assert update_errors("", "Event", new_style, {**new_style, "series": {"count": 2}}) == []
    assert [e.path for e in update_errors("", "Event", new_style, {**new_style, "count": 2, "reason": "S"})] == ["reason", "count"]
    ns = {"kind": "Namespace", "metadata": {"name": "n"}, "status": {"phase": "Active"}}
    assert [e.path for e in update_errors("", "Namespace", ns, {**ns, "status": {"phase": "Terminating"}}, status=True)] == [
        "status.Phase"]


# --- through the API, as kubectl and controllers meet them ------------------------------------


def _stored_pod(env: Env) -> None:
    """A pod as the dev-cluster's Job controller writes it: straight to the store."""
    env.store.create(pod())


def test_api_updates_a_pods_image_and_refuses_its_node_name_with_422(env: Env) -> None:
    _stored_pod(env)
    status, _, body = env.raw("PATCH", f"{PODS}/p", {"metadata": {"labels": {"a": "b"}}, "spec": {
        "containers": [{"name": "c", "image": "busybox:2"}]}}, content_type="application/strategic-merge-patch+json")
    assert status == 200, body
    assert body["spec"]["containers"][0]["image"] == "busybox:2" and body["metadata"]["labels"] == {"a": "b"}
    status, _, body = env.raw("PATCH", f"{PODS}/p", {"spec": {"nodeName": "elsewhere"}}, content_type=MERGE)
    assert status == 422, body
    assert body["reason"] == "Invalid" and [c["field"] for c in body["details"]["causes"]] == ["spec"]
    assert body["message"].startswith('Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than')
    assert env.store.get("Pod", "default", "p")["spec"].get("nodeName") is None


def test_api_pod_status_writes_keep_a_finished_container_finished(env: Env) -> None:
    env.store.create({**pod(), "status": {"phase": "Succeeded", "qosClass": "BestEffort", "containerStatuses": [
        {"name": "c", "state": {"terminated": {"exitCode": 0}}}]}})
    running = {"status": {"containerStatuses": [{"name": "c", "state": {"running": {}}}]}}
    status, _, body = env.raw("PATCH", f"{PODS}/p/status", running, content_type=MERGE)
    assert status == 422, body
    assert body["details"]["causes"][0]["field"] == "status.containerStatuses[0].state"
    status, _, body = env.raw("PATCH", f"{PODS}/p/status", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
                              content_type=MERGE)
    assert status == 200 and body["status"]["conditions"][0]["type"] == "Ready", body


def test_api_refuses_changes_to_an_immutable_configmap(env: Env) -> None:
    cms = "/api/v1/namespaces/default/configmaps"
    status, _, body = env.raw("POST", cms, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                                            "data": {"a": "1"}, "immutable": True})
    assert status == 201, body
    status, _, body = env.raw("PATCH", f"{cms}/c", {"data": {"a": "2"}}, content_type=MERGE)
    assert status == 422, body
    assert body["message"] == 'ConfigMap "c" is invalid: data: Forbidden: field is immutable when `immutable` is set'
    assert env.raw("PATCH", f"{cms}/c", {"metadata": {"labels": {"x": "y"}}}, content_type=MERGE)[0] == 200


def test_api_refuses_configmap_keys_that_are_no_file_names(env: Env) -> None:
    cms = "/api/v1/namespaces/default/configmaps"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a/b": "1", "ok": "2"},
            "binaryData": {"ok": "Mw==", "..": "NA=="}}
    status, _, out = env.raw("POST", cms, body)
    assert status == 422, out
    assert [(c["field"], c["message"].split(": ", 2)[-1]) for c in out["details"]["causes"]] == [
        ("data[a/b]", "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  "
                      "or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"),
        ("data[ok]", "duplicate of key present in binaryData"),
        ("binaryData[ok]", "duplicate of key present in data"),
        ("binaryData[..]", "must not be '..'"),
    ]
    status, _, out = env.raw("POST", cms, {**body, "data": {"k": "x" * (1024 * 1024 + 1)}, "binaryData": {}})
    assert status == 422 and "may not be more than 1048576 bytes" in out["message"], out["message"][:200]
    assert env.raw("POST", cms, {**body, "data": {"ok": "1", "key.name_2-x": "2"}, "binaryData": {}})[0] == 201


def test_api_secret_string_data_goes_into_data_and_an_immutable_secret_keeps_it(env: Env) -> None:
    secrets = "/api/v1/namespaces/default/secrets"
    status, _, body = env.raw("POST", secrets, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                                                "data": {"a": "YQ=="}, "stringData": {"b": "b"}, "immutable": True})
    assert status == 201, body
    assert body["data"] == {"a": "YQ==", "b": "Yg=="} and "stringData" not in body
    assert "stringData" not in env.store.get("Secret", "default", "s")
    status, _, body = env.raw("PATCH", f"{secrets}/s", {"stringData": {"b": "changed"}}, content_type=MERGE)
    assert status == 422, body
    assert body["message"] == 'Secret "s" is invalid: data: Forbidden: field is immutable when `immutable` is set'


def test_api_service_keeps_its_cluster_ip_on_replace_and_refuses_a_new_one(env: Env) -> None:
    svcs = "/api/v1/namespaces/default/services"
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"clusterIP": "10.0.0.1", "ports": [{"port": 80}]}}
    assert env.raw("POST", svcs, body)[0] == 201
    current = env.raw("GET", f"{svcs}/s")[2]
    del current["spec"]["clusterIP"]
    status, _, out = env.raw("PUT", f"{svcs}/s", current)
    assert status == 200 and out["spec"]["clusterIP"] == "10.0.0.1", out
    status, _, out = env.raw("PATCH", f"{svcs}/s", {"spec": {"clusterIP": "10.0.0.2"}}, content_type=MERGE)
    assert status == 422 and out["details"]["causes"][0]["field"] == "spec.clusterIPs[0]", out


def test_api_refuses_a_new_deployment_selector(env: Env) -> None:
    deps = "/apis/apps/v1/namespaces/default/deployments"
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "a"}},
        "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    assert env.raw("POST", deps, body)[0] == 201
    moved = {"spec": {"selector": {"matchLabels": {"app": "b"}}, "template": {"metadata": {"labels": {"app": "b"}}}}}
    status, _, out = env.raw("PATCH", f"{deps}/d", moved, content_type=MERGE)
    assert status == 422 and [c["field"] for c in out["details"]["causes"]] == ["spec.selector"], out
    assert out["message"].endswith("field is immutable")
    assert env.raw("PATCH", f"{deps}/d", {"spec": {"replicas": 3}}, content_type=MERGE)[0] == 200


def test_api_refuses_a_deployment_whose_selector_misses_its_template(env: Env) -> None:
    deps = "/apis/apps/v1/namespaces/default/deployments"
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "a"}},
        "template": {"metadata": {"labels": {"app": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    status, _, out = env.raw("POST", deps, body)
    assert status == 422, out
    assert out["message"] == ('Deployment.apps "d" is invalid: spec.template.metadata.labels: Invalid value: '
                              "{'app': 'b'}: `selector` does not match template `labels`")
    body["spec"]["selector"] = {}
    body["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    status, _, out = env.raw("POST", deps, body)
    assert status == 422 and [c["field"] for c in out["details"]["causes"]] == [
        "spec.selector", "spec.template.spec.restartPolicy"], out
    assert out["details"]["causes"][1]["message"] == 'Unsupported value: "Never": supported values: "Always"'
    assert env.store.get("Deployment", "default", "d") is None


def test_api_refuses_a_foreign_uid_and_new_finalizers_on_a_terminating_object(env: Env) -> None:
    cms = "/api/v1/namespaces/default/configmaps"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["a.example/keep"]}}
    assert env.raw("POST", cms, body)[0] == 201
    current = env.raw("GET", f"{cms}/c")[2]
    status, _, out = env.raw("PUT", f"{cms}/c", {**current, "metadata": {**current["metadata"], "uid": "someone-else"}})
    assert status == 422 and out["message"] == 'ConfigMap "c" is invalid: metadata.uid: Invalid value: "someone-else": field is immutable', out
    assert env.raw("DELETE", f"{cms}/c")[0] == 200
    status, _, out = env.raw("PATCH", f"{cms}/c", {"metadata": {"finalizers": ["a.example/keep", "b.example/more"]}}, content_type=MERGE)
    assert status == 422, out
    assert out["details"]["causes"] == [{"reason": "FieldValueForbidden", "field": "metadata.finalizers", "message":
        'Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ["b.example/more"]'}]
    status, _, out = env.raw("PATCH", f"{cms}/c", {"metadata": {"finalizers": None}}, content_type=MERGE)
    assert status == 200, out  # removing one is how deletion ends


def test_api_refuses_a_lease_of_no_duration(env: Env) -> None:
    leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 0}}
    assert env.raw("POST", leases, body)[0] == 201
    status, _, out = env.raw("PATCH", f"{leases}/l", {"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}}, content_type=MERGE)
    assert status == 422, out
    assert out["message"] == ('Lease.coordination.k8s.io "l" is invalid: [spec.leaseDurationSeconds: Invalid value: 0: '
                              "must be greater than 0, spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0]")


def test_kubectl_patch_pod_is_refused_naming_the_field(env: Env, kubectl: Kubectl) -> None:
    _stored_pod(env)
    out = kubectl("patch", "pod", "p", "-n", "default", "-p", '{"spec":{"restartPolicy":"Always"}}')
    assert out.returncode != 0
    assert 'The Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than' in out.stderr
    out = kubectl("set", "image", "pod/p", "c=busybox:3", "-n", "default")
    assert out.returncode == 0, out.stderr
    out = kubectl("label", "pod", "p", "team=a", "-n", "default")
    assert out.returncode == 0, out.stderr
    assert env.store.get("Pod", "default", "p")["spec"]["containers"][0]["image"] == "busybox:3"
