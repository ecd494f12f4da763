"""WAL checkpoints on a thread of their own, so that a commit does not pay for them.

By default SQLite checkpoints inside the COMMIT that grows the write-ahead log past
1,000 pages: it copies the log into the database file and syncs both, on the
committing thread. With the hub's rounds of thousands of writes that is most of a
commit's time (measured: 70 µs per written object at 100,000 Workloads, against about
15 µs without it). Here the writer's automatic checkpoint is raised to a backstop far
away, and this thread runs a PASSIVE checkpoint (which never blocks the writer or the
readers) after commits, at most once per ``interval``. SQLite releases the GIL while it
copies and syncs, so the work runs beside the hub's Python on another core.

Durability is unchanged: a commit is in the log before COMMIT returns, the log is
replayed after a crash, and whichever connection checkpoints, SQLite syncs the log
before it copies it.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time

log = logging.getLogger(__name__)

# The writer's own automatic checkpoint, kept as a backstop should this thread fall behind
# (pages of 4 KiB: a log of about 400 MiB).
BACKSTOP_PAGES = 100_000
# After a checkpoint that reaches the end of the log, the next writer starts the log over;
# the file is cut back to this size then rather than keeping its largest size for ever.
LOG_SIZE_LIMIT = 64 * 2**20


class Checkpointer:
    """Checkpoints the WAL of one database file after commits (``poke``), at most once per ``interval``."""

    def __init__(self, path: str, interval: float = 0.2) -> None:
        self.interval = interval
        self.checkpoints = 0
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
        self._wake = threading.Event()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="mkhub-sqlite-checkpoint", daemon=True)
        self._thread.start()

    @staticmethod
    def configure_writer(conn: sqlite3.Connection) -> None:
        conn.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")
        conn.execute(f"PRAGMA journal_size_limit = {LOG_SIZE_LIMIT}")

    def poke(self) -> None:
        """A commit landed: checkpoint soon."""
        self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            if self._stopped:
                return
            self._wake.clear()
            began = time.monotonic()
            try:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                self.checkpoints += 1
            except sqlite3.Error as exc:  # busy or closing: the next commit pokes again
                log.debug("WAL checkpoint skipped: %s", exc)
            rest = self.interval - (time.monotonic() - began)
            if rest > 0 and not self._stopped:
                time.sleep(rest)

    def close(self) -> None:
        self._stopped = True
        self._wake.set()
        self._thread.join(timeout=10.0)
        self._conn.close()
