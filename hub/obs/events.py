"""Kubernetes ``v1`` Events, recorded and aggregated as client-go's event recorder does.

:class:`EventRecorder` takes ``record(object, type, reason, message, now)`` calls
and turns them into Event objects written through any :class:`Store` (the
embedded SQLite store, or the Kubernetes store later: the same interface).
Like client-go's ``EventCorrelator``:

* **spam filter**: a token bucket per (source, involved object): a burst of 25,
  then one event per 5 minutes; what the bucket refuses is dropped;
* **aggregation**: once 10 events with the same (source, object, type, reason)
  but different messages were seen within 10 minutes, further ones are folded
  into one Event whose message starts ``(combined from similar events):``;
* **deduplication**: an event equal to a recent one (same object, type, reason,
  message) updates that Event: ``count`` + 1, ``lastTimestamp`` = now,
  ``firstTimestamp`` kept.

Writes are buffered: :meth:`flush` writes what was recorded since the last
flush (one create or one update per Event, however often it repeated) and
returns the resourceVersions written, so the hub can write them in its round's
transaction and skip their watch events. :meth:`take` and :meth:`send` are its two
halves, for a caller that sends elsewhere than where it records
(:mod:`hub.obs.event_sender`: on an API server, in the background). Events older than ``ttl`` (Kubernetes'
``--event-ttl``, one hour) are deleted by :meth:`collect`: the recorder's own from
a heap of when each was last written, and every Event in the store (written by
anyone, or before a restart) by a full listing every ``SWEEP_PERIOD``. Listing
decodes every stored Event, on the hub's thread: hundreds of thousands of them
after a busy hour.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from hub.api.jobkinds.framework import KindObject
from hub.api.meta import format_time, parse_time
from hub.store.interface import AlreadyExists, Conflict, NotFound, Object, Store, create_independent

NORMAL = "Normal"
WARNING = "Warning"

SPAM_BURST = 25
SPAM_REFILL_SECONDS = 300.0
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = 600.0
CACHE_SIZE = 4096
EVENT_TTL = 3600.0
SWEEP_PERIOD = 600.0  # a full listing of the stored Events, for those the heap does not know
MAX_MESSAGE = 1024  # Kubernetes' limit on an Event's message
COMBINED_PREFIX = "(combined from similar events): "


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """``involvedObject`` of an Event."""

    kind: str
    namespace: str
    name: str
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""

    def to_dict(self) -> dict[str, str]:
        """As client-go's ``reference.GetReference`` writes it; kubectl describe selects by uid."""
        out = {"kind": self.kind, "name": self.name}
        if self.namespace:
            out["namespace"] = self.namespace
        if self.uid:
            out["uid"] = self.uid
        if self.api_version:
            out["apiVersion"] = self.api_version
        if self.resource_version:
            out["resourceVersion"] = self.resource_version
        return out


Resolve = Callable[[str, str, str], "tuple[str, str] | None"]
"""(kind, namespace, name) -> the object's (uid, resourceVersion) as stored, or None."""


def refs_of(objects: Iterable[Object]) -> Resolve:
    """A :data:`Resolve` over stored objects (those a round created, for their first Events)."""
    by_key = {(o.get("kind", ""), o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["metadata"] for o in objects}

    def resolve(kind: str, namespace: str, name: str) -> tuple[str, str] | None:
        meta = by_key.get((kind, namespace, name))
        return (str(meta.get("uid", "")), str(meta.get("resourceVersion", ""))) if meta is not None else None

    return resolve


@dataclass(slots=True)
class JobEvent:
    """An Event Kueue's job reconciler records on the Job itself (jobframework's reconciler):
    CreatedWorkload, Started, Stopped, FinishedWorkload, with its messages."""

    job: KindObject  # a Job, a JobSet...: any kind on the job framework
    reason: str
    message: str
    type: str = NORMAL
    kind: str = "Job"
    api_version: str = "batch/v1"
    component: str = "batch/job-kueue-controller"  # Kueue's recorder: ``<framework>-kueue-controller``


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


@dataclass(slots=True)
class _Aggregate:
    messages: set[str] = field(default_factory=set)
    first: float = 0.0


@dataclass(slots=True)
class _Seen:
    name: str
    namespace: str
    count: int
    first: float
    written: bool = False  # it exists in the store: written again, it is updated
    last: float = 0.0


class Pending(NamedTuple):
    """An Event to write (:meth:`EventRecorder.take`)."""

    seen: _Seen | None
    manifest: Object
    repeated: bool  # written before: updated (its count), not created


def _truncate(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."


class EventRecorder:
    """Records Events for one component (``source.component``), see the module docstring."""

    def __init__(self, component: str, host: str = "", clock: Any = time.time) -> None:
        self.component = component
        self.host = host
        self.clock = clock
        self.recorded = 0  # events accepted (created or counted)
        self.dropped = 0  # refused by the spam filter
        self._buckets: OrderedDict[tuple[str, ...], _Bucket] = OrderedDict()
        self._aggregates: OrderedDict[tuple[str, ...], _Aggregate] = OrderedDict()
        self._seen: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()
        self._dirty: OrderedDict[tuple[str, ...], Object] = OrderedDict()
        self._serial = 0
        self._last_collect = 0.0
        self._last_sweep = float("-inf")
        # (when last written, namespace, name) of each Event this recorder wrote; an Event
        # written again has a newer entry too, and its older one is skipped when it comes up.
        self._expiring: list[tuple[float, str, str]] = []
        self._heap_lock = threading.Lock()

    # ------------------------------------------------------------------ recording

    def record(
        self, obj: ObjectRef, type_: str, reason: str, message: str, now: float | None = None, component: str = ""
    ) -> bool:
        """Record one event; False when the spam filter dropped it. ``component``: the reporting
        controller when it is not this recorder's (Kueue's job reconcilers report as their own)."""
        now = self.clock() if now is None else now
        if len(message) > MAX_MESSAGE:
            message = _truncate(message)
        source = (obj.kind, obj.namespace, obj.name, obj.uid)
        if not self._allow(source, now):
            self.dropped += 1
            return False
        message, key = self._aggregate(source, type_, reason, message, now)
        seen = self._seen.get(key)
        if seen is None:
            self._serial += 1
            seen = _Seen(self._name(obj, now), obj.namespace or "default", 0, now)
            self._remember(self._seen, key, seen)
        else:
            self._seen.move_to_end(key)
        seen.count += 1
        seen.last = now
        self.recorded += 1
        last = format_time(now)
        dirty = self._dirty
        dirty[key] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": seen.name, "namespace": seen.namespace},
            "involvedObject": obj.to_dict(),
            "reason": reason,
            "message": message,
            "type": type_,
            "count": seen.count,
            "firstTimestamp": last if seen.first == now else format_time(seen.first),
            "lastTimestamp": last,
            "source": {"component": component or self.component, **({"host": self.host} if self.host else {})},
            "reportingComponent": component or self.component,
            "reportingInstance": self.host,
        }
        dirty.move_to_end(key)
        return True

    def _name(self, obj: ObjectRef, now: float) -> str:
        # Kubernetes names an Event <object>.<unix nanoseconds in hex>; the serial keeps names
        # unique when two events of one object share a clock reading.
        return f"{obj.name}.{int(now * 1e9) + self._serial:x}"

    def _allow(self, key: tuple[str, ...], now: float) -> bool:
        buckets = self._buckets
        bucket = buckets.get(key)
        if bucket is None:
            bucket = _Bucket(float(SPAM_BURST), now)
            self._remember(buckets, key, bucket)
        else:
            buckets.move_to_end(key)
            bucket.tokens = min(float(SPAM_BURST), bucket.tokens + (now - bucket.at) / SPAM_REFILL_SECONDS)
            bucket.at = now
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True

    def _aggregate(
        self, source: tuple[str, ...], type_: str, reason: str, message: str, now: float
    ) -> tuple[str, tuple[str, ...]]:
        """client-go's EventAggregator: many different messages of one reason fold into one Event.
        ``source``: the involved object's (kind, namespace, name, uid)."""
        base = (*source, type_, reason)
        agg = self._aggregates.get(base)
        if agg is None or now - agg.first > AGGREGATE_INTERVAL:
            agg = _Aggregate(first=now)
            self._remember(self._aggregates, base, agg)
        messages = agg.messages
        messages.add(message)
        if len(messages) >= AGGREGATE_MAX_EVENTS:
            return COMBINED_PREFIX + message, (*base, "")
        return message, (*base, message)

    @staticmethod
    def _remember(cache: OrderedDict[tuple[str, ...], Any], key: tuple[str, ...], value: Any) -> None:
        cache[key] = value
        if len(cache) > CACHE_SIZE:
            cache.popitem(last=False)

    # ------------------------------------------------------------------ writing

    def pending(self) -> int:
        return len(self._dirty)

    def flush(self, store: Store, resolve: Resolve | None = None) -> list[int]:
        """Write the Events recorded since the last flush; the resourceVersions written.
        ``resolve`` fills the uid (and resourceVersion) of objects that had none when the event
        was recorded: a Workload the hub created for a Job in the same round."""
        return self.send(store, self.take(resolve))

    def take(self, resolve: Resolve | None = None) -> list[Pending]:
        """The Events recorded since the last flush, to :meth:`send`; the recorder starts afresh.
        Each says whether it was written before (then it is updated: its count), as known now:
        :meth:`send` may run on another thread while this one records on."""
        dirty, self._dirty = self._dirty, OrderedDict()
        out: list[Pending] = []
        for key, manifest in dirty.items():
            if resolve is not None:
                ref = manifest["involvedObject"]
                if not ref.get("uid"):
                    found = resolve(ref["kind"], ref.get("namespace", ""), ref["name"])
                    if found is not None and found[0]:
                        ref["uid"] = found[0]
                        if found[1]:
                            ref["resourceVersion"] = found[1]
            seen = self._seen.get(key)
            out.append(Pending(seen, manifest, seen is not None and seen.count > 1 and seen.written))
        return out

    def send(self, store: Store, pending: list[Pending]) -> list[int]:
        """Write what :meth:`take` returned; the resourceVersions written."""
        written: list[int] = []
        fresh: list[tuple[_Seen | None, Object]] = []  # Events not written before: created together
        for seen, manifest, repeated in pending:
            if repeated:
                self._written(self._write(store, manifest), seen, written)
            else:
                fresh.append((seen, manifest))
        created = create_independent(store, [manifest for _, manifest in fresh])  # several in flight on an API server
        for (seen, manifest), out in zip(fresh, created, strict=True):
            if isinstance(out, AlreadyExists):
                self._written(self._over_existing(store, manifest), seen, written)
            elif isinstance(out, BaseException):
                raise out
            else:
                self._written(out, seen, written)
        return written

    def _written(self, out: Object | None, seen: _Seen | None, written: list[int]) -> None:
        if out is None:
            return
        meta = out["metadata"]
        if seen is not None:
            seen.written = True
        rv = meta.get("resourceVersion")
        if not rv:
            return  # a store that keeps no Event (Kubernetes): the API server expires it, no echo comes
        written.append(int(rv))
        at = seen.last if seen is not None else self.clock()
        with self._heap_lock:  # send() may run on a thread of its own, collect() on the recorder's
            heapq.heappush(self._expiring, (at, meta.get("namespace", ""), meta["name"]))

    @staticmethod
    def _write(store: Store, manifest: Object) -> Object | None:
        """A repeated Event (:meth:`take` said it was written before): its update."""
        try:
            return store.update(manifest)
        except (NotFound, Conflict):
            pass  # deleted (TTL, a user): record it afresh
        try:
            return store.create(manifest)
        except AlreadyExists:
            return EventRecorder._over_existing(store, manifest)

    @staticmethod
    def _over_existing(store: Store, manifest: Object) -> Object | None:
        """An Event of that name exists (written before a restart): update it instead."""
        meta = manifest["metadata"]
        current = store.get("Event", meta["namespace"], meta["name"])
        if current is not None:
            manifest["metadata"] = {**current["metadata"], **meta}
        try:
            return store.update(manifest)  # a store that keeps no Events patches it as it is
        except (NotFound, Conflict):
            return None

    def collect(self, store: Store, now: float | None = None, period: float = 60.0) -> list[str]:
        """Delete Events last seen more than ``EVENT_TTL`` ago (at most once per ``period``)."""
        now = self.clock() if now is None else now
        if now - self._last_collect < period:
            return []
        self._last_collect = now
        if now - self._last_sweep >= SWEEP_PERIOD:
            self._last_sweep = now
            events, _ = store.list("Event")
        else:
            events = self._due(store, now - EVENT_TTL)
        gone = []
        for ev in events:
            if self._expired(ev, now):
                meta = ev["metadata"]
                try:
                    store.delete("Event", meta.get("namespace", ""), meta["name"])
                except NotFound:
                    continue
                gone.append(meta["name"])
        return gone

    def _due(self, store: Store, before: float) -> list[Object]:
        """The stored Events whose heap entries are older than ``before`` (each once)."""
        heap = self._expiring
        due: dict[tuple[str, str], None] = {}
        with self._heap_lock:
            while heap and heap[0][0] < before:
                _, namespace, name = heapq.heappop(heap)
                due[(namespace, name)] = None
        out = []
        for namespace, name in due:
            ev = store.get("Event", namespace, name)
            if ev is not None:
                out.append(ev)
        return out

    @staticmethod
    def _expired(ev: Object, now: float) -> bool:
        try:
            last = parse_time(str(ev.get("lastTimestamp") or ev.get("firstTimestamp") or ""))
        except ValueError:
            return False
        return now - last > EVENT_TTL


def events_for(store: Store, kind: str, namespace: str, name: str, uid: str = "") -> list[Object]:
    """The Events about one object, oldest first (``describe``)."""
    listed, _ = store.list("Event", namespace or "default")
    return sort_events(
        ev
        for ev in listed
        if (inv := ev.get("involvedObject") or {}).get("kind") == kind
        and inv.get("name") == name
        and (not uid or not inv.get("uid") or inv.get("uid") == uid)
    )


def sort_events(events: Iterable[Object]) -> list[Object]:
    return sorted(events, key=lambda ev: (str(ev.get("lastTimestamp") or ""), ev["metadata"]["name"]))
