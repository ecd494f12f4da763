"""The properties reuse the engine tests' manifest builders (tests/engine/engine_helpers.py)."""

from __future__ import annotations

import sys
from pathlib import Path

_ENGINE_TESTS = str(Path(__file__).resolve().parent.parent / "engine")
if _ENGINE_TESTS not in sys.path:
    sys.path.insert(0, _ENGINE_TESTS)
