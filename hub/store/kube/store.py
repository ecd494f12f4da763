"""KubeStore: the :class:`~hub.store.interface.Store` contract over a Kubernetes API server.

Reads (``get``, ``list``, ``watch``) are served from the informers' cache
(:mod:`.cache`, which also explains how resourceVersions map). Writes go to the
API server, and their responses are applied to the cache at once:

* ``create``: POST (the server generates ``generateName`` names). The API server
  drops ``status`` on create for kinds with a status subresource, so a create
  that carries a status is followed by a PUT to ``/status``;
* ``update``: PUT of metadata and spec with the server's resourceVersion of the
  version the caller read (status is ignored by the server); a 409 is the caller's
  to resolve: ``Conflict``. A caller that names no resourceVersion changed the
  cached version: its change (the difference from that version) goes out as a
  JSON merge patch, applied by the server to what it holds now, so what other
  writers set meanwhile survives (never a retry of the caller's stale whole object);
* ``modify``: client-go's RetryOnConflict, a change applied to the cached object
  and written at its version; a 409 re-reads from the server and re-applies it;
* ``update_status``: a JSON merge patch to the ``/status`` subresource that turns the
  cached status into the caller's, with the cached resourceVersion as precondition (the
  server's result is the caller's status exactly, as a PUT, for a fraction of the bytes);
  without a resourceVersion a 409 is re-read and retried (tenacity): the status is wholly
  the caller's;
* ``delete``: DELETE with a resourceVersion precondition when given.

Events (:data:`RECORD_KINDS`) are written and never read back: the API server keeps
them and expires them (kube-apiserver's ``--event-ttl``), no informer follows them, and
the answer to an Event's write is not kept in the cache. A repeated Event (its count)
goes out as a merge patch with no precondition, as client-go's event recorder patches
it; the answer has no store resourceVersion (the store holds no version of it).

Every write names a field manager and passes the transport's client-side rate
limit, and is refused while a ``fence`` (leader election) says we may not write.

There are no multi-object transactions in Kubernetes: ``batch()`` only groups
writes for the reader; each write lands on its own. How the hub stays correct
when a crash lands any prefix of a round's writes is written down in
:mod:`hub.controllers.hub` (the order of the round's writes).
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, TypeVar

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from hub.store import journal
from hub.store.interface import (
    AlreadyExists,
    Conflict,
    InvalidObject,
    NotFound,
    Object,
    ObjectKey,
    ObjectList,
    Selector,
    StoreError,
)

from . import jsonio
from . import requests as rq
from .cache import NESTED, Cache, CacheWatch, Entry, copy_json, server_rv, with_seq
from .informer import Informer, InformerOptions
from .transport import REQUEST_TIMEOUT, Response, Transport

log = logging.getLogger(__name__)

_T = TypeVar("_T")

# Kinds the hub lists and watches (every registry kind).
DEFAULT_KINDS = (
    "Namespace",
    "ResourceFlavor",
    "Cohort",
    "ClusterQueue",
    "LocalQueue",
    "WorkloadPriorityClass",
    "AdmissionCheck",
    "MultiKueueConfig",
    "MultiKueueCluster",
    "Workload",
    "Job",
)

# Kinds written and never read back (see the module docstring): unless an informer follows
# one, the answers to their writes are not kept in the cache. Each kept Event was a decode, a
# cache entry, a change on the cache's log and a wake of the hub's watch thread: the hub
# records two per admission (QuotaReserved, Admitted), and held every one in memory.
RECORD_KINDS = frozenset({"Event"})

# One change of :meth:`KubeStore.modify_gathered`: kind, namespace, name, the change, to status.
Change = tuple[str, str, str, Callable[[Object], bool], bool]

# What :meth:`KubeStore.write_gathered` does with each object.
CREATE, STATUS, DELETE = "create", "status", "delete"

_SERVER_FIELDS = ("uid", "creationTimestamp", "generation", "resourceVersion", "deletionTimestamp", "managedFields")
_COMPARED_META = ("labels", "annotations", "finalizers", "ownerReferences")


class NotLeader(StoreError):
    """A write was refused: this process does not hold the leader lease."""


class _Stale(Exception):
    """A 409 on a write that may be re-read and retried."""


@dataclass(frozen=True, slots=True)
class KubeStoreOptions:
    kinds: tuple[str, ...] = DEFAULT_KINDS
    # Kinds a cluster may not serve (job frameworks' CRDs): empty until their CRD is installed.
    optional_kinds: tuple[str, ...] = ()
    field_manager: str = rq.DEFAULT_FIELD_MANAGER
    informer: InformerOptions = InformerOptions()
    sync_timeout: float = 600.0  # a big cluster's first lists may take minutes
    conflict_attempts: int = 5
    # How many writes the hub may have in flight at once (one round's independent writes).
    write_concurrency: int = 16


def _status_error(key: ObjectKey, resp: Response) -> StoreError:
    body = resp.json() if resp.body[:1] == b"{" else None
    message = str((body or {}).get("message") or resp.body[:200].decode(errors="replace"))
    if resp.status == 404:
        return NotFound(key, message)
    if resp.status == 409:
        reason = (body or {}).get("reason")
        return AlreadyExists(key, message) if reason == "AlreadyExists" else Conflict(key, message)
    if resp.status in (400, 422):
        return InvalidObject(f"{key}: {message}")
    return StoreError(f"{key}: HTTP {resp.status}: {message}")


def _unkept_answer(resp: Response) -> Object:
    """A write's answer for a record the cache does not keep: as the server answered, without
    managedFields and without a resourceVersion (the store holds no version of it to name)."""
    obj: Object = jsonio.loads(resp.body)
    meta = obj.get("metadata") or {}
    meta.pop("managedFields", None)
    meta.pop("resourceVersion", None)
    return obj


class KubeStore:
    """Store over the API server behind ``transport``. Blocks in the constructor until every
    kind's first list is in the cache (``sync_timeout``)."""

    # The cluster's Job controller runs Jobs: the hub unsuspends them and reads their status
    # (hub.controllers.kubejobs) instead of simulating their runs. No transactions: a batch's writes land one by one.
    runs_jobs = True
    atomic_batches = False

    def __init__(
        self,
        transport: Transport,
        options: KubeStoreOptions = KubeStoreOptions(),
        *,
        fence: Callable[[], bool] | None = None,
        lease_remaining: Callable[[], float] | None = None,
    ) -> None:
        self.transport = transport
        self.options = options
        self.fence = fence
        # Seconds our leadership lasts (leader election): no write may outlive it, or it could
        # land after a successor took over.
        self.lease_remaining = lease_remaining
        self.cache = Cache()
        self.resources = {kind: rq.resource_for(kind) for kind in options.kinds}
        self.informers = {
            kind: Informer(transport, res, self.cache, options.informer, optional=kind in options.optional_kinds)
            for kind, res in self.resources.items()
        }
        self.writes = 0
        self.retries = 0
        self.write_concurrency = options.write_concurrency
        self._pool: ThreadPoolExecutor | None = None  # write_concurrently over a transport without send_many
        self._closed = False
        for informer in self.informers.values():
            informer.start()
        deadline = time.monotonic() + options.sync_timeout
        try:
            for informer in self.informers.values():
                if not informer.synced.wait(max(0.0, deadline - time.monotonic())):
                    last = informer.stats.errors[-1] if informer.stats.errors else "still listing"
                    raise StoreError(
                        f"could not list {informer.resource.plural} from the API server within "
                        f"{options.sync_timeout:g}s: {last}"
                    )
                if informer.error is not None:
                    raise informer.error
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ reads (cache)

    def get(self, kind: str, namespace: str, name: str) -> Object | None:
        return self.cache.get(ObjectKey(kind, namespace, name))

    def get_shared(self, kind: str, namespace: str, name: str) -> Object | None:
        """As :meth:`get`, sharing nested maps with the cache (as :meth:`list_shared`): for a
        reader that changes nothing, such as the webhook's lookups on every create."""
        return self.cache.get(ObjectKey(kind, namespace, name), shared=True)

    def list(self, kind: str, namespace: str | None = None, label_selector: Selector | None = None) -> tuple[ObjectList, int]:
        return self.cache.list(kind, namespace, label_selector)

    def list_shared(self, kind: str, namespace: str | None = None, label_selector: Selector | None = None) -> tuple[ObjectList, int]:
        """As :meth:`list`, without deep copies: the objects share nested maps with the cache, so
        the caller must change nothing in them below their top level and metadata (each object's
        own: a restore drops managedFields there) (a restore that parses, and so copies, each; the
        agent's garbage collector, which reads metadata)."""
        return self.cache.list(kind, namespace, label_selector, shared=True)

    def watch(self, kinds: Iterable[str] | None = None, since: int = 0) -> CacheWatch:
        return self.cache.watch(kinds, since)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Writes inside land one by one (Kubernetes has no transactions; see the module
        docstring); the cache's watches are woken once at the end, not once per write (each
        wake of the hub's watch thread was ~10% of its CPU per admission)."""
        self.cache.hold()
        journal.begin()
        try:
            yield
        finally:
            journal.end()
            self.cache.release()

    # ------------------------------------------------------------------ writes

    def _check_writable(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")
        if self.fence is not None and not self.fence():
            raise NotLeader("this hub does not hold the leader lease; writes are refused")

    def _send(self, key: ObjectKey, req: rq.Request) -> Response:
        self._check_writable()
        self.writes += 1  # approximate under concurrent writers (a statistic)
        if self.lease_remaining is None:
            return self.transport.send(req)
        remaining = self.lease_remaining()
        if remaining <= 0:
            raise NotLeader("this hub's leader lease ran out; writes are refused")
        return self.transport.send(req, timeout=min(REQUEST_TIMEOUT, remaining))

    def _resource(self, key: ObjectKey, obj: Mapping[str, Any] | None = None) -> rq.Resource:
        try:
            return rq.resource_for(key.kind, None if obj is None else obj.get("apiVersion"))
        except KeyError:
            raise InvalidObject(f"{key}: unknown kind") from None

    def _landed(self, resp: Response, base: int | None = None) -> Object:
        """Apply a write's answer to the cache; the answer as the caller sees it (store seq).
        ``base``: the server's version the write was made against (None: a create or a delete's
        mark, always a change). An answer at ``base`` changed nothing: it is not journaled as
        this write's change (hub.store.journal); neither is one whose version the cache no
        longer shows (seq 0)."""
        obj: Object = jsonio.loads(resp.body)
        srv = int(obj["metadata"]["resourceVersion"])
        entry = self.cache.apply("MODIFIED", obj, own=True)
        if entry is None:  # stale, or the informer brought the same version first
            current = self.cache.entry(ObjectKey.of(obj))
            seq = current.seq if current is not None and current.srv == srv else 0
            if seq and srv != base:
                journal.record((seq,))
            return with_seq(obj, seq)
        if srv != base:
            journal.record((entry.seq,))
        # The caller's own copy: decoding the answer again costs less than a deep copy of it.
        out: Object = jsonio.loads(resp.body)
        out["metadata"]["resourceVersion"] = str(entry.seq)
        return out

    def _current(self, key: ObjectKey, fresh: bool) -> Entry | None:
        """The object as the cache holds it, or (``fresh``) as the server holds it now."""
        if not fresh:
            return self.cache.entry(key)
        resp = self.transport.send(rq.get(self._resource(key), key.namespace, key.name))
        if resp.status == 404:
            return None
        if not resp.ok:
            raise _status_error(key, resp)
        obj: Object = jsonio.loads(resp.body)
        self.cache.apply("MODIFIED", obj)
        return self.cache.entry(key)

    def _retrying(self, key: ObjectKey, attempt: Callable[[bool], _T], *, conflicted: bool = False) -> _T:
        """Run ``attempt(fresh)``; on a 409 re-read from the server and try again. ``conflicted``:
        the first attempt was made already (a gathered write) and got a 409."""
        # The first attempt runs bare: tenacity's bookkeeping (a Retrying, futures, an attempt
        # manager: about 5% of the hub's CPU per admission) is paid only by a write that conflicted.
        try:
            if not conflicted:
                return attempt(False)
            raise _Stale()
        except _Stale:
            self.retries += 1
        if self.options.conflict_attempts <= 1:
            raise Conflict(key, f"still conflicting after {self.options.conflict_attempts} attempts")
        # Then as tenacity's random exponential backoff would have gone on: up to 5 ms before the
        # first re-read, doubling up to 0.2 s, fresh reads from the server each time.
        time.sleep(random.uniform(0, 0.005))
        retry = Retrying(
            retry=retry_if_exception_type(_Stale),
            stop=stop_after_attempt(self.options.conflict_attempts - 1),
            wait=wait_random_exponential(multiplier=0.01, max=0.2),
            reraise=True,
        )
        try:
            for try_ in retry:
                with try_:
                    try:
                        return attempt(True)
                    except _Stale:
                        self.retries += 1
                        raise
        except _Stale:
            raise Conflict(key, f"still conflicting after {self.options.conflict_attempts} attempts") from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _server_rv_for(self, key: ObjectKey, entry: Entry, given: object) -> str:
        """The API server's resourceVersion for a write; the caller's (store) one must be current."""
        if given not in (None, ""):
            try:
                want = int(str(given))
            except ValueError:
                raise Conflict(key, f"invalid resourceVersion {given!r}") from None
            if want != entry.seq:
                raise Conflict(key, f"given resourceVersion {want}, stored {entry.seq}")
        return str(entry.srv)

    def _create_request(self, obj: Mapping[str, Any]) -> tuple[ObjectKey, rq.Request]:
        if not isinstance(obj, Mapping):
            raise InvalidObject(f"an object must be a mapping, not {type(obj).__name__}")
        meta = obj.get("metadata")
        if not isinstance(meta, Mapping):
            raise InvalidObject(f"{obj.get('kind')} has no metadata")
        kind, name, namespace = obj.get("kind"), meta.get("name") or meta.get("generateName") or "", meta.get("namespace") or ""
        if type(kind) is str and kind and type(name) is str and name and type(namespace) is str:
            key = ObjectKey(kind, namespace, name)
        else:
            key = ObjectKey.of({**obj, "metadata": {**meta, "name": name}})  # raises what is wrong
        res = self._resource(key, obj)
        # Serialized at once, never changed: the caller's maps need no copy (nor one without the
        # resourceVersion when there is none).
        body = obj if "resourceVersion" not in meta else {
            **obj, "metadata": {k: v for k, v in meta.items() if k != "resourceVersion"}}
        try:
            return key, rq.create(res, body, field_manager=self.options.field_manager)
        except ValueError as exc:
            raise InvalidObject(f"{key}: {exc}") from None

    def create(self, obj: Mapping[str, Any]) -> Object:
        key, req = self._create_request(obj)
        status = obj.get("status")
        resp = self._send(key, req)
        if not resp.ok:
            raise _status_error(key, resp)
        if self._unkept(key.kind):
            return _unkept_answer(resp)
        out = self._landed(resp)
        if status and out.get("status") != status:
            # The status subresource ignored it: write it where it goes.
            out = self.update_status({**out, "status": status, "metadata": {**out["metadata"], "resourceVersion": None}})
        return out

    def update(self, obj: Mapping[str, Any]) -> Object:
        key = ObjectKey.of(obj)
        res = self._resource(key, obj)
        given = (obj.get("metadata") or {}).get("resourceVersion")
        entry = self.cache.entry(key)
        if entry is None and given in (None, "") and self._unkept(key.kind):
            return self._patch_record(key, res, obj)
        if entry is None:
            raise NotFound(key)
        if given in (None, ""):
            return self._patch(key, res, entry, obj)
        srv = self._server_rv_for(key, entry, given)
        current = entry.obj
        if _same_spec_and_meta(obj, current):
            return with_seq(current, entry.seq)  # a no-op update writes nothing
        body: Object = copy_json({k: v for k, v in obj.items() if k != "status"})
        meta = body.setdefault("metadata", {})
        for name in _SERVER_FIELDS:
            if name in current["metadata"]:
                meta[name] = current["metadata"][name]
            else:
                meta.pop(name, None)
        meta["resourceVersion"] = srv
        if "status" in current:
            body["status"] = current["status"]
        resp = self._send(key, rq.replace(res, body, field_manager=self.options.field_manager))
        if not resp.ok:
            raise _status_error(key, resp)  # a 409 is the caller's to resolve: it named the version
        return self._landed(resp, int(srv))

    def _patch(self, key: ObjectKey, res: rq.Resource, entry: Entry, obj: Mapping[str, Any]) -> Object:
        """An update that names no version: the caller's change to the version it read from the
        cache, sent as a merge patch, which the API server applies to whatever it holds now. A
        writer that changed other fields meanwhile keeps them (a whole-object retry would erase
        them); the fields the caller changed are the caller's."""
        patch = rq.merge_diff(_writable(entry.obj), _writable(obj))
        if not patch:
            return with_seq(entry.obj, entry.seq)  # a no-op update writes nothing
        resp = self._send(key, rq.merge_patch(res, key.namespace, key.name, patch, field_manager=self.options.field_manager))
        if not resp.ok:
            raise _status_error(key, resp)
        return self._landed(resp, entry.srv)

    def _patch_record(self, key: ObjectKey, res: rq.Resource, obj: Mapping[str, Any]) -> Object:
        """An update of a record (an Event written again: its count, last time, message) the cache
        does not keep: every field but metadata as a merge patch, with no precondition, as
        client-go's event recorder patches a repeated Event. Gone: NotFound (the caller creates it
        afresh)."""
        patch = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        resp = self._send(key, rq.merge_patch(res, key.namespace, key.name, patch, field_manager=self.options.field_manager))
        if not resp.ok:
            raise _status_error(key, resp)
        return _unkept_answer(resp)

    def _unkept(self, kind: str) -> bool:
        """Whether the answers to writes of ``kind`` stay out of the cache (:data:`RECORD_KINDS`)."""
        return kind in RECORD_KINDS and not self.cache.follows(kind)

    def modify(
        self, kind: str, namespace: str, name: str, change: Callable[[Object], bool], *, status: bool = False
    ) -> Object | None:
        """client-go's ``RetryOnConflict`` (see :func:`hub.store.interface.modify`): ``change`` is
        applied to the cached object and written at its version; a 409 reads the object from the
        API server and applies ``change`` again. None when nothing was written (gone, or no change)."""
        key = ObjectKey(kind, namespace, name)
        res = self._resource(key)

        def attempt(fresh: bool) -> Object | None:
            entry = self._current(key, fresh)
            if entry is None:
                raise NotFound(key)
            obj = copy_json(entry.obj)
            if not change(obj):
                return None
            resp = self._send(key, self._modify_request(key, res, entry, obj, status))
            if resp.status == 409:
                raise _Stale()
            if not resp.ok:
                raise _status_error(key, resp)
            return self._landed(resp, entry.srv)

        try:
            return self._retrying(key, attempt)
        except NotFound:
            return None

    def _modify_request(self, key: ObjectKey, res: rq.Resource, entry: Entry, obj: Object, status: bool) -> rq.Request:
        """The change alone as a merge patch at the version it was applied to (a precondition: 409
        when the server moved on), not the whole object back (a Job's unsuspend: its template and
        managedFields again, for a flag and a nodeSelector)."""
        if status:
            patch = {"status": rq.merge_diff(entry.obj.get("status") or {}, obj.get("status") or {})}
        else:
            patch = rq.merge_diff(_writable(entry.obj), _writable(obj))
        patch["metadata"] = {**(patch.get("metadata") or {}), "resourceVersion": str(entry.srv)}
        return rq.merge_patch(res, key.namespace, key.name, patch, status=status, field_manager=self.options.field_manager)

    def modify_gathered(self, changes: Sequence[Change]) -> builtins.list[Object | None | StoreError]:
        """:meth:`modify` of independent objects, each ``(kind, namespace, name, change, status)``:
        the first attempts all in flight at once where the transport gathers them (a round's Job
        starts: not a thread and a urllib3 round trip each). Each result in its place, as
        :meth:`modify` gives it (None: gone, or no change) or the StoreError it raised. A 409 goes
        on through :meth:`modify` (read from the server and applied again there)."""
        send_many = getattr(self.transport, "send_many", None)
        if send_many is None:
            return [self._modified(c) for c in changes]
        out: builtins.list[Object | None | StoreError] = [None] * len(changes)
        reqs: builtins.list[rq.Request] = []
        sent: builtins.list[tuple[int, ObjectKey, Entry]] = []
        for i, (kind, namespace, name, change, status) in enumerate(changes):
            key = ObjectKey(kind, namespace, name)
            try:
                res = self._resource(key)
                entry = self.cache.entry(key)
                if entry is None:
                    continue  # gone: None, as modify answers
                obj = copy_json(entry.obj)
                if not change(obj):
                    continue
                reqs.append(self._modify_request(key, res, entry, obj, status))
            except StoreError as exc:
                out[i] = exc
                continue
            sent.append((i, key, entry))
        if not reqs:
            return out
        answers = self._send_gathered(send_many, reqs)
        stale: builtins.list[int] = []
        self.cache.hold()
        try:
            for (i, key, entry), resp in zip(sent, answers, strict=True):
                if isinstance(resp, StoreError):
                    out[i] = resp
                elif resp.status == 409:
                    stale.append(i)
                elif resp.status == 404:
                    out[i] = None  # gone meanwhile, as modify answers
                elif not resp.ok:
                    out[i] = _status_error(key, resp)
                else:
                    out[i] = self._landed(resp, entry.srv)
        finally:
            self.cache.release()
        for i in stale:  # the server moved on: re-read and retried, one by one (rare)
            out[i] = self._modified(changes[i])
        return out

    def _modified(self, c: Change) -> Object | None | StoreError:
        try:
            return self.modify(c[0], c[1], c[2], c[3], status=c[4])
        except StoreError as exc:
            return exc

    def _send_gathered(self, send_many: Callable[..., Sequence[Response | StoreError]],
                       reqs: builtins.list[rq.Request]) -> Sequence[Response | StoreError]:
        """A batch of writes, all in flight at once, once this process may write (the lease)."""
        self._check_writable()
        timeout = REQUEST_TIMEOUT
        if self.lease_remaining is not None:
            timeout = min(REQUEST_TIMEOUT, self.lease_remaining())
            if timeout <= 0:
                raise NotLeader("this hub's leader lease ran out; writes are refused")
        self.writes += len(reqs)
        return send_many(reqs, timeout=timeout)

    def _status_request(self, obj: Mapping[str, Any], fresh: bool) -> tuple[rq.Request, int]:
        """A merge patch of the status alone, at the version it was computed against (the
        resourceVersion in a patch is a precondition: 409 when the server moved on): the server
        gets a few hundred bytes instead of the whole object, spec and managedFields. With the
        server's version it is made against (an answer at it changed nothing)."""
        key = ObjectKey.of(obj)
        res = self._resource(key, obj)
        entry = self._current(key, fresh)
        if entry is None:
            raise NotFound(key)
        srv = self._server_rv_for(key, entry, None if fresh else (obj.get("metadata") or {}).get("resourceVersion"))
        status, nulls = rq.merge_diff_counted(entry.obj.get("status"), obj.get("status"))
        patch = {"metadata": {"resourceVersion": srv}, "status": status}
        req = rq.merge_patch(res, key.namespace, key.name, patch, status=True, field_manager=self.options.field_manager,
                             nulls=nulls if status is not None else nulls + 1)
        return req, int(srv)

    def update_status(self, obj: Mapping[str, Any], *, conflicted: bool = False) -> Object:
        """``conflicted``: a gathered first attempt got a 409 (go on with fresh reads)."""
        key = ObjectKey.of(obj)
        retriable = (obj.get("metadata") or {}).get("resourceVersion") in (None, "")

        def attempt(fresh: bool) -> Object:
            req, base = self._status_request(obj, fresh)
            resp = self._send(key, req)
            if resp.status == 409 and retriable:
                raise _Stale()
            if not resp.ok:
                raise _status_error(key, resp)
            return self._landed(resp, base)

        return self._retrying(key, attempt, conflicted=conflicted)

    def write_concurrently(self, writes: Sequence[tuple[bool, Mapping[str, Any]]]) -> builtins.list[Object | StoreError]:
        """Independent creates (True) and status writes (False): :meth:`write_gathered`."""
        return self.write_gathered([(CREATE if create else STATUS, obj) for create, obj in writes])

    def write_gathered(self, writes: Sequence[tuple[str, Mapping[str, Any]]]) -> builtins.list[Object | StoreError]:
        """Independent creates (CREATE), status writes (STATUS) and deletes (DELETE: ``obj`` names
        the object by kind, namespace and name; no precondition), all in flight at once where the
        transport gathers them (``send_many``), else through ``write_concurrency`` threads. Each
        result in its place: the object written, brief (kind, metadata without managedFields,
        status: the status is the caller's own, metadata is copied; a delete's as :meth:`delete`
        returns it), or the StoreError its own call would have raised. A status write that
        conflicts goes on through :meth:`update_status` (re-read and retried, as there); the status
        of the creates whose status the server dropped goes out after them, gathered too."""
        send_many = getattr(self.transport, "send_many", None)
        if send_many is None:
            return self._threaded([(self._call_for(op), obj) for op, obj in writes])
        out: builtins.list[Object | StoreError] = [{} for _ in writes]
        reqs: builtins.list[rq.Request] = []
        sent: builtins.list[tuple[int, ObjectKey, int | None, Entry | None]] = []
        for i, (op, obj) in enumerate(writes):
            base: int | None = None  # a create always changes
            entry: Entry | None = None
            try:
                if op == CREATE:
                    key, req = self._create_request(obj)
                elif op == STATUS:
                    key = ObjectKey.of(obj)
                    req, base = self._status_request(obj, fresh=False)
                else:
                    key = ObjectKey.of(obj)
                    entry = self.cache.entry(key)  # what a delete answered with a Status removed
                    req = rq.delete(self._resource(key), key.namespace, key.name)
            except StoreError as exc:
                out[i] = exc
                continue
            reqs.append(req)
            sent.append((i, key, base, entry))
        if not reqs:
            return out  # nothing to send: no leadership needed (a standby's empty round)
        answers = self._send_gathered(send_many, reqs)
        self.cache.hold()  # the watches woken once for the batch's answers, not once each
        try:
            self._land_gathered(writes, sent, answers, out)
        finally:
            self.cache.release()
        # The status subresource ignored a create's status: write it where it goes, these together.
        dropped: builtins.list[tuple[int, Object]] = []
        for i, (op, obj) in enumerate(writes):
            got = out[i]
            if op == CREATE and not isinstance(got, StoreError) and obj.get("status") and got.get("status") != obj["status"]:
                dropped.append((i, {**got, "metadata": {**got["metadata"], "resourceVersion": None}, "status": obj["status"]}))
        if dropped:
            for (i, _), got in zip(dropped, self.write_gathered([(STATUS, obj) for _, obj in dropped]), strict=True):
                out[i] = got
        return out

    def _land_gathered(
        self, writes: Sequence[tuple[str, Mapping[str, Any]]], sent: builtins.list[tuple[int, ObjectKey, int | None, Entry | None]],
        answers: Sequence[Response | StoreError], out: builtins.list[Object | StoreError],
    ) -> None:
        """Each answer of :meth:`write_gathered`'s batch applied to the cache, its outcome in ``out``."""
        for (i, key, base, entry), resp in zip(sent, answers, strict=True):
            op, obj = writes[i]
            if isinstance(resp, StoreError):
                out[i] = resp
            elif resp.ok and op == DELETE:
                out[i] = self._deleted(key, resp, entry)
            elif resp.ok and op == CREATE and self._unkept(key.kind):
                out[i] = _unkept_answer(resp)
            elif resp.ok:
                # Only a kind an informer follows can have its echo in the cache first (the answers
                # to most of a round's creates are not looked for there).
                out[i] = self._landed_brief(resp, obj if op == STATUS else None, base,
                                            key if self.cache.follows(key.kind) else None)
            elif resp.status == 409 and op == STATUS and (obj.get("metadata") or {}).get("resourceVersion") in (None, ""):
                out[i] = self._outcome(partial(self.update_status, conflicted=True), obj)  # re-read and retried
            else:
                out[i] = _status_error(key, resp)

    def _call_for(self, op: str) -> Callable[[Mapping[str, Any]], Object]:
        if op == CREATE:
            return self.create
        if op == STATUS:
            return self.update_status
        return lambda obj: self.delete(str(obj["kind"]), obj["metadata"].get("namespace") or "", obj["metadata"]["name"])

    def _threaded(
        self, calls: builtins.list[tuple[Callable[[Mapping[str, Any]], Object], Mapping[str, Any]]]
    ) -> builtins.list[Object | StoreError]:
        if self.write_concurrency <= 1 or len(calls) <= 1:
            return [self._outcome(call, obj) for call, obj in calls]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.write_concurrency, thread_name_prefix="mkhub-kube-writes")
        return list(self._pool.map(lambda c: self._outcome(*c), calls))

    @staticmethod
    def _outcome(call: Callable[[Mapping[str, Any]], Object], obj: Mapping[str, Any]) -> Object | StoreError:
        try:
            return call(obj)
        except StoreError as exc:
            return exc

    def _landed_brief(
        self, resp: Response, status_of: Mapping[str, Any] | None, base: int | None, key: ObjectKey | None = None
    ) -> Object:
        """Apply a write's answer to the cache (as :meth:`_landed`, journaled as there) and return
        it brief, without decoding it a second time: its metadata copied (less managedFields), and
        for a status write (``status_of``) the caller's own status, which the merge patch made the
        server's. ``key``: the object's, when the caller knows it (a write to a named object)."""
        if key is not None:
            text = jsonio.sole_version(resp.body)
            current = self.cache.entry(key) if text is not None else None
            if current is not None and current.srv == int(str(text)):
                # The informer brought this very version first (its echo arrived while the batch
                # was still in flight): the cached object is the answer, and decoding the answer
                # too would change nothing. One decode per write either way.
                return self._brief(current.obj, status_of, current.seq, base)
        obj: Object = jsonio.loads(resp.body)
        entry = self.cache.apply("MODIFIED", obj, own=True)
        seq = entry.seq if entry is not None else 0
        if entry is None:
            current = self.cache.entry(ObjectKey.of(obj))
            if current is not None and current.srv == server_rv(obj):
                seq = current.seq
        return self._brief(obj, status_of, seq, base)

    @staticmethod
    def _brief(obj: Object, status_of: Mapping[str, Any] | None, seq: int, base: int | None) -> Object:
        """What :meth:`_landed_brief` returns of the server's ``obj`` (at store version ``seq``)."""
        meta = {k: copy_json(v) if isinstance(v, NESTED) else v for k, v in obj["metadata"].items() if k != "managedFields"}
        if seq and int(meta["resourceVersion"]) != base:
            journal.record((seq,))
        meta["resourceVersion"] = str(seq)
        out: Object = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": meta}
        if status_of is not None:
            out["status"] = status_of.get("status")
        elif "status" in obj:
            out["status"] = copy_json(obj["status"])
        return out

    def delete(self, kind: str, namespace: str, name: str, *, resource_version: str | int | None = None) -> Object:
        key = ObjectKey(kind, namespace, name)
        res = self._resource(key)
        entry = self.cache.entry(key)
        srv: str | None = None
        if resource_version not in (None, ""):
            if entry is None:
                raise NotFound(key)
            srv = self._server_rv_for(key, entry, resource_version)
        resp = self._send(key, rq.delete(res, namespace, name, resource_version=srv))
        if not resp.ok:
            raise _status_error(key, resp)
        return self._deleted(key, resp, entry)

    def _deleted(self, key: ObjectKey, resp: Response, entry: Entry | None) -> Object:
        """Apply a delete's answer to the cache; what :meth:`delete` returns. ``entry``: the
        object as the cache held it before the delete."""
        body = jsonio.loads(resp.body)
        if body.get("kind") == "Status":  # some servers answer a finished delete with a Status
            if entry is None:
                return {"kind": key.kind, "metadata": {"namespace": key.namespace, "name": key.name, "resourceVersion": "0"}}
            body = entry.obj
        body.setdefault("kind", key.kind)
        meta = body.get("metadata") or {}
        if meta.get("deletionTimestamp") and meta.get("finalizers"):
            return self._landed(Response(resp.status, json.dumps(body).encode()))  # marked, not gone
        self.cache.apply("DELETED", body)
        return with_seq(body, self.cache.seq)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for informer in self.informers.values():
            informer.request_stop()
        for informer in self.informers.values():
            informer.join()
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        self.cache.close()

    def __enter__(self) -> KubeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def problem(self) -> str | None:
        """Why this store's cache no longer follows the API server (an informer died), or None.
        ``mkhub serve`` turns readiness off while there is one."""
        for kind, informer in self.informers.items():
            if informer.error is not None and not self._closed:
                return f"the {kind} informer stopped: {informer.error!r}"
        return None

    def stats(self) -> dict[str, Any]:
        return {
            "writes": self.writes,
            "conflict_retries": self.retries,
            "informers": {kind: asdict(inf.stats) | {"position": inf.position} for kind, inf in self.informers.items()},
        }


def _writable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What an update may change: everything but status and the server's metadata."""
    out = {k: v for k, v in obj.items() if k not in ("status", "apiVersion", "kind", "metadata")}
    meta = obj.get("metadata") or {}
    out["metadata"] = {k: v for k, v in meta.items() if k not in (*_SERVER_FIELDS, "name", "namespace", "selfLink")}
    return out


def _same_spec_and_meta(new: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    for k in set(new) | set(current):
        if k in ("metadata", "status", "apiVersion", "kind"):
            continue
        if new.get(k) != current.get(k):
            return False
    new_meta = new.get("metadata") or {}
    cur_meta = current.get("metadata") or {}
    return all((new_meta.get(f) or None) == (cur_meta.get(f) or None) for f in _COMPARED_META)

