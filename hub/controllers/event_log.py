"""Recent engine events per workload, kept across engine rebuilds for ``describe``."""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable

from hub.engine.engine import EngineEvent


class EventLog:
    """Recent engine events per workload, kept across engine rebuilds for ``describe``."""

    def __init__(self, per_object: int = 20, max_objects: int = 100_000) -> None:
        self.per_object = per_object
        self.max_objects = max_objects
        self._by_key: OrderedDict[str, deque[EngineEvent]] = OrderedDict()

    def add(self, events: Iterable[EngineEvent]) -> None:
        for ev in events:
            recent = self._by_key.get(ev.key)
            if recent is None:
                recent = self._by_key[ev.key] = deque(maxlen=self.per_object)
                if len(self._by_key) > self.max_objects:
                    self._by_key.popitem(last=False)
            else:
                self._by_key.move_to_end(ev.key)
            recent.append(ev)

    def of(self, key: str) -> list[EngineEvent]:
        return list(self._by_key.get(key, ()))
