"""The Control gRPC service (proto/mkhub/v1/control.proto), on the hub's grpc.aio server.

Store reads and writes run in worker threads (the store is thread-safe and
blocking); anything that needs the engine goes to the reconciler thread
through :meth:`HubRuntime.call`. Over mutual TLS only the admin certificate
(``mkhub certs`` issues it) may call; agents' certificates may not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, NoReturn, TypeVar

import grpc

from hub.api import fastjson
from hub.api.registry import KindInfo, resolve_kind
from hub.api.selectors import LabelSelectorError, parse_label_selector
from hub.controllers.hub import HubReconciler
from hub.controllers.hub_runtime import HubRuntime
from hub.federation.logrelay import LogRelay
from hub.federation.refusals import RefusalLog
from hub.obs import visibility
from hub.store.interface import Store, StoreError
from mkhub.v1 import control_pb2 as pb
from mkhub.v1 import control_pb2_grpc as pb_grpc

from . import views
from .apply import DEFAULT_NAMESPACE, Applier, Result
from .delete import Deleter
from .field_check import field_validation
from .naming import resource_name

SERVICE_NAME = "mkhub.v1.Control"
log = logging.getLogger("mkhub.control")
T = TypeVar("T")


def _ref(r: Result) -> pb.ObjectRef:
    return pb.ObjectRef(kind=r.kind, namespace=r.namespace, name=r.name)


def _dump(obj: Any) -> str:
    return fastjson.dumps(obj)  # what json.dumps with compact separators gives, through orjson


class ControlService(pb_grpc.ControlServicer):
    def __init__(
        self,
        store: Store,
        runtime: HubRuntime,
        *,
        admin_identity: str | None = None,
        worker_link: Callable[[str], views.WorkerLink] = lambda _name: views.WorkerLink(False, None),
        clock: Callable[[], float] = time.time,
        engine_timeout: float = 30.0,
        logs: LogRelay | None = None,
    ) -> None:
        self.store = store
        self.runtime = runtime
        self.applier = Applier(
            store, partial_admission=runtime.config.gate("PartialAdmission"), clock=clock, handoff=runtime.handoff,
            pod_webhook=runtime.config,
        )
        self.deleter = Deleter(store)
        self.admin_identity = admin_identity
        self.worker_link = worker_link
        self.clock = clock
        self.engine_timeout = engine_timeout
        self._closing = asyncio.Event()
        self.refusals = RefusalLog(log)
        self.logs = logs

    def close(self) -> None:
        """End the live streams (``top``) so that a shutdown need not wait for their clients."""
        self._closing.set()

    # --- helpers

    async def _authorize(self, context: grpc.aio.ServicerContext) -> None:
        if self.admin_identity is None:
            return
        names = context.auth_context().get("x509_common_name") or []
        name = names[0].decode() if names and isinstance(names[0], bytes) else (str(names[0]) if names else "")
        if name != self.admin_identity:
            self.refusals.refused(name, context.peer(), "control call", "PERMISSION_DENIED: not the admin certificate")
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"the control service needs the {self.admin_identity!r} client certificate, not {name or 'none'!r}",
            )

    async def _kind(self, name: str, context: grpc.aio.ServicerContext) -> KindInfo:
        info = resolve_kind(name)
        if info is None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f'the server doesn\'t have a resource type "{name}"')
        assert info is not None
        return info

    @staticmethod
    def _namespace(info: KindInfo, namespace: str) -> str:
        return (namespace or DEFAULT_NAMESPACE) if info.namespaced else ""

    async def _engine(self, fn: Callable[[HubReconciler], T], context: grpc.aio.ServicerContext) -> T:
        try:
            return await asyncio.wait_for(asyncio.wrap_future(self.runtime.call(fn)), self.engine_timeout)
        except TimeoutError:
            await _abort(context, grpc.StatusCode.UNAVAILABLE, "the hub is busy or still restoring its state; try again")
        except RuntimeError as exc:
            await _abort(context, grpc.StatusCode.UNAVAILABLE, str(exc))

    # --- RPCs

    async def Apply(self, request: pb.ApplyRequest, context: grpc.aio.ServicerContext) -> pb.ApplyResponse:
        received = self.clock()  # before any wait: creation order is arrival order
        await self._authorize(context)
        try:
            mode = field_validation(request.field_validation)
        except ValueError as exc:
            await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        outcome = await asyncio.to_thread(
            self.applier.apply,
            request.manifests,
            default_namespace=request.default_namespace,
            source=request.source,
            dry_run=request.dry_run,
            received=received,
            create=request.create,
            field_validation=mode,
        )
        return pb.ApplyResponse(
            results=[pb.ApplyResult(object=_ref(r), action=r.action, error=r.error) for r in outcome.results],
            rejected=outcome.rejected,
            warnings=outcome.warnings,
        )

    async def Get(self, request: pb.GetRequest, context: grpc.aio.ServicerContext) -> pb.GetResponse:
        await self._authorize(context)
        info = await self._kind(request.kind, context)
        obj = await asyncio.to_thread(self.store.get, info.kind, self._namespace(info, request.namespace), request.name)
        if obj is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f'{resource_name(info)} "{request.name}" not found')
        return pb.GetResponse(object_json=_dump(obj))

    async def List(self, request: pb.ListRequest, context: grpc.aio.ServicerContext) -> pb.ListResponse:
        await self._authorize(context)
        info = await self._kind(request.kind, context)
        try:
            selector = parse_label_selector(request.label_selector or None)
        except LabelSelectorError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"invalid label selector: {exc}")
        namespace = None if request.all_namespaces or not info.namespaced else self._namespace(info, request.namespace)
        objects, rv = await asyncio.to_thread(self.store.list, info.kind, namespace, selector)
        return pb.ListResponse(
            kind=info.kind, namespaced=info.namespaced, objects_json=[_dump(o) for o in objects], resource_version=rv
        )

    async def Delete(self, request: pb.DeleteRequest, context: grpc.aio.ServicerContext) -> pb.DeleteResponse:
        await self._authorize(context)
        if request.manifests:
            results = await asyncio.to_thread(
                self.deleter.delete_manifests, request.manifests, default_namespace=request.namespace, source=request.source
            )
        else:
            results = [await asyncio.to_thread(self.deleter.delete, request.kind, request.namespace, request.name)]
        return pb.DeleteResponse(
            results=[pb.DeleteResult(object=_ref(r), deleted=not r.error, error=r.error, warning=r.warning) for r in results]
        )

    async def Describe(self, request: pb.DescribeRequest, context: grpc.aio.ServicerContext) -> pb.DescribeResponse:
        await self._authorize(context)
        info = await self._kind(request.kind, context)
        ns = self._namespace(info, request.namespace)
        obj = await asyncio.to_thread(self.store.get, info.kind, ns, request.name)
        if obj is None:
            await _abort(context, grpc.StatusCode.NOT_FOUND, f'{resource_name(info)} "{request.name}" not found')
        uid = str(obj["metadata"].get("uid", ""))
        labels = dict(obj["metadata"].get("labels") or {})
        out = await self._engine(lambda rec: views.describe(rec, info.kind, ns, request.name, uid, labels), context)
        out.object_json = _dump(obj)
        return out

    async def PendingWorkloads(
        self, request: pb.PendingWorkloadsRequest, context: grpc.aio.ServicerContext
    ) -> pb.PendingWorkloadsResponse:
        await self._authorize(context)
        limit = request.limit or visibility.DEFAULT_LIMIT
        if request.limit < 0 or request.offset < 0:
            await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, "limit and offset must be greater than or equal to 0")

        def pending(rec: HubReconciler) -> tuple[list[visibility.PendingWorkload] | None, str]:
            engine = rec.engine
            if request.all:
                return list(visibility.positions(engine).values()), ""
            if request.local_queue:
                ns = request.namespace or "default"
                return visibility.local_queue_pending(engine, ns, request.local_queue), f'localqueues "{request.local_queue}"'
            return visibility.cluster_queue_pending(engine, request.cluster_queue), f'clusterqueues "{request.cluster_queue}"'

        items, what = await self._engine(pending, context)
        if items is None:
            await _abort(context, grpc.StatusCode.NOT_FOUND, f"{what} not found")
        return pb.PendingWorkloadsResponse(summary_json=_dump(visibility.summary(items, limit, request.offset)))

    async def Top(self, request: pb.TopRequest, context: grpc.aio.ServicerContext) -> AsyncIterator[pb.TopSnapshot]:
        await self._authorize(context)
        interval = (request.interval_ms or 1000) / 1000.0
        while True:
            now = self.clock()

            def snapshot(rec: HubReconciler, now: float = now) -> pb.TopSnapshot:
                return views.top(rec, now)

            snap = await self._engine(snapshot, context)
            for row in snap.workers:  # the transport's view, read here on its own loop
                link = self.worker_link(row.name)
                row.connected = link.connected
                if link.seconds_since_heard is not None:  # else the stored lastHeartbeat's age (views.top)
                    row.last_heard_seconds_ago = link.seconds_since_heard
            yield snap
            if request.once:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), interval)
            if self._closing.is_set():
                return


    async def Logs(self, request: pb.JobLogsRequest, context: grpc.aio.ServicerContext) -> AsyncIterator[pb.LogLines]:
        await self._authorize(context)
        kind = (request.kind or "job").lower()
        if kind not in ("job", "workload"):
            await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, f"logs: {kind}: only job/NAME and workload/NAME have logs")
        namespace = request.namespace or DEFAULT_NAMESPACE
        relay = self.logs
        if relay is None:
            await _abort(context, grpc.StatusCode.UNAVAILABLE, "this hub serves no worker agents")
        assert relay is not None
        try:
            job_name, cluster = await asyncio.to_thread(log_target, self.store, kind, namespace, request.name)
        except _NoTarget as exc:
            await _abort(context, grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        except StoreError as exc:
            await _abort(context, grpc.StatusCode.UNAVAILABLE, str(exc))
        clusters = [cluster] if cluster is not None else relay.serving_clusters()
        tail = request.tail_lines if request.HasField("tail_lines") else None
        errors: list[str] = []
        for name in clusters:
            if not relay.serves(name):
                connected = relay.endpoint.is_connected(name)
                errors.append(f"the agent of worker cluster {name} " + (
                    "runs in embedded mode (mkagent --objects): it has no pods to read logs from" if connected
                    else "is not connected"))
                continue
            sent = False
            try:
                async for chunk in relay.stream(name, namespace, job_name, container=request.container,
                                                follow=request.follow, tail_lines=tail):
                    if chunk.pod:
                        sent = True
                        yield pb.LogLines(cluster=name, pod=chunk.pod, container=chunk.container,
                                          lines=list(chunk.lines), prefixed=chunk.prefixed)
                    if chunk.done and chunk.error:
                        errors.append(f"{name}: {chunk.error}")
            except ConnectionError as exc:
                errors.append(str(exc))
                continue
            if sent or not errors or cluster is not None:
                break
        if errors and (cluster is not None or len(errors) == len(clusters)):
            await _abort(context, grpc.StatusCode.NOT_FOUND, "; ".join(errors))
        if not clusters:
            await _abort(context, grpc.StatusCode.NOT_FOUND, f'job "{request.name}" is not known to the hub and no worker agent is connected')

    async def Watch(self, request: pb.WatchRequest, context: grpc.aio.ServicerContext) -> AsyncIterator[pb.WatchEvent]:
        await self._authorize(context)
        info = await self._kind(request.kind, context)
        try:
            selector = parse_label_selector(request.label_selector or None)
        except LabelSelectorError as exc:
            await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, f"invalid label selector: {exc}")
        namespace = None if request.all_namespaces or not info.namespaced else self._namespace(info, request.namespace)
        try:
            watch = await asyncio.to_thread(self.store.watch, [info.kind], request.resource_version)
        except StoreError as exc:
            await _abort(context, grpc.StatusCode.OUT_OF_RANGE, str(exc))
        try:
            while not self._closing.is_set():
                event = await asyncio.to_thread(watch.next, 0.5)
                if event is None:
                    continue
                meta = event.object.get("metadata") or {}
                if namespace is not None and meta.get("namespace", "") != namespace:
                    continue
                if request.name and meta.get("name") != request.name:
                    continue
                if selector is not None and not selector.matches(meta.get("labels") or {}):
                    continue
                yield pb.WatchEvent(type=event.type.value, object_json=_dump(event.object))
        finally:
            watch.close()


class _NoTarget(Exception):
    """The job exists but runs on no worker (yet)."""


def log_target(store: Store, kind: str, namespace: str, name: str) -> tuple[str, str | None]:
    """(the Job's name, the worker it was admitted on) for ``mkhub logs``; the worker is None when the
    hub no longer knows the job (every agent is asked: a worker's Job outlives the manager's)."""
    if kind == "workload":
        wl = store.get("Workload", namespace, name)
        if wl is None:
            return name, None
        owner = next((r for r in wl["metadata"].get("ownerReferences") or [] if r.get("kind") == "Job"), None)
        job_name = str(owner["name"]) if owner is not None else name
        cluster = (wl.get("status") or {}).get("clusterName")
        if not cluster:
            raise _NoTarget(f'workload "{name}" has not been admitted on a worker cluster')
        return job_name, str(cluster)
    job = store.get("Job", namespace, name)
    workloads, _ = store.list("Workload", namespace)
    uid = (job or {}).get("metadata", {}).get("uid")
    for wl in workloads:
        for ref in wl["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "Job" and ref.get("name") == name and (uid is None or ref.get("uid") == uid):
                cluster = (wl.get("status") or {}).get("clusterName")
                if not cluster:
                    raise _NoTarget(f'job "{name}" has not been admitted on a worker cluster (no MultiKueue admission yet)')
                return name, str(cluster)
    if job is not None:
        raise _NoTarget(f'job "{name}" has no workload yet')
    return name, None


async def _abort(context: grpc.aio.ServicerContext, code: grpc.StatusCode, details: str) -> NoReturn:
    await context.abort(code, details)
    raise AssertionError("unreachable")  # context.abort raises
