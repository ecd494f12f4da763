"""The newcomer's walk-through: README.md's command blocks, run in order, as written, on a fresh
directory, so the README cannot drift from the commands.

Every ```sh block runs, in one bash (``set -euo pipefail``: any failing command fails the test),
except those marked just above with an HTML comment:

    <!-- walkthrough: skip (why) -->                                  not run (make, benchmarks, ...)
    <!-- walkthrough: background, ready when its log says "TEXT" -->  a server: started in the
                                                                       background, waited for until its
                                                                       log says TEXT, stopped at the end

The only change made to the commands: the hub's port 7443 becomes a free one, so that the test
never meets another hub. The directory holds links to the checkout's manifests/ and tests/, and
the checkout's virtualenv is first on PATH (what `. .venv/bin/activate` does).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from hub.demo.processes import free_port

pytestmark = pytest.mark.timeout(280)

ROOT = Path(__file__).resolve().parents[1]
_BLOCK = re.compile(r"(?:<!--\s*walkthrough:\s*(?P<marker>.*?)-->\s*\n)?```sh\n(?P<body>.*?)```", re.S)
_READY = re.compile(r'background, ready when its log says "([^"]+)"')


@dataclass(frozen=True)
class Block:
    commands: list[str]
    mode: str  # "run", "skip" or "background"
    ready: str = ""


def blocks(readme: str) -> list[Block]:
    out = []
    for m in _BLOCK.finditer(readme):
        marker = (m.group("marker") or "").strip()
        body = m.group("body").replace("\\\n", " ")
        commands = [line.strip() for line in body.splitlines() if line.strip() and not line.strip().startswith("#")]
        if marker.startswith("skip"):
            out.append(Block(commands, "skip"))
        elif marker.startswith("background"):
            ready = _READY.search(marker)
            assert ready, f"a background block must say what its log says when ready: {marker!r}"
            out.append(Block(commands, "background", ready.group(1)))
        else:
            assert not marker, f"unknown walkthrough marker {marker!r}"
            out.append(Block(commands, "run"))
    return out


def script(readme: str, port: int) -> str:
    lines = ["set -euo pipefail"]
    for i, block in enumerate(blocks(readme)):
        if block.mode == "skip":
            continue
        if block.mode == "background":
            assert len(block.commands) == 1, "one server per background block"
            command = block.commands[0].replace("7443", str(port))
            log = f"background-{i}.log"
            lines += [
                f"printf '%s\\n' {shlex.quote('$ ' + command + ' &')}",
                f"(exec {command}) > {log} 2>&1 &",
                "echo $! >> background.pids",
                f"for _ in $(seq 1 600); do grep -qF {shlex.quote(block.ready)} {log} && break; sleep 0.1; done",
                f"grep -qF {shlex.quote(block.ready)} {log} || {{ echo 'never ready:'; cat {log}; exit 1; }}",
            ]
            continue
        for command in block.commands:
            command = command.replace("7443", str(port))
            lines += [f"printf '%s\\n' {shlex.quote('$ ' + command)}", command]
    return "\n".join(lines) + "\n"


def test_the_markers_cover_what_cannot_run_here() -> None:
    parsed = blocks((ROOT / "README.md").read_text())
    background = [b.commands[0].split()[0:2] for b in parsed if b.mode == "background"]
    assert background == [["mkhub", "serve"], ["mkagent", "--hub"], ["mkagent", "--hub"]]
    ran = [c for b in parsed if b.mode == "run" for c in b.commands]
    assert not any(c.startswith(("make ", "mkhub demo", "mkhub bench", "mkhub serve", "mkagent")) for c in ran)


def _stop(pids_file: Path) -> None:
    if not pids_file.exists():
        return
    pids = [int(p) for p in pids_file.read_text().split()]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    for pid in pids:  # graceful first (the hub commits and closes its store), then SIGKILL
        for _ in range(300):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)


def test_the_readme_walkthrough_runs_as_written(tmp_path: Path) -> None:
    for name in ("manifests", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    text = script((ROOT / "README.md").read_text(), free_port())
    (tmp_path / "walkthrough.sh").write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MKHUB_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["EDITOR"] = "true"
    try:
        done = subprocess.run(
            ["bash", "walkthrough.sh"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240, check=False
        )
    finally:
        _stop(tmp_path / "background.pids")
    logs = "".join(f"\n--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(tmp_path.glob("background-*.log")))
    assert done.returncode == 0, f"{done.stdout[-6000:]}\n{done.stderr[-4000:]}{logs}"
    out = done.stdout
    assert "63 passed, 0 failed" in out or re.search(r"\d+ passed, 0 failed", out)
    assert re.search(r"job\.batch/sample-job-[a-z0-9]{5} created", out)
    assert "job.batch/train-a created" in out and "job.batch/train-b created" in out
    assert "workload.kueue.x-k8s.io/" in out and "Name:" in out  # describe workload "$WL" found the Workload
    for agent in ("worker-1", "worker-2"):
        assert any(f"cluster {agent}" in (tmp_path / f"background-{i}.log").read_text() for i in range(20)
                   if (tmp_path / f"background-{i}.log").exists()), logs
