"""The dashboard in a real browser (Debian's chromium through Playwright) against ``mkhub serve
--tls-dir --ui-listen`` with two agents: each page's numbers equal the API's, overview -> a pending
workload's reason, pending -> running without a reload, keyboard navigation, text alternatives of
charts and bars, and 4xx answers to bad requests."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

from hub.demo.ui_fleet import UIFleet, gpu_job
from hub.ui import browser

pytestmark = [pytest.mark.timeout(300)]

if (missing := browser.available()) is not None:
    if os.environ.get("CI") == "true":  # CI must run them: `make test` installs the browser
        raise RuntimeError(f"the dashboard's browser tests cannot run: {missing}")
    pytestmark.append(pytest.mark.skip(reason=missing))

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UIFleet]:
    f = UIFleet(tmp_path_factory.mktemp("ui"))
    try:
        yield f.start()
    finally:
        f.stop()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with sync_playwright() as p:
        b = browser.launch(p)
        yield b
        b.close()


@pytest.fixture
def page(fleet: UIFleet, chromium: Any) -> Iterator[Page]:
    context = chromium.new_context(ignore_https_errors=True, viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(f"{fleet.url}/#token={fleet.token}")
    expect(pg.locator("h1")).to_have_text("Overview")
    yield pg
    context.close()
    assert not errors, errors


def test_overview_numbers_are_the_apis_and_lead_to_a_pending_workloads_reason(fleet: UIFleet, page: Page) -> None:
    _, api = fleet.api("/api/v1/overview")
    for label in ("pending", "admitted", "finished", "total"):
        expect(page.locator(f'[data-count="{label}"]')).to_have_text(str(api["workloads"][label]))
    for cq in api["clusterQueues"]:
        row = page.locator(f'tr[data-cq="{cq["name"]}"]')
        for r in cq["resources"]:
            expect(row.locator(f'[data-resource="{r["flavor"]}/{r["resource"]}"] .barlabel')).to_contain_text(f'{r["usage"]}/{r["nominal"]}')
    # The cohort research lends team-b's GPUs to team-a: the tree shows the cohort and both queues.
    expect(page.locator("#cohorts")).to_contain_text("research")
    expect(page.locator("#cohorts")).to_contain_text("team-a-cq")

    page.locator('[data-count="pending"] a').click()
    expect(page.locator("h1")).to_have_text("Workloads")
    waiter = page.locator("tr", has_text="Job/waiter")
    expect(waiter).to_contain_text("#1 in ClusterQueue")
    waiter.locator("a.rowlink").click()
    expect(page.locator("#why")).to_be_visible()
    name = page.url.rsplit("/", 1)[1]
    _, detail = fleet.api(f"/api/v1/workloads/team-a/{name}")
    expect(page.locator("#explanation")).to_have_text(detail["explanation"])
    assert "insufficient" in detail["explanation"] or "quota" in detail["explanation"]


def test_workloads_and_fleet_pages_show_the_apis_numbers(fleet: UIFleet, page: Page) -> None:
    page.goto(f"{fleet.url}/workloads?namespace=team-a&sort=name")
    _, api = fleet.api("/api/v1/workloads?namespace=team-a&sort=name")
    expect(page.locator("#pageinfo")).to_have_text(f"1–{api['total']} of {api['total']}")
    names = page.locator("#workloads tbody a.rowlink")
    expect(names).to_have_text([r["name"] for r in api["items"]])

    page.goto(f"{fleet.url}/fleet")
    _, api = fleet.api("/api/v1/fleet")
    for w in api["workers"]:
        row = page.locator(f'tr[data-worker="{w["name"]}"]')
        expect(row).to_contain_text("connected")
        expect(row.locator("[data-sent]")).to_have_text(str(w["copiesSent"]))
        expect(row.locator("[data-won]")).to_have_text(str(w["copiesWon"]))
    assert sum(w["copiesWon"] for w in api["workers"]) >= 2  # the two hogs, one per worker


def test_every_chart_and_bar_has_a_text_alternative(page: Page) -> None:
    charts = page.locator("svg")
    assert charts.count() >= 2
    for i in range(charts.count()):
        chart = charts.nth(i)
        assert chart.get_attribute("role") == "img"
        assert re.search(r"over the last hour: \d+ in total", chart.get_attribute("aria-label") or "")
    for figure in page.locator("figure").all():
        expect(figure.locator("figcaption")).not_to_be_empty()
    bars = page.locator(".bar")
    assert bars.count() >= 4
    for b in bars.all():
        assert re.search(r": \S+ of \S+", b.get_attribute("aria-label") or "")


def test_keyboard_alone_reaches_a_workload(fleet: UIFleet, page: Page) -> None:
    page.keyboard.press("Tab")
    expect(page.locator(".skip")).to_be_focused()
    for _ in range(2):
        page.keyboard.press("Tab")
    expect(page.locator('nav a[data-page="workloads"]')).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("h1")).to_have_text("Workloads")
    first = page.locator("#workloads tbody a.rowlink").first
    first.focus()
    page.keyboard.press("ArrowDown")
    second = page.locator("#workloads tbody a.rowlink").nth(1)
    expect(second).to_be_focused()
    target = second.text_content()
    page.keyboard.press("Enter")
    expect(page.locator("h1")).to_contain_text(f"/{target}")
    page.goto(f"{fleet.url}/workloads")
    page.locator('th[data-sort="name"] button').focus()
    page.keyboard.press("Enter")
    expect(page.locator('th[data-sort="name"]')).to_have_attribute("aria-sort", "ascending")


def test_a_live_redraw_keeps_the_keyboard_focus(fleet: UIFleet, page: Page) -> None:
    total = page.locator('[data-count="total"]')
    before = int(total.inner_text())
    total.locator("a").focus()
    fleet.apply(gpu_job("etl-2", "team-b", 0))
    expect(total).to_have_text(str(before + 1), timeout=30_000)  # redrawn from the live stream
    expect(total.locator("a")).to_be_focused()


def test_a_redraw_due_on_the_overview_does_not_come_back_over_the_next_page(fleet: UIFleet, page: Page) -> None:
    # A live message schedules the overview's redraw (at most once a second); the user leaves before it is
    # due. The redraw must not put the overview back over the workloads page (it did, under load).
    live = page.locator("#live")
    expect(live).to_have_attribute("data-version", re.compile(r"\d"), timeout=30_000)
    version = live.get_attribute("data-version")
    fleet.apply(gpu_job("etl-3", "team-b", 0))
    expect(live).not_to_have_attribute("data-version", version or "", timeout=30_000)  # the redraw is now due
    page.locator('[data-count="pending"] a').click()
    expect(page.locator("h1")).to_have_text("Workloads")
    page.wait_for_timeout(1500)  # past the overview's refresh interval
    expect(page.locator("h1")).to_have_text("Workloads")


def test_bad_requests_get_4xx_and_the_admin_certificate_is_let_in(fleet: UIFleet) -> None:
    assert fleet.api("/api/v1/overview", token="")[0] == 401
    status, body = fleet.api("/api/v1/overview", token="mkui_not-a-token")
    assert status == 401 and "not valid" in body["error"]
    status, body = fleet.api("/api/v1/workloads?colour=blue")
    assert status == 400 and "colour" in body["error"]
    status, body = fleet.api("/api/v1/workloads?limit=100000")
    assert status == 400 and "limit" in body["error"]
    assert fleet.api("/api/v1/overview", cert=True)[0] == 200


def test_a_workload_goes_from_pending_to_running_without_a_reload(fleet: UIFleet, page: Page) -> None:
    page.goto(f"{fleet.url}/workloads?namespace=team-a")
    waiter = page.locator("tr", has_text="Job/waiter")
    expect(waiter).to_have_attribute("data-state", "pending")
    page.evaluate("window.__still_here = true")
    fleet.delete_job("hog-2", "team-a")
    expect(waiter).to_have_attribute("data-state", "running", timeout=90_000)
    assert page.evaluate("window.__still_here") is True  # the same document: patched, not reloaded
    expect(waiter).not_to_contain_text("#1 in ClusterQueue")
