"""``mkhub bench tas`` at a tiny scale: both runs admit the same backlog, and bad sizes are refused."""

from __future__ import annotations

import json

import pytest

from hub.bench.tas_bench import main, run


def test_a_small_cluster_places_every_workload_with_and_without_tas() -> None:
    with_tas = run(1, 2, 32, 60, True)
    quota_only = run(1, 2, 32, 60, False)
    # 8-GPU nodes, racks of 32: the largest rack-required gang (32 pods of 8 GPUs) fills a rack.
    assert with_tas["admitted"] == quota_only["admitted"] == 60
    assert with_tas["placement_p99_ms"] >= with_tas["placement_p50_ms"] > 0


def test_json_output_and_refused_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--blocks", "1", "--racks", "2", "--hosts", "4", "--workloads", "5", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["tas_workloads"] == figures["quota_only_workloads"] == 5
    assert main(["--hosts", "0"]) == 2
    assert "must be at least 1" in capsys.readouterr().err
