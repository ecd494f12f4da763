"""Who may read the dashboard: the admin client certificate (mutual TLS) or a bearer token.

``mkhub ui token`` makes a random token, prints it once and appends its SHA-256
to the tokens file; the hub keeps only hashes and re-reads the file when it
changes, so a new token works without a restart.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

TOKENS_FILE = "ui-tokens"
TOKEN_PREFIX = "mkui_"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(path: Path) -> str:
    """A fresh token; its hash is appended to ``path`` (created 0600)."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a") as out:
        out.write(digest(token) + "\n")
    return token


class TokenFile:
    """The accepted tokens' hashes, re-read when the file's mtime or size changes."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._stamp: tuple[float, int] | None = None
        self._hashes: frozenset[str] = frozenset()

    def hashes(self) -> frozenset[str]:
        if self.path is None:
            return frozenset()
        try:
            st = self.path.stat()
        except OSError:
            self._stamp, self._hashes = None, frozenset()
            return self._hashes
        stamp = (st.st_mtime, st.st_size)
        if stamp != self._stamp:
            try:
                text = self.path.read_text()
            except OSError:
                text = ""
            self._hashes = frozenset(line.strip() for line in text.splitlines() if len(line.strip()) == 64)
            self._stamp = stamp
        return self._hashes

    def accepts(self, token: str) -> bool:
        wanted = digest(token)
        # Compared in constant time against each, so a wrong token's timing says nothing.
        return any(hmac.compare_digest(wanted, h) for h in self.hashes())


REFUSALS_PER_S = 10.0  # refused requests a peer gets answered at once, on average
REFUSAL_BURST = 20.0
REFUSAL_MAX_DELAY = 1.0  # seconds


class Refusals:
    """Per peer, a bucket of refusals (4xx) answered at once; past it, each answer waits (up to a second).

    A flood of bad requests then costs the hub a timer per request instead of a steady share of the event
    loop that also serves ``mkhub`` and the agents; a person with a wrong token or a typo never waits.
    """

    def __init__(self) -> None:
        self._buckets: dict[str, tuple[float, float]] = {}  # peer -> (level, when)
        self.delayed = 0

    def delay(self, peer: str, now: float) -> float:
        """Seconds to wait before answering this refusal."""
        level, at = self._buckets.get(peer, (REFUSAL_BURST, now))
        # Never far below empty: a peer that stops recovers within a few seconds.
        level = max(-REFUSALS_PER_S * REFUSAL_MAX_DELAY, min(REFUSAL_BURST, level + (now - at) * REFUSALS_PER_S) - 1)
        if len(self._buckets) > 10_000:  # many peers: forget them rather than grow
            self._buckets.clear()
        self._buckets[peer] = (level, now)
        if level >= 0:
            return 0.0
        self.delayed += 1
        return min(REFUSAL_MAX_DELAY, -level / REFUSALS_PER_S)
