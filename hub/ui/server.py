"""The dashboard's HTTP server: static pages, a read-only JSON API under /api/v1, live updates by SSE.

Every /api request needs the admin client certificate or a bearer token from
``mkhub ui token``; a bad one gets a 4xx JSON ``{"error": ...}`` before any
work. Engine reads go to the reconciler thread in one call per request; the
workloads table is served from :class:`hub.ui.index.WorkloadIndex` alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web

from hub.controllers.hub import HubReconciler
from hub.federation import tls
from hub.kubeapi.auth import user_of
from hub.service.control import log_target
from hub.service.kubeserve import is_loopback, split_address
from hub.service.uihook import UIContext

from . import reads
from .auth import Refusals, TokenFile
from .index import FILTERS, MAX_LIMIT, QueryError, WorkloadIndex, parse_query
from .live import Activity, Broadcaster, Follower

log = logging.getLogger("mkhub.ui")
STATIC = Path(__file__).parent / "static"
T = TypeVar("T")
ENGINE_TIMEOUT = 10.0
# Ordering a ClusterQueue's pending workloads costs the reconciler's thread a sort of them: one request
# orders at most this many (the rows of the other queues get their positions on a later read).
POSITIONS_BUDGET = 10_000
LOG_TAIL = 200
SAMPLE_EVERY = 1.0  # seconds between readings of Kueue's admission and eviction counters (a sum over queues)
KEEP_ALIVE = 15.0  # seconds between comments on an idle event stream (proxies drop silent ones)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def error(status: int, message: str, **extra: Any) -> web.Response:
    return web.json_response({"error": message, "status": status, **extra}, status=status)


class UI:
    def __init__(self, ctx: UIContext, loop: asyncio.AbstractEventLoop) -> None:
        self.ctx = ctx
        self.tokens = TokenFile(ctx.tokens_file)
        self.refusals = Refusals()
        self.index = WorkloadIndex()
        self.live = Broadcaster(self.index, loop)
        self.activity = Activity(self._counters)
        self.follower: Follower | None = None
        # Per ClusterQueue: its LocalQueues' change counts in the index when ordered (see _positions_of), the
        # LocalQueues, and the positions.
        self._positions: dict[str, tuple[tuple[int, tuple[int, ...]], list[str], dict[str, tuple[int, int]]]] = {}
        self._sampler: asyncio.Task[None] | None = None
        self.runner: web.AppRunner | None = None
        self.port = 0
        self.refused = 0
        self._closing = asyncio.Event()

    # --- wiring

    def attach(self) -> None:
        assert self.ctx.store is not None
        self.follower = Follower(self.ctx.store, self.index, self.live.changed)
        self.follower.start()
        if self.ctx.runtime is not None:  # the hub's own status writes reach the index without a second decode
            self.ctx.runtime.workload_sinks.append(self.follower.written)
        self._sampler = asyncio.get_running_loop().create_task(self._sample())

    async def _sample(self) -> None:
        while True:
            self.activity.sample(time.time())
            await asyncio.sleep(SAMPLE_EVERY)

    def _counters(self) -> tuple[float, float]:
        metrics = self.ctx.metrics
        if metrics is None:
            return 0.0, 0.0
        admitted = sum(c.value for c in list(metrics.admitted.children.values()))
        evicted = sum(c.value for c in list(metrics.evicted.children.values()))
        return admitted, evicted

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard])
        app.router.add_get("/", self._page)
        app.router.add_get("/workloads", self._page)
        app.router.add_get("/workload/{namespace}/{name}", self._page)
        app.router.add_get("/fleet", self._page)
        app.router.add_static("/static/", STATIC, show_index=False)
        app.router.add_get("/api/v1/overview", self.overview)
        app.router.add_get("/api/v1/workloads", self.workloads)
        app.router.add_get("/api/v1/workloads/{namespace}/{name}", self.workload)
        app.router.add_get("/api/v1/workloads/{namespace}/{name}/logs", self.logs)
        app.router.add_get("/api/v1/positions", self.positions)
        app.router.add_get("/api/v1/fleet", self.fleet)
        app.router.add_get("/api/v1/events", self.events)
        return app

    async def _page(self, _request: web.Request) -> web.StreamResponse:
        # One page for every path: the script routes (no data in it, so no authentication).
        return web.FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    # --- the guard: authentication, leadership, unknown paths

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith("/api/"):
            return await handler(request)
        response = await self._answer(request, handler)
        if 400 <= response.status < 500:  # past a burst, a peer's refusals are answered late (see Refusals)
            delay = self.refusals.delay(request.remote or "", time.monotonic())
            if delay > 0:
                await asyncio.sleep(delay)
        return response

    async def _answer(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        denied = self._authenticate(request)
        if denied is not None:
            self.refused += 1
            return error(401, denied, hint="run `mkhub ui token` on the hub's host and paste the token")
        leader = self.ctx.leader()
        if leader is not None:
            return error(503, "this hub replica is a standby, not the leader" + (f"; the leader is {leader}" if leader else ""),
                         leader=leader or None)
        if self.ctx.runtime is None or self.ctx.store is None:
            return error(503, "the hub is still restoring its state; try again")
        try:
            return await handler(request)
        except web.HTTPNotFound:
            return error(404, f"{request.path}: no such API path (see /api/v1/overview, workloads, fleet, events)")
        except web.HTTPMethodNotAllowed:
            return error(405, f"{request.method} {request.path}: the dashboard's API is read-only (GET)")
        except QueryError as exc:
            return error(400, str(exc))
        except TimeoutError:
            return error(503, "the hub is busy or still restoring its state; try again")
        except RuntimeError as exc:  # the reconciler stopped (the hub is shutting down)
            return error(503, str(exc))

    def _authenticate(self, request: web.Request) -> str | None:
        """None when allowed; else why not (one line)."""
        if self.ctx.admin_identity is None:
            return None  # --insecure: loopback only, nobody to tell apart
        transport = request.transport
        if transport is not None and user_of(transport.get_extra_info) == self.ctx.admin_identity:
            return None
        header = request.headers.get("Authorization", "")
        if not header:
            return "no credentials: send Authorization: Bearer <token> or the admin client certificate"
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return "Authorization: expected 'Bearer <token>'"
        if not self.tokens.accepts(token.strip()):
            return "the bearer token is not valid for this hub"
        return None

    async def _engine(self, fn: Callable[[HubReconciler], T]) -> T:
        assert self.ctx.runtime is not None
        return await asyncio.wait_for(asyncio.wrap_future(self.ctx.runtime.call(fn)), ENGINE_TIMEOUT)

    # --- the API

    async def overview(self, _request: web.Request) -> web.Response:
        now = time.time()
        snap, cohorts = await self._engine(lambda rec: reads.overview(rec, now))
        counts = self.index.counts()
        return web.json_response({
            "time": now,
            "clusterQueues": [reads.cluster_queue(row) for row in snap.cluster_queues],
            "cohorts": cohorts,
            "workloads": {"pending": snap.workloads_pending, "admitted": snap.workloads_admitted,
                          "finished": snap.workloads_finished, "total": snap.workloads_total},
            "states": counts,
            "activity": self.activity.series(now),
        })

    async def workloads(self, request: web.Request) -> web.Response:
        # The index alone: no engine call, so the table draws at once; queue positions come from /positions.
        query = parse_query(request.query)
        page = self.index.page(query)
        return web.json_response({"total": page.total, "offset": query.offset, "limit": query.limit,
                                  "version": page.version, "items": [r.to_dict() for r in page.rows]})

    async def positions(self, request: web.Request) -> web.Response:
        """Queue positions of pending workloads (``workloads=NS/NAME,...``): what the table shows beside
        each pending row, asked for once the rows are drawn (ordering a queue costs a sort of it)."""
        unknown = sorted(set(request.query) - {"workloads"})
        if unknown:
            raise QueryError(f"{unknown[0]}: unknown parameter (positions takes workloads=NAMESPACE/NAME,...)")
        keys = [k for k in request.query.get("workloads", "").split(",") if k]
        if len(keys) > MAX_LIMIT:
            raise QueryError(f"workloads: {len(keys)} asked, at most {MAX_LIMIT}")
        if any(k.count("/") != 1 for k in keys):
            raise QueryError("workloads: expected NAMESPACE/NAME, comma-separated")
        found = await self._positions_of(keys) if keys else {}
        return web.json_response({"positions": {k: {"clusterQueue": cq, "localQueue": lq} for k, (cq, lq) in found.items()}})

    async def _positions_of(self, keys: list[str]) -> dict[str, tuple[int, int]]:
        """Queue positions of pending workloads, ordered per ClusterQueue and reused until the live stream
        brings a change to a workload of one of its LocalQueues (a queue's order costs a sort of its pending
        workloads; a queue nothing happened to is not sorted again)."""
        index = self.index

        def fresh(cq: str, asked: list[str]) -> bool:
            cached = self._positions.get(cq)
            return (cached is not None and index.queues_seen(cached[1]) == cached[0]
                    and all(k in cached[2] for k in asked))

        def read(rec: HubReconciler) -> tuple[dict[str, str], dict[str, tuple[tuple[int, tuple[int, ...]], list[str], dict[str, tuple[int, int]]]]]:
            # One call on the reconciler's thread: which queues, and the order of those that changed.
            queues = reads.queue_of(rec, keys)
            asked: dict[str, list[str]] = {}
            for key, cq in queues.items():
                asked.setdefault(cq, []).append(key)
            stale = [cq for cq in sorted(asked) if not fresh(cq, asked[cq])]
            out: dict[str, tuple[tuple[int, tuple[int, ...]], list[str], dict[str, tuple[int, int]]]] = {}
            if not stale:
                return queues, out
            local_queues = reads.local_queues_of(rec, stale)
            budget = POSITIONS_BUDGET
            for cq in stale:
                if budget > 0 or not out:
                    budget -= sum(rec.engine.pending_counts(cq))
                    lqs = local_queues.get(cq, [])
                    seen = index.queues_seen(lqs)  # before the order: a change from here on is a change after it
                    out[cq] = (seen, lqs, reads.positions(rec, [cq]))
            return queues, out

        queues, ordered = await self._engine(read)
        self._positions.update(ordered)
        out: dict[str, tuple[int, int]] = {}
        for key, cq in queues.items():
            cached = self._positions.get(cq)
            if cached is not None and key in cached[2]:
                out[key] = cached[2][key]
        return out

    async def workload(self, request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        store = self.ctx.store
        assert store is not None
        obj = await asyncio.to_thread(store.get, "Workload", namespace, name)
        if obj is None:
            return error(404, f'workloads "{name}" not found in namespace "{namespace}"')
        engine = await self._engine(lambda rec: reads.detail(rec, namespace, name))
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        admission = status.get("admission") or {}
        assignments = {a.get("name"): a for a in admission.get("podSetAssignments") or []}
        pod_sets = [{
            "name": ps.get("name"), "count": ps.get("count"),
            "flavors": (assignments.get(ps.get("name")) or {}).get("flavors") or {},
            "resourceUsage": (assignments.get(ps.get("name")) or {}).get("resourceUsage") or {},
            "topologyAssignment": (assignments.get(ps.get("name")) or {}).get("topologyAssignment"),
        } for ps in spec.get("podSets") or []]
        row = self.index.rows.get(f"{namespace}/{name}")
        return web.json_response({
            "row": row.to_dict() if row is not None else None,
            "metadata": {k: obj["metadata"].get(k) for k in ("namespace", "name", "uid", "creationTimestamp",
                                                             "labels", "ownerReferences")},
            "queue": spec.get("queueName"), "priority": spec.get("priority"), "active": spec.get("active", True),
            "clusterQueue": admission.get("clusterQueue"), "worker": status.get("clusterName"),
            "nominatedClusters": status.get("nominatedClusterNames") or [],
            "conditions": status.get("conditions") or [], "podSets": pod_sets,
            "admissionChecks": status.get("admissionChecks") or [],
            **engine,
        })

    async def logs(self, request: web.Request) -> web.Response:
        """The workload's Job's logs from its worker: `mkhub logs workload/NAME`'s path, the last lines."""
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        relay, store = self.ctx.logs, self.ctx.store
        assert store is not None
        if relay is None:
            return error(409, "this hub serves no worker agents: no logs")
        try:
            job, cluster = await asyncio.to_thread(log_target, store, "workload", namespace, name)
        except Exception as exc:  # the target's reasons: not admitted on a worker yet, no workload
            return error(409, str(exc))
        if cluster is None or not relay.serves(cluster):
            return error(409, f"the agent of worker cluster {cluster} serves no logs (embedded mode or not connected)")
        lines: list[dict[str, Any]] = []
        try:
            async for chunk in relay.stream(cluster, namespace, job, container="", follow=False, tail_lines=LOG_TAIL):
                if chunk.done and chunk.error:
                    return error(409, f"{cluster}: {chunk.error}")
                lines.extend({"pod": chunk.pod, "container": chunk.container, "line": text} for text in chunk.lines)
        except ConnectionError as exc:
            return error(409, str(exc))
        return web.json_response({"cluster": cluster, "job": job, "lines": lines})

    async def fleet(self, _request: web.Request) -> web.Response:
        now = time.time()
        snap, _ = await self._engine(lambda rec: reads.overview(rec, now))
        link = self.ctx.worker_link
        workers = []
        sent, won, latency = self._dispatch_figures()
        for row in snap.workers:
            if link is not None:
                state = link(row.name)
                row.connected = state.connected
                if state.seconds_since_heard is not None:
                    row.last_heard_seconds_ago = state.seconds_since_heard
            out = reads.worker(row)
            out["copiesSent"] = int(sent.get(row.name, 0))
            out["copiesWon"] = int(won.get(row.name, 0))
            count, total = latency.get(row.name, (0.0, 0.0))
            out["dispatchToStartSeconds"] = round(total / count, 3) if count else None
            workers.append(out)
        given_up = [{"namespace": r.namespace, "name": r.name, "clusterQueue": r.cluster_queue, "reason": r.given_up}
                    for r in self.index.given_up()]
        return web.json_response({"time": now, "workers": workers, "givenUp": given_up})

    def _dispatch_figures(self) -> tuple[dict[str, float], dict[str, float], dict[str, tuple[float, float]]]:
        """Copies sent and won and the mean dispatch-to-start time per worker, from the hub's MultiKueue metrics."""
        sent: dict[str, float] = {}
        won: dict[str, float] = {}
        latency: dict[str, tuple[float, float]] = {}
        dispatch = self.ctx.dispatch
        if dispatch is None or dispatch.dispatched_total is None:
            return sent, won, latency
        for counter, into in ((dispatch.dispatched_total, sent), (dispatch.admitted_total, won)):
            for metric in counter.collect():
                for s in metric.samples:
                    if s.name.endswith("_total"):
                        into[s.labels["cluster"]] = into.get(s.labels["cluster"], 0.0) + s.value
        for metric in dispatch.start_latency.collect():
            for s in metric.samples:
                cluster = s.labels.get("cluster", "")
                count, total = latency.get(cluster, (0.0, 0.0))
                if s.name.endswith("_count"):
                    latency[cluster] = (count + s.value, total)
                elif s.name.endswith("_sum"):
                    latency[cluster] = (count, total + s.value)
        return sent, won, latency

    async def events(self, request: web.Request) -> web.StreamResponse:
        """Server-sent events: one ``data:`` message per debounce window with the changed rows."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                               "X-Accel-Buffering": "no"})
        await response.prepare(request)
        queue = self.live.subscribe()
        try:
            hello = {"version": self.index.version, "hello": True, "counts": self.index.counts(),
                     "filters": list(FILTERS)}
            await response.write(f"data: {json.dumps(hello)}\n\n".encode())
            idle = 0.0
            while not self._closing.is_set():
                transport = request.transport
                if transport is None or transport.is_closing():
                    break  # the browser went away (handlers are not always cancelled when it does)
                try:
                    message = await asyncio.wait_for(queue.get(), 1.0)
                except TimeoutError:
                    idle += 1.0
                    if idle >= KEEP_ALIVE:
                        idle = 0.0
                        await response.write(b": keep-alive\n\n")
                    continue
                idle = 0.0
                await response.write(f"data: {json.dumps(message)}\n\n".encode())
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.live.unsubscribe(queue)
        return response

    # --- lifecycle

    async def start(self) -> int:
        host, port = split_address(self.ctx.listen)
        context: ssl.SSLContext | None = None
        if self.ctx.insecure:
            if not is_loopback(host):
                raise ValueError(f"--ui-listen {self.ctx.listen}: --insecure serves only a loopback address")
        else:
            paths = tls.cert_paths(self.ctx.tls_dir or Path("."))
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(paths.ca_crt))
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_cert_chain(str(paths.hub_crt), str(paths.hub_key))
            context.verify_mode = ssl.CERT_OPTIONAL  # a browser has no client certificate: it brings a token
        self.runner = web.AppRunner(self.app(), access_log=None, handler_cancellation=True)
        await self.runner.setup()
        site = web.TCPSite(self.runner, host, port, ssl_context=context)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else port
        log.info("dashboard on %s://%s:%d/", "http" if context is None else "https", host, self.port)
        return self.port

    async def stop(self) -> None:
        self._closing.set()
        if self._sampler is not None:
            self._sampler.cancel()
        if self.follower is not None:
            if self.ctx.runtime is not None and self.follower.written in self.ctx.runtime.workload_sinks:
                self.ctx.runtime.workload_sinks.remove(self.follower.written)
            await asyncio.to_thread(self.follower.stop)
        if self.runner is not None:
            with contextlib.suppress(Exception):
                await self.runner.cleanup()


async def start(ctx: UIContext) -> UI:
    """``mkhub serve --ui-listen``'s starter (hub.service.uihook.UIStarter)."""
    ui = UI(ctx, asyncio.get_running_loop())
    await ui.start()
    return ui
