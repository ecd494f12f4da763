"""How kubectl names a resource type in messages: ``workloads.kueue.x-k8s.io``, ``jobs.batch``."""

from __future__ import annotations

from hub.api.registry import KindInfo


def api_group(info: KindInfo) -> str:
    version = info.api_versions[0]
    return version.rsplit("/", 1)[0] if "/" in version else ""


def resource_name(info: KindInfo) -> str:
    group = api_group(info)
    return f"{info.plural}.{group}" if group else info.plural
