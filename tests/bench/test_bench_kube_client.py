"""``mkhub bench kube --client-requests``: both batches land every request, and it prints its figures."""

from __future__ import annotations

import json

import pytest

from hub.bench import kube_main


def test_the_client_bench_sends_both_batches_and_prints_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert kube_main.main(["--client-requests", "40", "--qps", "400", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["qps"] == 400
    for key in ("unpaced_cpu_us_per_request", "paced_cpu_us_per_request", "unpaced_requests_per_s",
                "paced_requests_per_s"):
        assert figures[key] > 0
    assert "machine_ms" in figures  # NaN when the run ends before the probe's first sample
