"""The HTTP layer: routing, content negotiation and the aiohttp server.

Why aiohttp: a mature, maintained asyncio HTTP server (and client) with
streaming responses (chunked watch streams with back-pressure via ``await
write``), TLS through the standard ``ssl`` module (client certificates are
reachable per connection for mutual TLS), no framework or ASGI server to add,
and typed (``mypy --strict`` clean). The Store is synchronous: every store call
runs in a worker thread (``asyncio.to_thread``), watches in their own threads
(:mod:`hub.kubeapi.watch`), so the event loop never blocks on SQLite or on a
remote API server; except, with ``inline_writes`` (mkhub dev-cluster's own SQLite
store), creates, updates and patches while no admission webhook is configured, the GET
of one object, and the watches of a SQLite store, served on the loop from its ring of recent
commits (:mod:`hub.kubeapi.watchfeed`).

Media types: requests and responses are JSON (YAML is accepted in requests).
Clients that prefer protobuf (kubectl's built-in types, client-go) list JSON as
acceptable too and get JSON. client-go does not fall back to JSON when a
protobuf request body is refused, so the bodies kubectl sends that way for the
kinds it creates with typed clients (``kubectl create namespace``) are read by
:mod:`hub.kubeapi.protobuf`; other protobuf bodies get 415 UnsupportedMediaType. Bodies are
read and decoded by :mod:`hub.kubeapi.bodies`.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from aiohttp import HttpVersion11, web

from hub.api.limits import MAX_REQUEST_BYTES
from hub.store.interface import Object, Store
from hub.store.sqlite import SQLiteStore

from . import crds, discovery, errors, openapi, podlogs, tables
from .auth import Authorizer, user_of
from .bodies import JSON, decode_body, encode_json, media_type, read_body
from .errors import ApiError
from .fields import SchemaSource, crd_schema
from .patch import APPLY_PATCH_YAML, json_patch, merge_patch
from .reads import Target, external, get_stored, list_body, list_page
from .resources import BY_KIND, Resource, lookup
from .watch import stream
from .watchfeed import CommitFeed
from .writes import Admission, Options, Webhooks, Writer, Written

log = logging.getLogger("mkhub.kubeapi")



def _json_response(body: Any, status: int = 200, content_type: str = JSON, warnings: list[str] | None = None) -> web.Response:
    headers = {"Content-Type": content_type}
    response = web.Response(body=encode_json(body), status=status, headers=headers)
    for warning in warnings or ():
        escaped = warning.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.add("Warning", f'299 - "{escaped}"')
    return response


def _error(exc: ApiError) -> web.Response:
    return _json_response(exc.status(), exc.code)


def _check_accept(accept: str) -> None:
    if not accept:
        return
    for part in accept.split(","):
        media = media_type(part)
        if media in (JSON, "*/*", "application/*", "application/yaml") or media == "":
            return
    raise errors.not_acceptable(accept)


class KubeAPI:
    """The Kubernetes REST API over one Store."""

    def __init__(
        self,
        store: Store,
        admission: Admission,
        *,
        authorizer: Authorizer | None = None,
        schemas: SchemaSource | None = crd_schema,
        version: str = "dev",
        bookmark_interval: float = 10.0,
        namespace_grace: float = 2.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.extra_routes: list[Callable[[web.Application], None]] = []
        # Groups served elsewhere, listed in discovery (hub.kubeapi.visibility, hub.kubeapi.aggregator),
        # and a proxy that answers the requests of the groups it fronts (None: not one of them).
        self.extra_groups: Callable[[], Sequence[discovery.ExtraGroup]] = tuple
        self.proxy: Callable[[web.BaseRequest, list[str]], Awaitable[web.StreamResponse | None]] | None = None
        self.pod_log_lines: podlogs.LinesOf | None = None  # the kubelet's, where one runs the pods (dev-cluster)
        self.store = store
        # The kinds the stored CustomResourceDefinitions serve (hub.kubeapi.crds).
        self.crds = crds.CustomResources(store, clock)

        def schema_of(group: str, version: str, kind: str) -> dict[str, Any] | None:
            custom = self.crds.schema(group, version, kind)
            return custom if custom is not None else schemas(group, version, kind) if schemas is not None else None

        self.writer = Writer(store, admission, schemas=schema_of, clock=clock)
        self.writer.custom_resources = lambda: crds.all_namespaced(self.crds)
        # Writes on the event loop when no webhook is configured (see _write): for a local SQLite store
        # that nothing else holds for long (mkhub dev-cluster), never for the hub's own or a remote store.
        self.inline_writes = False
        self.authorizer = authorizer or Authorizer(None)
        self.version = version
        self.bookmark_interval = bookmark_interval
        self.namespace_grace = namespace_grace
        self._tasks: set[asyncio.Task[None]] = set()
        self._watches: set[asyncio.Task[Any]] = set()  # stop() ends them: one whose client left is no longer aiohttp's
        self._feed: CommitFeed | None = None  # a SQLite store's commits, for watches served on the loop
        self._group: asyncio.Future[None] | None = None  # the open transaction of this turn's inline writes
        self.clock = clock
        self._runner: web.BaseRunner | None = None

    # ------------------------------------------------------------------ app

    def app(self) -> web.Application:
        # Errors as Status answers: around the catch-all itself, and as middleware only for extra routes
        # (aiohttp wraps the handler in each middleware per request: 2-3 % of a small write's CPU).
        middlewares = [self._errors] if self.extra_routes else []
        app = web.Application(client_max_size=MAX_REQUEST_BYTES, middlewares=middlewares)
        for register in self.extra_routes:  # e.g. hub.kubeapi.visibility, before the catch-all
            register(app)
        app.router.add_route("*", "/{tail:.*}", self._route_guarded if not middlewares else self._route)
        return app

    def _server(self) -> web.Server:
        """No route but the catch-all (mkhub dev-cluster, a test's server): aiohttp's low-level server
        hands each request straight to it, without the Application's router (resolving the path
        against the catch-all's pattern, a match info, the handler's look-up: ~3% of a small write)."""
        loop = asyncio.get_running_loop()

        def request(message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> web.BaseRequest:
            return web.BaseRequest(message, payload, protocol, writer, task, loop, client_max_size=MAX_REQUEST_BYTES)

        return web.Server(self._serve, request_factory=request, access_log=None)

    async def _serve(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.headers.get("Expect"):
            # As the Application's router answers it (aiohttp's _default_expect_handler): a client
            # that asks (curl for a large body) sends the body only after "100 Continue".
            expect = request.headers["Expect"]
            if request.version == HttpVersion11:
                if expect.lower() != "100-continue":
                    raise web.HTTPExpectationFailed(text=f"Unknown Expect: {expect}")
                await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                request.writer.output_size = 0
                await request.writer.drain()
        return await self._guard(request, self._route)

    async def _route_guarded(self, request: web.BaseRequest) -> web.StreamResponse:
        return await self._guard(request, self._route)

    @web.middleware
    async def _errors(self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        return await self._guard(request, handler)

    async def _guard(self, request: web.BaseRequest, handler: Callable[[Any], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        try:
            return await handler(request)
        except ApiError as exc:
            return _error(exc)
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:  # never a traceback to the client: a Status, and the log has the rest
            log.exception("%s %s failed", request.method, request.path)
            return _error(ApiError(500, "InternalError", f"Internal error occurred: {exc}"))

    async def start(self, host: str, port: int, ssl_context: ssl.SSLContext | None = None) -> int:
        """Listen on host:port (0 picks a port); returns the bound port."""
        if self.extra_routes:
            self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False, shutdown_timeout=0.25)
        else:
            self._runner = web.ServerRunner(self._server(), handle_signals=False, shutdown_timeout=0.25)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, ssl_context=ssl_context)
        await site.start()
        server = site._server  # aiohttp exposes the bound address only here
        sockets = getattr(server, "sockets", None) or []
        await asyncio.to_thread(self.crds.follow)
        for name in await asyncio.to_thread(self.writer.terminating_namespaces):
            self._finalize_later(name)  # left Terminating by a previous run
        return int(sockets[0].getsockname()[1]) if sockets else port

    def _finalize_later(self, namespace: str) -> None:
        """The namespace controller: empty and remove a terminating Namespace after a grace period
        (kubectl deletes a namespace's objects right after the namespace: they still exist then),
        and again every grace period while objects with finalizers keep it (hub.kubeapi.namespaces)."""

        async def finalize() -> None:
            done = False
            while not done:
                await asyncio.sleep(self.namespace_grace)
                try:
                    done = await asyncio.to_thread(self.writer.finalize_namespace, namespace)
                except Exception:
                    log.exception("finalizing namespace %s failed", namespace)

        task = asyncio.get_running_loop().create_task(finalize())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        self._commit_group()  # the store's lock is this thread's until then
        self.crds.stop()
        for task in [*self._tasks, *self._watches]:
            task.cancel()
        if self._feed is not None:
            self._feed.close()
            self._feed = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ------------------------------------------------------------------ routing

    async def _route(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        if self.proxy is not None and len(parts) >= 3 and parts[0] == "apis":
            proxied = await self.proxy(request, parts)
            if proxied is not None:
                return proxied
        if request.method == "GET":
            doc = self._fixed(path, parts, request.headers.get("Accept", ""))
            if doc is not None:
                return doc
        if parts and parts[0] == "openapi" and request.method == "GET":
            return self._openapi(parts[1:], request.headers.get("Accept", ""))
        user = user_of(request.transport.get_extra_info) if request.transport is not None else "unknown"
        if podlogs.is_log_path(request.method, parts):
            if not self.authorizer.allowed(user):
                raise errors.forbidden(BY_KIND["Pod"], user, "get", parts[3])
            return await podlogs.serve_pod_log(request, self.store, parts[3], parts[5], self.pod_log_lines)
        target, watch_path = self._target(parts)
        verb = self._verb(request, target, watch_path)
        if not self.authorizer.allowed(user):
            raise errors.forbidden(target.res, user, verb, target.namespace)
        return await self._dispatch(request, target, verb)

    def _fixed(self, path: str, parts: list[str], accept: str) -> web.Response | None:
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok")
        if path == "/version":
            return _json_response(discovery.version_info(self.version))
        # Only the discovery documents under /apis name the CRDs' groups: not built for a GET of an object.
        discovery_path = parts[:1] == ["apis"] and len(parts) <= 3
        extra = (*self.extra_groups(), *self.crds.extra_groups()) if discovery_path else ()
        if path in ("/api", "/apis"):
            media = discovery.wants_aggregated(accept)
            if media is not None:
                return _json_response(discovery.aggregated(path == "/api", media, extra), content_type=media)
            return _json_response(discovery.api_versions() if path == "/api" else discovery.api_group_list(extra))
        if path == "/api/v1":
            return _json_response(discovery.api_resource_list("", "v1"))
        if len(parts) == 2 and parts[0] == "apis":
            group = discovery.api_group(parts[1], extra)
            if group is None:
                raise errors.page_not_found()
            return _json_response(group)
        if len(parts) == 3 and parts[0] == "apis":
            doc = discovery.api_resource_list(parts[1], parts[2], extra)
            if doc is None:
                raise errors.page_not_found()
            return _json_response(doc)
        return None

    def _openapi(self, parts: list[str], accept: str) -> web.Response:
        """``/openapi/v3`` (index), ``/openapi/v3/apis/{group}/{version}``, ``/openapi/v2`` (JSON only:
        kubectl asks v2 as protobuf, gets 406 and goes on with v3)."""
        if parts == ["v3"]:
            raw: bytes | None = self.crds.openapi_index(openapi.openapi_v3_index_bytes())
        elif parts[:1] == ["v3"]:
            raw = openapi.openapi_v3_for_path("/".join(parts[1:]))
            if len(parts) == 4 and parts[1] == "apis":
                raw = self.crds.openapi_document(parts[2], parts[3], raw)
        elif parts == ["v2"]:
            _check_accept(accept)
            raw = openapi.openapi_v2_bytes()
        else:
            raw = None
        if raw is None:
            raise errors.page_not_found()
        return web.Response(body=raw, headers={"Content-Type": JSON})

    def _target(self, parts: list[str]) -> tuple[Target, bool]:
        """The resource a path names; 404 for anything else."""
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise errors.page_not_found()
        watch_path = bool(rest) and rest[0] == "watch"
        if watch_path:
            rest = rest[1:]
        namespace = ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            inner = lookup(group, version, rest[2]) or self.crds.lookup(group, version, rest[2])
            if inner is not None and inner.namespaced:
                namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise errors.page_not_found()
        res = lookup(group, version, rest[0]) or self.crds.lookup(group, version, rest[0])
        if res is None or (namespace and not res.namespaced):
            raise errors.page_not_found()
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        scalable = crds.scale_spec(res) is not None
        if sub and not (sub == "status" and res.has_status or sub == "finalize" and res.kind == "Namespace"
                        or sub == "scale" and scalable):
            raise errors.page_not_found()
        return Target(res, version, namespace, name, sub), watch_path

    @staticmethod
    def _verb(request: web.BaseRequest, target: Target, watch_path: bool) -> str:
        method = request.method
        if method == "GET":
            if watch_path or request.query.get("watch", "").lower() in ("true", "1"):
                return "watch"
            return "get" if target.name else "list"
        return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method) or (
            ("delete" if target.name else "deletecollection") if method == "DELETE" else method.lower()
        )

    async def _write(self, write: Callable[..., Written], target: Target, *args: Any) -> Written:
        """A create, update or patch. With ``inline_writes`` and no admission webhook whose rules name the
        request, on the event loop: the write holds the store's lock only for its own statements (a
        controller's batch at most delays it), and the hop to a worker thread and back cost 7-11% of a
        small write's CPU (BENCHMARKS.md, branch h10). A write a webhook may be called for, in a worker
        thread: it waits on the webhook's answer, and a webhook that reads this API server would wait on a
        blocked loop. (Only the rules are asked, for the operations the write may be: an apply patch may
        create; the selectors read the object.) With Kueue's Job webhook registered (CREATE only), a Job's
        create calls it in a thread, the Job's updates and patches, its Workload's writes and Events
        stay on the loop: all in threads, they cost the manager of
        ``bench kube --workers 2`` a third more CPU per Job (GIL hand-offs between the writers). The
        inline writes of a turn share a transaction (:meth:`_group_commit`). A create only mutating
        webhooks may be called for (Kueue's Job webhook) calls them in a worker thread and is stored
        on the loop: its own transaction in the thread, held while the loop's writes waited on the
        store's lock, cost the manager more than the hop back."""
        if not self.inline_writes:
            return await asyncio.to_thread(write, target, *args)
        writer = self.writer
        create = write == writer.create
        # The operations the webhooks may be asked for: an update (PUT) answers 404 for a missing
        # object, as does a patch but an apply patch, which may create (Writer._create_one_applied).
        applied = write == writer.patch and args[0] == APPLY_PATCH_YAML
        ops = ("CREATE",) if create else ("CREATE", "UPDATE") if applied else ("UPDATE",)
        if not self._may_call(writer.mutating, target, ops) and not self._may_call(writer.validating, target, ops):
            return await self._inline(write, target, *args)
        if not create or self._may_call(writer.validating, target, ops):
            return await asyncio.to_thread(write, target, *args)
        body, opts = args
        creation = await asyncio.to_thread(writer.mutate_create, target, writer.prepare_create(target, body, opts))
        if self._may_call(writer.validating, target, ops):  # configured meanwhile: it may be called
            return await asyncio.to_thread(writer.finish_create, target, creation, opts)
        return await self._inline(writer.finish_create, target, creation, opts)

    @staticmethod
    def _may_call(hooks: Webhooks | None, target: Target, operations: tuple[str, ...]) -> bool:
        """Whether ``hooks``' rules name the request for any of ``operations``."""
        return hooks is not None and any(
            hooks.may_call(target.res, target.version, op, target.subresource) for op in operations
        )

    async def _inline(self, write: Callable[..., Written], target: Target, *args: Any) -> Written:
        group = self._group_commit()
        written = write(target, *args)  # inside the group's transaction: its own batch is a savepoint
        if group is not None:
            await asyncio.shield(group)  # answered once committed, as before
        return written

    def _group_commit(self) -> asyncio.Future[None] | None:
        """The inline writes of one turn of the event loop share one SQLite transaction, committed by
        the next turn before any of them is answered: a COMMIT (with BEGIN and the resourceVersion
        counter's update) was 100-140 us of CPU per write, most of a small write's store time, and a
        loaded server reads many requests per turn. Durability is as before (no answer before its
        commit); a write that fails rolls back its own savepoint only."""
        store = self.store
        if not isinstance(store, SQLiteStore):
            return None
        group = self._group
        if group is None:
            store.open_batch()
            loop = asyncio.get_running_loop()
            group = self._group = loop.create_future()
            loop.call_soon(self._commit_group)
        return group

    def _commit_group(self) -> None:
        group, self._group = self._group, None
        if group is None:
            return
        try:
            self.store.close_batch()  # type: ignore[attr-defined]  # a SQLiteStore (_group_commit)
        except Exception as exc:
            log.exception("committing a group of writes failed")
            group.set_exception(exc)
            group.exception()  # retrieved: each waiting write raises it (a 500), none may be left to log it
            return
        group.set_result(None)

    async def _dispatch(self, request: web.BaseRequest, target: Target, verb: str) -> web.StreamResponse:
        res = target.res
        if verb not in res.verbs or (verb == "create" and target.name):
            raise errors.method_not_allowed()
        if res.namespaced and not target.namespace and verb in ("create", "update", "patch", "delete", "get"):
            raise errors.method_not_allowed() if verb == "create" else errors.page_not_found()
        if target.subresource and verb not in (("update",) if target.subresource == "finalize" else ("get", "update", "patch")):
            raise errors.method_not_allowed()
        accept = request.headers.get("Accept", "")
        _check_accept(accept)
        query: Mapping[str, str] = request.query
        if target.subresource == "scale":
            return await self._scale(request, target, verb)
        if verb == "get":
            obj = await self._get(target)
            if tables.wants_table(accept):
                return _json_response(self._table(target, [obj], query))
            return _json_response(external(target, obj))
        if verb == "list":
            return await self._list(target, query, accept)
        if verb == "watch":
            return await self._watch(request, target, accept)
        body, repeated = decode_body(await read_body(request), request.headers.get("Content-Type", ""))
        opts = Options.of(query, request.headers.get("User-Agent", ""))
        opts.duplicates = repeated
        crd = res.kind == crds.CRD_KIND and not opts.dry_run
        if verb == "create":
            written = await self._write(self.writer.create, target, body, opts)
            if crd:  # served at once: the next request may use it
                await asyncio.to_thread(self.crds.observe, written.obj)
            return _json_response(external(target, written.obj), 201, warnings=written.warnings)
        if verb == "update":
            written = await self._write(self.writer.update, target, body, opts)
            if crd:
                await asyncio.to_thread(self.crds.observe, written.obj)
            return _json_response(external(target, written.obj), 201 if written.created else 200, warnings=written.warnings)
        if verb == "patch":
            media = media_type(request.headers.get("Content-Type", ""))
            written = await self._write(self.writer.patch, target, media, body, opts)
            if crd:
                await asyncio.to_thread(self.crds.observe, written.obj)
            return _json_response(external(target, written.obj), 201 if written.created else 200, warnings=written.warnings)
        if verb == "delete":
            obj, gone = await asyncio.to_thread(self.writer.delete, target, body, opts)
            if res.kind == "Namespace" and not opts.dry_run:
                self._finalize_later(target.name)
            if crd:
                await asyncio.to_thread(self.crds.delete_objects, obj)
                await asyncio.to_thread(self.crds.observe, obj, gone)
            custom = isinstance(res, crds.CustomResource)
            if gone and (res.group == "kueue.x-k8s.io" or custom) or gone and res.kind in ("Job", "Event", "Lease"):
                return _json_response(errors.success(res, target.name, str(obj["metadata"].get("uid", ""))))
            return _json_response(external(target, obj))  # 200 even when finalizers hold it, as the API server
        if verb == "deletecollection":
            return await self._delete_collection(target, query, body, opts)
        raise errors.method_not_allowed()

    # ------------------------------------------------------------------ reads

    async def _get(self, target: Target) -> Object:
        """One object. With ``inline_writes`` (a SQLite store of its own), read on the loop while no
        write of this turn holds the store: a reader connection's SELECT takes no lock the store's
        writers hold (a store in memory has one connection, which a controller's batch may hold for
        a moment, as it may for the loop's writes); the hop to a thread and back was a third of a
        GET's CPU. With a turn's writes open (its group commit), this thread is the store's writer
        and would read them uncommitted: a thread reads what is committed, as before."""
        if self.inline_writes and self._group is None and isinstance(self.store, SQLiteStore):
            return get_stored(self.store, target)
        return await asyncio.to_thread(get_stored, self.store, target)

    def _table(self, target: Target, stored: list[Object], query: Mapping[str, str], **meta: Any) -> Object:
        include = query.get("includeObject", "Metadata") or "Metadata"
        if include not in ("None", "Metadata", "Object"):
            raise errors.bad_request(f'includeObject: Unsupported value: "{include}"')
        return tables.table(
            target.res.kind, stored, [external(target, o) for o in stored], version=target.version,
            include_object=include, now=self.clock(), custom_columns=crds.table_columns_for(target.res, target.version),
            **meta,
        )

    async def _list(self, target: Target, query: Mapping[str, str], accept: str) -> web.Response:
        as_table = tables.wants_table(accept)

        def body() -> bytes:  # listing, converting and encoding thousands of objects: off the loop
            page = list_page(self.store, target, query)
            if as_table:
                out = self._table(
                    target, page.items, query, resource_version=str(page.resource_version),
                    continue_token=page.continue_token, remaining=page.remaining,
                )
            else:
                out = list_body(target, page)
            return encode_json(out)

        return web.Response(body=await asyncio.to_thread(body), headers={"Content-Type": JSON})

    async def _watch(self, request: web.BaseRequest, target: Target, accept: str) -> web.StreamResponse:
        as_table = tables.wants_table(accept)
        query = request.query
        headers_sent = [False]

        def render(stored: Object, ext: Object) -> Object:
            if not as_table:
                return ext
            out = self._table(target, [stored], query)
            if headers_sent[0]:
                out["columnDefinitions"] = []
            headers_sent[0] = True
            return out

        async def initial() -> tuple[list[Object], int]:
            namespace = target.namespace if target.res.namespaced and target.namespace else (None if target.res.namespaced else "")
            return await asyncio.to_thread(self.store.list, target.res.kind, namespace)

        response = web.StreamResponse(status=200, headers={"Content-Type": JSON, "Cache-Control": "no-cache"})
        response.enable_chunked_encoding()
        prepared = [False]

        async def opened() -> None:
            if not prepared[0]:
                await response.prepare(request)
                prepared[0] = True

        async def write(data: bytes) -> None:
            await opened()
            await response.write(data)

        def connected() -> bool:
            transport = request.transport
            return transport is not None and not transport.is_closing()

        task = asyncio.current_task()
        if task is not None:
            self._watches.add(task)
        if self._feed is None and isinstance(self.store, SQLiteStore):  # served on the loop (hub.kubeapi.watchfeed)
            self._feed = CommitFeed(self.store)
        try:
            await stream(self.store, target, query, write, render, bookmark_interval=self.bookmark_interval,
                         initial=initial, opened=opened, connected=connected, feed=self._feed,
                         spliceable=not as_table)
        except (ConnectionResetError, asyncio.CancelledError):
            return response
        finally:
            if task is not None:
                self._watches.discard(task)
        if not connected():  # the client left: nobody to end the stream for
            return response
        if not prepared[0]:
            await response.prepare(request)
        await response.write_eof()
        return response

    async def _scale(self, request: web.BaseRequest, target: Target, verb: str) -> web.Response:
        """The ``scale`` subresource (custom resources and the apps kinds): an autoscaling/v1 Scale."""
        res = target.res
        whole = Target(res, target.version, target.namespace, target.name)
        current = await asyncio.to_thread(get_stored, self.store, whole)
        if verb == "get":
            return _json_response(crds.scale_of(res, current))
        body, repeated = decode_body(await read_body(request), request.headers.get("Content-Type", ""))
        if verb == "patch":
            media = media_type(request.headers.get("Content-Type", ""))
            scale = crds.scale_of(res, current)
            if media == "application/json-patch+json":
                body = json_patch(scale, body)
            elif media in ("application/merge-patch+json", "application/strategic-merge-patch+json") and isinstance(body, dict):
                body = merge_patch(scale, body)
            else:
                raise errors.unsupported_media_type(media)
        opts = Options.of(request.query, request.headers.get("User-Agent", ""))
        opts.duplicates = repeated
        wanted = crds.with_replicas(res, external(whole, current), body)
        # Admission sees a write of the scale subresource: webhooks for the resource alone are not called.
        scaled = Target(res, target.version, target.namespace, target.name, "scale")
        written = await asyncio.to_thread(self.writer.update, scaled, wanted, opts)
        return _json_response(crds.scale_of(res, written.obj), warnings=written.warnings)

    async def _delete_collection(self, target: Target, query: Mapping[str, str], body: Any, opts: Options) -> web.Response:
        page = await asyncio.to_thread(list_page, self.store, target, {k: v for k, v in query.items() if k not in ("limit", "continue")})
        deleted = []
        for obj in page.items:
            meta = obj["metadata"]
            one = Target(target.res, target.version, meta.get("namespace") or "", meta["name"])
            try:
                out, _ = await asyncio.to_thread(self.writer.delete, one, body, opts)
            except ApiError as exc:
                if exc.code == 404:
                    continue
                raise
            deleted.append(out)
            if target.res.kind == "Namespace" and not opts.dry_run:
                self._finalize_later(one.name)
            if target.res.kind == crds.CRD_KIND and not opts.dry_run:
                await asyncio.to_thread(self.crds.delete_objects, out)
                gone = await asyncio.to_thread(self.store.get, crds.CRD_KIND, "", one.name) is None
                await asyncio.to_thread(self.crds.observe, out, gone)
        page.items = deleted
        return _json_response(list_body(target, page))


def resource_for_kind(kind: str) -> Resource | None:
    return BY_KIND.get(kind)
