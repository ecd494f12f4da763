"""The dashboard's tokens: printed once, only their hashes kept, a new one accepted without a restart."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from hub.cli import main as cli_main
from hub.ui.auth import REFUSAL_BURST, Refusals, TokenFile, digest, new_token


def test_a_new_token_is_accepted_at_once_and_only_its_hash_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "ui-tokens"
    tokens = TokenFile(path)
    assert not tokens.accepts("anything")  # no file: nobody
    first = new_token(path)
    assert tokens.accepts(first) and not tokens.accepts(first + "x")
    second = new_token(path)
    assert tokens.accepts(second) and tokens.accepts(first)
    text = path.read_text()
    assert first not in text and second not in text and digest(first) in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text(digest(second) + "\n")  # the first revoked by hand
    assert not tokens.accepts(first) and tokens.accepts(second)


def test_no_tokens_file_configured_accepts_nothing() -> None:
    assert not TokenFile(None).accepts("")


def test_mkhub_ui_token_prints_a_token_whose_hash_the_data_dir_keeps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["ui", "token", "--data-dir", str(tmp_path)]) == 0
    token = capsys.readouterr().out.strip()
    assert token.startswith("mkui_") and TokenFile(tmp_path / "ui-tokens").accepts(token)
    (tmp_path / "blocked").write_text("")
    assert cli_main(["ui", "token", "--tokens-file", str(tmp_path / "blocked" / "x")]) == 1
    assert "error: ui token: cannot write" in capsys.readouterr().err


def test_a_peers_refusals_past_a_burst_are_answered_late_and_it_recovers() -> None:
    refusals = Refusals()
    assert all(refusals.delay("10.0.0.1", 100.0) == 0 for _ in range(int(REFUSAL_BURST)))
    waits = [refusals.delay("10.0.0.1", 100.0) for _ in range(30)]  # a flood: all at once
    assert 0 < waits[0] < waits[-1] <= 1.0 and refusals.delayed == 30
    assert refusals.delay("10.0.0.2", 100.0) == 0  # another peer is not held up
    assert refusals.delay("10.0.0.1", 104.0) == 0  # a few quiet seconds later: answered at once again
