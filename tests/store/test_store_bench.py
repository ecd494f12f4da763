from __future__ import annotations

import json
from pathlib import Path

import pytest

from hub.bench import store_bench as bench

KEYS = {"writes_per_s", "batched_writes_per_s", "watch_latency_p50_ms", "watch_latency_p99_ms"}


def test_run_bench_reports_figures(tmp_path: Path) -> None:
    result = bench.run_bench(objects=60, batch_size=25, data_dir=str(tmp_path))
    assert result.keys() >= KEYS
    assert all(v > 0 for v in result.values())
    assert list(tmp_path.iterdir()) == []  # the temporary database is removed


def test_main_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--objects", "30", "--batch-size", "7", "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    assert json.loads(out[0]).keys() >= KEYS


def test_main_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--objects", "20"]) == 0
    out = capsys.readouterr().out
    assert "batched status updates" in out and "watch latency p99" in out


def test_main_rejects_bad_sizes() -> None:
    with pytest.raises(SystemExit):
        bench.main(["--objects", "0"])
