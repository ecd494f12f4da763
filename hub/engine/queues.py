"""Per-ClusterQueue pending queues: an ordered heap plus an inadmissible set.

Mirrors Kueue's pkg/cache/queue: one queue per ClusterQueue shared by all of
its LocalQueues; a failed head goes back to the heap or is parked as
inadmissible depending on the queueing strategy and the failure; parked
workloads return only on events that could change their fate.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator

from hub.api.queues import BEST_EFFORT_FIFO

from .workload_info import WorkloadInfo

SortKey = tuple[int, float, int]


class _HeapEntry:
    __slots__ = ("key", "info", "valid")

    def __init__(self, key: SortKey, info: WorkloadInfo) -> None:
        self.key = key
        self.info = info
        self.valid = True

    def __lt__(self, other: _HeapEntry) -> bool:
        return self.key < other.key


class RequeueReason:
    GENERIC = ""
    NO_FIT = "NoFit"
    NAMESPACE_MISMATCH = "NamespaceMismatch"
    FAILED_AFTER_NOMINATION = "FailedAfterNomination"
    PENDING_PREEMPTION = "PendingPreemption"
    PREEMPTION_NO_CANDIDATES = "PreemptionNoCandidates"
    PREEMPTION_FAILED = "PreemptionFailed"
    PREEMPTION_GATED = "PreemptionGated"


class ClusterQueueQueue:
    """Pending workloads of one ClusterQueue."""

    __slots__ = ("name", "strict_fifo", "_heap", "_active", "inadmissible", "sticky", "_stale", "_by_shape", "bulk_parked")

    def __init__(self, name: str, strict_fifo: bool) -> None:
        self.name = name
        self.strict_fifo = strict_fifo
        self._heap: list[_HeapEntry] = []
        self._active: dict[str, _HeapEntry] = {}
        self.inadmissible: dict[str, WorkloadInfo] = {}
        # The head that just issued preemptions stays first until it leaves the queue (BestEffortFIFO).
        self.sticky: str | None = None
        self._stale = 0
        # Equivalence hashing (BestEffortFIFO): active keys by shape, and shapes that just
        # failed with why; new arrivals of such a shape are parked until the next requeue event.
        self._by_shape: dict[int, set[str]] = {}
        # shape -> (the workload that was evaluated, its QuotaReserved=False reason and message)
        self.bulk_parked: dict[int, tuple[str, str, str]] = {}

    def __len__(self) -> int:
        return len(self._active) + len(self.inadmissible)

    @property
    def active_count(self) -> int:
        return len(self._active)

    def contains(self, key: str) -> bool:
        return key in self._active or key in self.inadmissible

    def push(self, info: WorkloadInfo, sort_key: SortKey) -> bool:
        """Add to the heap unless already active; pulls it out of inadmissible."""
        self.inadmissible.pop(info.key, None)
        if info.key in self._active:
            return False
        entry = _HeapEntry(sort_key, info)
        self._active[info.key] = entry
        self._by_shape.setdefault(info.shape, set()).add(info.key)
        heapq.heappush(self._heap, entry)
        return True

    def update(self, info: WorkloadInfo, sort_key: SortKey) -> None:
        """Re-key an active workload (priority or timestamp changed)."""
        entry = self._active.get(info.key)
        if entry is None or entry.key == sort_key:
            return
        self._invalidate(entry)
        self._unindex(entry.info)
        new = _HeapEntry(sort_key, info)
        self._active[info.key] = new
        self._by_shape.setdefault(info.shape, set()).add(info.key)
        heapq.heappush(self._heap, new)

    def remove(self, key: str) -> WorkloadInfo | None:
        if self.sticky == key:
            self.sticky = None
        info = self.inadmissible.pop(key, None)
        entry = self._active.pop(key, None)
        if entry is not None:
            self._invalidate(entry)
            self._unindex(entry.info)
            return entry.info
        return info

    def park(self, info: WorkloadInfo) -> None:
        """Put into the inadmissible set (removing from the heap)."""
        entry = self._active.pop(info.key, None)
        if entry is not None:
            self._invalidate(entry)
            self._unindex(entry.info)
        self.inadmissible[info.key] = info

    def park_equivalent(self, shape: int, why: tuple[str, str, str]) -> list[WorkloadInfo]:
        """Park every active workload of this shape (one just failed, ``why``: its key, reason and
        message); returns those moved."""
        if self.strict_fifo:
            return []
        self.bulk_parked[shape] = why
        keys = self._by_shape.pop(shape, None)
        if not keys:
            return []
        active, inadmissible = self._active, self.inadmissible
        moved = []
        for key in keys:
            entry = active.pop(key, None)
            if entry is None:
                continue
            entry.valid = False
            inadmissible[key] = entry.info
            moved.append(entry.info)
        self._stale += len(moved)
        self._compact()
        return moved

    def _unindex(self, info: WorkloadInfo) -> None:
        keys = self._by_shape.get(info.shape)
        if keys is not None:
            keys.discard(info.key)
            if not keys:
                del self._by_shape[info.shape]

    def pop(self) -> WorkloadInfo | None:
        """The head: the sticky preemptor if it is waiting, else the best-ordered workload."""
        if self.sticky is not None:
            entry = self._active.pop(self.sticky, None)
            if entry is not None:
                self._invalidate(entry)
                self._unindex(entry.info)
                return entry.info
        while self._heap:
            entry = heapq.heappop(self._heap)
            if not entry.valid:
                self._stale -= 1
                continue
            del self._active[entry.info.key]
            self._unindex(entry.info)
            return entry.info
        return None

    def peek_active(self) -> Iterator[WorkloadInfo]:
        for entry in self._active.values():
            yield entry.info

    def requeue_inadmissible(self, admit: Callable[[WorkloadInfo], SortKey | None]) -> int:
        """Move parked workloads back to the heap when ``admit`` returns their sort key."""
        self.bulk_parked.clear()
        active, by_shape, heap = self._active, self._by_shape, self._heap
        kept: dict[str, WorkloadInfo] = {}
        moved = 0
        for key, info in self.inadmissible.items():
            sort_key = admit(info)
            if sort_key is None:
                kept[key] = info
                continue
            entry = _HeapEntry(sort_key, info)
            active[key] = entry
            by_shape.setdefault(info.shape, set()).add(key)
            heap.append(entry)
            moved += 1
        self.inadmissible = kept
        if moved:
            heapq.heapify(heap)  # one O(n) pass instead of a push per workload
        return moved

    def _invalidate(self, entry: _HeapEntry) -> None:
        entry.valid = False
        self._stale += 1
        self._compact()

    def _compact(self) -> None:
        """Drop invalidated entries once they are more than half the heap."""
        if self._stale > 64 and self._stale > len(self._heap) // 2:
            self._heap = [e for e in self._heap if e.valid]
            heapq.heapify(self._heap)
            self._stale = 0


def immediate_requeue(strategy: str, reason: str) -> bool:
    """Kueue's RequeueIfNotPresent: whether a failed head goes straight back to the heap."""
    if strategy != BEST_EFFORT_FIFO:
        return reason != RequeueReason.NAMESPACE_MISMATCH
    return reason in (
        RequeueReason.FAILED_AFTER_NOMINATION,
        RequeueReason.PENDING_PREEMPTION,
        RequeueReason.PREEMPTION_FAILED,
    )
