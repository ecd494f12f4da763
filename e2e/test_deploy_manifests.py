"""Every manifest under ``manifests/`` against the schemas of the kinds it uses, and
``kubectl apply -k`` of each overlay against a running ``mkhub dev-cluster``.

kubeconform is neither on PyPI nor in Debian, so the schemas are the OpenAPI v3 documents
the dev-cluster serves (``/openapi/v3/...``): the generated CRDs' schemas for Kueue's kinds,
and Kubernetes' built-in kinds as described from its API reference
(hub/api/schema/builtin*.py). hub.kubeapi.validate checks each object: unknown fields,
wrong types, missing required fields, each named by its field path.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hub.kubeapi.validate import kind_schema, problems
from tests.store.kube.harness import ApiServer, start_dev_cluster

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[1]
KUBECTL = "/usr/bin/kubectl"
OVERLAYS = ("standalone", "manager", "worker")
# Files under manifests/ that are not API objects, and what they are.
NOT_API_OBJECTS = {
    "kustomization.yaml": "kustomize's own",
    "Kustomization": "kustomize's own",
    "config.yaml": "a Kueue Configuration file (mkhub serve --config), checked by loading it",
    "nodes.yaml": "the dev-cluster's nodes file (mkhub dev-cluster --nodes)",
}


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], input=stdin, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    api = start_dev_cluster(tmp_path_factory.mktemp("deploy") / "cluster")
    try:
        yield api
    finally:
        api.stop()


@pytest.fixture(scope="module")
def manifests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of manifests/ with the certificates each overlay's secretGenerator reads, as the
    overlays' comments say to make them."""
    out = tmp_path_factory.mktemp("manifests") / "manifests"
    shutil.copytree(ROOT / "manifests", out, ignore=shutil.ignore_patterns("certs"))
    certs = out / "overlays" / "manager" / "certs"
    subprocess.run([sys.executable, "-m", "hub.cli", "certs", "--out", str(certs), "--agent", "worker-1",
                    "--hub-name", "mkhub-hub.mkhub-system.svc"], check=True, capture_output=True, cwd=ROOT)
    shutil.copytree(certs, out / "overlays" / "standalone" / "certs")
    shutil.copytree(certs / "agents" / "worker-1", out / "overlays" / "worker" / "certs")
    return out


class Schemas:
    """The kinds' schemas from the OpenAPI v3 documents an API server serves."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.docs: dict[str, dict[str, Any]] = {}
        self.index = self._get("/openapi/v3")["paths"]

    def _get(self, path: str) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + path, timeout=30) as resp:
            return dict(json.load(resp))

    def of(self, api_version: str, kind: str) -> dict[str, Any]:
        group, _, version = api_version.rpartition("/")
        key = f"apis/{group}/{version}" if group else f"api/{version}"
        assert key in self.index, f"the API server serves no {api_version} (for {kind})"
        if key not in self.docs:
            self.docs[key] = self._get(self.index[key]["serverRelativeURL"])
        schema = kind_schema(self.docs[key], group, version, kind)
        assert schema is not None, f"no schema for {kind} in {api_version}"
        return schema


@pytest.fixture(scope="module")
def schemas(cluster: ApiServer) -> Schemas:
    return Schemas(cluster.url)


def objects_of(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def plain_manifests(root: Path) -> dict[str, list[dict[str, Any]]]:
    """Every YAML file under manifests/ that holds API objects, by path."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "certs" in path.parts or path.suffix not in (".yaml", ".yml", ""):
            continue
        if path.name in NOT_API_OBJECTS:
            continue
        docs = objects_of(path.read_text())
        assert docs and all("apiVersion" in d and "kind" in d for d in docs), f"{path}: not API objects"
        out[str(path.relative_to(root))] = docs
    return out


def check(schemas: Schemas, obj: dict[str, Any], *, patch: bool = False) -> list[str]:
    """Problems of ``obj``; a strategic-merge patch is partial, so missing required fields are its base's."""
    found = problems(schemas.of(obj["apiVersion"], obj["kind"]), obj)
    return [p for p in found if not (patch and p.endswith(": Required value"))]


def patch_files(root: Path) -> set[str]:
    """The files the kustomizations name as patches."""
    out = set()
    for path in root.rglob("kustomization.yaml"):
        for entry in yaml.safe_load(path.read_text()).get("patches") or []:
            if "path" in entry:
                out.add(str((path.parent / entry["path"]).relative_to(root)))
    return out


def test_every_manifest_fits_the_served_schemas(manifests: Path, schemas: Schemas) -> None:
    files = plain_manifests(manifests)
    # The kinds of a deployment and Kueue's all appear, so none is skipped unnoticed.
    assert {"base/hub-deployment.yaml", "base/hub-rbac.yaml", "base/webhook.yaml", "base/agent/agent-deployment.yaml",
            "samples/teams/queues.yaml", "crds/kueue.x-k8s.io_workloads.yaml"} <= set(files)
    patches = patch_files(manifests)
    assert patches == {"overlays/manager/grpc-loadbalancer.yaml", "overlays/worker/agent-args.yaml"}
    checked = 0
    for name, docs in files.items():
        for obj in docs:
            found = check(schemas, obj, patch=name in patches)
            assert found == [], f"{name}: {obj['kind']} {obj['metadata'].get('name') or ''}: {found}"
            checked += 1
    # What kubectl apply -k sends: each overlay as kustomize renders it (generated Secrets and
    # ConfigMaps, patches applied).
    kinds: set[str] = set()
    for overlay in OVERLAYS:
        rendered = subprocess.run([KUBECTL, "kustomize", str(manifests / "overlays" / overlay)], capture_output=True,
                                  text=True, check=True, timeout=60).stdout
        for obj in objects_of(rendered):
            found = check(schemas, obj)
            assert found == [], f"overlays/{overlay}: {obj['kind']} {obj['metadata']['name']}: {found}"
            kinds.add(obj["kind"])
            checked += 1
    assert {"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
            "RoleBinding", "Secret", "ConfigMap", "Service", "Deployment", "MutatingWebhookConfiguration"} <= kinds
    assert checked > 60


def test_the_managers_kueue_configuration_loads(manifests: Path) -> None:
    from hub.configfile import load_configuration_file

    config = load_configuration_file(manifests / "overlays" / "manager" / "config.yaml")
    assert config.multikueue.gc_interval == 60 and config.multikueue.worker_lost_timeout == 900


def _hub_deployment(manifests: Path) -> dict[str, Any]:
    (doc,) = objects_of((manifests / "base" / "hub-deployment.yaml").read_text())
    return doc


def test_a_broken_manifest_is_refused_with_its_field_paths(manifests: Path, schemas: Schemas,
                                                            cluster: ApiServer) -> None:
    good = _hub_deployment(manifests)
    bad = copy.deepcopy(good)
    bad["spec"]["replicas"] = "two"
    container = bad["spec"]["template"]["spec"]["containers"][0]
    container["readinessProbe"]["grpc"]["portt"] = 8081
    container["ports"][0]["containerPort"] = "7443"
    del bad["spec"]["selector"]
    found = check(schemas, bad)
    assert sorted(found) == sorted([
        'spec.replicas: Invalid value: "two": must be of type integer',
        "spec.template.spec.containers[0].readinessProbe.grpc.portt: field not declared in schema",
        'spec.template.spec.containers[0].ports[0].containerPort: Invalid value: "7443": must be of type integer',
        "spec.selector: Required value",
    ]), found
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"},
          "spec": {"cohort": 3, "resourceGroupz": []}}
    assert sorted(check(schemas, cq)) == [
        "spec.cohort: Invalid value: 3: must be of type string", "spec.resourceGroupz: field not declared in schema"]
    # The dev-cluster refuses them too, naming the field, and stores nothing.
    bad = copy.deepcopy(good)
    bad["metadata"].update(name="broken", namespace="default")
    bad["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["grpcc"] = {}
    refused = kubectl(cluster.kubeconfig, "apply", "-f", "-", stdin=json.dumps(bad))
    assert refused.returncode != 0
    assert 'unknown field "spec.template.spec.containers[0].livenessProbe.grpcc"' in refused.stderr, refused.stderr
    bad = copy.deepcopy(good)
    bad["metadata"].update(name="broken", namespace="default")
    bad["spec"]["replicas"] = "two"
    refused = kubectl(cluster.kubeconfig, "apply", "-f", "-", stdin=json.dumps(bad))
    assert refused.returncode != 0 and 'spec.replicas: Invalid value: "two": must be of type integer' in refused.stderr
    assert "NotFound" in kubectl(cluster.kubeconfig, "get", "deployment", "broken", "-n", "default").stderr


def test_kubectl_apply_k_of_each_overlay(manifests: Path, cluster: ApiServer) -> None:
    for overlay in OVERLAYS:
        applied = kubectl(cluster.kubeconfig, "apply", "-k", str(manifests / "overlays" / overlay))
        assert applied.returncode == 0, f"{overlay}: {applied.stdout}\n{applied.stderr}"
        assert applied.stderr == "", applied.stderr
    got = kubectl(cluster.kubeconfig, "get", "deployments", "-n", "mkhub-system", "-o", "json")
    deployments = {d["metadata"]["name"]: d for d in json.loads(got.stdout)["items"]}
    assert sorted(deployments) == ["mkhub-agent", "mkhub-hub"]
    hub = deployments["mkhub-hub"]["spec"]
    assert hub["replicas"] == 2
    container = hub["template"]["spec"]["containers"][0]
    assert container["livenessProbe"]["grpc"] == {"port": 8081, "service": "liveness"}
    assert container["readinessProbe"]["grpc"]["port"] == 8081
    assert "--config=/etc/mkhub/config/config.yaml" in container["args"]  # the manager overlay was applied last
    secrets = json.loads(kubectl(cluster.kubeconfig, "get", "secrets", "-n", "mkhub-system", "-o", "json").stdout)
    tls = [s for s in secrets["items"] if s["metadata"]["name"].startswith("mkhub-hub-tls-")]
    assert tls and all(s["type"] == "kubernetes.io/tls" and set(s["data"]) == {"tls.crt", "tls.key", "ca.crt"}
                       for s in tls)
    hook = json.loads(kubectl(cluster.kubeconfig, "get", "mutatingwebhookconfiguration", "mkhub-job-webhook", "-o",
                              "json").stdout)["webhooks"][0]["clientConfig"]
    assert hook["service"]["name"] == "mkhub-hub-webhook" and hook["caBundle"]  # the overlay's CA, by replacement
    role = json.loads(kubectl(cluster.kubeconfig, "get", "clusterrole", "mkhub-hub", "-o", "json").stdout)
    assert {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get", "update"]} in role["rules"]
    # Applying again changes nothing; server-side apply of the same overlay works too.
    again = kubectl(cluster.kubeconfig, "apply", "-k", str(manifests / "overlays" / "worker"))
    assert again.returncode == 0 and "created" not in again.stdout and "configured" not in again.stdout, again.stdout
    ssa = kubectl(cluster.kubeconfig, "apply", "--server-side", "-k", str(manifests / "overlays" / "standalone"))
    assert ssa.returncode == 0, ssa.stderr
