"""One informer per kind: list, then watch from the list's resourceVersion, forever.

The loop (one thread per kind), in the shape kopf gives its watchers:

* **list** the whole collection and hand it to the cache as a replacement; the
  list's resourceVersion is the position. Which version to list at is client-go's
  reflector's rule: the first list asks ``resourceVersion=0`` (the API server's
  watch cache may answer, whole); a re-list after a 410 asks for the most recent
  state (no resourceVersion: a consistent read, paged with ``limit``), because a
  lagging watch cache answering "0" could hand back an older state than the one
  we had (deleted objects reappear, the position goes back);
* **watch** from the position with ``allowWatchBookmarks``: every event and
  every bookmark moves the position, so a reconnect resumes exactly after the
  last thing seen, and an idle kind's position still follows the server's
  (a later resume is not too old);
* the server ends a watch after ``timeoutSeconds``: resume from the position;
* **410 Gone** (an ``ERROR`` event with an ``Expired`` Status, or a 410 answer
  when opening the watch): the position fell out of the server's change window;
  list again; the same when the server has not reached our position (504
  ``ResourceVersionTooLarge``: restored from a backup, or a lagging member);
* a **dropped connection** (reset, EOF mid-chunk) or a **silent** one (no byte
  for ``inactivity_timeout``, which is longer than the server's bookmark
  interval, so a healthy idle watch is never mistaken for a dead one): resume
  from the position after a short, growing backoff;
* the **echoes of our own writes** (the cache holds their version already, from the write's
  answer) are dropped before they are decoded: :func:`echo_version` finds an ADDED or MODIFIED
  line's resourceVersion in its bytes, and :meth:`~.cache.Cache.take_echo` says whether it is
  one of ours; the position moves as for any event;
* a watch that **ends at once without a line**, and a failed list (a 404 included:
  a custom resource answers 404 for a moment while its API server restarts), are
  retried after the same backoff. Only a 404 on the very first list is fatal (the
  kind is not served: CRDs missing), except for an *optional* kind (a job framework's,
  whose operator a cluster may not run): it is then empty and synced, and listed again
  every ``backoff_max`` until its CRD is installed. A loop that stops on anything else (a bug) is
  logged at ERROR and leaves :attr:`Informer.error` set, which the store's
  :meth:`~.store.KubeStore.problem` reports (readiness turns false).

The transport is injected (:class:`~.transport.Transport`), so the loop runs
against any server that speaks the API.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hub.store.interface import StoreError

from . import jsonio
from . import requests as rq
from .cache import Cache, server_rv
from .transport import Transport, TransportError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class InformerOptions:
    page_size: int = 500
    # The server closes a watch after this many seconds (client-go picks 5-10 minutes).
    watch_timeout: int = 300
    # No byte for this long: the watch is presumed dead. Kubernetes sends a bookmark about
    # once a minute to a watch that asked for them; keep this well above that interval.
    inactivity_timeout: float = 150.0
    backoff_initial: float = 0.05
    backoff_max: float = 5.0


@dataclass(slots=True)
class InformerStats:
    lists: int = 0
    watches: int = 0
    events: int = 0
    bookmarks: int = 0
    gone: int = 0
    dropped: int = 0  # broken or silent connections
    empty_watches: int = 0  # watches that ended without a single line
    echoes: int = 0  # events that were echoes of our own writes, dropped undecoded (in events too)
    consistent_lists: int = 0  # re-lists at the most recent version (after a 410)
    errors: list[str] = field(default_factory=list)


class NotServed(StoreError):
    """The API server does not serve this kind (CRDs not installed?)."""


class Informer:
    def __init__(
        self,
        transport: Transport,
        resource: rq.Resource,
        cache: Cache,
        options: InformerOptions = InformerOptions(),
        *,
        on_fatal: Callable[[BaseException], None] | None = None,
        optional: bool = False,
    ) -> None:
        self.transport = transport
        self.resource = resource
        self.cache = cache
        self.options = options
        self.on_fatal = on_fatal
        # An optional kind (a job framework's CRD, which a cluster may not have) that is not served
        # is empty and synced, and listed again now and then until its CRD is installed.
        self.optional = optional
        self.absent = False
        self.position: str | None = None  # the server's resourceVersion we are caught up to
        # The version the next list asks for: "0" first, "" (most recent) after a 410
        # (client-go's relistResourceVersion).
        self.list_from = "0"
        self.synced = threading.Event()
        self.stats = InformerStats()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, name=f"mkhub-informer-{resource.plural}", daemon=True)
        cache.follow_echoes(resource.kind)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.request_stop()
        self.join()

    def request_stop(self) -> None:
        """Ask the loop to end and break its open watch; :meth:`join` waits for it (stopping
        every informer first, then joining, closes a store in one wait rather than one each)."""
        self._stop.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.close()

    def join(self, timeout: float = 5.0) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout=timeout)

    # ------------------------------------------------------------------ the loop

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # a bug: say so loudly, and let readiness see it
            if not self._stop.is_set():
                log.error("%s: the informer stopped: %r; this kind's cache no longer follows the API server",
                          self.resource.plural, exc, exc_info=exc)
                self.error = exc
                self.synced.set()
                if self.on_fatal is not None:
                    self.on_fatal(exc)

    def _loop(self) -> None:
        backoff = self.options.backoff_initial
        while not self._stop.is_set():
            try:
                if self.position is None:
                    self.relist()
                    backoff = self.options.backoff_initial
                if self.watch_once():
                    backoff = self.options.backoff_initial
                    continue
                # Ended at once without a line (a proxy closing it, a server refusing quietly):
                # resuming at once would spin, so it waits as after any failure.
                self.stats.empty_watches += 1
                reason = "the watch ended without a line"
            except NotServed as exc:
                if self.optional and (self.absent or not self.synced.is_set()):
                    if not self.absent:
                        log.info("%s are not served (no CRD): listed again every %gs until they are",
                                 self.resource.plural, self.options.backoff_max)
                    self.absent = True
                    self.synced.set()
                    self.pause(self.options.backoff_max)
                    continue
                if not self.synced.is_set():
                    self.error = exc
                    self.synced.set()  # stop waiters: the store reports the error
                    if self.on_fatal is not None:
                        self.on_fatal(exc)
                    return
                reason = str(exc)  # served before: a restarting API server; it comes back
                log.warning("%s: %s; listing again in %.2fs", self.resource.plural, exc, backoff)
            except (TransportError, StoreError, ValueError) as exc:
                if self._stop.is_set():
                    return
                self.stats.dropped += 1
                reason = str(exc)
                log.info("%s: %s; resuming from %s in %.2fs", self.resource.plural, exc, self.position, backoff)
            self.stats.errors = (self.stats.errors + [reason])[-10:]
            self.pause(backoff * (0.5 + random.random()))
            backoff = min(self.options.backoff_max, backoff * 2)

    def pause(self, seconds: float) -> None:
        """Wait before trying again (returns early when stopped)."""
        self._stop.wait(seconds)

    def relist(self) -> None:
        """List every page; the cache replaces what it held of this kind."""
        items: list[dict[str, Any]] = []
        cont: str | None = None
        at = self.list_from
        restarts = 0
        while True:
            if cont is not None:
                req = rq.list_(self.resource, limit=self.options.page_size, continue_=cont)
            elif at == "0":
                # Served from the API server's watch cache, whole (it ignores limit there).
                req = rq.list_(self.resource, resource_version="0")
            else:
                req = rq.list_(self.resource, limit=self.options.page_size)  # most recent, from etcd
            resp = self.transport.send(req)
            if resp.status == 410:
                # The continue token expired mid-list, or the version we asked for is gone:
                # start over at the most recent state (twice in a row: back off first).
                if restarts:
                    raise StoreError(f"list {self.resource.plural}: HTTP 410 twice: {_message(_loads(resp.body))}")
                items, cont, at, restarts = [], None, "", restarts + 1
                continue
            body = resp.json()
            if resp.status == 404:
                raise NotServed(
                    f"the API server does not serve {self.resource.plural} in {self.resource.api_version} "
                    "(are mkhub's CRDs installed? `mkhub manifests crds` writes them)"
                )
            if not resp.ok:
                raise StoreError(f"list {self.resource.plural}: HTTP {resp.status}: {_message(body)}")
            kind = self.resource.kind
            for item in body.get("items") or []:
                item.setdefault("kind", kind)  # list items carry no kind/apiVersion
                item.setdefault("apiVersion", self.resource.api_version)
                items.append(item)
            meta = body.get("metadata") or {}
            cont = meta.get("continue") or None
            if cont is None:
                list_rv = str(meta.get("resourceVersion") or "0")
                break
        self.cache.replace(self.resource.kind, items, server_rv({"metadata": {"resourceVersion": list_rv}}))
        self.position = list_rv
        self.absent = False
        self.stats.lists += 1
        if at == "":
            self.stats.consistent_lists += 1
        self.synced.set()

    def watch_once(self) -> bool:
        """One watch connection, until it ends. True when it delivered at least one line."""
        assert self.position is not None
        req = rq.watch(self.resource, self.position, timeout_seconds=self.options.watch_timeout)
        stream = self.transport.stream(req, read_timeout=self.options.inactivity_timeout)
        with self._lock:
            self._stream = stream
        if self._stop.is_set():
            stream.close()
            return False
        self.stats.watches += 1
        delivered = False
        try:
            if stream.status == 410:
                self._gone()
                return True
            if stream.status != 200:
                body = stream.read_all()
                raise StoreError(f"watch {self.resource.plural}: HTTP {stream.status}: {_message(_loads(body))}")
            kind, cache = self.resource.kind, self.cache
            for line in stream.lines():
                delivered = True
                if self._stop.is_set():
                    return delivered
                if cache.expects_echo(kind):
                    rv = echo_version(line)
                    if rv is not None and cache.take_echo(kind, int(rv)):
                        self.position = rv
                        self.stats.events += 1
                        self.stats.echoes += 1
                        continue
                if not self._handle(jsonio.loads(line)):
                    return delivered
            return delivered
        finally:
            with self._lock:
                self._stream = None
            stream.close()

    def _handle(self, event: dict[str, Any]) -> bool:
        """Apply one watch event; False when the watch must end (an ERROR)."""
        type_ = event.get("type")
        obj = event.get("object") or {}
        if type_ == "ERROR":
            if obj.get("code") == 410 or obj.get("reason") in ("Expired", "Gone"):
                self._gone()
                return False
            if _too_large(obj):
                # The server is behind our position (restored from a backup, a lagging member):
                # as client-go, our version is unusable there; list the most recent state.
                log.warning("%s: %s; listing again", self.resource.plural, _message(obj))
                self.position, self.list_from = None, ""
                return False
            raise StoreError(f"watch {self.resource.plural}: {_message(obj)}")
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if type_ == "BOOKMARK":
            self.stats.bookmarks += 1
            if rv:
                self.position = str(rv)
                self.cache.forget_tombstones(self.resource.kind, server_rv(obj))
            return True
        if type_ not in ("ADDED", "MODIFIED", "DELETED"):
            raise StoreError(f"watch {self.resource.plural}: unknown event type {type_!r}")
        obj.setdefault("kind", self.resource.kind)
        obj.setdefault("apiVersion", self.resource.api_version)
        self.cache.apply(type_, obj)
        self.stats.events += 1
        if rv:
            self.position = str(rv)
        return True

    def _gone(self) -> None:
        self.stats.gone += 1
        log.info("%s: resourceVersion %s is gone; listing again", self.resource.plural, self.position)
        self.position = None
        self.list_from = ""  # the watch cache may lag behind what we saw: read the most recent


_ECHO_TYPES = (b'{"type":"MODIFIED","object":{', b'{"type":"ADDED","object":{')


def echo_version(line: bytes) -> str | None:
    """The resourceVersion of an ADDED or MODIFIED watch line, read from its bytes; None when it
    cannot be told for sure (then the line is decoded). The API server writes a watch event as
    ``{"type":...,"object":...}``, compact; the key is found as bytes, and only a line where it
    occurs once is read (:func:`.jsonio.sole_version`)."""
    if not line.startswith(_ECHO_TYPES):
        return None
    return jsonio.sole_version(line)


def _too_large(status: dict[str, Any]) -> bool:
    causes = (status.get("details") or {}).get("causes") or []
    return any(isinstance(c, dict) and c.get("reason") == "ResourceVersionTooLarge" for c in causes)


def _loads(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return body.decode(errors="replace")


def _message(body: Any) -> str:
    if isinstance(body, dict):
        return str(body.get("message") or body.get("reason") or body)
    return str(body)
