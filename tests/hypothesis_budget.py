"""How many examples a property runs under the active hypothesis profile (tests/conftest.py)."""

from __future__ import annotations

import os

from hypothesis import settings

# PROPERTY_SCALE (an environment variable, default 1) multiplies on top, e.g. for a long hunt.
SCALE = max(1, int(os.environ.get("PROPERTY_SCALE", "1")))


def examples(nominal: int) -> int:
    """``nominal`` scaled by the profile: quick 20 %, default 100 %, deep 1000 % (at least 5)."""
    return max(5, nominal * settings.default.max_examples // 100) * SCALE
