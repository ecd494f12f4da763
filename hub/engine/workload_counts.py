"""Workload counts per LocalQueue and for the whole hub, kept from the workloads that changed.

The queue statuses (every LocalQueue's pending/reserving/admitted) and ``mkhub top``'s totals
are read after every round that changes a queue; counting them from every workload each time
cost a pass over 100,000 workloads per read. Here each workload is classified once per change:
the engine marks a key whenever it applies, deletes or touches that workload, and the next read
re-classifies the marked keys only, taking back what each one counted before.
"""

from __future__ import annotations

from collections.abc import Mapping

from hub.api.workload import Workload

from .workload_info import WorkloadInfo, local_queue_key

# A workload's place in a LocalQueue's counts (its status's pendingWorkloads, reservingWorkloads,
# admittedWorkloads); admitted ones are reserving too.
LQ_NONE, LQ_PENDING, LQ_RESERVING, LQ_ADMITTED = range(4)
# Its place in the hub's totals (``mkhub top``).
TOTAL_PENDING, TOTAL_RESERVED, TOTAL_ADMITTED, TOTAL_FINISHED = range(4)

Counts = tuple[int, int, int]
_Row = tuple[str, int, int]  # (LocalQueue key, LQ_* class, TOTAL_* class)


def classify(wl: Workload | None, tracked: bool) -> _Row | None:
    """``tracked``: the engine still keeps the workload's queue record (unfinished and known).

    A LocalQueue counts its unfinished tracked workloads: holding quota (reserving, maybe
    admitted) or, if active, pending; a deactivated one is in no queue, as in Kueue's queue
    manager. The totals count every workload the hub has, finished ones included.
    """
    if wl is None:
        return None
    if wl.is_finished:
        return local_queue_key(wl), LQ_NONE, TOTAL_FINISHED
    reserved, admitted = wl.is_quota_reserved, wl.is_admitted
    total_class = TOTAL_ADMITTED if admitted else TOTAL_RESERVED if reserved else TOTAL_PENDING
    if not tracked:
        lq_class = LQ_NONE
    elif reserved:
        lq_class = LQ_ADMITTED if admitted else LQ_RESERVING
    else:
        lq_class = LQ_PENDING if wl.active else LQ_NONE
    return local_queue_key(wl), lq_class, total_class


class WorkloadCounts:
    """Counts over the engine's workloads; :meth:`mark` every key whose workload may have changed."""

    def __init__(self, workloads: Mapping[str, Workload], infos: Mapping[str, WorkloadInfo]) -> None:
        self._workloads = workloads
        self._infos = infos
        self._marked: set[str] = set()
        self._rows: dict[str, _Row] = {}
        self._by_queue: dict[str, list[int]] = {}
        self._totals = [0, 0, 0, 0]

    def mark(self, key: str) -> None:
        self._marked.add(key)

    def _settle(self) -> None:
        if not self._marked:
            return
        marked, self._marked = self._marked, set()
        rows, by_queue, totals = self._rows, self._by_queue, self._totals
        for key in marked:
            row = classify(self._workloads.get(key), key in self._infos)
            old = rows.get(key)
            if old == row:
                continue
            if old is not None:
                self._add(by_queue, totals, old, -1)
                del rows[key]
            if row is not None:
                self._add(by_queue, totals, row, 1)
                rows[key] = row

    @staticmethod
    def _add(by_queue: dict[str, list[int]], totals: list[int], row: _Row, sign: int) -> None:
        lq_key, lq_class, total_class = row
        totals[total_class] += sign
        if lq_class == LQ_NONE:
            return
        counts = by_queue.get(lq_key)
        if counts is None:
            counts = by_queue[lq_key] = [0, 0, 0]
        if lq_class == LQ_PENDING:
            counts[0] += sign
        else:
            counts[1] += sign
            if lq_class == LQ_ADMITTED:
                counts[2] += sign
        if counts == [0, 0, 0]:
            del by_queue[lq_key]

    def local_queue(self, lq_key: str) -> Counts:
        """(pending, reserving, admitted) of one LocalQueue (``namespace/name``)."""
        self._settle()
        counts = self._by_queue.get(lq_key)
        return (counts[0], counts[1], counts[2]) if counts is not None else (0, 0, 0)

    def local_queues(self) -> dict[str, Counts]:
        """Every LocalQueue key that counts a workload -> (pending, reserving, admitted)."""
        self._settle()
        return {key: (c[0], c[1], c[2]) for key, c in self._by_queue.items()}

    def totals(self) -> tuple[int, int, int, int]:
        """The hub's (pending, reserved but not admitted, admitted, finished) workloads."""
        self._settle()
        t = self._totals
        return t[0], t[1], t[2], t[3]
