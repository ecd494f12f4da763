"""Child processes a test leaves running: found from /proc (whatever started them: Popen, a
harness, a replacement hub a test started itself), killed by PID, and reported as a failure.

Only live descendants of this pytest process count; a zombie (exited, not yet reaped by its
Popen) has stopped and is not a leak. What a process that was already running starts (a
module's dev-cluster, the browser of a module's Playwright session opening renderers) is that
process's own business, not the test's."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

GRACE = 30.0  # a child told to stop in teardown (or a check's own kubectl) gets this long to exit


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent PID, state) of a process, None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces and parentheses
    return int(fields[1]), fields[0]


def descendants(root: int | None = None, skip: frozenset[int] | set[int] = frozenset()) -> dict[int, str]:
    """Live descendants of ``root`` (this process by default), not counting ``skip`` and what
    they started: PID -> command line."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None and stat[1] != "Z":
            children.setdefault(stat[0], []).append(int(entry))
    found: dict[int, str] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid in skip:
            continue
        try:
            found[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        todo.extend(children.get(pid, []))
    return found


def leaked_since(before: set[int], grace: float = GRACE) -> dict[int, str]:
    """Descendants started since ``before`` (not by a process in it) still alive after ``grace``
    seconds: each is sent SIGKILL (by its PID) and returned, so one test's leak neither outlives
    the run nor fails the next test."""
    deadline = time.monotonic() + grace
    while (left := descendants(skip=before)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in left:
        with contextlib.suppress(OSError):  # it exited meanwhile
            os.kill(pid, signal.SIGKILL)
    return left
