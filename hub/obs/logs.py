"""Process logging: ``--log-format text|json`` and the decision log lines.

Every scheduling decision about a workload is one INFO line on the
``mkhub.decisions`` logger (``mkagent.decisions`` in an agent) naming the
workload's namespace/name and uid; with ``--log-format json`` the same facts are
fields (``decision``, ``namespace``, ``workload`` (its name), ``uid`` and what the decision
names: ``cluster_queue``, ``cluster``, ``reason``...), one JSON object a line.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Mapping
from typing import Any

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Attributes every LogRecord has; anything else was passed in ``extra`` and becomes a JSON field.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (RFC 3339, UTC), level, logger, msg, and the record's extras."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": _rfc3339(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value if isinstance(value, str | int | float | bool) or value is None else str(value)
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return json.dumps(out, separators=(",", ":"))


def _rfc3339(t: float) -> str:
    whole = time.gmtime(t)
    return time.strftime("%Y-%m-%dT%H:%M:%S", whole) + f".{int((t % 1) * 1000):03d}Z"


def configure_logging(level: str = "info", fmt: str = "text") -> None:
    """Root logging for a process (replaces handlers set before)."""
    if fmt not in LOG_FORMATS:
        raise ValueError(f"--log-format: {fmt!r} is not one of text, json")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())


class DecisionLog:
    """Writes the one-line-per-decision log of one process (hub or agent)."""

    def __init__(self, logger_name: str = "mkhub.decisions") -> None:
        self.log = logging.getLogger(logger_name)

    def enabled(self) -> bool:
        return self.log.isEnabledFor(logging.INFO)

    def decision(self, decision: str, key: str, uid: str, text: str, fields: Mapping[str, str] | None = None) -> None:
        """``decision`` (queued, reserved, admitted, dispatched, won, started, preempted, evicted,
        finished...) about workload ``key``; ``text`` completes the sentence."""
        namespace, _, name = key.partition("/")
        extra = {"decision": decision, "namespace": namespace, "workload": name, "uid": uid}
        if fields:
            extra.update(fields)
        self.log.info("workload %s (uid %s) %s", key, uid or "-", text, extra=extra)
