"""The dashboard's index of Workloads: filters, sort and pages without scanning every workload.

Fed from the store's watch (one thread), read by the HTTP handlers (the event
loop); a lock guards both. Per sort field a list kept sorted by (value, key),
per filter field a set of keys per value: a page without filters is a slice,
a filtered page sorts only the workloads that match (cached until the next change).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

STATES = ("pending", "reserved", "admitted", "running", "finished", "inactive")
FILTERS = ("namespace", "queue", "clusterQueue", "state", "kind", "worker")
SORTS = ("created", "name", "namespace", "queue", "priority", "state")
MAX_LIMIT = 500
KEPT_SORTED = tuple(s for s in SORTS if s != "state")


class QueryError(ValueError):
    """A bad query parameter: the message names it and why."""


_STATE_ORDER = {state: i for i, state in enumerate(STATES)}
_ATTRIBUTE = {"namespace": "namespace", "queue": "queue", "clusterQueue": "cluster_queue", "state": "state",
              "kind": "kind", "worker": "worker"}


@dataclass(slots=True)
class Row:
    key: str
    namespace: str
    name: str
    queue: str
    cluster_queue: str
    state: str
    kind: str
    owner: str
    worker: str
    created: str
    priority: int
    reason: str
    given_up: str  # the Rejected admission check's message ("" when none)
    # What the state and reason come from, kept so that the spec part and the status part can change
    # apart (a status write the hub hands over carries no spec): see WorkloadIndex.apply_status.
    active: bool = True
    phase: str = ""  # the state the status alone decides ("" : pending or inactive, by spec.active)
    waiting: str = ""  # why pending (QuotaReserved=False's message)
    evicted: str = ""  # why inactive (Evicted's message)
    # The resourceVersions the spec part and the status part were read at (0: unknown, always replaced).
    spec_rv: int = field(default=0, compare=False)
    status_rv: int = field(default=0, compare=False)

    def value(self, what: str) -> str:
        value: str = getattr(self, _ATTRIBUTE[what])
        return value

    def clone(self) -> Row:
        """A copy to change (pages hand rows out: a row in the index is never changed in place)."""
        return Row(self.key, self.namespace, self.name, self.queue, self.cluster_queue, self.state, self.kind,
                   self.owner, self.worker, self.created, self.priority, self.reason, self.given_up, self.active,
                   self.phase, self.waiting, self.evicted, self.spec_rv, self.status_rv)

    def sort_value(self, what: str) -> Any:
        return _STATE_ORDER[self.state] if what == "state" else getattr(self, what)  # the other sorts name fields

    def to_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "name": self.name, "queue": self.queue, "clusterQueue": self.cluster_queue,
                "state": self.state, "kind": self.kind, "owner": self.owner, "worker": self.worker,
                "created": self.created, "priority": self.priority, "reason": self.reason}


def _rv_of(meta: Mapping[str, Any]) -> int:
    try:
        return int(meta.get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def _with_status(row: Row, status: Mapping[str, Any], rv: int) -> Row:
    """``row`` with its status part read from ``status`` (Kueue's conditions decide the state)."""
    conditions: dict[Any, Mapping[str, Any]] = {}
    for c in status.get("conditions") or []:
        if isinstance(c, Mapping):
            conditions.setdefault(c.get("type"), c)  # the first of a type, as a reader of the list finds it

    def is_true(kind: str) -> bool:
        c = conditions.get(kind)
        return c is not None and c.get("status") == "True"

    if is_true("Finished"):
        phase = "finished"
    elif is_true("Admitted"):
        # Admitted starts the job; only waitForPodsReady's PodsReady=False says its pods are not up yet.
        waiting = "PodsReady" in conditions and not is_true("PodsReady")
        phase = "admitted" if waiting and not status.get("clusterName") else "running"
    elif is_true("QuotaReserved"):
        phase = "reserved"
    else:
        phase = ""
    reserved = conditions.get("QuotaReserved")
    evicted = conditions.get("Evicted")
    admission = status.get("admission") or {}
    row.phase = phase
    row.waiting = "" if reserved is None else str(reserved.get("message") or reserved.get("reason") or "")
    row.evicted = str((evicted or {}).get("message") or "deactivated")
    row.cluster_queue = str(admission.get("clusterQueue") or "")
    row.worker = str(status.get("clusterName") or "")
    checks = status.get("admissionChecks")
    row.given_up = next((str(c.get("message") or "rejected") for c in checks
                         if isinstance(c, Mapping) and c.get("state") == "Rejected"), "") if checks else ""
    row.status_rv = rv
    return _settle(row)


def _settle(row: Row) -> Row:
    """The state and reason from the status part and spec.active."""
    row.state = row.phase or ("pending" if row.active else "inactive")
    row.reason = row.waiting if row.state == "pending" else row.evicted if row.state == "inactive" else ""
    return row


def row_of(obj: Mapping[str, Any], rv: int | None = None) -> Row:
    """The table row of a stored Workload (``rv``: the change's resourceVersion, else its metadata's)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, Mapping)]
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    try:
        priority = int(spec.get("priority") or 0)
    except (TypeError, ValueError):
        priority = 0
    rv = _rv_of(meta) if rv is None else rv
    row = Row(
        key=f"{namespace}/{name}", namespace=namespace, name=name, queue=str(spec.get("queueName") or ""),
        cluster_queue="", state="pending",
        kind=str(owners[0].get("kind")) if owners else "Workload", owner=str(owners[0].get("name")) if owners else "",
        worker="", created=str(meta.get("creationTimestamp") or ""),
        priority=priority, reason="", given_up="", active=spec.get("active") is not False, spec_rv=rv,
    )
    return _with_status(row, obj.get("status") or {}, rv)


@dataclass(frozen=True, slots=True)
class Query:
    filters: tuple[tuple[str, str], ...] = ()
    sort: str = "created"
    descending: bool = False
    offset: int = 0
    limit: int = 50


def parse_query(params: Mapping[str, str]) -> Query:
    """The workloads list's query parameters; QueryError naming the bad one."""
    filters: list[tuple[str, str]] = []
    sort, descending, offset, limit = "created", False, 0, 50
    for name, value in params.items():
        if name in FILTERS:
            if name == "state" and value not in STATES:
                raise QueryError(f"state: {value!r} is not one of {', '.join(STATES)}")
            filters.append((name, value))
        elif name == "sort":
            descending = value.startswith("-")
            sort = value.lstrip("-")
            if sort not in SORTS:
                raise QueryError(f"sort: {sort!r} is not one of {', '.join(SORTS)} (a leading '-' sorts descending)")
        elif name in ("offset", "limit"):
            try:
                number = int(value)
            except ValueError:
                raise QueryError(f"{name}: {value!r} is not an integer") from None
            if number < 0 or (name == "limit" and not 1 <= number <= MAX_LIMIT):
                raise QueryError(f"{name}: {number} is out of range" + (f" (1 to {MAX_LIMIT})" if name == "limit" else ""))
            offset, limit = (number, limit) if name == "offset" else (offset, number)
        else:
            raise QueryError(f"{name}: unknown parameter (filters: {', '.join(FILTERS)}; sort, offset, limit)")
    return Query(tuple(sorted(filters)), sort, descending, offset, limit)


@dataclass(slots=True)
class Page:
    total: int
    rows: list[Row]
    version: int


@dataclass(slots=True)
class WorkloadIndex:
    rows: dict[str, Row] = field(default_factory=dict)
    by: dict[str, dict[str, set[str]]] = field(default_factory=lambda: {f: {} for f in FILTERS})
    # Kept sorted as rows change, but for the state: a busy hub moves thousands of rows a second between
    # states, and each move would shift a list as long as the index; that order is built when asked for.
    ordered: dict[str, list[tuple[Any, str]]] = field(default_factory=lambda: {s: [] for s in KEPT_SORTED})
    _by_state: list[tuple[Any, str]] | None = None
    gave_up: set[str] = field(default_factory=set)
    version: int = 0
    # Per LocalQueue ("namespace/name"), a count of the changes to its workloads, and a count of the LocalQueues
    # seen for the first time (and of relists): queue positions cached per ClusterQueue follow them.
    queue_changes: dict[str, int] = field(default_factory=dict)
    new_queues: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _cache: dict[tuple[tuple[tuple[str, str], ...], str], list[str]] = field(default_factory=dict)

    def load(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """Replace everything (the first list, or a relist after the watch fell behind)."""
        rows = [row_of(o) for o in objects]
        with self.lock:
            self.rows = {r.key: r for r in rows}
            self.by = {f: {} for f in FILTERS}
            self.gave_up = {r.key for r in rows if r.given_up}
            for r in rows:
                self._add_to_sets(r)
            self.ordered = {s: sorted((r.sort_value(s), r.key) for r in rows) for s in KEPT_SORTED}
            self._by_state = None
            self.version += 1
            self.new_queues += 1
            self._cache.clear()

    def apply(self, obj: Mapping[str, Any], deleted: bool, rv: int | None = None) -> Row | None:
        """One watch event; the new row (None: removed, unchanged or older than what is held)."""
        with self.lock:
            return self._apply(obj, deleted, rv)

    def apply_many(self, events: Iterable[tuple[Mapping[str, Any], bool, int]]) -> set[str]:
        """A batch of watch events (object, deleted, resourceVersion) under one lock; the keys whose rows changed."""
        changed = set()
        with self.lock:
            for obj, deleted, rv in events:
                meta = obj.get("metadata") or {}
                before = self.version
                self._apply(obj, deleted, rv)
                if self.version != before:
                    changed.add(f"{meta.get('namespace') or ''}/{meta.get('name') or ''}")
        return changed

    def apply_statuses(self, writes: Iterable[tuple[str, int, Mapping[str, Any]]]) -> tuple[set[str], list[tuple[str, int, Mapping[str, Any]]]]:
        """Status writes (key, resourceVersion, status) as the hub committed them, with no spec: each
        replaces its row's status part unless the row holds a newer one. Returns the keys whose rows
        changed, and the writes whose workload the index does not hold (yet: its creation may come later)."""
        changed: set[str] = set()
        missing: list[tuple[str, int, Mapping[str, Any]]] = []
        with self.lock:
            for key, rv, status in writes:
                old = self.rows.get(key)
                if old is None:
                    missing.append((key, rv, status))
                elif rv > old.status_rv and self._replace_status(key, old, _with_status(old.clone(), status, rv)):
                    changed.add(key)
        return changed, missing

    def _apply(self, obj: Mapping[str, Any], deleted: bool, rv: int | None) -> Row | None:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
        old = self.rows.get(key)
        if deleted:
            if old is not None:
                self._replace(key, old, None)
            return None
        new = row_of(obj, rv)
        rv = new.spec_rv
        if old is not None and rv:
            if rv <= old.spec_rv and rv <= old.status_rv:
                return None  # what the index holds is newer (a status write the hub handed over first)
            if rv < old.status_rv:  # keep the newer status part
                new.phase, new.waiting, new.evicted, new.status_rv = old.phase, old.waiting, old.evicted, old.status_rv
                new.cluster_queue, new.worker, new.given_up = old.cluster_queue, old.worker, old.given_up
                _settle(new)
        return new if self._replace(key, old, new) else None

    def _replace_status(self, key: str, old: Row, new: Row) -> bool:
        """:meth:`_replace` for a new status part: only the state, queue and worker can move (the hot path
        of a busy hub: a few comparisons per write)."""
        self._touch(old)  # even when nothing shown changed: a requeue may reorder its queue
        if old == new:
            old.status_rv = new.status_rv
            return False
        self.rows[key] = new
        for f, was, now in (("state", old.state, new.state), ("clusterQueue", old.cluster_queue, new.cluster_queue),
                            ("worker", old.worker, new.worker)):
            if was != now:
                bucket = self.by[f].get(was)
                if bucket is not None:
                    bucket.discard(key)
                    if not bucket:
                        del self.by[f][was]
                self.by[f].setdefault(now, set()).add(key)
        if old.given_up != new.given_up:
            if new.given_up:
                self.gave_up.add(key)
            else:
                self.gave_up.discard(key)
        if old.state != new.state:
            self._by_state = None
        self.version += 1
        self._cache.clear()
        return True

    def _replace(self, key: str, old: Row | None, new: Row | None) -> bool:
        """Put ``new`` in place of ``old`` in the rows, sets and orders; False when nothing shown changed."""
        if old is not None:
            self._touch(old)
        if new is not None and (old is None or old.queue != new.queue or old.namespace != new.namespace):
            self._touch(new)
        if old is not None and old == new:
            old.spec_rv, old.status_rv = max(old.spec_rv, new.spec_rv), max(old.status_rv, new.status_rv)
            return False
        if new is None:
            del self.rows[key]
        else:
            self.rows[key] = new
        for f in FILTERS:  # a status change moves the row in the state, queue and worker sets only
            was = None if old is None else old.value(f)
            now = None if new is None else new.value(f)
            if was == now:
                continue
            if was is not None:
                bucket = self.by[f].get(was)
                if bucket is not None:
                    bucket.discard(key)
                    if not bucket:
                        del self.by[f][was]
            if now is not None:
                self.by[f].setdefault(now, set()).add(key)
        if old is not None and old.given_up:
            self.gave_up.discard(key)
        if new is not None and new.given_up:
            self.gave_up.add(key)
        if old is None or new is None or old.state != new.state:
            self._by_state = None
        for s, items in self.ordered.items():
            # A status change keeps its entry in these orders (the state order is built when asked for).
            was_at = None if old is None else (old.sort_value(s), key)
            now_at = None if new is None else (new.sort_value(s), key)
            if was_at == now_at:
                continue
            if was_at is not None:
                i = bisect.bisect_left(items, was_at)
                if i < len(items) and items[i] == was_at:
                    del items[i]
            if now_at is not None:
                bisect.insort(items, now_at)
        self.version += 1
        self._cache.clear()
        return True

    def _touch(self, row: Row) -> None:
        lq = f"{row.namespace}/{row.queue}"
        count = self.queue_changes.get(lq)
        if count is None:
            self.new_queues += 1
        self.queue_changes[lq] = (count or 0) + 1

    def queues_seen(self, local_queues: Iterable[str]) -> tuple[int, tuple[int, ...]]:
        """Where these LocalQueues' workloads stand in the change counts: equal later, nothing of them changed."""
        with self.lock:
            return self.new_queues, tuple(self.queue_changes.get(lq, 0) for lq in local_queues)

    def _add_to_sets(self, r: Row) -> None:
        if r.given_up:
            self.gave_up.add(r.key)
        for f in FILTERS:
            self.by[f].setdefault(r.value(f), set()).add(r.key)

    def page(self, q: Query) -> Page:
        with self.lock:
            items = self._state_order() if q.sort == "state" else self.ordered[q.sort]
            if not q.filters:
                total = len(items)
                if q.descending:
                    end = max(0, total - q.offset)
                    window = items[max(0, end - q.limit):end][::-1]
                else:
                    window = items[q.offset:q.offset + q.limit]
                return Page(total, [self.rows[k] for _, k in window], self.version)
            keys = self._matching(q)
            if q.descending:
                chosen = keys[::-1][q.offset:q.offset + q.limit]
            else:
                chosen = keys[q.offset:q.offset + q.limit]
            return Page(len(keys), [self.rows[k] for k in chosen], self.version)

    def _state_order(self) -> list[tuple[Any, str]]:
        if self._by_state is None:
            self._by_state = [(i, k) for i, state in enumerate(STATES) for k in sorted(self.by["state"].get(state, ()))]
        return self._by_state

    def _matching(self, q: Query) -> list[str]:
        """The keys that pass every filter, in the sort's order (cached until the next change)."""
        cached = self._cache.get((q.filters, q.sort))
        if cached is not None:
            return cached
        sets = [self.by[f].get(v, set()) for f, v in q.filters]
        sets.sort(key=len)
        keys = [k for k in sets[0] if all(k in s for s in sets[1:])]
        keys.sort(key=lambda k: (self.rows[k].sort_value(q.sort), k))
        if len(self._cache) > 64:
            self._cache.clear()
        self._cache[(q.filters, q.sort)] = keys
        return keys

    def counts(self) -> dict[str, int]:
        with self.lock:
            return {s: len(self.by["state"].get(s, ())) for s in STATES}

    def values(self, what: str) -> list[str]:
        """The values a filter can take now (for the page's drop-downs)."""
        with self.lock:
            return sorted(v for v in self.by[what] if v)

    def given_up(self) -> list[Row]:
        with self.lock:
            return [self.rows[k] for k in sorted(self.gave_up)]
