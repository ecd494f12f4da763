"""CustomResourceDefinitions served for real (hub.kubeapi.crds), through kubectl and the official Python client.

The CRD (tests/kubeapi/crds/crontab.yaml) has a rich structural schema: required fields, enum,
pattern, minimum/maximum, minLength/maxLength, minItems/maxItems, int-or-string,
preserve-unknown-fields, nullable, defaults; status and scale subresources, printer columns,
a short name, a category and two served versions (v1 stored, v1beta1 served).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from .conftest import REPO, Env, Kubectl

CRD = Path(__file__).parent / "crds" / "crontab.yaml"
G, V, PLURAL = "stable.example.com", "v1", "crontabs"


def crontab(name: str, **spec: Any) -> dict[str, Any]:
    body = {"cronSpec": "*/5 * * * *", "image": "busybox", **spec}
    return {"apiVersion": f"{G}/{V}", "kind": "CronTab", "metadata": {"name": name, "namespace": "default"}, "spec": body}


def as_yaml(obj: dict[str, Any]) -> str:
    return yaml.safe_dump(obj)


def install(env: Env) -> None:
    env.custom().create_cluster_custom_object("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                              yaml.safe_load(CRD.read_text()))


def message(exc: ApiException) -> str:
    return str(json.loads(exc.body)["message"])


# --------------------------------------------------------------------------- kubectl


def test_kubectl_serves_a_crd_once_applied(kubectl: Kubectl, env: Env) -> None:
    assert kubectl("get", "crontabs").returncode != 0  # not served before
    applied = kubectl("apply", "-f", str(CRD))
    assert applied.returncode == 0, applied.stderr
    established = kubectl("get", "crd", "crontabs.stable.example.com", "-o",
                          "jsonpath={.status.conditions[?(@.type=='Established')].status}")
    assert established.stdout == "True"
    created = kubectl("apply", "-f", "-", stdin=as_yaml(crontab("c1", port="http", tags=["a"])))
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "crontab.stable.example.com/c1 created"

    got = kubectl("get", "ct", "-n", "default")  # the short name; printer columns
    assert got.returncode == 0, got.stderr
    header, row = got.stdout.splitlines()
    assert header.split() == ["NAME", "SCHEDULE", "REPLICAS", "AGE"]
    assert row.split()[:6] == ["c1", "*/5", "*", "*", "*", "*"] and row.split()[6] == "1"  # replicas defaulted
    assert "c1" in kubectl("get", "examples", "-n", "default").stdout  # the category

    stored = env.store.get("CronTab", "default", "c1")
    assert stored is not None and stored["spec"]["policy"] == "Allow" and stored["spec"]["replicas"] == 1
    beta = kubectl("get", "crontabs.v1beta1.stable.example.com", "c1", "-n", "default", "-o", "json")
    assert beta.returncode == 0, beta.stderr
    assert json.loads(beta.stdout)["apiVersion"] == "stable.example.com/v1beta1"  # strategy None: only apiVersion

    explained = kubectl("explain", "crontab.spec.cronSpec")
    assert explained.returncode == 0, explained.stderr
    assert "KIND:       CronTab" in explained.stdout and "The schedule, in cron format." in explained.stdout


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"replicas": -1}, "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"),
        ({"replicas": 11}, "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"),
        ({"replicas": "two"}, 'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"'),
        ({"policy": "Never"}, 'spec.policy: Unsupported value: "Never": supported values: "Allow", "Forbid", "Replace"'),
        ({"cronSpec": "often"}, "spec.cronSpec: Invalid value: \"often\": spec.cronSpec in body should match"),
        ({"image": ""}, 'spec.image: Invalid value: "": spec.image in body should be at least 1 chars long'),
        ({"image": "x" * 65}, "spec.image: Too long: may not be more than 64 bytes"),
        ({"tags": []}, "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"),
        ({"tags": ["a", "b", "c", "d"]}, "spec.tags: Too many: 4: must have at most 3 items"),
        ({"port": 1.5}, 'spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number"'),
    ],
)
def test_kubectl_refuses_invalid_objects_with_the_field_path(kubectl: Kubectl, env: Env, spec: dict[str, Any], expected: str) -> None:
    assert kubectl("apply", "-f", str(CRD)).returncode == 0
    refused = kubectl("apply", "-f", "-", stdin=as_yaml(crontab("bad", **spec)))
    assert refused.returncode != 0
    assert 'The CronTab "bad" is invalid' in refused.stderr and expected in refused.stderr, refused.stderr
    assert env.store.get("CronTab", "default", "bad") is None


def test_kubectl_refuses_a_missing_required_field_and_unknown_fields(kubectl: Kubectl, env: Env) -> None:
    assert kubectl("apply", "-f", str(CRD)).returncode == 0
    obj = crontab("bad")
    del obj["spec"]["image"]
    missing = kubectl("apply", "-f", "-", stdin=as_yaml(obj))
    assert missing.returncode != 0 and "spec.image: Required value" in missing.stderr, missing.stderr
    unknown = kubectl("apply", "-f", "-", stdin=as_yaml(crontab("bad", imagez="x")))  # kubectl asks Strict
    assert unknown.returncode != 0 and 'unknown field "spec.imagez"' in unknown.stderr, unknown.stderr
    assert env.store.get("CronTab", "default", "bad") is None
    warned = kubectl("apply", "--validate=warn", "-f", "-", stdin=as_yaml(crontab("warned", imagez="x")))
    assert warned.returncode == 0 and 'unknown field "spec.imagez"' in warned.stderr, warned.stderr
    stored = env.store.get("CronTab", "default", "warned")
    assert stored is not None and "imagez" not in stored["spec"]  # pruned


def test_a_crd_update_changes_what_is_served(kubectl: Kubectl, env: Env) -> None:
    assert kubectl("apply", "-f", str(CRD)).returncode == 0
    assert kubectl("apply", "-f", "-", stdin=as_yaml(crontab("c1", replicas=15))).returncode != 0
    raised = CRD.read_text().replace("maximum: 10", "maximum: 20").replace("shortNames: [ct]", "shortNames: [ct, cts]")
    assert kubectl("apply", "-f", "-", stdin=raised).returncode == 0
    created = kubectl("apply", "-f", "-", stdin=as_yaml(crontab("c1", replicas=15)))
    assert created.returncode == 0, created.stderr
    assert kubectl("get", "cts", "c1", "-n", "default", "-o", "name").stdout.strip() == "crontab.stable.example.com/c1"
    beta = crontab("b1", replicas=50)  # v1beta1's own schema (preserve unknown fields) judges a v1beta1 write
    beta["apiVersion"] = f"{G}/v1beta1"
    assert kubectl("apply", "-f", "-", stdin=as_yaml(beta)).returncode == 0
    stored = env.store.get("CronTab", "default", "b1")
    assert stored is not None and stored["apiVersion"] == f"{G}/v1"  # kept in the storage version


def test_kubectl_scale_and_status(kubectl: Kubectl, env: Env) -> None:
    assert kubectl("apply", "-f", str(CRD)).returncode == 0
    assert kubectl("apply", "-f", "-", stdin=as_yaml(crontab("c1"))).returncode == 0
    scaled = kubectl("scale", "ct", "c1", "-n", "default", "--replicas=3")
    assert scaled.returncode == 0, scaled.stderr
    stored = env.store.get("CronTab", "default", "c1")
    assert stored is not None and stored["spec"]["replicas"] == 3
    too_many = kubectl("scale", "ct", "c1", "-n", "default", "--replicas=30")
    assert too_many.returncode != 0 and "should be less than or equal to 10" in too_many.stderr
    patched = kubectl("patch", "ct", "c1", "-n", "default", "--subresource=status", "--type=merge",
                      "-p", '{"status": {"replicas": 2, "selector": "app=c1"}}')
    assert patched.returncode == 0, patched.stderr
    scale = kubectl("get", "--raw", "/apis/stable.example.com/v1/namespaces/default/crontabs/c1/scale")
    assert json.loads(scale.stdout)["spec"] == {"replicas": 3}
    assert json.loads(scale.stdout)["status"] == {"replicas": 2, "selector": "app=c1"}
    bad_status = kubectl("patch", "ct", "c1", "-n", "default", "--subresource=status", "--type=merge",
                         "-p", '{"status": {"replicas": "many"}}')
    assert bad_status.returncode != 0 and "status.replicas in body must be of type integer" in bad_status.stderr
    spec_write = kubectl("patch", "ct", "c1", "-n", "default", "--type=merge", "-p", '{"status": {"replicas": 9}}')
    assert spec_write.returncode == 0, spec_write.stderr
    stored = env.store.get("CronTab", "default", "c1")
    assert stored is not None and stored["status"]["replicas"] == 2  # the status subresource owns status


def test_deleting_the_crd_deletes_its_objects(kubectl: Kubectl, env: Env) -> None:
    assert kubectl("apply", "-f", str(CRD)).returncode == 0
    for name in ("c1", "c2"):
        assert kubectl("apply", "-f", "-", stdin=as_yaml(crontab(name))).returncode == 0
    deleted = kubectl("delete", "crd", "crontabs.stable.example.com")
    assert deleted.returncode == 0, deleted.stderr
    assert env.store.list("CronTab", None)[0] == []
    assert kubectl("get", "crontabs", "-n", "default").returncode != 0
    again = kubectl("apply", "-f", str(CRD))  # a new CRD starts empty
    assert again.returncode == 0
    assert kubectl("get", "ct", "-n", "default", "-o", "name").stdout == ""
    assert kubectl("apply", "-f", "-", stdin=as_yaml(crontab("c3"))).returncode == 0
    status, _, _ = env.raw("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")  # a delete collection
    assert status == 200
    assert env.store.list("CronTab", None)[0] == []


def test_kueue_crds_stay_served_by_the_typed_model(kubectl: Kubectl, env: Env) -> None:
    applied = kubectl("apply", "-f", str(REPO / "manifests" / "crds" / "kueue.x-k8s.io_clusterqueues.yaml"))
    assert applied.returncode == 0, applied.stderr
    assert env.server.api.crds.resources() == []
    refused = kubectl("apply", "-f", "-", stdin=(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\n"
        "spec: {namespaceSelector: {}, resourceGroups: [{coveredResources: [cpu], flavors: "
        "[{name: f, resources: [{name: cpu, nominalQuota: -1}]}]}]}\n"))
    assert refused.returncode != 0 and "nominalQuota" in refused.stderr  # Kueue's own validation


# --------------------------------------------------------------------------- the Python client


def test_client_discovery_crud_and_field_validation(env: Env) -> None:
    install(env)
    custom = env.custom()
    status, _, doc = env.raw("GET", f"/apis/{G}/{V}")
    assert status == 200
    resources = {r["name"]: r for r in doc["resources"]}
    assert resources["crontabs"]["shortNames"] == ["ct"] and resources["crontabs"]["categories"] == ["examples"]
    assert {"crontabs/status", "crontabs/scale"} <= set(resources)
    aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    status, _, doc = env.raw("GET", "/apis", accept=aggregated)
    group = next(g for g in doc["items"] if g["metadata"]["name"] == G)
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
    entry = next(r for r in group["versions"][0]["resources"] if r["resource"] == PLURAL)
    assert entry["scope"] == "Namespaced" and entry["shortNames"] == ["ct"]
    kinds = {s["subresource"]: s["responseKind"] for s in entry["subresources"]}
    assert kinds == {"status": {"group": G, "version": V, "kind": "CronTab"},
                     "scale": {"group": "autoscaling", "version": "v1", "kind": "Scale"}}

    created = custom.create_namespaced_custom_object(G, V, "default", PLURAL, crontab("c1", junk=1, extra={"any": {"x": 1}}),
                                                     field_validation="Ignore")
    assert "junk" not in created["spec"] and created["spec"]["extra"] == {"any": {"x": 1}}  # pruned; preserved
    with pytest.raises(ApiException) as strict:
        custom.create_namespaced_custom_object(G, V, "default", PLURAL, crontab("c2", junk=1), field_validation="Strict")
    assert strict.value.status == 400 and 'unknown field "spec.junk"' in message(strict.value)
    with pytest.raises(ApiException) as invalid:
        custom.create_namespaced_custom_object(G, V, "default", PLURAL, crontab("c2", replicas=-1))
    assert invalid.value.status == 422
    causes = json.loads(invalid.value.body)["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.replicas"]
    assert env.store.get("CronTab", "default", "c2") is None

    nullable = custom.create_namespaced_custom_object(G, V, "default", PLURAL, crontab("c3", note=None, replicas=None))
    assert nullable["spec"]["note"] is None and nullable["spec"]["replicas"] == 1  # nullable kept; a null defaulted

    got = custom.get_namespaced_custom_object(G, "v1beta1", "default", PLURAL, "c1")
    assert got["apiVersion"] == f"{G}/v1beta1"
    patched = custom.patch_namespaced_custom_object(G, V, "default", PLURAL, "c1", {"spec": {"replicas": 4}})
    assert patched["spec"]["replicas"] == 4
    listed = custom.list_namespaced_custom_object(G, V, "default", PLURAL)
    assert [o["metadata"]["name"] for o in listed["items"]] == ["c1", "c3"]
    custom.delete_namespaced_custom_object(G, V, "default", PLURAL, "c3")
    assert env.store.get("CronTab", "default", "c3") is None


def test_client_watch_and_scale(env: Env) -> None:
    install(env)
    custom = env.custom()
    seen: list[tuple[str, str]] = []
    done = threading.Event()

    def follow() -> None:
        w = watch.Watch()
        for event in w.stream(custom.list_namespaced_custom_object, G, V, "default", PLURAL, timeout_seconds=20):
            seen.append((event["type"], event["object"]["metadata"]["name"]))
            if event["type"] == "DELETED":
                w.stop()
        done.set()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    custom.create_namespaced_custom_object(G, V, "default", PLURAL, crontab("w1"))
    scale = custom.patch_namespaced_custom_object_scale(G, V, "default", PLURAL, "w1", {"spec": {"replicas": 5}})
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 5
    assert custom.get_namespaced_custom_object_scale(G, V, "default", PLURAL, "w1")["spec"]["replicas"] == 5
    custom.delete_namespaced_custom_object(G, V, "default", PLURAL, "w1")
    assert done.wait(30)
    thread.join(5)
    assert seen[0] == ("ADDED", "w1") and seen[-1] == ("DELETED", "w1") and ("MODIFIED", "w1") in seen


def test_an_invalid_crd_is_refused(env: Env) -> None:
    crd = yaml.safe_load(CRD.read_text())
    crd["metadata"]["name"] = "crontabs.example.com"
    crd["spec"]["versions"][0]["storage"] = True
    with pytest.raises(ApiException) as refused:
        env.custom().create_cluster_custom_object("apiextensions.k8s.io", "v1", "customresourcedefinitions", crd)
    text = message(refused.value)
    assert 'metadata.name: Invalid value: "crontabs.example.com": must be spec.names.plural+"."+spec.group' in text
    assert "must have exactly one version marked as storage version" in text
    assert env.store.get("CustomResourceDefinition", "", "crontabs.example.com") is None


def test_server_side_apply_and_namespace_deletion(kubectl: Kubectl, env: Env) -> None:
    assert kubectl("apply", "-f", str(CRD)).returncode == 0
    assert kubectl("create", "namespace", "team-x").returncode == 0
    obj = crontab("s1", replicas=2)
    obj["metadata"]["namespace"] = "team-x"
    applied = kubectl("apply", "--server-side", "-f", "-", stdin=as_yaml(obj))
    assert applied.returncode == 0, applied.stderr
    stored = env.store.get("CronTab", "team-x", "s1")
    assert stored is not None and stored["spec"]["replicas"] == 2 and stored["spec"]["policy"] == "Allow"
    assert "kubectl" in [e["manager"] for e in stored["metadata"]["managedFields"]]
    gone = kubectl("delete", "namespace", "team-x", "--timeout=60s")  # waits for the namespace to go
    assert gone.returncode == 0, gone.stderr
    assert env.store.get("CronTab", "team-x", "s1") is None


def test_a_crd_written_by_another_writer_is_served(env: Env) -> None:
    crd = yaml.safe_load(CRD.read_text())
    env.store.create(crd)  # not through the API: the registry's watch on CRDs picks it up
    custom = env.custom()
    for _ in range(200):
        stored = env.store.get("CustomResourceDefinition", "", "crontabs.stable.example.com")
        if stored is not None and stored.get("status"):  # marked Established
            break
        threading.Event().wait(0.05)
    else:
        pytest.fail("the CRD written to the store was not established")
    assert stored["status"]["acceptedNames"]["shortNames"] == ["ct"]
    assert custom.list_namespaced_custom_object(G, V, "default", PLURAL)["items"] == []  # served


def test_kueue_crds_are_established_for_scripts_that_wait(kubectl: Kubectl, env: Env) -> None:
    crd = REPO / "manifests" / "crds" / "kueue.x-k8s.io_clusterqueues.yaml"
    assert kubectl("apply", "-f", str(crd)).returncode == 0
    waited = kubectl("wait", "--for=condition=Established", "crd/clusterqueues.kueue.x-k8s.io", "--timeout=30s")
    assert waited.returncode == 0, waited.stderr


def _set(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    node: Any = obj
    steps = [int(s) if s.isdigit() else s for s in path.split(".")]
    for step in steps[:-1]:
        node = node[step]
    node[steps[-1]] = value
    return obj


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("spec.versions.1.schema", "x", 'spec.versions[1].schema: Invalid value: "x": must be of type object'),
        ("spec.versions.1.schema.openAPIV3Schema.properties", "x", "openAPIV3Schema.properties: Invalid value"),
        ("spec.versions.1.schema.openAPIV3Schema.properties.spec.required", "image", "properties[spec].required: Invalid value"),
        ("spec.versions.1.schema.openAPIV3Schema.properties.spec.type", "map", "properties[spec].type: Unsupported value"),
        ("spec.versions", "x", 'spec.versions: Invalid value: "x": must be of type array'),
        ("spec.names.shortNames", "ct", 'spec.names.shortNames: Invalid value: "ct": must be of type array'),
        ("spec.versions.1.subresources.scale", "x", "spec.versions[1].subresources.scale: Invalid value"),
        ("spec.versions.1.additionalPrinterColumns.0.priority", "high", "additionalPrinterColumns[0].priority: Invalid value"),
    ],
)
def test_a_malformed_crd_is_refused_with_its_path(env: Env, path: str, value: Any, expected: str) -> None:
    crd = _set(yaml.safe_load(CRD.read_text()), path, value)
    with pytest.raises(ApiException) as refused:
        env.custom().create_cluster_custom_object("apiextensions.k8s.io", "v1", "customresourcedefinitions", crd)
    assert refused.value.status == 422 and expected in message(refused.value), message(refused.value)
    assert env.store.get("CustomResourceDefinition", "", "crontabs.stable.example.com") is None


def test_a_crd_adding_a_kind_to_a_built_in_group_is_discovered(kubectl: Kubectl, env: Env) -> None:
    crd = yaml.safe_load(CRD.read_text())
    crd["metadata"]["name"] = "gadgets.kueue.x-k8s.io"
    crd["spec"]["group"] = "kueue.x-k8s.io"
    crd["spec"]["names"] = {"plural": "gadgets", "kind": "Gadget", "shortNames": ["gd"]}
    crd["spec"]["versions"] = [{**crd["spec"]["versions"][1], "name": "v1beta2"}]
    assert kubectl("apply", "-f", "-", stdin=as_yaml(crd)).returncode == 0
    gadget = crontab("g1")
    gadget.update(apiVersion="kueue.x-k8s.io/v1beta2", kind="Gadget")
    created = kubectl("apply", "-f", "-", stdin=as_yaml(gadget))
    assert created.returncode == 0, created.stderr
    assert kubectl("get", "gd", "-n", "default", "-o", "name").stdout.strip() == "gadget.kueue.x-k8s.io/g1"
    assert "clusterqueues" in kubectl("api-resources", "--api-group=kueue.x-k8s.io").stdout  # the built-in kinds stay
    status, _, doc = env.raw("GET", "/apis/kueue.x-k8s.io/v1beta2")
    assert status == 200 and {"gadgets", "clusterqueues"} <= {r["name"] for r in doc["resources"]}
