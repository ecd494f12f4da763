"""Debian's chromium driven by Playwright (the ``playwright`` package), with no browser download.

Used by the browser tests, ``mkhub ui screenshots`` and ``mkhub bench ui``; ``make browser``
installs the system browser.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

CHROMIUM = os.environ.get("MKHUB_CHROMIUM", "/usr/bin/chromium")
ARGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
)


class BrowserMissing(RuntimeError):
    """No chromium or no playwright: the message says how to get them."""


def available() -> str | None:
    """None when a browser can be launched; else why not."""
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        return f"{CHROMIUM} not found: run `make browser` (Debian's chromium) or set MKHUB_CHROMIUM"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright package is not installed: pip install playwright (it is among mkhub's [test] extras)"
    return None


def launch(playwright: Any) -> Any:
    """A headless chromium from ``sync_playwright()``'s object."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=list(ARGS))
