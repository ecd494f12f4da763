"""``mkhub bench ui``: the dashboard with 100,000 workloads in the hub.

The hub (``mkhub serve --ui-listen``, embedded store, standalone) gets 100 ClusterQueues
without quota and N Workloads, all pending. Then: the JSON API's page latency (no filter
at random offsets, sorted descending, a 1% filter, a filter on the state), and the
workloads page's time to interactive in Debian's chromium (from navigation until its 50
rows are drawn and the pager answers, a fresh browser context each time), then the time a
click on "Next" takes to show the next page. ``machine_ms`` as every benchmark.

``mkhub bench serve --dashboard`` (hub/bench/dashboard_live.py) keeps a browser on the live
workloads page while it admits, alternating runs with and without it.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import urllib.request
from typing import Any

from hub.ports import free_port
from hub.ui import browser

from .hubproc import BenchHub, running_hub, wait_until
from .machine import machine_speed
from .serve_bench import FLAVOR, NAMESPACE, _cluster_queue, _workload

QUEUES = 100
# A click on "Next" in the page, resolved with the milliseconds until the pager shows page 2.
NEXT_PAGE = """() => new Promise((done) => {
  const info = document.getElementById("pageinfo");
  const t0 = performance.now();
  new MutationObserver(() => { if (/^51–100 of/.test(info.textContent)) done(performance.now() - t0); })
    .observe(info, { childList: true, characterData: true, subtree: true });
  document.querySelectorAll(".pager button")[1].click();
})"""


def api_ms(port: int, path: str) -> tuple[float, Any]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=120) as r:
        body = json.loads(r.read())
    return (time.perf_counter() - t0) * 1000, body


def fill(hub: BenchHub, workloads: int, queues: int = QUEUES, batch: int = 1000) -> None:
    """``workloads`` pending Workloads spread over ``queues`` held ClusterQueues."""
    per_queue = -(-workloads // queues)
    setup: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}},
    ]
    setup += [_cluster_queue(q, 10, per_queue, hold=True) for q in range(queues)]
    setup += [{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue", "metadata": {"name": f"lq-{q}", "namespace": NAMESPACE},
               "spec": {"clusterQueue": f"cq-{q}"}} for q in range(queues)]
    hub.apply_json(setup)
    for s in range(0, workloads, batch):
        hub.apply_json([_workload(i, queues) for i in range(s, min(workloads, s + batch))])


def time_to_interactive(chromium: Any, port: int) -> tuple[float, float]:
    """(ms from navigation to 50 drawn rows and a working pager, ms for a click on Next to show page 2)."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"http://127.0.0.1:{port}/workloads?sort=-created", wait_until="commit")
        page.wait_for_function("document.querySelectorAll('#workloads tbody tr').length === 50"
                               " && /^1–50 of/.test(document.getElementById('pageinfo').textContent)", timeout=120_000)
        # The page's own clock: from the start of navigation to its mark once the rows are drawn.
        ready = float(page.evaluate("performance.getEntriesByName('mkhub:rows')[0].startTime"))
        next_ms = float(page.evaluate(NEXT_PAGE))
        return ready, next_ms
    finally:
        context.close()


def run(workloads: int, repeat: int = 5) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    port = free_port()
    rnd = random.Random(1)
    with machine_speed() as machine, running_hub(["--ui-listen", f"127.0.0.1:{port}"]) as hub:
        t0 = time.perf_counter()
        fill(hub, workloads)
        wait_until(lambda: api_ms(port, "/api/v1/workloads?limit=1")[1]["total"] >= workloads, 1800.0, 1.0)
        wait_until(lambda: hub.top().workloads_pending >= workloads, 1800.0, 1.0)  # the engine has them all: idle
        filled = time.perf_counter() - t0
        figures: dict[str, float] = {"workloads": float(workloads), "fill_s": filled}
        with sync_playwright() as p:
            chromium = browser.launch(p)
            try:  # the first load orders the queues of its rows' workloads (positions): the cold case
                runs = [time_to_interactive(chromium, port) for _ in range(repeat)]
            finally:
                chromium.close()
        figures["tti_first_ms"] = runs[0][0]
        figures["tti_ms"] = statistics.median(r[0] for r in runs)
        figures["tti_max_ms"] = max(r[0] for r in runs)
        figures["next_page_ms"] = statistics.median(r[1] for r in runs)
        queries = {
            "page_ms": lambda: f"/api/v1/workloads?offset={rnd.randrange(workloads - 50)}&limit=50",  # positions cached by now
            "page_sorted_desc_ms": lambda: f"/api/v1/workloads?sort=-name&offset={rnd.randrange(workloads - 50)}&limit=50",
            "page_filtered_1pct_ms": lambda: f"/api/v1/workloads?queue=lq-{rnd.randrange(QUEUES)}&sort=priority&limit=50",
            "page_state_pending_ms": lambda: f"/api/v1/workloads?state=pending&offset={rnd.randrange(workloads - 50)}&limit=50",
            "overview_ms": lambda: "/api/v1/overview",
            "bad_request_ms": lambda: "/api/v1/workloads?colour=blue",
        }
        for name, path in queries.items():
            samples = []
            for _ in range(max(repeat, 5)):
                try:
                    ms, _ = api_ms(port, path())
                except urllib.error.HTTPError:
                    ms = 0.0  # the bad request's 400: timed below
                samples.append(ms)
            if name == "bad_request_ms":
                samples = [_timed_error(port, path()) for _ in range(max(repeat, 5))]
            figures[name] = statistics.median(samples)
        figures["hub_rss_mib"] = hub.stats().peak_rss_mib
    figures["machine_ms"] = machine.median_ms
    return figures


def _timed_error(port: int, path: str) -> float:
    t0 = time.perf_counter()
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60).close()
    except urllib.error.HTTPError as exc:
        exc.read()
    return (time.perf_counter() - t0) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mkhub bench ui", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5, help="browser loads (and at least 5 API calls) per figure")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if args.workloads < 100 or args.repeat < 1:
        print("error: --workloads must be at least 100 and --repeat at least 1", file=sys.stderr)
        return 2
    missing = browser.available()
    if missing is not None:
        print(f"error: bench ui: {missing}", file=sys.stderr)
        return 1
    f = run(args.workloads, args.repeat)
    if args.json:
        print(json.dumps(f, sort_keys=True))
        return 0
    print(f"mkhub bench ui: {args.workloads:,} pending Workloads in {QUEUES} ClusterQueues (taken in in {f['fill_s']:.0f}s)")
    print(f"workloads page, time to interactive (50 rows drawn, pager working): {f['tti_ms']:.0f} ms median, "
          f"{f['tti_max_ms']:.0f} ms at most, {f['tti_first_ms']:.0f} ms the first time; Next page: {f['next_page_ms']:.0f} ms")
    print(f"API, median per call: page {f['page_ms']:.1f} ms, sorted descending {f['page_sorted_desc_ms']:.1f} ms, "
          f"1% filter {f['page_filtered_1pct_ms']:.1f} ms, state=pending {f['page_state_pending_ms']:.1f} ms, "
          f"overview {f['overview_ms']:.1f} ms, bad request (400) {f['bad_request_ms']:.1f} ms")
    print(f"hub peak RSS {f['hub_rss_mib']:.0f} MiB; machine: {f['machine_ms']:.1f} ms (hub/bench/machine.py)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
