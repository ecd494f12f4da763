"""Discovery: ``/version``, ``/api``, ``/apis``, ``/api/v1``, ``/apis/{group}/{version}``.

Both forms client-go knows are served. kubectl 1.32 asks ``/api`` and ``/apis``
for aggregated discovery first (``Accept: application/json;g=apidiscovery.k8s.io;
v=v2;as=APIGroupDiscoveryList,...``): answered in that form, it needs no
per-group-version requests. Clients that ask plain JSON get the legacy
documents (APIVersions, APIGroupList, APIResourceList).
"""

from __future__ import annotations

import hashlib
import platform
from typing import Any

from .resources import RESOURCES, Resource, groups, in_group_version

Doc = dict[str, Any]

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
KUBE_MINOR = "32"


def version_info(mkhub_version: str) -> Doc:
    return {
        "major": "1",
        "minor": KUBE_MINOR,
        "gitVersion": f"v1.{KUBE_MINOR}.0-mkhub.{mkhub_version}",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": f"python{platform.python_version()}",
        "compiler": "cpython",
        "platform": f"{platform.system().lower()}/{platform.machine()}",
    }


def wants_aggregated(accept: str) -> str | None:
    """The aggregated discovery media type the client prefers, if it asks for one."""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if "g=apidiscovery.k8s.io" in params and "as=APIGroupDiscoveryList" in params:
            if "v=v2" in params:
                return AGGREGATED_V2
            if "v=v2beta1" in params:
                return AGGREGATED_V2BETA1
    return None


def _hash(res: Resource) -> str:
    return hashlib.sha256(f"{res.group}/{res.kind}/{res.preferred}".encode()).hexdigest()[:16]


def api_versions() -> Doc:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
    }


def api_group_list() -> Doc:
    out = []
    for group, versions in groups().items():
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        out.append({"name": group, "versions": gvs, "preferredVersion": gvs[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}


def api_group(group: str) -> Doc | None:
    versions = groups().get(group)
    if versions is None:
        return None
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": gvs, "preferredVersion": gvs[0]}


def _status_verbs() -> list[str]:
    return ["get", "patch", "update"]


def api_resource_list(group: str, version: str) -> Doc | None:
    members = in_group_version(group, version)
    if not members:
        return None
    resources: list[Doc] = []
    for res in members:
        entry: Doc = {
            "name": res.plural,
            "singularName": res.singular,
            "namespaced": res.namespaced,
            "kind": res.kind,
            "verbs": list(res.verbs),
            "storageVersionHash": _hash(res),
        }
        if res.short_names:
            entry["shortNames"] = list(res.short_names)
        if res.categories:
            entry["categories"] = list(res.categories)
        resources.append(entry)
        if res.has_status and res.writable:
            resources.append(
                {"name": f"{res.plural}/status", "singularName": "", "namespaced": res.namespaced,
                 "kind": res.kind, "verbs": _status_verbs()}
            )
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def _discovery_resource(res: Resource, version: str) -> Doc:
    kind = {"group": res.group, "version": version, "kind": res.kind}
    entry: Doc = {
        "resource": res.plural,
        "responseKind": kind,
        "scope": "Namespaced" if res.namespaced else "Cluster",
        "singularResource": res.singular,
        "verbs": list(res.verbs),
    }
    if res.short_names:
        entry["shortNames"] = list(res.short_names)
    if res.categories:
        entry["categories"] = list(res.categories)
    if res.has_status and res.writable:
        entry["subresources"] = [{"subresource": "status", "responseKind": kind, "verbs": _status_verbs()}]
    return entry


def aggregated(core: bool, media_type: str) -> Doc:
    """``/api`` (core) or ``/apis`` as an APIGroupDiscoveryList."""
    api_version = "apidiscovery.k8s.io/v2" if media_type == AGGREGATED_V2 else "apidiscovery.k8s.io/v2beta1"
    items = []
    group_names = [""] if core else list(groups())
    for group in group_names:
        versions = ("v1",) if core else groups()[group]
        entries = []
        for version in versions:
            members = [r for r in RESOURCES if r.group == group and version in r.versions]
            entries.append(
                {"version": version, "resources": [_discovery_resource(r, version) for r in members], "freshness": "Current"}
            )
        items.append({"metadata": {"name": group, "creationTimestamp": None}, "versions": entries})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items}
