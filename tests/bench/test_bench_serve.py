"""mkhub bench serve on a small scale, through a real mkhub serve: every workload ends up holding quota."""

from __future__ import annotations

import json

import pytest

from hub.bench.serve_bench import run
from hub.cli import main as cli_main


def test_small_serve_bench_admits_everything() -> None:
    figures = run(workloads=300, queues=10, cohorts=2, batch=70)
    assert figures["workloads"] == 300
    assert figures["admissions_per_s"] > 0 and figures["apply_per_s"] > 0
    assert figures["hub_cpu_s"] > 0 and figures["hub_rss_mib"] > 0


def test_serve_bench_json_and_bad_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["bench", "serve", "--workloads", "0"]) == 2
    assert "at least 1" in capsys.readouterr().err
    assert cli_main(["bench", "serve", "--workloads", "50", "--cluster-queues", "5", "--cohorts", "1", "--batch", "20", "--json"]) == 0
    line = json.loads(capsys.readouterr().out.strip())
    assert line["workloads"] == 50 and line["admissions_per_s"] > 0


def test_serve_bench_under_a_flood_of_bad_requests_counts_them_all_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["bench", "serve", "--bad-requests", "--rounds", "1", "--workloads", "200", "--cluster-queues", "5",
                     "--cohorts", "1", "--batch", "50", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip())
    flooded = out["runs"]["with"][0]
    assert flooded["bad_requests"] > 0 and flooded["refused_share"] == 1.0
    assert "bad_requests" not in out["runs"]["without"][0] and out["summary"]["with_admissions_per_s"] > 0
