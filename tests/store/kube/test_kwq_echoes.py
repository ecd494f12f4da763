"""The informer drops the echoes of the store's own writes before decoding them, by the version
in the line's bytes, and its position (resume, bookmarks, re-lists) stays what it would have been."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hub.store.interface import ObjectKey
from hub.store.kube import informer as informer_mod
from hub.store.kube import requests as rq
from hub.store.kube.cache import Cache
from hub.store.kube.informer import Informer, InformerOptions, echo_version
from hub.store.kube.transport import Response, TransportError

from .harness import wait_for
from .test_informer import Scripted

RES = rq.resource_for("Workload")


def wl(name: str, rv: int, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": RES.api_version, "kind": "Workload",
            "metadata": {"namespace": "ns", "name": name, "resourceVersion": str(rv), "uid": name}, **extra}


def line(type_: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": type_, "object": obj}, separators=(",", ":")).encode()


def listing(rv: int, *items: dict[str, Any]) -> Response:
    return Response(200, json.dumps({"metadata": {"resourceVersion": str(rv)}, "items": list(items)}).encode())


class Stream:
    """A watch: runs ``before`` (a write of ours landing meanwhile) then yields its lines, then
    ends, or breaks as a dropped connection does."""

    status = 200

    def __init__(self, lines: list[bytes], *, before: Callable[[], None] | None = None, breaks: bool = False) -> None:
        self._lines, self._before, self._breaks = lines, before, breaks

    def lines(self) -> Iterator[bytes]:
        if self._before is not None:
            self._before()
        yield from self._lines
        if self._breaks:
            raise TransportError("watch connection broke: reset by peer")

    def read_all(self) -> bytes:
        return b"{}"

    def close(self) -> None:
        pass


def run(cache: Cache, lists: list[Response], watches: list[Stream]) -> tuple[Informer, Scripted]:
    script = Scripted(lists, watches, threading.Event())
    informer = Informer(script, RES, cache, InformerOptions(backoff_initial=1.0))
    informer.pause = lambda seconds: None  # type: ignore[method-assign]
    informer.start()
    assert script.done.wait(30), "the informer did not use up its script"
    informer.stop()
    return informer, script


def watched_from(script: Scripted) -> list[str]:
    return [dict(r.query)["resourceVersion"] for r in script.sent if dict(r.query).get("watch")]


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every watch line the informer decodes (list pages are decoded too: not recorded)."""
    seen: list[bytes] = []
    real = informer_mod.jsonio.loads

    def loads(raw: bytes) -> Any:
        if raw.startswith(b'{"type"'):
            seen.append(raw)
        return real(raw)

    monkeypatch.setattr(informer_mod.jsonio, "loads", loads)
    return seen


def test_the_version_is_read_from_the_bytes_whatever_the_order_of_metadata() -> None:
    status = {"conditions": [{"type": "Admitted", "message": 'said "resourceVersion":"9"'}]}
    assert echo_version(line("MODIFIED", wl("a", 12, status=status))) == "12"  # a quote inside a string is escaped
    # kube-apiserver writes a custom resource's keys sorted: managedFields come before the version.
    sorted_keys = b'{"type":"ADDED","object":{"apiVersion":"v","kind":"Workload","metadata":{"managedFields":[{"f":1}],' \
                  b'"name":"a","namespace":"ns","resourceVersion":"345","uid":"u"},"spec":{}}}'
    assert echo_version(sorted_keys) == "345"


@pytest.mark.parametrize("raw", [
    line("DELETED", wl("a", 12)),  # a deletion is never an answer's echo
    line("BOOKMARK", {"kind": "Workload", "metadata": {"resourceVersion": "12"}}),
    line("MODIFIED", wl("a", 12, spec={"ref": {"resourceVersion": "7"}})),  # two: which is whose?
    line("MODIFIED", {"kind": "Workload", "metadata": {"name": "a"}}),
    line("MODIFIED", wl("a", 12)).replace(b'"12"', b'"1x"'),
    json.dumps({"type": "MODIFIED", "object": wl("a", 12)}).encode(),  # not compact: decode it
], ids=["deleted", "bookmark", "nested", "none", "not-a-number", "spaced"])
def test_lines_whose_version_cannot_be_told_for_sure_are_left_to_the_decoder(raw: bytes) -> None:
    assert echo_version(raw) is None


def test_an_echo_of_our_write_is_dropped_undecoded_and_a_dropped_watch_resumes_after_it(decoded: list[bytes]) -> None:
    cache = Cache()
    answered: list[int] = []

    def our_write_lands() -> None:  # the write's answer reaches the cache before its echo
        entry = cache.apply("MODIFIED", wl("a", 11, status={"x": 1}), own=True)
        assert entry is not None
        answered.append(entry.seq)

    echo = line("MODIFIED", wl("a", 11, status={"x": 1}))
    informer, script = run(cache, [listing(10, wl("a", 10))],
                           [Stream([echo], before=our_write_lands, breaks=True)])
    assert watched_from(script)[:2] == ["10", "11"]  # resumed after the skipped echo, not before it
    assert informer.stats.echoes == 1 and informer.stats.events == 1 and informer.stats.dropped >= 1
    assert echo not in decoded
    entry = cache.entry(ObjectKey("Workload", "ns", "a"))
    assert entry is not None and (entry.srv, entry.seq) == (11, answered[0])  # no second change published
    assert cache.own_versions("Workload") == 0


def test_a_change_of_someone_else_is_applied_between_our_echoes(decoded: list[bytes]) -> None:
    cache = Cache()
    ours = [line("MODIFIED", wl("a", 11)), line("MODIFIED", wl("a", 13))]
    theirs = line("MODIFIED", wl("b", 12, spec={"by": "kubectl"}))

    def our_writes_land() -> None:
        cache.apply("MODIFIED", wl("a", 11), own=True)
        cache.apply("MODIFIED", wl("a", 13), own=True)

    informer, script = run(cache, [listing(10, wl("a", 10), wl("b", 10))],
                           [Stream([ours[0], theirs, ours[1]], before=our_writes_land)])
    assert decoded == [theirs] and informer.stats.echoes == 2
    assert cache.list("Workload")[0][1]["spec"] == {"by": "kubectl"}
    assert watched_from(script)[-1] == "13"


def test_an_echo_that_came_before_the_answer_leaves_no_version_waiting() -> None:
    cache = Cache()
    cache.follow_echoes("Workload")
    cache.apply("ADDED", wl("a", 10))
    assert cache.apply("MODIFIED", wl("a", 11)) is not None  # the echo, decoded
    assert cache.apply("MODIFIED", wl("a", 11), own=True) is None  # the answer, after it
    assert cache.own_versions("Workload") == 0 and not cache.take_echo("Workload", 11)


def test_own_versions_the_stream_passed_unseen_are_forgotten_at_a_bookmark_and_a_re_list() -> None:
    cache = Cache()
    cache.follow_echoes("Workload")
    cache.replace("Workload", [wl("a", 10), wl("b", 10)], 10)
    cache.apply("MODIFIED", wl("a", 11), own=True)
    cache.apply("MODIFIED", wl("b", 15), own=True)
    cache.forget_tombstones("Workload", 12)  # a bookmark at 12: the echo of 11 will not come
    assert cache.own_versions("Workload") == 1 and cache.take_echo("Workload", 15)
    cache.apply("MODIFIED", wl("a", 16), own=True)
    cache.replace("Workload", [wl("a", 16), wl("b", 15)], 20)  # a re-list past it
    assert cache.own_versions("Workload") == 0


def test_a_kind_no_informer_follows_keeps_no_own_versions() -> None:
    cache = Cache()
    cache.apply("MODIFIED", {"kind": "Event", "metadata": {"namespace": "ns", "name": "e", "resourceVersion": "5"}},
                own=True)
    assert cache.own_versions("Event") == 0


class _AnswersFirst:
    """A transport whose watch lines wait until the cache holds their version (our write's answer
    landed first, as it mostly does): which of the two comes first is otherwise a race."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cache: Cache | None = None  # set while every line is an echo of ours

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def stream(self, req: rq.Request, *, read_timeout: float) -> Any:
        stream = self.inner.stream(req, read_timeout=read_timeout)
        lines = stream.lines

        def held() -> Iterator[bytes]:
            for raw in lines():
                rv, cache = echo_version(raw), self.cache
                if rv is not None and cache is not None:
                    key, version = ObjectKey.of(json.loads(raw)["object"]), int(rv)
                    def landed(key: ObjectKey = key, version: int = version, cache: Cache = cache) -> bool:
                        entry = cache.entry(key)
                        return entry is not None and entry.srv >= version

                    wait_for(landed, what="the answer")
                yield raw

        stream.lines = held
        return stream


def test_on_an_api_server_our_writes_echo_back_undecoded_and_others_writes_still_arrive(api: Any, names: Any) -> None:
    from hub.bench.kube_bench import workload
    from hub.store.kube import ApiClientTransport, KubeStore, KubeStoreOptions

    from .harness import FAST_INFORMER, open_store, wait_for

    transport = _AnswersFirst(ApiClientTransport.from_kubeconfig(api.kubeconfig))
    store = KubeStore(transport, KubeStoreOptions(informer=FAST_INFORMER))  # type: ignore[arg-type]
    transport.cache = store.cache
    other = open_store(api.kubeconfig)
    try:
        stats = store.informers["Workload"].stats
        base = stats.echoes
        made = [store.create({**workload(names.name(f"w{i}")), "metadata": {"namespace": names.namespace, "name": names.name(f"w{i}")}})
                for i in range(5)]
        status = {"conditions": [{"type": "Seen", "status": "True", "reason": "R", "message": "m",
                                  "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        for w in made:
            store.update_status({**w, "status": status})
        wait_for(lambda: stats.echoes >= base + 10, what="the echoes of our ten writes")
        assert store.cache.own_versions("Workload") == 0
        transport.cache = None
        theirs = other.get("Workload", names.namespace, names.name("w0"))
        assert theirs is not None
        other.update_status({**theirs, "status": {"conditions": []}})  # another client's write: not an echo of ours
        wait_for(lambda: (store.get("Workload", names.namespace, names.name("w0")) or {}).get("status") == {"conditions": []},
                 what="another writer's change")
        assert stats.echoes == base + 10
    finally:
        store.close()
        store.transport.close()
        other.close()
        other.transport.close()
