"""The dashboard's tokens: printed once, only their hashes kept, a new one accepted without a restart."""

from __future__ import annotations

import stat
from pathlib import Path

from hub.ui.auth import TokenFile, digest, new_token


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
