"""The hub's Kubernetes client rate limit: Kueue's ``clientConnection`` (qps, burst) as Kueue v0.20
reads it, under ``mkhub serve --kube-qps/--kube-burst``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hub import cli
from hub.api.config import ClientConnection, parse_configuration
from hub.api.errors import ValidationError
from hub.service.kubemode import client_rate_limit


def refusals(data: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ValidationError) as exc:
        parse_configuration(data)
    return {e.path: str(e) for e in exc.value.errors}


def test_each_field_is_defaulted_alone_as_kueue_does() -> None:
    assert parse_configuration({}).client_connection is None
    assert parse_configuration({"clientConnection": {}}).client_connection == ClientConnection(300.0, 500)
    assert parse_configuration({"clientConnection": {"qps": 50}}).client_connection == ClientConnection(50.0, 500)
    assert parse_configuration({"clientConnection": {"burst": 80}}).client_connection == ClientConnection(300.0, 80)
    assert parse_configuration({"clientConnection": {"qps": 2.5, "burst": 5}}).client_connection == ClientConnection(2.5, 5)


def test_a_negative_qps_turns_the_limit_off() -> None:
    assert parse_configuration({"clientConnection": {"qps": -1}}).client_connection == ClientConnection(None, 500)
    assert client_rate_limit(None, None, ClientConnection(None, 500)) == (0.0, 500)  # mkhub's 0: no limit


def test_values_that_would_stop_the_client_or_are_not_numbers_are_refused_with_their_field() -> None:
    assert "must not be 0" in refusals({"clientConnection": {"qps": 0}})["clientConnection.qps"]
    assert "must be a number" in refusals({"clientConnection": {"qps": "fast"}})["clientConnection.qps"]
    assert "at least 1" in refusals({"clientConnection": {"qps": 10, "burst": 0}})["clientConnection.burst"]
    assert "32-bit" in refusals({"clientConnection": {"burst": 2**40}})["clientConnection.burst"]


def test_the_command_line_wins_then_the_file_then_mkhubs_default() -> None:
    given = ClientConnection(50.0, 100)
    assert client_rate_limit(None, None, None) == (500.0, 1000)
    assert client_rate_limit(None, None, given) == (50.0, 100)
    assert client_rate_limit(20.0, None, given) == (20.0, 100)
    assert client_rate_limit(None, 7, given) == (50.0, 7)
    assert client_rate_limit(0.0, 1, None) == (0.0, 1)


def test_a_burst_that_lets_nothing_through_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n")
    assert cli.main(["serve", "--insecure", "--kubeconfig", str(kubeconfig), "--kube-burst", "0"]) == 2
    err = capsys.readouterr().err
    assert "--kube-burst 0: must be at least 1" in err and "Traceback" not in err
