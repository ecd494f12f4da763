"""Kueue's visibility API on the hub's Kubernetes API layer (``kubectl get --raw``).

    GET /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{cq}/pendingworkloads
    GET /apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues/{lq}/pendingworkloads

``limit`` (default 1000) and ``offset`` (default 0) as Kueue's visibility server
takes them; the answer is a ``PendingWorkloadsSummary`` computed on the engine's
thread by :mod:`hub.obs.visibility` (through ``pending``, a callable the service
layer provides, so this module needs no engine).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from hub.obs import visibility

from .auth import Authorizer, user_of

GROUP = "visibility.kueue.x-k8s.io"
VERSIONS = ("v1beta2", "v1beta1")

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


__all__ = ["Pending", "VisibilityRoutes"]
