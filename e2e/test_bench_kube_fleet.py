"""``mkhub bench kube --workers 2 --json``, with Kueue's dispatcher and with mkhub's capacity-aware one:
one JSON line whose figures add up (every Job ran in exactly one worker); never a figure's size."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("dispatcher", [[], ["--dispatcher", "mkhub.dev/capacity-aware"]], ids=["all-at-once", "capacity-aware"])
def test_the_fleet_benchmark_prints_one_json_line(dispatcher: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "hub.cli", "bench", "kube", "--workers", "2", "--jobs", "6", *dispatcher,
                           "--json"], cwd=ROOT, capture_output=True, text=True, timeout=280, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = done.stdout.strip().splitlines()
    figures = json.loads(line)
    assert figures["jobs"] == 6 and figures["workers"] == 2
    assert figures["ran_on_w1"] + figures["ran_on_w2"] == 6
    assert figures["jobs_per_s"] > 0 and figures["p99_s"] >= figures["p50_s"] > 0
    assert {"cpu_s_hub", "cpu_s_agent_w1", "cpu_s_agent_w2", "cpu_s_manager", "cpu_s_w1", "cpu_s_w2"} <= set(figures)
    per_job = {k for k in figures if k.startswith("cpu_ms_per_job_") and k != "cpu_ms_per_job_total"}
    assert per_job == {"cpu_ms_per_job_" + k.removeprefix("cpu_s_") for k in figures if k.startswith("cpu_s_")}
    assert figures["cpu_ms_per_job_total"] == pytest.approx(sum(figures[k] for k in per_job), abs=0.01)
    # Once every process is idle again: never less than at the last Job's start (the work left behind).
    assert {k.removeprefix("settled_") for k in figures if k.startswith("settled_cpu_ms_per_job_")} == {*per_job, "cpu_ms_per_job_total"}
    assert all(figures["settled_" + k] >= figures[k] - 0.001 for k in [*per_job, "cpu_ms_per_job_total"])
    assert figures["settle_s"] >= 0
    assert figures["machine_ms"] > 0
