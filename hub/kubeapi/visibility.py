"""Kueue's visibility API on the hub's Kubernetes API layer (``kubectl get --raw``).

    GET /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{cq}/pendingworkloads
    GET /apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues/{lq}/pendingworkloads

``limit`` (default 1000) and ``offset`` (default 0) as Kueue's visibility server
takes them; the answer is a ``PendingWorkloadsSummary`` computed on the engine's
thread by :mod:`hub.obs.visibility` (through ``pending``, a callable the service
layer provides, so this module needs no engine).

Discovery lists the group as Kueue's visibility server does (:data:`DISCOVERY`):
``clusterqueues`` and ``localqueues`` with no verbs of their own (Kueue installs them only
to carry the subresource) and their ``pendingworkloads`` subresource (``get``). So
``kubectl api-versions`` lists ``visibility.kueue.x-k8s.io/v1beta2``; ``kubectl
api-resources`` shows none of it, against Kueue too (it skips resources without verbs).

:class:`VisibilityServer` is the aggregated API server of ``mkhub serve
--visibility-listen``: these routes, the group's discovery and health, over HTTPS,
for an ``APIService`` (``manifests/base/visibility.yaml``) to point at.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from hub.obs import visibility

from . import discovery
from .auth import Authorizer, user_of
from .discovery import ExtraGroup

GROUP = "visibility.kueue.x-k8s.io"
VERSIONS = ("v1beta2", "v1beta1")

KIND = "PendingWorkloadsSummary"


def _resources() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for plural, namespaced in (("clusterqueues", False), ("localqueues", True)):
        out.append({"name": plural, "singularName": plural[:-1], "namespaced": namespaced, "kind": KIND, "verbs": []})
        out.append({"name": f"{plural}/pendingworkloads", "singularName": "", "namespaced": namespaced, "kind": KIND,
                    "verbs": ["get"]})
    return out


DISCOVERY = ExtraGroup(GROUP, VERSIONS, {v: tuple(_resources()) for v in VERSIONS})

# (kind, namespace, name) -> the pending workloads in queue order, or None when the queue does not exist.
Pending = Callable[[str, str, str], Awaitable[list[visibility.PendingWorkload] | None]]


def _status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> web.Response:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return web.Response(body=json.dumps(body).encode(), status=code, headers={"Content-Type": "application/json"})


class VisibilityRoutes:
    """The two pendingworkloads paths; register them before the API's catch-all route."""

    def __init__(self, pending: Pending, authorizer: Authorizer) -> None:
        self.pending = pending
        self.authorizer = authorizer

    def register(self, app: web.Application) -> None:
        for version in VERSIONS:
            base = f"/apis/{GROUP}/{version}"
            app.router.add_get(f"{base}/clusterqueues/{{name}}/pendingworkloads", self._cluster_queue)
            app.router.add_get(f"{base}/namespaces/{{namespace}}/localqueues/{{name}}/pendingworkloads", self._local_queue)

    async def _cluster_queue(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, "clusterqueues", "", request.match_info["name"])

    async def _local_queue(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, "localqueues", request.match_info["namespace"], request.match_info["name"])

    async def _serve(self, request: web.Request, kind: str, namespace: str, name: str) -> web.StreamResponse:
        user = user_of(request.transport.get_extra_info) if request.transport is not None else "unknown"
        if not self.authorizer.allowed(user):
            where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
            return _status(403, "Forbidden", f'{kind}.{GROUP} "{name}" is forbidden: User "{user}" cannot get resource '
                           f'"{kind}/pendingworkloads" in API group "{GROUP}"{where}')
        try:
            limit, offset = visibility.parse_window(request.query.get("limit"), request.query.get("offset"))
        except ValueError as exc:
            return _status(400, "BadRequest", str(exc))
        items = await self.pending(kind, namespace, name)
        if items is None:
            return _status(404, "NotFound", f'{kind}.{GROUP} "{name}" not found',
                           {"name": name, "group": GROUP, "kind": kind})
        summary = visibility.summary(items, limit, offset)
        summary["apiVersion"] = f"{GROUP}/{request.path.split('/')[3]}"
        return web.Response(body=json.dumps(summary, separators=(",", ":")).encode(),
                            headers={"Content-Type": "application/json"})


def _json(doc: dict[str, Any]) -> web.Response:
    return web.Response(body=json.dumps(doc, separators=(",", ":")).encode(), headers={"Content-Type": "application/json"})


class VisibilityServer:
    """The visibility API alone, as an aggregated API server (``--visibility-listen``)."""

    def __init__(self, pending: Pending, authorizer: Authorizer) -> None:
        self.routes = VisibilityRoutes(pending, authorizer)
        self.port = 0  # bound, once started
        self._runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        app = web.Application()
        self.routes.register(app)

        async def health(_: web.Request) -> web.StreamResponse:
            return web.Response(text="ok")

        async def apis(request: web.Request) -> web.StreamResponse:
            media = discovery.wants_aggregated(request.headers.get("Accept", ""))
            if media is None:
                return _json(discovery.api_group_list((DISCOVERY,), builtin=False))
            doc = discovery.aggregated(False, media, (DISCOVERY,), builtin=False)
            return web.Response(body=json.dumps(doc).encode(), headers={"Content-Type": media})

        async def group(_: web.Request) -> web.StreamResponse:
            doc = discovery.api_group(GROUP, (DISCOVERY,))
            assert doc is not None
            return _json(doc)

        async def resource_list(request: web.Request) -> web.StreamResponse:
            doc = discovery.api_resource_list(GROUP, request.match_info["version"], (DISCOVERY,))
            if doc is None:
                return _status(404, "NotFound", "the server could not find the requested resource")
            return _json(doc)

        for path in ("/healthz", "/livez", "/readyz"):
            app.router.add_get(path, health)
        app.router.add_get("/apis", apis)
        app.router.add_get(f"/apis/{GROUP}", group)
        app.router.add_get(f"/apis/{GROUP}/{{version}}", resource_list)
        return app

    async def start(self, host: str, port: int, context: ssl.SSLContext) -> int:
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False, shutdown_timeout=0.25)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, ssl_context=context)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or []  # the bound port, when 0 was asked
        self.port = int(sockets[0].getsockname()[1]) if sockets else port
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await asyncio.shield(runner.cleanup())


__all__ = ["DISCOVERY", "GROUP", "Pending", "VERSIONS", "VisibilityRoutes", "VisibilityServer"]
