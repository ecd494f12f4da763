"""The transport benchmark runs end to end (tiny settings; figures are not asserted)."""

from __future__ import annotations

import json

import pytest

from hub.bench import transport_bench as bench_transport


@pytest.mark.timeout(60)
def test_bench_transport_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        bench_transport.main(["--agents", "2", "--batch", "10", "--seconds", "0.2", "--echo", "20", "--json"])
        == 0
    )
    line = capsys.readouterr().out.strip()
    result = json.loads(line)
    for key in (
        "down_items_per_s",
        "up_items_per_s",
        "unbatched_envelopes_per_s",
        "echo_rtt_p50_ms",
        "echo_rtt_p99_ms",
    ):
        assert result[key] > 0
