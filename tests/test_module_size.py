"""Small modules with one job: no hand-written module of the product grows past 800 lines."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 800


def test_no_module_is_over_the_limit() -> None:
    sizes = {
        path.relative_to(ROOT).as_posix(): len(path.read_text().splitlines())
        for package in ("hub", "worker_agent")
        for path in (ROOT / package).rglob("*.py")
    }
    assert len(sizes) > 50  # the packages were found
    over = {name: lines for name, lines in sizes.items() if lines > LIMIT}
    assert not over, f"split these modules (over {LIMIT} lines): {over}"
