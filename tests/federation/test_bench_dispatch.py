"""The dispatch benchmark runs end to end (tiny settings; figures are not asserted)."""

from __future__ import annotations

import json

import pytest

from hub.bench import dispatch_bench as bench_dispatch


@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape", [["--rate", "500"], ["--in-flight", "8"]])
def test_bench_dispatch_json(shape: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--workloads", "40", "--agents", "2", "--queues", "2", *shape, "--json"]
    assert bench_dispatch.main(argv) == 0
    result = json.loads(capsys.readouterr().out.strip())
    assert result["started"] == 40  # every workload won exactly one cluster and got its Start
    assert sum(result["agent_starts"]) == 40
    assert result["agent_dispatches"] == [40, 40]  # AllAtOnce: a copy on every agent
    for key in ("workloads_per_s", "p50_ms", "p99_ms"):
        assert result[key] > 0
    # the figures include no store writes: the line says so, not only the docs
    assert result["store"] == "none" and "without a store" in result["title"]


def test_bench_dispatch_prints_its_storeless_title_first(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--workloads", "8", "--agents", "1", "--queues", "1", "--rate", "0"]
    assert bench_dispatch.main(argv) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("MultiKueue dispatch, hub in-process without a store")
