"""Events written in the background, as client-go's event broadcaster writes them.

A Kueue controller never waits for its Events: ``recorder.Event`` hands the event
to the broadcaster, and a goroutine of its own writes it to the API server. The
hub's round does the same on an API server (a store whose writes are round trips,
:class:`hub.store.interface.ConcurrentWrites`): the round takes what it recorded
(:meth:`EventRecorder.take`, on its own thread, after the round's creates so the
new Workloads' uids are filled in) and goes on; one sender thread writes the
batches in order. On the embedded store Events stay in the round's transaction
(their resourceVersions are the round's own, skipped when their watch events
come back).

As with client-go, an Event is best effort: one whose write fails is logged and
dropped; past ``MAX_QUEUED`` Events waiting (client-go's broadcaster queues 1,000),
new ones are dropped rather than held while the API server is slow; and the
batches still queued when the process stops are written for at most ``close``'s
timeout.
"""

from __future__ import annotations

import logging
import queue
import threading
import time

from hub.store.interface import Store

from .events import EventRecorder, Pending

log = logging.getLogger(__name__)

_STOP = None
MAX_QUEUED = 1000


class EventSender:
    """One thread writing a recorder's Event batches to ``store``, in the order handed over."""

    def __init__(self, recorder: EventRecorder, store: Store) -> None:
        self.recorder = recorder
        self.store = store
        self.failed = 0  # batches whose write raised (logged, dropped)
        self.dropped = 0  # Events not queued: MAX_QUEUED were waiting
        self._queue: queue.SimpleQueue[list[Pending] | None] = queue.SimpleQueue()
        self._idle = threading.Condition()
        self._pending = 0  # batches handed over and not yet written
        self._queued = 0  # their Events
        self._thread = threading.Thread(target=self._run, name="mkhub-events", daemon=True)
        self._thread.start()

    def submit(self, batch: list[Pending]) -> None:
        if not batch:
            return
        with self._idle:
            if self._queued + len(batch) > MAX_QUEUED:
                if not self.dropped:
                    log.warning("%d Events waiting for the API server: new ones are dropped until they are written", self._queued)
                self.dropped += len(batch)
                return
            self._pending += 1
            self._queued += len(batch)
        self._queue.put(batch)

    def _run(self) -> None:
        while (batch := self._queue.get()) is not _STOP:
            try:
                self.recorder.send(self.store, batch)
            except Exception as exc:  # an Event must never stop the next ones (nor the hub)
                self.failed += 1
                log.warning("writing %d Event(s) failed: %s", len(batch), exc)
            finally:
                with self._idle:
                    self._pending -= 1
                    self._queued -= len(batch)
                    self._idle.notify_all()

    def drain(self, timeout: float) -> bool:
        """Wait until every batch handed over is written; False if ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self, timeout: float = 2.0) -> None:
        """Write what is queued (for at most ``timeout`` seconds), then stop the thread."""
        self.drain(timeout)
        self._queue.put(_STOP)
        self._thread.join(timeout=0.5)
