"""``spec.active: false`` written back to the store when the engine deactivates a workload.

Kueue's workload controller deactivates by updating the Workload's spec (an admission check
Rejected, a requeuing limit or maximum execution time exceeded): the flag is the user's to
flip back (``kubectl patch``, ``mkhub resume workload``), and a restarted controller must find
it. The hub's rounds otherwise write workload status only, so the flag goes here. The engine
sets it back to true only for concurrent admission's variants (their controller re-activates
them), and that is written here too, as is the parent label that controller's workload
reconciler puts on a Workload it makes a parent (``kueue.x-k8s.io/concurrent-admission-parent``).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping

from hub.api.workload import CONCURRENT_PARENT_LABEL, Workload
from hub.store.interface import Conflict, NotFound, Store

log = logging.getLogger(__name__)


class ActiveWrites:
    """What the store holds of each workload's ``spec.active``, and the deactivations to write."""

    def __init__(self) -> None:
        self._stored_inactive: set[str] = set()  # workload keys stored with spec.active false
        self._due: set[str] = set()  # deactivated by the engine, not yet written
        self._stored_parents: set[str] = set()  # stored with the concurrent-admission parent label

    def stored(self, key: str, active: bool, labels: Mapping[str, str] | None = None) -> None:
        """The store's version of the workload (listed or watched)."""
        if labels is not None and labels.get(CONCURRENT_PARENT_LABEL) == "true":
            self._stored_parents.add(key)
        if active:
            self._stored_inactive.discard(key)
        else:
            self._stored_inactive.add(key)
            self._due.discard(key)

    def forget(self, key: str) -> None:
        self._stored_parents.discard(key)
        self._stored_inactive.discard(key)
        self._due.discard(key)

    def write(self, store: Store, changed: Iterable[str], workloads: Mapping[str, Workload]) -> list[int]:
        """After a round settled: write ``spec.active`` for each workload the engine deactivated
        (or re-activated) (``changed``: the keys the round touched); returns the resourceVersions
        written. A conflict leaves it due for the next round."""
        for key in changed:
            wl = workloads.get(key)
            if wl is not None and (wl.active != (key not in self._stored_inactive) or _unlabelled(wl, self._stored_parents)):
                self._due.add(key)
            elif wl is not None:
                self._due.discard(key)
        written: list[int] = []
        for key in sorted(self._due):
            wl = workloads.get(key)
            stored = store.get("Workload", wl.meta.namespace, wl.meta.name) if wl is not None else None
            labels = (stored or {}).get("metadata", {}).get("labels") or {}
            label_due = wl is not None and _unlabelled(wl, ()) and labels.get(CONCURRENT_PARENT_LABEL) != "true"
            if wl is None or stored is None or ((stored.get("spec") or {}).get("active", True) is wl.active and not label_due):
                self._due.discard(key)
                if wl is not None and stored is not None:
                    self.stored(key, wl.active, labels)
                continue
            obj = copy.deepcopy(dict(stored))
            obj.setdefault("spec", {})["active"] = wl.active
            if label_due:
                obj["metadata"]["labels"] = {**labels, CONCURRENT_PARENT_LABEL: "true"}
            try:
                out = store.update(obj)
            except NotFound:
                self._due.discard(key)
                continue
            except Conflict:
                log.info("workload %s changed while being deactivated; writing spec.active again next round", key)
                continue
            self._due.discard(key)
            self.stored(key, wl.active, obj["metadata"].get("labels"))
            written.append(int(out["metadata"]["resourceVersion"]))
        return written


def _unlabelled(wl: Workload, stored_parents: set[str] | tuple[()]) -> bool:
    """The engine made it a concurrent-admission parent; the store may not say so yet."""
    return wl.meta.labels.get(CONCURRENT_PARENT_LABEL) == "true" and wl.meta.key not in stored_parents
