"""Discovery: ``/version``, ``/api``, ``/apis``, ``/api/v1``, ``/apis/{group}/{version}``.

Both forms client-go knows are served. kubectl 1.32 asks ``/api`` and ``/apis``
for aggregated discovery first (``Accept: application/json;g=apidiscovery.k8s.io;
v=v2;as=APIGroupDiscoveryList,...``): answered in that form, it needs no
per-group-version requests. Clients that ask plain JSON get the legacy
documents (APIVersions, APIGroupList, APIResourceList).

Groups served by someone else (:class:`ExtraGroup`: Kueue's visibility API, served by
the hub itself with ``--kube-listen``, or an APIService the dev-cluster proxies to)
are listed after the built-in ones, from their APIResourceList entries.
"""

from __future__ import annotations

import hashlib
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .resources import RESOURCES, Resource, groups, in_group_version

Doc = dict[str, Any]

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
KUBE_MINOR = "32"


@dataclass(frozen=True, slots=True)
class ExtraGroup:
    """A group whose resources are served outside :mod:`.resources`, in APIResourceList form."""

    name: str
    versions: tuple[str, ...]  # preferred first
    resources: Mapping[str, Sequence[Doc]]  # version -> the "resources" of its APIResourceList


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


def _all_groups(extra: Sequence[ExtraGroup], builtin: bool = True) -> dict[str, tuple[str, ...]]:
    """Every group and its versions; an extra group of a built-in name (a CRD's kind added to a
    built-in group, hub.kubeapi.crds) adds its versions and resources to it."""
    out = groups() if builtin else {}
    for g in extra:
        have = out.get(g.name)
        out[g.name] = g.versions if have is None else have + tuple(v for v in g.versions if v not in have)
    return out


def _extra_entries(extra: Sequence[ExtraGroup], group: str, version: str) -> list[Doc]:
    return [dict(r) for g in extra if g.name == group for r in g.resources.get(version, ())]


def api_group_list(extra: Sequence[ExtraGroup] = (), builtin: bool = True) -> Doc:
    """``/apis``; ``builtin=False``: the extra groups alone (an aggregated server's own)."""
    out = []
    for group, versions in _all_groups(extra, builtin).items():
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        out.append({"name": group, "versions": gvs, "preferredVersion": gvs[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}


def api_group(group: str, extra: Sequence[ExtraGroup] = ()) -> Doc | None:
    versions = _all_groups(extra).get(group)
    if versions is None:
        return None
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": gvs, "preferredVersion": gvs[0]}


def _status_verbs() -> list[str]:
    return ["get", "patch", "update"]


BUILTIN_SCALABLE = frozenset({("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "StatefulSet")})
"""Built-in kinds with the ``scale`` subresource (served by hub.kubeapi.crds.scale_of)."""
_SCALE_KIND = {"group": "autoscaling", "version": "v1", "kind": "Scale"}


def api_resource_list(group: str, version: str, extra: Sequence[ExtraGroup] = ()) -> Doc | None:
    members = in_group_version(group, version)
    more = _extra_entries(extra, group, version)
    if not members:
        if not any(g.name == group and version in g.resources for g in extra):
            return None
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}", "resources": more}
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
        if (res.group, res.kind) in BUILTIN_SCALABLE:
            resources.append({"name": f"{res.plural}/scale", "singularName": "", "namespaced": res.namespaced,
                              "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": _status_verbs()})
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources + more}


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
    if (res.group, res.kind) in BUILTIN_SCALABLE:
        entry.setdefault("subresources", []).append(
            {"subresource": "scale", "responseKind": dict(_SCALE_KIND), "verbs": _status_verbs()})
    return entry


def _from_resource_list(group: str, version: str, entries: Sequence[Doc]) -> list[Doc]:
    """APIResourceList entries (``x`` and ``x/sub``) as aggregated discovery's resources."""
    out: dict[str, Doc] = {}
    for e in entries:
        name = str(e.get("name", ""))
        kind = {"group": group, "version": version, "kind": e.get("kind", "")}
        base, _, sub = name.partition("/")
        if not sub:
            out[base] = {"resource": base, "responseKind": kind,
                         "scope": "Namespaced" if e.get("namespaced") else "Cluster",
                         "singularResource": e.get("singularName", ""), "verbs": list(e.get("verbs") or [])}
            for key in ("shortNames", "categories"):
                if e.get(key):
                    out[base][key] = list(e[key])
    for e in entries:
        base, _, sub = str(e.get("name", "")).partition("/")
        if sub and base in out:
            kind = {"group": e.get("group", group), "version": e.get("version", version), "kind": e.get("kind", "")}
            out[base].setdefault("subresources", []).append(
                {"subresource": sub, "responseKind": kind,
                 "verbs": list(e.get("verbs") or [])})
    return list(out.values())


def aggregated(core: bool, media_type: str, extra: Sequence[ExtraGroup] = (), builtin: bool = True) -> Doc:
    """``/api`` (core) or ``/apis`` as an APIGroupDiscoveryList (``builtin=False``: the extra groups alone)."""
    api_version = "apidiscovery.k8s.io/v2" if media_type == AGGREGATED_V2 else "apidiscovery.k8s.io/v2beta1"
    items = []
    every = {} if core else _all_groups(extra, builtin)
    group_names = [""] if core else list(groups()) if builtin else []
    group_names += [g for g in every if g not in group_names]
    for group in group_names:
        versions = ("v1",) if core else every[group]
        entries = []
        for version in versions:
            members = [r for r in RESOURCES if r.group == group and version in r.versions] if builtin else []
            listed = [_discovery_resource(r, version) for r in members]
            listed += _from_resource_list(group, version, _extra_entries(() if core else extra, group, version))
            entries.append({"version": version, "resources": listed, "freshness": "Current"})
        items.append({"metadata": {"name": group, "creationTimestamp": None}, "versions": entries})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items}
