"""A kept easy handle sets only what changed since its previous request: whatever the order of
methods and header lists, each request goes out exactly as its Item says."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from hub.store.kube import gathered

from .harness import serving
from .test_kwr_gathered_sockets import _Config


class _Mirror(BaseHTTPRequestHandler):
    """Answers with what it got: method, path, body and the headers the test looks at."""

    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        seen = {"method": self.command, "path": self.path, "body": body.decode(),
                "type": self.headers.get("Content-Type"), "x": self.headers.get("X-Batch"),
                "expect": self.headers.get("Expect")}
        out = json.dumps(seen).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer  # noqa: N815 - http.server's naming

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def url() -> Iterator[str]:
    with serving(_Mirror) as base:
        yield base


def test_a_reused_handle_sends_each_request_as_its_item_says(url: str) -> None:
    gatherer = gathered.Gatherer(_Config(), limit=1, connect_timeout=5.0)  # one handle for everything
    try:
        for batch in range(2):
            json_lines = ["Content-Type: application/json", f"X-Batch: {batch}"]
            patch_lines = ["Content-Type: application/merge-patch+json", f"X-Batch: {batch}"]
            items = [
                gathered.Item("PATCH", f"{url}/a", b'{"a":1}', patch_lines, 10.0),
                gathered.Item("GET", f"{url}/b", None, json_lines, 10.0),
                gathered.Item("GET", f"{url}/c", None, json_lines, 10.0),
                gathered.Item("POST", f"{url}/d", b'{"d":1}', json_lines, 10.0),
                gathered.Item("POST", f"{url}/e", b"", json_lines, 10.0),
                gathered.Item("PATCH", f"{url}/f", b'{"f":1}', patch_lines, 10.0),
                gathered.Item("DELETE", f"{url}/g", b"{}", json_lines, 10.0),
            ]
            got = [json.loads(body) for _, body in gatherer.send(items)]  # type: ignore[misc]
            assert [(g["method"], g["path"], g["body"], g["type"], g["x"]) for g in got] == [
                ("PATCH", "/a", '{"a":1}', "application/merge-patch+json", str(batch)),
                ("GET", "/b", "", "application/json", str(batch)),
                ("GET", "/c", "", "application/json", str(batch)),
                ("POST", "/d", '{"d":1}', "application/json", str(batch)),
                ("POST", "/e", "", "application/json", str(batch)),
                ("PATCH", "/f", '{"f":1}', "application/merge-patch+json", str(batch)),
                ("DELETE", "/g", "{}", "application/json", str(batch)),
            ]
            assert all(g["expect"] is None for g in got)  # no 100-continue asked for
            assert len(gatherer._driver().idle) == 1
    finally:
        gatherer.close()


class _Polls:
    """The driver's epoll, counting the waits that returned ready sockets."""

    def __init__(self, poller: object) -> None:
        self.poller = poller
        self.woken: list[float] = []  # when each wait with a timeout came back with sockets ready

    def poll(self, timeout: float) -> list[tuple[int, int]]:
        ready = self.poller.poll(timeout)  # type: ignore[attr-defined]
        if ready and timeout > 0:
            self.woken.append(time.monotonic())
        return ready  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> object:
        return getattr(self.poller, name)


def test_answers_that_come_while_a_group_waits_for_its_tokens_are_read_when_it_is_due(url: str) -> None:
    gatherer = gathered.Gatherer(_Config(), limit=8, connect_timeout=5.0)
    try:
        lines = ["Content-Type: application/json"]
        assert gatherer.send([gathered.Item("POST", f"{url}/warm", b"{}", lines, 10.0)])[0][0] == 200  # type: ignore[index]
        driver = gatherer._driver()
        polls = driver._poller = _Polls(driver._poller)  # type: ignore[assignment]
        start = time.monotonic()
        delays = iter([0.0, 0.0, 0.3, 0.3, 0.3])  # two at once, then a group due 0.3 s later

        items = [gathered.Item("POST", f"{url}/r{i}", b'{"i":%d}' % i, lines, 10.0) for i in range(5)]
        got = gatherer.send(items, pace=lambda: next(delays))
        assert [json.loads(body)["path"] for _, body in got] == [f"/r{i}" for i in range(5)]  # type: ignore[misc]
        # The first two answers came long before the group was due: no wake-up read them early.
        assert all(at - start >= 0.29 for at in polls.woken)
    finally:
        gatherer.close()
