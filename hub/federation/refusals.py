"""Logging refused callers: once per identity and reason, then at most once a minute.

A misconfigured agent retries every few seconds and a hostile client as fast as it
likes; each refusal is worth one line naming who was refused and why, not thousands.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable

MAX_TRACKED = 1024


class RefusalLog:
    def __init__(
        self, logger: logging.Logger, *, interval: float = 60.0, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self.logger = logger
        self.interval = interval
        self.monotonic = monotonic
        # (identity, what, reason) -> [when last logged, refusals not logged since]
        self._seen: OrderedDict[tuple[str, str, str], list[float]] = OrderedDict()

    def refused(self, identity: str, peer: str, what: str, reason: str) -> bool:
        """Record one refusal; returns whether it was logged."""
        key = (identity, what, reason)
        now = self.monotonic()
        entry = self._seen.get(key)
        if entry is not None and now - entry[0] < self.interval:
            entry[1] += 1
            return False
        more = f" ({int(entry[1])} more refused since)" if entry is not None and entry[1] else ""
        self.logger.warning(
            "refused %s from %s (client certificate %s): %s%s", what, peer, repr(identity) if identity else "none", reason, more
        )
        self._seen[key] = [now, 0]
        self._seen.move_to_end(key)
        while len(self._seen) > MAX_TRACKED:
            self._seen.popitem(last=False)
        return True
