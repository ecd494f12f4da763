"""``mkhub bench kube --jobsets N --json``: one JSON line whose figures add up (every JobSet's
Workload admitted, its pod sets counted, the machine's speed quoted); never a figure's size."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[1]


def test_the_jobset_benchmark_prints_one_json_line() -> None:
    done = subprocess.run([sys.executable, "-m", "hub.cli", "bench", "kube", "--jobsets", "6", "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=280, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = done.stdout.strip().splitlines()
    figures = json.loads(line)
    # Two of each of the three shapes: 2 + 1 + 3 pod sets, twice.
    assert figures["jobsets"] == 6 and figures["jobset_pod_sets"] == 12
    assert figures["jobset_admissions_per_s"] > 0 and figures["jobset_resumed_per_s_from_start"] > 0
    assert figures["hub_cpu_ms_per_pod_set"] > 0 and figures["machine_ms"] > 0
