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


class QueryError(ValueError):
    """A bad query parameter: the message names it and why."""


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

    def value(self, what: str) -> str:
        return {"namespace": self.namespace, "queue": self.queue, "clusterQueue": self.cluster_queue,
                "state": self.state, "kind": self.kind, "worker": self.worker}[what]

    def sort_value(self, what: str) -> Any:
        if what == "created":
            return self.created
        if what == "name":
            return self.name
        if what == "namespace":
            return self.namespace
        if what == "queue":
            return self.queue
        if what == "priority":
            return self.priority
        return STATES.index(self.state)

    def to_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "name": self.name, "queue": self.queue, "clusterQueue": self.cluster_queue,
                "state": self.state, "kind": self.kind, "owner": self.owner, "worker": self.worker,
                "created": self.created, "priority": self.priority, "reason": self.reason}


def _true(conditions: Iterable[Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    for c in conditions:
        if c.get("type") == kind:
            return c
    return None


def row_of(obj: Mapping[str, Any]) -> Row:
    """The table row of a stored Workload (Kueue's conditions decide its state)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]

    def is_true(kind: str) -> bool:
        c = _true(conditions, kind)
        return c is not None and c.get("status") == "True"

    reserved = _true(conditions, "QuotaReserved")
    if is_true("Finished"):
        state = "finished"
    elif is_true("Admitted"):
        state = "running" if is_true("PodsReady") or status.get("clusterName") else "admitted"
    elif is_true("QuotaReserved"):
        state = "reserved"
    elif spec.get("active") is False:
        state = "inactive"
    else:
        state = "pending"
    reason = ""
    if state == "pending" and reserved is not None:
        reason = str(reserved.get("message") or reserved.get("reason") or "")
    elif state == "inactive":
        evicted = _true(conditions, "Evicted")
        reason = str((evicted or {}).get("message") or "deactivated")
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, Mapping)]
    admission = status.get("admission") or {}
    rejected = next((str(c.get("message") or "rejected") for c in status.get("admissionChecks") or []
                     if isinstance(c, Mapping) and c.get("state") == "Rejected"), "")
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    try:
        priority = int(spec.get("priority") or 0)
    except (TypeError, ValueError):
        priority = 0
    return Row(
        key=f"{namespace}/{name}", namespace=namespace, name=name, queue=str(spec.get("queueName") or ""),
        cluster_queue=str(admission.get("clusterQueue") or ""), state=state,
        kind=str(owners[0].get("kind")) if owners else "Workload", owner=str(owners[0].get("name")) if owners else "",
        worker=str(status.get("clusterName") or ""), created=str(meta.get("creationTimestamp") or ""),
        priority=priority, reason=reason, given_up=rejected,
    )


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
    ordered: dict[str, list[tuple[Any, str]]] = field(default_factory=lambda: {s: [] for s in SORTS})
    gave_up: set[str] = field(default_factory=set)
    version: int = 0
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
            self.ordered = {s: sorted((r.sort_value(s), r.key) for r in rows) for s in SORTS}
            self.version += 1
            self._cache.clear()

    def apply(self, obj: Mapping[str, Any], deleted: bool) -> Row | None:
        """One watch event; the new row (None: removed or unchanged)."""
        with self.lock:
            return self._apply(obj, deleted)

    def apply_many(self, events: Iterable[tuple[Mapping[str, Any], bool]]) -> set[str]:
        """A batch of watch events under one lock; the keys whose rows changed."""
        changed = set()
        with self.lock:
            for obj, deleted in events:
                meta = obj.get("metadata") or {}
                key = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
                before = self.version
                self._apply(obj, deleted)
                if self.version != before:
                    changed.add(key)
        return changed

    def _apply(self, obj: Mapping[str, Any], deleted: bool) -> Row | None:
        new = None if deleted else row_of(obj)
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
        old = self.rows.pop(key, None)
        if old is not None and old == new:
            self.rows[key] = old
            return None
        if old is None and new is None:
            return None
        if old is not None:
            self._remove_from_sets(old)
        if new is not None:
            self.rows[key] = new
            self._add_to_sets(new)
        for s, items in self.ordered.items():
            # A status change moves the row in the state order only: the other orders keep their entry.
            was = None if old is None else (old.sort_value(s), key)
            now = None if new is None else (new.sort_value(s), key)
            if was == now:
                continue
            if was is not None:
                i = bisect.bisect_left(items, was)
                if i < len(items) and items[i] == was:
                    del items[i]
            if now is not None:
                bisect.insort(items, now)
        self.version += 1
        self._cache.clear()
        return new

    def _add_to_sets(self, r: Row) -> None:
        if r.given_up:
            self.gave_up.add(r.key)
        for f in FILTERS:
            self.by[f].setdefault(r.value(f), set()).add(r.key)

    def _remove_from_sets(self, r: Row) -> None:
        self.gave_up.discard(r.key)
        for f in FILTERS:
            bucket = self.by[f].get(r.value(f))
            if bucket is not None:
                bucket.discard(r.key)
                if not bucket:
                    del self.by[f][r.value(f)]

    def page(self, q: Query) -> Page:
        with self.lock:
            items = self.ordered[q.sort]
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
