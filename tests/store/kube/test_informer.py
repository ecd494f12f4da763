"""The informer's loop against a scripted API server: what it asks for and when it waits."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

from hub.store.kube import requests as rq
from hub.store.kube.cache import Cache
from hub.store.kube.informer import Informer, InformerOptions
from hub.store.kube.transport import REQUEST_TIMEOUT, Response, TransportError

RES = rq.resource_for("Workload")


def wl(name: str, rv: int) -> dict[str, Any]:
    return {"kind": "Workload", "metadata": {"namespace": "ns", "name": name, "resourceVersion": str(rv), "uid": name}}


def listing(rv: int, *items: dict[str, Any], cont: str = "") -> Response:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if cont:
        meta["continue"] = cont
    return Response(200, json.dumps({"metadata": meta, "items": list(items)}).encode())


class FakeStream:
    def __init__(self, status: int, lines: list[dict[str, Any]]) -> None:
        self.status = status
        self._lines = [json.dumps(line).encode() for line in lines]

    def lines(self) -> Iterator[bytes]:
        yield from self._lines

    def read_all(self) -> bytes:
        return b"{}"

    def close(self) -> None:
        pass


class Scripted:
    """Answers lists with ``lists`` in turn and watches with ``watches`` (streams: ``lines``, ``read_all``,
    ``close``, ``status``) in turn; records every request; sets ``done`` when the script is used up."""

    def __init__(self, lists: list[Response], watches: list[Any], done: threading.Event) -> None:
        self.lists = lists
        self.watches = watches
        self.done = done
        self.sent: list[rq.Request] = []

    def send(self, req: rq.Request, *, timeout: float = REQUEST_TIMEOUT) -> Response:
        self.sent.append(req)
        if not self.lists:
            self.done.set()
            raise TransportError("script over")
        return self.lists.pop(0)

    def stream(self, req: rq.Request, *, read_timeout: float) -> Any:
        self.sent.append(req)
        if not self.watches:
            self.done.set()
            raise TransportError("script over")
        return self.watches.pop(0)

    def close(self) -> None:
        pass


def run(lists: list[Response], watches: list[FakeStream], pauses: list[float] | None = None) -> tuple[Informer, Scripted]:
    """Run the informer until the script is used up; every pause is recorded (and skipped)."""
    done = threading.Event()
    transport = Scripted(lists, watches, done)
    informer = Informer(transport, RES, Cache(), InformerOptions(backoff_initial=1.0, backoff_max=8.0))
    recorded = pauses if pauses is not None else []
    informer.pause = lambda seconds: recorded.append(seconds)  # type: ignore[method-assign]
    informer.start()
    assert done.wait(30), "the informer did not use up its script"
    informer.stop()
    return informer, transport


def query(req: rq.Request) -> dict[str, str]:
    return dict(req.query)


def lists_sent(t: Scripted) -> list[dict[str, str]]:
    return [query(r) for r in t.sent if "watch" not in query(r)]


def test_a_re_list_after_410_reads_the_most_recent_state_not_the_watch_cache() -> None:
    gone = FakeStream(200, [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}])
    informer, t = run([listing(10, wl("a", 5)), listing(30, wl("b", 25))], [gone])
    first, again = lists_sent(t)
    assert first == {"resourceVersion": "0"}
    # client-go: a 410 means the last synced version is unavailable, so list consistently
    # (no resourceVersion), never "0" that a lagging watch cache may answer with the past.
    assert "resourceVersion" not in again and again["limit"] == "500"
    assert informer.stats.gone == 1 and informer.stats.consistent_lists == 1
    assert [o["metadata"]["name"] for o in informer.cache.list("Workload")[0]] == ["b"]


def test_an_expired_continue_token_lists_again_from_the_start() -> None:
    expired = Response(410, json.dumps({"kind": "Status", "code": 410, "reason": "Expired"}).encode())
    informer, t = run([listing(10, wl("a", 5), cont="tok"), expired, listing(40, wl("a", 5), wl("c", 35))], [])
    assert [query(r).get("continue") for r in t.sent[:3]] == [None, "tok", None]
    assert [o["metadata"]["name"] for o in informer.cache.list("Workload")[0]] == ["a", "c"]


def test_a_watch_that_ends_at_once_without_a_line_backs_off() -> None:
    pauses: list[float] = []
    informer, _ = run([listing(10)], [FakeStream(200, []) for _ in range(4)], pauses)
    assert informer.stats.empty_watches == 4
    # Each empty watch waited before the next, and the waits grew (jitter is 0.5x-1.5x).
    assert len(pauses) >= 4
    assert pauses[0] <= 1.5 and pauses[3] >= 4.0


def test_a_watch_with_events_resets_the_backoff() -> None:
    pauses: list[float] = []
    added = FakeStream(200, [{"type": "ADDED", "object": wl("a", 11)}])
    run([listing(10)], [FakeStream(200, []), FakeStream(200, []), added, FakeStream(200, [])], pauses)
    assert pauses[2] <= 1.5  # back to the first step after a watch that delivered


def test_a_404_after_start_up_is_retried_not_fatal() -> None:
    # A custom resource answers 404 for a moment while its API server restarts.
    gone = FakeStream(200, [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}])
    not_found = Response(404, json.dumps({"kind": "Status", "code": 404, "reason": "NotFound"}).encode())
    informer, t = run([listing(10), not_found, not_found, listing(50, wl("z", 45))], [gone])
    assert informer.error is None
    assert [o["metadata"]["name"] for o in informer.cache.list("Workload")[0]] == ["z"]
    assert len(lists_sent(t)) == 4


def test_a_404_on_the_first_list_is_fatal() -> None:
    not_found = Response(404, b'{"kind":"Status","code":404}')
    done = threading.Event()
    transport = Scripted([not_found], [], done)
    informer = Informer(transport, RES, Cache())
    informer.start()
    assert informer.synced.wait(30)
    informer.join()
    assert informer.error is not None and "CRDs" in str(informer.error)


def test_an_optional_kind_not_served_is_empty_and_synced_until_its_crd_comes() -> None:
    # A job framework's kind (a JobSet's) on a cluster without its operator: the hub starts,
    # and the kind is listed again until its CRD is installed.
    not_found = Response(404, b'{"kind":"Status","code":404}')
    done = threading.Event()
    transport = Scripted([not_found, not_found, listing(20, wl("late", 19))], [], done)
    informer = Informer(transport, RES, Cache(), InformerOptions(backoff_max=8.0), optional=True)
    pauses: list[float] = []
    synced_at_first_pause: list[bool] = []

    def pause(seconds: float) -> None:
        synced_at_first_pause.append(informer.synced.is_set() and informer.absent)
        pauses.append(seconds)

    informer.pause = pause  # type: ignore[method-assign]
    informer.start()
    assert done.wait(30)
    informer.stop()
    assert synced_at_first_pause[0] and informer.error is None
    assert pauses[:2] == [8.0, 8.0]  # listed again every backoff_max while not served
    assert not informer.absent
    assert [o["metadata"]["name"] for o in informer.cache.list("Workload")[0]] == ["late"]


def test_an_informer_that_dies_says_so() -> None:
    fatal: list[BaseException] = []
    bad = FakeStream(200, [])
    bad.lines = _explode  # type: ignore[method-assign]
    done = threading.Event()
    transport = Scripted([listing(10)], [bad], done)
    informer = Informer(transport, RES, Cache(), on_fatal=fatal.append)
    informer.start()
    informer.join(30)
    assert isinstance(informer.error, KeyError) and fatal == [informer.error]


def _explode() -> Iterator[bytes]:
    raise KeyError("a bug")
    yield b""




def test_a_server_behind_our_position_makes_us_list_its_most_recent_state() -> None:
    too_large = {"kind": "Status", "code": 504, "reason": "Timeout", "message": "Too large resource version: 90, current: 40",
                 "details": {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]}}
    # A lagging member answers the watch; the consistent list is a quorum read, current.
    informer, t = run([listing(90, wl("a", 85)), listing(100, wl("b", 95))], [FakeStream(200, [{"type": "ERROR", "object": too_large}])])
    assert [q.get("resourceVersion") for q in lists_sent(t)] == ["0", None]
    assert [o["metadata"]["name"] for o in informer.cache.list("Workload")[0]] == ["b"]
