"""``mkhub bench serve --dashboard``: admissions/s with a browser on the dashboard's live workloads
page, against runs without, alternating (the machine's speed drifts; ``machine_ms`` says how much).
``--bad-requests``: the same with a flood of requests the dashboard refuses (4xx) instead of the
browser, the dashboard listening in both runs."""

from __future__ import annotations

import http.client
import json
import statistics
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hub.ports import free_port
from hub.ui import browser


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


# What the flood sends, each with a wrong token: every one is refused (401 where the dashboard asks for
# credentials, else 400 or 404 for the query) before any work.
BAD_PATHS = ("/api/v1/workloads?limit=100000", "/api/v1/workloads?colour=blue", "/api/v1/nope",
             "/api/v1/positions?workloads=" + ",".join(f"a/w{i}" for i in range(501)))
FLOOD_CLIENTS = 2


@contextmanager
def bad_requests(port: int, clients: int = FLOOD_CLIENTS) -> Iterator[dict[str, float]]:
    """``clients`` connections sending bad requests to the dashboard back to back, each waiting for its answer."""
    stop = threading.Event()
    counts = {"requests": 0.0, "refused": 0.0}

    def flood() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        i = 0
        while not stop.is_set():
            try:
                conn.request("GET", BAD_PATHS[i % len(BAD_PATHS)], headers={"Authorization": "Bearer mkui_wrong"})
                response = conn.getresponse()
                response.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                continue
            counts["requests"] += 1
            counts["refused"] += 400 <= response.status < 500
            i += 1
        conn.close()

    threads = [threading.Thread(target=flood, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    try:
        yield counts
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=70)


def compare_serve(run: Callable[..., dict[str, float]], workloads: int, queues: int, cohorts: int, batch: int, rounds: int,
                  as_json: bool, bad: bool = False) -> int:
    """``mkhub bench serve --dashboard``: runs without and with the dashboard open and live, alternating
    (``bad``: without and with a flood of bad requests, the dashboard listening in both)."""
    missing = None if bad else browser.available()
    if missing is not None:
        print(f"error: bench serve --dashboard: {missing}", file=sys.stderr)
        return 1
    runs: dict[str, list[dict[str, float]]] = {"without": [], "with": []}
    what = "bad requests" if bad else "dashboard"
    for _ in range(max(1, rounds)):
        for mode in ("without", "with"):
            port = free_port()
            extra = ["--ui-listen", f"127.0.0.1:{port}"] if mode == "with" or bad else []
            flood: dict[str, float] = {}

            @contextmanager
            def watching(port: int = port, flood: dict[str, float] = flood) -> Iterator[None]:
                if not bad:
                    with open_dashboard(port):
                        yield
                    return
                with bad_requests(port) as counts:
                    yield
                flood.update(counts)

            figures = run(workloads, queues, cohorts, batch, extra_args=extra, watching=watching if mode == "with" else None)
            if flood:
                figures["bad_requests"] = flood["requests"]
                figures["bad_requests_per_s"] = flood["requests"] / figures["admit_s"]  # the flood ran a bit longer
                figures["refused_share"] = flood["refused"] / max(1.0, flood["requests"])
            runs[mode].append(figures)
            if not as_json:
                extra_text = (f", {figures['bad_requests_per_s']:,.0f} bad requests/s ({100 * figures['refused_share']:.0f}% refused)"
                              if flood else "")
                print(f"{mode:>7} {what}: {figures['admissions_per_s']:,.0f} admissions/s, "
                      f"{figures['apply_per_s']:,.0f} Apply/s, machine_ms {figures['machine_ms']:.1f}{extra_text}", flush=True)
    summary = {f"{mode}_admissions_per_s": statistics.median(r["admissions_per_s"] for r in rs) for mode, rs in runs.items()}
    summary["with_over_without"] = summary["with_admissions_per_s"] / summary["without_admissions_per_s"]
    summary["machine_ms"] = statistics.median(r["machine_ms"] for rs in runs.values() for r in rs)
    if as_json:
        print(json.dumps({"summary": summary, "runs": runs}, sort_keys=True))
    else:
        print(f"median: {summary['without_admissions_per_s']:,.0f} admissions/s without, {summary['with_admissions_per_s']:,.0f} "
              f"with {'a flood of bad requests' if bad else 'the dashboard open and live'} ({100 * (summary['with_over_without'] - 1):+.1f}%)")
    return 0
