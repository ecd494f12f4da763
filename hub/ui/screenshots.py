"""``mkhub ui screenshots``: placeholder until the browser harness lands."""

from __future__ import annotations

import sys
from pathlib import Path


def screenshots_main(out: Path) -> int:
    print(f"error: ui screenshots: not available yet ({out})", file=sys.stderr)
    return 1
