"""``GET /api/v1/namespaces/{namespace}/pods/{name}/log``, as the API server serves it.

The lines are the dev-cluster's simulated kubelet's, built from the pod when read
(:meth:`hub.devcluster.kubelet.Kubelet.log_lines`, given to the server as ``KubeAPI.pod_log_lines``);
a server no kubelet runs pods for serves none.
Query parameters, as Kubernetes: ``container`` (required when the pod has
several containers), ``tailLines`` (the last N lines), ``follow`` (keep the
response open and send new lines until the pod has ended). The body is
``text/plain``, one line per log line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from hub.store.interface import Object, Store

from . import errors
from .resources import BY_KIND

LinesOf = Callable[[Object], list[str]]  # a pod's log lines, all containers'
FOLLOW_POLL = 0.2  # seconds between two looks at a followed pod
ENDED_PHASES = ("Succeeded", "Failed")


def is_log_path(method: str, parts: list[str]) -> bool:
    return method == "GET" and len(parts) == 7 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods" and parts[6] == "log"


def _containers(pod: Object) -> list[str]:
    return [str(c.get("name", "")) for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]


def _lines(lines_of: LinesOf | None, pod: Object, container: str, others: list[str]) -> list[str]:
    lines = lines_of(pod) if lines_of is not None else []
    # A line naming another container is that container's (the simulated kubelet tags them).
    return [x for x in lines if not any(f"container {o!r}" in x for o in others if o != container)]


def _options(query: Mapping[str, str], pod: Object) -> tuple[str, int | None, bool]:
    name = pod["metadata"]["name"]
    containers = _containers(pod)
    container = query.get("container", "")
    if not container:
        if len(containers) > 1:
            raise errors.bad_request(
                f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
            )
        container = containers[0] if containers else ""
    elif container not in containers:
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    tail: int | None = None
    raw = query.get("tailLines")
    if raw not in (None, ""):
        try:
            tail = int(str(raw))
        except ValueError:
            raise errors.bad_request(f"tailLines: Invalid value: {raw!r}: must be an integer") from None
        if tail < 0:
            raise errors.bad_request("tailLines: Invalid value: must be greater than or equal to 0")
    follow = query.get("follow", "").lower() in ("true", "1")
    return container, tail, follow


def _text(lines: list[str]) -> bytes:
    return "".join(f"{x}\n" for x in lines).encode()


async def serve_pod_log(request: web.BaseRequest, store: Store, namespace: str, name: str, lines_of: LinesOf | None) -> web.StreamResponse:
    pod: Any = await asyncio.to_thread(store.get, "Pod", namespace, name)
    if pod is None:
        raise errors.not_found(BY_KIND["Pod"], name)
    container, tail, follow = _options(request.query, pod)
    others = _containers(pod)
    lines = await asyncio.to_thread(_lines, lines_of, pod, container, others)
    first = lines if tail is None else (lines[-tail:] if tail else [])
    if not follow:
        return web.Response(body=_text(first), content_type="text/plain")
    resp = web.StreamResponse(headers={"Content-Type": "text/plain", "Transfer-Encoding": "chunked"})
    await resp.prepare(request)
    await resp.write(_text(first))
    sent = len(lines)
    while (pod.get("status") or {}).get("phase") not in ENDED_PHASES:
        await asyncio.sleep(FOLLOW_POLL)
        current: Any = await asyncio.to_thread(store.get, "Pod", namespace, name)
        if current is None or current["metadata"].get("uid") != pod["metadata"].get("uid"):
            break
        # The exit lines come from the same status write as the ended phase: nothing follows them.
        lines = await asyncio.to_thread(_lines, lines_of, current, container, others)
        if len(lines) > sent:
            await resp.write(_text(lines[sent:]))
            sent = len(lines)
        if (current.get("status") or {}).get("phase") in ENDED_PHASES:
            break
    await resp.write_eof()
    return resp
