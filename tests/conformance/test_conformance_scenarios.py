"""The shared Kueue conformance scenarios (vendored copy of shared/conformance) must all pass.

When the team's shared checkout sits beside the repository, its (possibly newer)
scenarios are run too.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from hub.sim.runner import run_file
from hub.sim.scenario import find_scenarios

HERE = Path(__file__).resolve().parent
VENDORED = HERE / "scenarios"
SHARED = HERE.parents[2] / "shared" / "conformance" / "scenarios"


def _scenario_files() -> list[Path]:
    files = find_scenarios([str(VENDORED)])
    if SHARED.is_dir():
        files += find_scenarios([str(SHARED)])
    return files


@pytest.mark.parametrize("path", _scenario_files(), ids=lambda p: f"{p.parent.parent.parent.name}/{p.parent.name}/{p.stem}")
def test_scenario_passes(path: Path) -> None:
    name, ok, why, _ = run_file(path)
    assert ok, f"{name}: {why}"


def test_simulate_cli_reports_and_exit_code() -> None:
    from hub.sim.runner import main

    out = io.StringIO()
    assert main([str(VENDORED / "core")], out=out) == 0
    lines = out.getvalue().splitlines()
    assert lines[-1].endswith("passed, 0 failed")
    assert all(line.startswith("PASS ") for line in lines[:-1])
