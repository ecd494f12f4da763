"""mkhub bench ui and mkhub bench serve --dashboard on a small scale, in Debian's chromium."""

from __future__ import annotations

import json

import pytest

from hub.cli import main as cli_main
from hub.ui import browser

pytestmark = pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))


def test_bench_ui_measures_the_page_and_the_api(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["bench", "ui", "--workloads", "10"]) == 2
    assert "at least 100" in capsys.readouterr().err
    assert cli_main(["bench", "ui", "--workloads", "300", "--repeat", "1", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out.strip())
    assert figures["workloads"] == 300 and figures["tti_ms"] > 0 and figures["next_page_ms"] > 0
    assert figures["page_filtered_1pct_ms"] > 0 and figures["bad_request_ms"] > 0 and figures["machine_ms"] > 0


def test_bench_serve_with_the_dashboard_alternates_runs(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["bench", "serve", "--dashboard", "--rounds", "1", "--workloads", "60", "--cluster-queues", "6", "--cohorts", "2",
            "--batch", "30", "--json"]
    assert cli_main(args) == 0
    out = json.loads(capsys.readouterr().out.strip())
    assert len(out["runs"]["with"]) == len(out["runs"]["without"]) == 1
    assert out["summary"]["with_admissions_per_s"] > 0 and out["summary"]["with_over_without"] > 0
