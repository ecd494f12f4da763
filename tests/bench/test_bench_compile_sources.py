"""The Kubernetes benchmarks byte-compile mkhub's packages first, as an install does, so start-up
figures do not include compiling sources (a checkout under PYTHONDONTWRITEBYTECODE would)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import hub.tuning
import worker_agent.main
from hub.bench.procstat import compile_sources


def test_every_module_has_current_bytecode_after_it() -> None:
    modules = (hub.tuning, worker_agent.main)
    for module in modules:
        Path(importlib.util.cache_from_source(str(module.__file__))).unlink(missing_ok=True)
    compile_sources()
    for module in modules:
        source = Path(str(module.__file__))
        cached = Path(importlib.util.cache_from_source(str(source)))
        assert cached.exists()
        header = cached.read_bytes()[:16]
        assert int.from_bytes(header[8:12], "little") == int(source.stat().st_mtime)  # not stale
