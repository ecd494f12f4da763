"""The dev-cluster's APIService aggregation (hub.kubeapi.aggregator) and the discovery of
groups served elsewhere: Services resolved as kube-aggregator's ResolveCluster resolves them,
the Available condition and its reasons, what is proxied and listed."""

from __future__ import annotations

import asyncio
import base64
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hub.demo.processes import free_port
from hub.kubeapi import discovery
from hub.kubeapi.aggregator import Aggregator, resolve
from hub.kubeapi.visibility import DISCOVERY
from hub.store import SQLiteStore

GROUP = "visibility.kueue.x-k8s.io"


def apiservice(port: int | None = 8082, *, service: bool = True, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"group": GROUP, "version": "v1beta2", "groupPriorityMinimum": 100, "versionPriority": 200,
                            **spec}
    if service:
        body["service"] = {"namespace": "mkhub-system", "name": "vis", **({"port": port} if port else {})}
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": f"v1beta2.{GROUP}"}, "spec": body}


def service(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "vis", "namespace": "mkhub-system"},
            "spec": spec}


def test_services_resolve_as_the_aggregator_resolves_them() -> None:
    ext = resolve(apiservice(), service(type="ExternalName", externalName="127.0.0.1"))
    assert (ext.url, ext.server_name, ext.reason) == ("https://127.0.0.1:8082", "vis.mkhub-system.svc", "")
    assert resolve(apiservice(None), service(type="ExternalName", externalName="::1")).url == "https://[::1]:443"
    cluster_ip = service(clusterIP="127.0.0.2", ports=[{"port": 8082, "targetPort": 9000}])
    assert resolve(apiservice(), cluster_ip).url == "https://127.0.0.2:8082"  # the Service's port, as ResolveCluster
    wrong_port = resolve(apiservice(443), cluster_ip)
    assert (wrong_port.reason, wrong_port.message) == ("ServiceAccessError", 'no service port 443 found for service "vis"')
    assert "has no clusterIP" in resolve(apiservice(), service(ports=[{"port": 8082}])).message
    missing = resolve(apiservice(), None)
    assert (missing.reason, missing.message) == ("ServiceNotFound", 'service/vis in "mkhub-system" is not present')
    assert resolve(apiservice(caBundle="%%%"), service(type="ExternalName", externalName="h")).message == (
        "spec.caBundle: not base64-encoded PEM")
    pem = "-----BEGIN CERTIFICATE-----\n"
    checked = resolve(apiservice(caBundle=base64.b64encode(pem.encode()).decode()),
                      service(type="ExternalName", externalName="h"))
    assert (checked.ca_bundle, checked.insecure) == (pem, False)
    encoded = base64.b64encode(pem.encode()).decode()
    wrapped = resolve(apiservice(caBundle="\n".join(encoded[i:i + 8] for i in range(0, len(encoded), 8)) + "\n"),
                      service(type="ExternalName", externalName="h"))  # as kustomize writes it
    assert wrapped.ca_bundle == pem
    assert resolve(apiservice(), service(type="Bogus")).message == 'unsupported service type "Bogus"'


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = SQLiteStore(tmp_path / "state.db")
    yield s
    s.close()


def available(store: SQLiteStore, name: str = f"v1beta2.{GROUP}") -> dict[str, Any]:
    obj = store.get("APIService", "", name)
    assert obj is not None
    (cond,) = obj["status"]["conditions"]
    return dict(cond)


def test_availability_is_written_with_the_aggregators_reasons(store: SQLiteStore) -> None:
    agg = Aggregator(store, clock=lambda: 1_750_000_000.0)
    port = free_port()  # nothing listens there
    store.create(apiservice(port))
    local = {**apiservice(service=False), "metadata": {"name": "v1.example.com"}}
    local["spec"] = {**local["spec"], "group": "example.com", "version": "v1"}
    store.create(local)

    async def scenario() -> None:
        await agg.check()
        cond = available(store)
        assert (cond["status"], cond["reason"]) == ("False", "ServiceNotFound")
        assert cond["lastTransitionTime"] == "2025-06-15T15:06:40Z"
        local_cond = available(store, "v1.example.com")
        assert (local_cond["status"], local_cond["reason"]) == ("True", "Local")
        store.create(service(type="ExternalName", externalName="127.0.0.1"))
        await agg.check()  # the Service appeared: probed at once
        cond = available(store)
        assert (cond["status"], cond["reason"]) == ("False", "FailedDiscoveryCheck")
        assert cond["message"].startswith(f"failing or missing response from https://127.0.0.1:{port}/apis/{GROUP}/v1beta2")
        assert agg.extra_groups() == []  # unavailable: not listed
        assert await agg.proxy(None, ["apis", "example.com", "v1", "things"]) is None  # type: ignore[arg-type]
        hijack = {**apiservice(port), "metadata": {"name": "v1.batch"}}
        hijack["spec"] = {**hijack["spec"], "group": "batch", "version": "v1"}
        store.create(hijack)  # a remote server for a group served here: ignored, reported Local
        await agg.check()
        assert available(store, "v1.batch")["reason"] == "Local"
        assert await agg.proxy(None, ["apis", "batch", "v1", "jobs"]) is None  # type: ignore[arg-type]
        await agg.close()

    asyncio.run(scenario())


def test_unavailable_apiservices_answer_503_and_unknown_groups_fall_through(store: SQLiteStore) -> None:
    agg = Aggregator(store)
    store.create(apiservice())

    async def scenario() -> None:
        await agg.check()
        refused = await agg.proxy(None, ["apis", GROUP, "v1beta2", "clusterqueues"])  # type: ignore[arg-type]
        assert refused is not None and refused.status == 503
        assert await agg.proxy(None, ["apis", GROUP, "v1beta1", "clusterqueues"]) is None  # type: ignore[arg-type]
        store.delete("APIService", "", f"v1beta2.{GROUP}")
        await agg.check()
        assert await agg.proxy(None, ["apis", GROUP, "v1beta2", "clusterqueues"]) is None  # type: ignore[arg-type]
        await agg.close()

    asyncio.run(scenario())


def test_discovery_lists_extra_groups_after_the_built_in_ones() -> None:
    groups = discovery.api_group_list((DISCOVERY,))["groups"]
    assert groups[-1]["name"] == GROUP and groups[-1]["preferredVersion"]["version"] == "v1beta2"
    assert [g["name"] for g in discovery.api_group_list((DISCOVERY,), builtin=False)["groups"]] == [GROUP]
    doc = discovery.aggregated(False, discovery.AGGREGATED_V2, (DISCOVERY,))
    (vis,) = [i for i in doc["items"] if i["metadata"]["name"] == GROUP]
    assert [v["version"] for v in vis["versions"]] == ["v1beta2", "v1beta1"]
    by_name = {r["resource"]: r for r in vis["versions"][0]["resources"]}
    assert by_name["clusterqueues"]["scope"] == "Cluster" and by_name["localqueues"]["scope"] == "Namespaced"
    assert by_name["clusterqueues"]["verbs"] == []
    assert by_name["localqueues"]["subresources"] == [{
        "subresource": "pendingworkloads", "verbs": ["get"],
        "responseKind": {"group": GROUP, "version": "v1beta2", "kind": "PendingWorkloadsSummary"}}]
    assert discovery.api_resource_list(GROUP, "v1beta1", (DISCOVERY,))["groupVersion"] == f"{GROUP}/v1beta1"  # type: ignore[index]
    assert discovery.api_resource_list(GROUP, "v1", (DISCOVERY,)) is None
    assert GROUP not in [g["name"] for g in discovery.api_group_list()["groups"]]


def test_an_apiservice_reaches_the_visibility_server_with_the_name_and_client_certificate_checked(
        store: SQLiteStore, tmp_path: Path) -> None:
    from hub.federation import tls
    from hub.obs.visibility import PendingWorkload
    from hub.service.certs import make_admin_cert
    from hub.service.kubeserve import start_visibility

    certs = tmp_path / "certs"
    tls.make_certs(certs, [], ["vis.mkhub-system.svc"])
    admin = make_admin_cert(certs)  # signed by the CA the server asks client certificates of
    other = tmp_path / "other"
    tls.make_certs(other, [], [])  # a second CA, that the APIService does not trust

    async def pending(kind: str, namespace: str, name: str) -> list[PendingWorkload] | None:
        return [PendingWorkload("team", "w1", 5, "lq", "cq", 0, 0)] if (kind, name) == ("clusterqueues", "cq") else None

    ca = base64.b64encode((certs / "ca.crt").read_bytes()).decode()
    store.create(service(type="ExternalName", externalName="127.0.0.1"))

    async def scenario() -> None:
        server = await start_visibility(pending, "127.0.0.1:0", certs, certs / "ca.crt")
        port = server.port
        try:
            store.create(apiservice(port, caBundle=ca))
            anonymous = Aggregator(store)  # no client certificate: the server refuses the handshake
            await anonymous.check()
            assert available(store)["reason"] == "FailedDiscoveryCheck"
            await anonymous.close()
            agg = Aggregator(store, client_cert=admin)
            await agg.check()
            cond = available(store)
            assert (cond["status"], cond["reason"], cond["message"]) == ("True", "Passed", "all checks passed")
            context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
            context.load_cert_chain(str(admin[0]), str(admin[1]))
            async with aiohttp.ClientSession() as client, client.get(
                    f"https://127.0.0.1:{port}/apis", ssl=context, headers={"Accept": discovery.AGGREGATED_V2}) as resp:
                doc = await resp.json(content_type=None)  # what kube-apiserver's aggregated discovery fetches
            assert (resp.headers["Content-Type"], [i["metadata"]["name"] for i in doc["items"]]) == (
                discovery.AGGREGATED_V2, [GROUP])
            (group,) = agg.extra_groups()
            assert (group.name, group.versions) == (GROUP, ("v1beta2",))
            assert {r["name"] for r in group.resources["v1beta2"]} >= {"clusterqueues/pendingworkloads"}
            untrusted = {**apiservice(port, caBundle=base64.b64encode((other / "ca.crt").read_bytes()).decode()),
                         "metadata": {"name": f"v1beta1.{GROUP}"}}
            untrusted["spec"] = {**untrusted["spec"], "version": "v1beta1"}
            store.create(untrusted)
            await agg.check()
            assert "certificate verify failed" in available(store, f"v1beta1.{GROUP}")["message"]
            # A server the CA vouches for, but not as vis.mkhub-system.svc (only localhost, 127.0.0.1, ::1).
            unnamed = await start_visibility(pending, "127.0.0.1:0", other, None)
            try:
                store.delete("APIService", "", f"v1beta1.{GROUP}")
                untrusted["spec"]["service"] = {**untrusted["spec"]["service"], "port": unnamed.port}
                store.create({k: v for k, v in untrusted.items() if k != "status"})
                await agg.check()
                assert "Hostname mismatch" in available(store, f"v1beta1.{GROUP}")["message"]
            finally:
                await unnamed.stop()
            await agg.close()
        finally:
            await server.stop()

    asyncio.run(scenario())
