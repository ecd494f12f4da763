"""The resourceVersions of the hub reconciler's own writes, whose watch events it skips.

Every status, Event and queue status the reconciler writes comes back on its own watch. The
reconciler adds what it wrote after each commit; the watch's feed thread asks :meth:`take` for
each change it reads and drops an echo there, before it is decoded, queued and looked at on the
reconciler's thread (about five echoes per admission in ``mkhub bench serve``). An echo read
before the reconciler added its resourceVersion is delivered as before and taken there. Only
the answers that were changes of the round's own batch count (:func:`committed`): a write that
changed nothing is answered with the version of the object's last change, maybe someone else's
that the watch has not delivered yet, and skipping it would lose that change.

Both threads use it, so every access holds a lock: the reconciler's prune rebuilds the set, and
a set must not change size while it is iterated.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from hub.store.journal import committed as committed  # which answers of a round's writes were changes it made


class OwnWrites:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rvs: set[int] = set()

    def add(self, rvs: Iterable[int], seen_through: int) -> None:
        """After a commit: ``rvs`` are ours. Any at or below ``seen_through`` (the newest change the
        reconciler has seen) has had its echo already, or will never get one (a new watch)."""
        with self._lock:
            self._rvs.update(rvs)
            if self._rvs and min(self._rvs) <= seen_through:
                self._rvs = {rv for rv in self._rvs if rv > seen_through}

    def take(self, rv: int) -> bool:
        """True, once, for the echo of one of our writes."""
        with self._lock:
            if rv in self._rvs:
                self._rvs.discard(rv)
                return True
            return False

    def __contains__(self, rv: int) -> bool:
        with self._lock:
            return rv in self._rvs

    def __len__(self) -> int:
        with self._lock:
            return len(self._rvs)
