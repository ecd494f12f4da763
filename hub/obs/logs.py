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
from typing import Any, TextIO

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Attributes every LogRecord has; anything else was passed in ``extra`` and becomes a JSON field.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (RFC 3339, UTC), level, logger, msg, and the record's extras."""

    def format(self, record: logging.LogRecord) -> str:
        error = self.formatException(record.exc_info) if record.exc_info else None
        return _json_line(record.created, record.levelname.lower(), record.name, record.getMessage(), vars(record), error)


def _json_line(t: float, level: str, logger: str, msg: str, fields: Mapping[str, Any], error: str | None = None) -> str:
    """:class:`JsonFormatter`'s line; ``fields``: a record's attributes (or its ``extra``), the
    standard ones left out."""
    out: dict[str, Any] = {"time": _rfc3339(t), "level": level, "logger": logger, "msg": msg}
    for key, value in fields.items():
        if key not in _STANDARD and not key.startswith("_"):
            out[key] = value if isinstance(value, str | int | float | bool) or value is None else str(value)
    if error:
        out["error"] = error
    return json.dumps(out, separators=(",", ":"))


def _rfc3339(t: float) -> str:
    whole = time.gmtime(t)
    return time.strftime("%Y-%m-%dT%H:%M:%S", whole) + f".{int((t % 1) * 1000):03d}Z"


class TextFormatter(logging.Formatter):
    """TEXT_FORMAT, the local time converted once a second: ``time.localtime`` re-reads the
    zone file (a ``stat`` when TZ is unset) on every call, a tenth of a decision line's cost."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)
        self._second: int | None = None
        self._local = time.localtime(0)
        self._text = ""

    def converter(self, t: float | None = None) -> time.struct_time:
        second = int(t if t is not None else time.time())
        if second != self._second:  # the handler's lock is held: one thread at a time
            self._local, self._second = time.localtime(second), second
            self._text = time.strftime(self.default_time_format, self._local)
        return self._local

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 - logging's name
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        return self.stamp(record.created, record.msecs)

    def stamp(self, t: float, msecs: float) -> str:
        """``asctime`` as :class:`logging.Formatter` writes it, its text made once a second."""
        self.converter(t)
        return f"{self._text},{int(msecs):03d}"  # logging.Formatter.default_msec_format


def configure_logging(level: str = "info", fmt: str = "text") -> None:
    """Root logging for a process (replaces handlers set before)."""
    if fmt not in LOG_FORMATS:
        raise ValueError(f"--log-format: {fmt!r} is not one of text, json")
    # Neither format shows the caller, the thread or the process: not collecting them (a frame
    # walk and path splitting, getpid) halves what a record costs; a process logs a decision line
    # per workload and step (issue 26). The logging HOWTO's "Optimization" switches.
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    global _HANDLER
    handler: logging.StreamHandler[TextIO] = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    _HANDLER = handler


# The handler configure_logging installed: a decision line that only it would take is written
# straight to it (see DecisionLog.decision).
_HANDLER: logging.StreamHandler[TextIO] | None = None


def _sole_handler(logger: logging.Logger) -> logging.StreamHandler[TextIO] | None:
    """configure_logging's handler when a record of ``logger`` would reach it alone, unfiltered
    (no handler or filter of anyone else's on the way: a test's capture, a process's own set-up)."""
    handler = _HANDLER
    if handler is None or logger.disabled or handler.filters or handler.level > logging.INFO:
        return None
    found = False
    node: logging.Logger | None = logger
    while node is not None:
        if node.filters:
            return None
        if node.handlers:
            if node.parent is not None or node.handlers != [handler]:
                return None
            found = True
        if not node.propagate:
            break
        node = node.parent
    return handler if found else None


class DecisionLog:
    """Writes the one-line-per-decision log of one process (hub or agent)."""

    def __init__(self, logger_name: str = "mkhub.decisions") -> None:
        self.log = logging.getLogger(logger_name)

    def enabled(self) -> bool:
        return self.log.isEnabledFor(logging.INFO)

    def decision(self, decision: str, key: str, uid: str, text: str, fields: Mapping[str, str] | None = None) -> None:
        """``decision`` (queued, reserved, admitted, dispatched, won, started, preempted, evicted,
        finished...) about workload ``key``; ``text`` completes the sentence."""
        log = self.log
        if not log.isEnabledFor(logging.INFO):
            return
        namespace, _, name = key.partition("/")
        extra = {"decision": decision, "namespace": namespace, "workload": name, "uid": uid}
        if fields:
            extra.update(fields)
        message = f"workload {key} (uid {uid or '-'}) {text}"
        handler = _sole_handler(log)
        if handler is not None and _write(handler, log.name, message, extra):
            return
        log.info("%s", message, extra=extra)


def _write(handler: logging.StreamHandler[TextIO], name: str, message: str, extra: Mapping[str, str]) -> bool:
    """The line ``handler`` would write for an INFO record of logger ``name`` with ``extra``, written
    without the record (a LogRecord, the logger's and handler's walk, then the formatter: three
    quarters of a decision line's CPU, and a process writes several per workload). False when it
    could not be written: the caller logs it the ordinary way, which reports the error."""
    formatter = handler.formatter
    now = time.time()
    if isinstance(formatter, TextFormatter):
        line = f"{formatter.stamp(now, int((now - int(now)) * 1000))} INFO {name}: {message}"
    elif isinstance(formatter, JsonFormatter):
        line = _json_line(now, "info", name, message, extra)
    else:
        return False
    handler.acquire()
    try:
        handler.stream.write(line + handler.terminator)
        handler.stream.flush()
    except Exception:
        return False
    finally:
        handler.release()
    return True
