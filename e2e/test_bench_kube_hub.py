"""``mkhub bench kube --json``: one JSON line whose figures add up (the API part's list sees every
Workload, paged and whole; the hub on the Kubernetes store and the embedded hub both admit the
backlog; the hub behind the latency proxy too; a second hub takes over); never a figure's size."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(400)

ROOT = Path(__file__).resolve().parents[1]


def test_the_kube_benchmark_measures_both_hubs_and_the_proxied_one() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hub.cli", "bench", "kube", "--workloads", "1200", "--pending", "40", "--samples", "4",
         "--rtt-ms", "5", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=380, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = done.stdout.strip().splitlines()
    figures = json.loads(line)
    assert figures["listed"] == 1200 and figures["list_paged_500_ms"] > 0
    assert figures["hub_admissions_per_s"] > 0 and figures["hub_cpu_ms_per_admission"] > 0
    assert figures["hub_server_cpu_ms_per_admission"] > 0 and figures["hub_create_to_reserved_samples"] == 4
    assert figures["hub_takeover_to_serving_s"] > 0 and figures["hub_start_to_serving_s"] > 0
    assert figures["rtt_admissions_per_s"] > 0 and figures["rtt_measured_ms"] >= 5
    # 40 admissions of the embedded hub can take less CPU than /proc's 10 ms tick: then no ratio.
    embedded, settled = figures["embedded_cpu_ms_per_admission"], figures["embedded_settled_cpu_ms_per_admission"]
    assert 0 <= embedded <= settled
    for ratio, kube, base in (("kube_over_embedded_cpu", figures["hub_cpu_ms_per_admission"], embedded),
                              ("kube_over_embedded_settled_cpu", figures["hub_settled_cpu_ms_per_admission"], settled)):
        if base > 0:
            assert figures[ratio] == pytest.approx(kube / base, rel=0.01, abs=0.01)
        else:
            assert math.isnan(figures[ratio])
    assert figures["hub_settled_cpu_ms_per_admission"] >= figures["hub_cpu_ms_per_admission"]
    assert figures["machine_ms"] > 0


def test_a_hub_argument_it_refuses_ends_the_benchmark_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hub.cli", "bench", "kube", "--skip-api", "--pending", "5", "--samples", "1",
         "--hub-arg=--no-such-flag", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == "error: the hub did not start: (mkhub: error: unrecognized arguments: --no-such-flag)"
