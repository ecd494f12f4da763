"""``mkhub ui screenshots --out DIR``: PNGs of the dashboard's four pages, from a hub with two agents.

The scene of :mod:`hub.demo.ui_fleet` (two GPU Jobs filling a cohort, one waiting), in a
temporary directory; the browser is Debian's chromium through Playwright.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from hub.ui import browser

from .ui_fleet import UIFleet

# Each page's name, path (None: the waiting workload's detail) and what shows it is drawn.
PAGES = (("overview", "/", "#cqs"), ("workloads", "/workloads?sort=name", "#workloads >> text=/in ClusterQueue/"), ("workload", None, "#why"),
         ("fleet", "/fleet", "#workers"))


def screenshots_main(out: Path) -> int:
    missing = browser.available()
    if missing is not None:
        print(f"error: ui screenshots: {missing}", file=sys.stderr)
        return 1
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mkhub-ui-shots-") as tmp:
        fleet = UIFleet(Path(tmp))
        try:
            fleet.start()
            waiter = next(r for r in fleet.api("/api/v1/workloads?state=pending")[1]["items"] if r["owner"] == "waiter")
            with sync_playwright() as p:
                chromium = browser.launch(p)
                context = chromium.new_context(ignore_https_errors=True, viewport={"width": 1280, "height": 800})
                page = context.new_page()
                page.goto(f"{fleet.url}/#token={fleet.token}")
                for name, path, drawn in PAGES:
                    page.goto(fleet.url + (path or f"/workload/{waiter['namespace']}/{waiter['name']}"))
                    page.wait_for_selector(drawn)
                    page.wait_for_selector("#live:has-text('live')")
                    target = out / f"{name}.png"
                    page.screenshot(path=str(target), full_page=True)
                    print(target)
                chromium.close()
        except (RuntimeError, TimeoutError, OSError, PlaywrightError) as exc:
            print(f"error: ui screenshots: {exc}", file=sys.stderr)
            return 1
        finally:
            fleet.stop()
    return 0
