"""``mkhub bench serve --dashboard``: admissions/s with a browser on the dashboard's live workloads
page, against runs without, alternating (the machine's speed drifts; ``machine_ms`` says how much)."""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hub.ui import browser

from .hubproc import _free_port


@contextmanager
def open_dashboard(port: int) -> Iterator[Any]:
    """A browser on the live workloads page of the hub whose dashboard listens on ``port``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = browser.launch(p)
        try:
            page = chromium.new_page()
            page.goto(f"http://127.0.0.1:{port}/workloads", wait_until="commit")
            page.wait_for_selector("#live:has-text('live')", timeout=120_000)
            yield page
        finally:
            chromium.close()


def compare_serve(run: Callable[..., dict[str, float]], workloads: int, queues: int, cohorts: int, batch: int, rounds: int, as_json: bool) -> int:
    """``mkhub bench serve --dashboard``: runs without and with the dashboard open and live, alternating."""
    missing = browser.available()
    if missing is not None:
        print(f"error: bench serve --dashboard: {missing}", file=sys.stderr)
        return 1
    runs: dict[str, list[dict[str, float]]] = {"without": [], "with": []}
    for _ in range(max(1, rounds)):
        for mode in ("without", "with"):
            port = _free_port()
            extra = ["--ui-listen", f"127.0.0.1:{port}"] if mode == "with" else []
            figures = run(workloads, queues, cohorts, batch, extra_args=extra,
                                      watching=(lambda port=port: open_dashboard(port)) if mode == "with" else None)
            runs[mode].append(figures)
            if not as_json:
                print(f"{mode:>7} dashboard: {figures['admissions_per_s']:,.0f} admissions/s, "
                      f"{figures['apply_per_s']:,.0f} Apply/s, machine_ms {figures['machine_ms']:.1f}", flush=True)
    summary = {f"{mode}_admissions_per_s": statistics.median(r["admissions_per_s"] for r in rs) for mode, rs in runs.items()}
    summary["with_over_without"] = summary["with_admissions_per_s"] / summary["without_admissions_per_s"]
    summary["machine_ms"] = statistics.median(r["machine_ms"] for rs in runs.values() for r in rs)
    if as_json:
        print(json.dumps({"summary": summary, "runs": runs}, sort_keys=True))
    else:
        print(f"median: {summary['without_admissions_per_s']:,.0f} admissions/s without, {summary['with_admissions_per_s']:,.0f} "
              f"with the dashboard open and live ({100 * (summary['with_over_without'] - 1):+.1f}%)")
    return 0
