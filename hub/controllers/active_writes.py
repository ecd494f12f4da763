"""``spec.active: false`` written back to the store when the engine deactivates a workload.

Kueue's workload controller deactivates by updating the Workload's spec (an admission check
Rejected, a requeuing limit or maximum execution time exceeded): the flag is the user's to
flip back (``kubectl patch``, ``mkhub resume workload``), and a restarted controller must find
it. The hub's rounds otherwise write workload status only, so the flag goes here.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping

from hub.api.workload import Workload
from hub.store.interface import Conflict, NotFound, Store

log = logging.getLogger(__name__)


class ActiveWrites:
    """What the store holds of each workload's ``spec.active``, and the deactivations to write."""

    def __init__(self) -> None:
        self._stored_inactive: set[str] = set()  # workload keys stored with spec.active false
        self._due: set[str] = set()  # deactivated by the engine, not yet written

    def stored(self, key: str, active: bool) -> None:
        """The store's version of the workload (listed or watched)."""
        if active:
            self._stored_inactive.discard(key)
        else:
            self._stored_inactive.add(key)
            self._due.discard(key)

    def forget(self, key: str) -> None:
        self._stored_inactive.discard(key)
        self._due.discard(key)

    def write(self, store: Store, changed: Iterable[str], workloads: Mapping[str, Workload]) -> list[int]:
        """After a round settled: write ``spec.active: false`` for each workload the engine
        deactivated (``changed``: the keys the round touched); returns the resourceVersions
        written. A conflict leaves it due for the next round."""
        for key in changed:
            wl = workloads.get(key)
            if wl is not None and not wl.active and key not in self._stored_inactive:
                self._due.add(key)
            elif wl is not None and wl.active:
                self._due.discard(key)
        written: list[int] = []
        for key in sorted(self._due):
            wl = workloads.get(key)
            stored = store.get("Workload", wl.meta.namespace, wl.meta.name) if wl is not None else None
            if stored is None or (stored.get("spec") or {}).get("active") is False:
                self._due.discard(key)
                continue
            obj = copy.deepcopy(dict(stored))
            obj.setdefault("spec", {})["active"] = False
            try:
                out = store.update(obj)
            except NotFound:
                self._due.discard(key)
                continue
            except Conflict:
                log.info("workload %s changed while being deactivated; writing spec.active again next round", key)
                continue
            self._due.discard(key)
            self._stored_inactive.add(key)
            written.append(int(out["metadata"]["resourceVersion"]))
        return written
