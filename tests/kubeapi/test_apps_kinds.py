"""ReplicaSet, StatefulSet, CronJob, PriorityClass, ValidatingAdmissionPolicy(Binding) and
writable Pods through the official client and kubectl: served, strict, with kube-apiserver's
rules (hub.kubeapi.appsrules), defaults, the scale subresource and kubectl's columns."""

from __future__ import annotations

import json
from typing import Any

import kubernetes
import pytest
from kubernetes.client.rest import ApiException

from .conftest import Env, Kubectl

NS = "default"


def _template(labels: dict[str, str] | None = None, **pod: Any) -> dict[str, Any]:
    return {"metadata": {"labels": labels if labels is not None else {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **pod}}


def _workload(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}, "template": _template(), **spec}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": body}


def _cronjob(name: str, schedule: str = "*/5 * * * *", **spec: Any) -> dict[str, Any]:
    job = {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": schedule, "jobTemplate": {"spec": job}, **spec}}


def _apps(env: Env) -> kubernetes.client.AppsV1Api:
    return kubernetes.client.AppsV1Api(env.client)


def _invalid(exc: pytest.ExceptionInfo[ApiException]) -> str:
    assert exc.value.status == 422, exc.value.body
    return str(json.loads(exc.value.body)["message"])


PATHS = {"ReplicaSet": "/apis/apps/v1/namespaces/default/replicasets",
         "StatefulSet": "/apis/apps/v1/namespaces/default/statefulsets",
         "Deployment": "/apis/apps/v1/namespaces/default/deployments",
         "CronJob": "/apis/batch/v1/namespaces/default/cronjobs"}


def test_each_kind_is_created_read_and_defaulted_through_the_official_client(env: Env) -> None:
    apps = _apps(env)
    rs = apps.create_namespaced_replica_set(NS, _workload("ReplicaSet", "rs"))
    assert rs.spec.replicas == 1 and rs.spec.template.spec.restart_policy == "Always"
    sts = apps.create_namespaced_stateful_set(NS, _workload("StatefulSet", "db", serviceName="db"))
    assert sts.spec.pod_management_policy == "OrderedReady"
    assert sts.spec.update_strategy.type == "RollingUpdate" and sts.spec.update_strategy.rolling_update.partition == 0
    cj = env.batch().create_namespaced_cron_job(NS, _cronjob("nightly"))
    assert (cj.spec.concurrency_policy, cj.spec.suspend, cj.spec.successful_jobs_history_limit,
            cj.spec.failed_jobs_history_limit) == ("Allow", False, 3, 1)
    pc = kubernetes.client.SchedulingV1Api(env.client).create_priority_class(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000})
    assert pc.preemption_policy == "PreemptLowerPriority"
    adm = kubernetes.client.AdmissionregistrationV1Api(env.client)
    adm.create_validating_admission_policy({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "replicas"}, "spec": {"failurePolicy": "Fail", "validations": [
            {"expression": "object.spec.replicas <= 5"}], "matchConstraints": {"resourceRules": [
                {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]}}})
    adm.create_validating_admission_policy_binding({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "replicas"}, "spec": {"policyName": "replicas", "validationActions": ["Deny"]}})
    assert [p.metadata.name for p in adm.list_validating_admission_policy().items] == ["replicas"]
    assert apps.read_namespaced_stateful_set("db", NS).spec.service_name == "db"


@pytest.mark.parametrize("kind", ["ReplicaSet", "StatefulSet", "CronJob"])
def test_strict_field_validation_refuses_unknown_fields(env: Env, kind: str) -> None:
    body = _cronjob("x") if kind == "CronJob" else _workload(kind, "x")
    body["spec"]["bogus"] = 1
    status, _, out = env.raw("POST", PATHS[kind], body, query=[("fieldValidation", "Strict")])
    assert status == 400 and 'unknown field "spec.bogus"' in out["message"], out


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet"])
def test_apps_kinds_refuse_what_kube_apiserver_refuses(env: Env, kind: str) -> None:
    status, _, out = env.raw("POST", PATHS[kind], _workload(kind, "neg", replicas=-1))
    assert status == 422 and "spec.replicas: Invalid value: -1: must be greater than or equal to 0" in out["message"], out
    body = _workload(kind, "mismatch")
    body["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    status, _, out = env.raw("POST", PATHS[kind], body)
    assert status == 422 and "spec.template.metadata.labels" in out["message"], out
    assert "`selector` does not match template `labels`" in out["message"]
    body = _workload(kind, "never")
    body["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    status, _, out = env.raw("POST", PATHS[kind], body)
    assert status == 422 and 'spec.template.spec.restartPolicy: Unsupported value: "Never"' in out["message"], out
    status, _, _ = env.raw("POST", PATHS[kind], _workload(kind, "ok"))
    assert status == 201
    changed = _workload(kind, "ok")
    changed["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "x"}}
    changed["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    status, _, out = env.raw("PUT", f"{PATHS[kind]}/ok", changed)
    assert status == 422 and out["details"]["causes"][0]["field"] in ("spec.selector", "spec"), out


def test_statefulset_spec_is_immutable_but_replicas_template_and_strategy(env: Env) -> None:
    apps = _apps(env)
    apps.create_namespaced_stateful_set(NS, _workload("StatefulSet", "db", serviceName="db"))
    with pytest.raises(ApiException) as exc:
        apps.patch_namespaced_stateful_set("db", NS, {"spec": {"serviceName": "other"}})
    assert "spec: Forbidden: updates to statefulset spec for fields other than 'replicas'" in _invalid(exc)
    apps.patch_namespaced_stateful_set("db", NS, {"spec": {"replicas": 3, "podManagementPolicy": "OrderedReady"}})
    with pytest.raises(ApiException) as exc:
        apps.patch_namespaced_stateful_set("db", NS, {"spec": {"podManagementPolicy": "Parallel"}})
    assert exc.value.status == 422
    status, _, out = env.raw("POST", PATHS["StatefulSet"], _workload("StatefulSet", "bad", podManagementPolicy="Sometimes"))
    assert status == 422 and "must be 'OrderedReady' or 'Parallel'" in out["message"], out


@pytest.mark.parametrize(("schedule", "words"), [
    ("bogus", "expected exactly 5 fields, found 1: [bogus]"),
    ("70 * * * *", "end of range (70) above maximum (59): 70"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("@often", "unrecognized descriptor: @often"),
])
def test_cronjob_schedule_must_parse(env: Env, schedule: str, words: str) -> None:
    status, _, out = env.raw("POST", PATHS["CronJob"], _cronjob("c", schedule))
    assert status == 422, out
    assert out["message"] == f'CronJob.batch "c" is invalid: spec.schedule: Invalid value: "{schedule}": {words}', out


def test_cronjob_other_rules(env: Env) -> None:
    status, _, out = env.raw("POST", PATHS["CronJob"], _cronjob("x" * 53))
    assert status == 422 and "metadata.name" in out["message"] and "must be no more than 52 characters" in out["message"]
    status, _, out = env.raw("POST", PATHS["CronJob"], _cronjob("c", concurrencyPolicy="Sometimes"))
    assert status == 422 and 'spec.concurrencyPolicy: Unsupported value: "Sometimes"' in out["message"], out
    status, _, out = env.raw("POST", PATHS["CronJob"], _cronjob("c", timeZone="Mars/Olympus"))
    assert status == 422 and "spec.timeZone" in out["message"], out
    for schedule in ("@hourly", "0 9 * * mon-fri", "*/15 0-6 1,15 jan-jun *", "@every 1h30m"):
        status, _, out = env.raw("POST", PATHS["CronJob"], _cronjob("ok", schedule, timeZone="Europe/Paris"))
        assert status == 201, (schedule, out)
        env.raw("DELETE", f"{PATHS['CronJob']}/ok")


def test_priorityclass_rules(env: Env) -> None:
    api = kubernetes.client.SchedulingV1Api(env.client)

    def pc(name: str, value: int) -> dict[str, Any]:
        return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}

    with pytest.raises(ApiException) as exc:
        api.create_priority_class(pc("huge", 1_000_000_001))
    assert "value: Forbidden: maximum allowed value of a user defined priority is 1000000000" in _invalid(exc)
    with pytest.raises(ApiException) as exc:
        api.create_priority_class(pc("system-mine", 1))
    assert "priority class names with 'system-' prefix are reserved" in _invalid(exc)
    api.create_priority_class(pc("low", 10))
    with pytest.raises(ApiException) as exc:
        api.patch_priority_class("low", {"value": 11})
    assert "value: Forbidden: may not be changed in an update." in _invalid(exc)
    assert api.patch_priority_class("low", {"description": "batch"}).description == "batch"


def test_scale_subresource_of_the_apps_kinds(env: Env) -> None:
    apps = _apps(env)
    apps.create_namespaced_deployment(NS, _workload("Deployment", "web"))
    scale = apps.read_namespaced_deployment_scale("web", NS)
    assert scale.spec.replicas == 1 and scale.status.selector == "app=web"
    apps.patch_namespaced_deployment_scale("web", NS, {"spec": {"replicas": 4}})
    assert apps.read_namespaced_deployment("web", NS).spec.replicas == 4
    apps.create_namespaced_stateful_set(NS, _workload("StatefulSet", "db", serviceName="db"))
    apps.replace_namespaced_stateful_set_scale("db", NS, {"apiVersion": "autoscaling/v1", "kind": "Scale",
                                                          "metadata": {"name": "db", "namespace": NS},
                                                          "spec": {"replicas": 2}})
    assert apps.read_namespaced_stateful_set("db", NS).spec.replicas == 2
    with pytest.raises(ApiException) as exc:
        apps.patch_namespaced_replica_set_scale("nope", NS, {"spec": {"replicas": 1}})
    assert exc.value.status == 404
    status, _, _ = env.raw("GET", "/apis/batch/v1/namespaces/default/cronjobs/x/scale")
    assert status == 404


def test_pods_created_with_scheduling_gates_which_may_only_be_removed(env: Env) -> None:
    core = env.core()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gated"},
           "spec": {"schedulingGates": [{"name": "example.com/gate"}],
                    "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]},
           "status": {"phase": "Running"}}
    created = core.create_namespaced_pod(NS, pod)
    assert created.status.phase == "Pending" and created.status.qos_class == "Burstable"
    assert created.spec.restart_policy == "Always"
    with pytest.raises(ApiException) as exc:
        core.patch_namespaced_pod("gated", NS, {"spec": {"schedulingGates": [{"name": "example.com/gate"},
                                                                              {"name": "example.com/more"}]}})
    assert exc.value.status == 422
    core.patch_namespaced_pod("gated", NS, [{"op": "remove", "path": "/spec/schedulingGates"}])
    assert not core.read_namespaced_pod("gated", NS).spec.scheduling_gates
    bound = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bound"},
             "spec": {"nodeName": "n", "schedulingGates": [{"name": "g"}], "containers": [{"name": "c", "image": "x"}]}}
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod(NS, bound)
    assert "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared" in _invalid(exc)
    core.delete_namespaced_pod("gated", NS)
    assert env.store.get("Pod", NS, "gated") is None


def test_discovery_lists_the_kinds_and_their_scale(kubectl: Kubectl, env: Env) -> None:
    out = kubectl("api-resources", "-o", "wide")
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line for line in out.stdout.splitlines()[1:]}
    for name in ("replicasets", "statefulsets", "cronjobs", "priorityclasses", "validatingadmissionpolicies",
                 "validatingadmissionpolicybindings"):
        assert name in lines, out.stdout
    assert "create" in lines["pods"] and "delete" in lines["pods"]
    status, _, doc = env.raw("GET", "/apis/apps/v1")
    assert {"deployments/scale", "replicasets/scale", "statefulsets/scale"} <= {r["name"] for r in doc["resources"]}


def test_kubectl_columns_and_scale(kubectl: Kubectl, env: Env) -> None:
    apps = _apps(env)
    apps.create_namespaced_deployment(NS, _workload("Deployment", "web", replicas=2))
    apps.create_namespaced_replica_set(NS, _workload("ReplicaSet", "rs", replicas=3))
    apps.create_namespaced_stateful_set(NS, _workload("StatefulSet", "db", serviceName="db"))
    env.batch().create_namespaced_cron_job(NS, _cronjob("nightly"))
    out = kubectl("get", "deploy,rs,sts,cj")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "READY   UP-TO-DATE   AVAILABLE   AGE" in text and "deployment.apps/web   0/2" in text
    assert "DESIRED   CURRENT   READY   AGE" in text and "replicaset.apps/rs   3 " in text
    assert "statefulset.apps/db   0/1" in text
    assert "SCHEDULE      TIMEZONE   SUSPEND   ACTIVE   LAST SCHEDULE   AGE" in text and "*/5 * * * *" in text
    scaled = kubectl("scale", "deployment/web", "--replicas=5")
    assert scaled.returncode == 0 and "deployment.apps/web scaled" in scaled.stdout, scaled.stderr
    assert apps.read_namespaced_deployment("web", NS).spec.replicas == 5
    assert kubectl("scale", "sts/db", "--replicas=3").returncode == 0
    assert apps.read_namespaced_stateful_set("db", NS).spec.replicas == 3
    created = kubectl("apply", "-f", "-", stdin="apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                      "metadata: {name: high}\nvalue: 1000\n")
    assert created.returncode == 0, created.stderr
    out = kubectl("get", "pc")
    assert out.returncode == 0 and "VALUE   GLOBAL-DEFAULT   AGE" in out.stdout and "high   1000    false" in out.stdout


def test_kubectl_create_sends_protobuf_bodies_that_are_read(kubectl: Kubectl, env: Env) -> None:
    """kubectl's typed clients send these kinds as application/vnd.kubernetes.protobuf only."""
    for args in (("deployment", "web", "--image=nginx", "--replicas=2", "--port=80"),
                 ("job", "once", "--image=busybox", "--", "echo", "hi"),
                 ("cronjob", "tick", "--image=busybox", "--schedule=*/5 * * * *"),
                 ("priorityclass", "high", "--value=1000", "--description=serving"),
                 ("configmap", "cm", "--from-literal=k=v"), ("secret", "generic", "s", "--from-literal=k=v"),
                 ("serviceaccount", "sa"), ("service", "clusterip", "svc", "--tcp=80:8080"),
                 ("role", "reader", "--verb=get", "--resource=pods"),
                 ("rolebinding", "rb", "--role=reader", "--user=u")):
        out = kubectl("create", *args)
        assert out.returncode == 0, (args, out.stderr)
    deploy = _apps(env).read_namespaced_deployment("web", NS)
    assert deploy.spec.replicas == 2 and deploy.spec.selector.match_labels == {"app": "web"}
    container = deploy.spec.template.spec.containers[0]
    assert (container.name, container.image, container.ports[0].container_port) == ("nginx", "nginx", 80)
    job = env.batch().read_namespaced_job("once", NS)
    assert job.spec.template.spec.containers[0].command == ["echo", "hi"]
    assert job.spec.template.spec.restart_policy == "Never"
    assert env.batch().read_namespaced_cron_job("tick", NS).spec.schedule == "*/5 * * * *"
    pc = kubernetes.client.SchedulingV1Api(env.client).read_priority_class("high")
    assert (pc.value, pc.description) == (1000, "serving")
    assert env.core().read_namespaced_config_map("cm", NS).data == {"k": "v"}
    assert env.core().read_namespaced_secret("s", NS).data == {"k": "dg=="}
    port = env.core().read_namespaced_service("svc", NS).spec.ports[0]
    assert (port.port, port.target_port) == (80, 8080)
    role = kubernetes.client.RbacAuthorizationV1Api(env.client).read_namespaced_role("reader", NS)
    assert role.rules[0].verbs == ["get"] and role.rules[0].resources == ["pods"]


def test_deployment_strategy_rules_and_cronjob_restart_policy(env: Env) -> None:
    body = _workload("Deployment", "recreate", strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": 1}})
    status, _, out = env.raw("POST", PATHS["Deployment"], body)
    assert status == 422 and "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'" in out["message"]
    body = _workload("Deployment", "zero", strategy={"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}})
    status, _, out = env.raw("POST", PATHS["Deployment"], body)
    assert status == 422 and 'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0%": may not be 0 when `maxSurge` is 0' in out["message"], out
    body = _workload("Deployment", "deadline", minReadySeconds=10, progressDeadlineSeconds=5)
    status, _, out = env.raw("POST", PATHS["Deployment"], body)
    assert status == 422 and "spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds" in out["message"]
    cronjob = _cronjob("always")
    del cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"]
    status, _, out = env.raw("POST", PATHS["CronJob"], cronjob)
    assert status == 422 and ('spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value: "Always": '
                              'supported values: "OnFailure", "Never"') in out["message"], out


def test_validating_admission_policy_rules_and_defaults(env: Env) -> None:
    path = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": "p"}, "spec": {"matchConstraints": {}}}
    status, _, out = env.raw("POST", path, policy)
    assert status == 422, out
    assert "spec.matchConstraints.resourceRules: Required value" in out["message"]
    assert "spec.validations: Required value: validations or auditAnnotations must contain at least one item" in out["message"]
    policy["spec"] = {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                              "operations": ["CREATE"], "resources": ["deployments"]}]},
                      "validations": [{"expression": "object.spec.replicas <= 5"}]}
    status, _, out = env.raw("POST", path, policy)
    assert status == 201 and out["spec"]["failurePolicy"] == "Fail", out
    assert out["spec"]["matchConstraints"]["matchPolicy"] == "Equivalent"
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": "b"}, "spec": {"policyName": "p", "validationActions": ["Deny", "Warn"]}}
    status, _, out = env.raw("POST", path.replace("policies", "policybindings"), binding)
    assert status == 422 and "must not contain both Deny and Warn" in out["message"], out
    binding["spec"]["validationActions"] = []
    status, _, out = env.raw("POST", path.replace("policies", "policybindings"), binding)
    assert status == 422 and "at least one validation action is required" in out["message"], out
