"""What an agent keeps across restarts (``mkagent --data-dir``): its copies, their local
status and how far their runs got.

One JSON file, rewritten atomically (temp file, fsync, rename) at most every
``interval`` seconds while something changed, and on shutdown. A restarted
agent restores its copies with their reservations (the engine accepts restored
admissions) and resumes each run from the time it started, so a simulated run
neither starts over nor runs twice. The snapshot can be up to ``interval`` old
after a crash; the hub reconciles the difference from the agent's Hello (a
copy dispatched since is re-dispatched, a copy withdrawn since is withdrawn
again, a winner whose Start came after the snapshot is started again — its
earlier run died with the process).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from hub.api.errors import ValidationError
from hub.api.registry import parse_object
from hub.api.workload import Workload, workload_status_to_dict
from hub.controllers.simrunner import SimRunner

from .agent import Agent, Copy

log = logging.getLogger(__name__)

FILE_NAME = "agent-state.json"
VERSION = 1
_FLAGS = ("started", "interrupted", "sent_reserved", "sent_admitted", "sent_running", "sent_ready", "sent_final")


class AgentState:
    def __init__(self, data_dir: Path, cluster_name: str, *, interval: float = 1.0) -> None:
        self.path = data_dir / FILE_NAME
        self.cluster_name = cluster_name
        self.interval = interval
        self.dirty = False
        self._saved_at: float | None = None

    def mark(self) -> None:
        self.dirty = True

    def due(self, now: float) -> float | None:
        """When the next save is due (None: nothing to save)."""
        if not self.dirty:
            return None
        return now if self._saved_at is None else self._saved_at + self.interval

    def save_if_due(self, agent: Agent, now: float) -> None:
        due = self.due(now)
        if due is not None and now >= due:
            self.save(agent, now)

    def save(self, agent: Agent, now: float) -> None:
        copies = []
        for c in agent.copies.values():
            wl = agent.engine.workloads.get(c.key)
            if wl is None:
                continue
            entry: dict[str, Any] = {
                "key": c.key,
                "uid": c.uid,
                "did": c.did,
                "manifest": c.manifest,
                "job": c.job,
                "startedAt": c.started_at,
                "status": workload_status_to_dict(wl.status),
            }
            entry.update({flag: getattr(c, flag) for flag in _FLAGS})
            copies.append(entry)
        data = {"version": VERSION, "cluster": self.cluster_name, "savedAt": now, "copies": copies}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(data, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self.dirty = False
        self._saved_at = now

    def restore(self, agent: Agent, pods: SimRunner | None, now: float) -> int:
        """Recreate the saved copies in the agent's engine; returns how many."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return 0
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable agent state %s: %s", self.path, exc)
            return 0
        if data.get("version") != VERSION or data.get("cluster") != self.cluster_name:
            log.warning("ignoring agent state %s: written for another cluster or version", self.path)
            return 0
        restored = 0
        for entry in data.get("copies") or []:
            manifest = dict(entry["manifest"], status=entry.get("status") or {})
            try:
                wl = parse_object(manifest, partial_admission=agent.partial_admission)
            except ValidationError as exc:
                log.warning("dropping saved copy %s: %s", entry.get("key"), exc)
                continue
            if not isinstance(wl, Workload):
                continue
            c = Copy(entry["key"], entry.get("uid", ""), entry["did"], entry["manifest"], entry.get("job"))
            for flag in _FLAGS:
                setattr(c, flag, bool(entry.get(flag)))
            c.started_at = entry.get("startedAt")
            if c.started and pods is not None and c.started_at is not None:
                pods.resume_at(c.key, float(c.started_at))
            agent.restore(c, wl, now)
            restored += 1
        return restored
