"""The Kubernetes store's hot path: Events several in flight at once, the hub's own echoes dropped
before they are copied, JSON decoded by orjson with json's results."""

from __future__ import annotations

import json
import math
import threading
from typing import Any

import pytest

from hub.store.interface import AlreadyExists, create_independent
from hub.store.kube import jsonio
from hub.store.kube.cache import Cache


class _Concurrent:
    """A store taking concurrent writes whose creates each wait until two are in flight at once."""

    write_concurrency = 4

    def __init__(self) -> None:
        self.meet = threading.Barrier(2, timeout=30)

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.meet.wait()  # one at a time never gets past this: BrokenBarrierError
        if obj["metadata"]["name"] == "taken":
            raise AlreadyExists(None, "exists")  # type: ignore[arg-type]
        return {**obj, "metadata": {**obj["metadata"], "resourceVersion": "7"}}


def test_independent_creates_are_in_flight_together_with_each_refusal_in_its_place() -> None:
    objs = [{"kind": "Event", "metadata": {"namespace": "ns", "name": n}} for n in ("a", "taken", "b", "c")]
    out = create_independent(_Concurrent(), objs)  # type: ignore[arg-type]
    assert [o["metadata"]["name"] if isinstance(o, dict) else type(o) for o in out] == ["a", AlreadyExists, "b", "c"]


def wl(name: str, rv: int) -> dict[str, Any]:
    return {"kind": "Workload", "metadata": {"namespace": "ns", "name": name, "resourceVersion": str(rv)}, "spec": {"x": [1]}}


def test_a_watch_drops_the_changes_it_is_told_to_skip_and_copies_what_it_delivers() -> None:
    cache = Cache()
    watch = cache.watch(None, 0)
    for i, name in enumerate(("a", "b", "c"), start=1):
        cache.apply("ADDED", wl(name, 10 * i))
    watch.skip_changes(lambda seq: seq == 2)  # the hub's own write
    first, second = watch.next(0), watch.next(0)
    assert first is not None and second is not None and watch.next(0) is None
    assert [first.object["metadata"]["name"], second.object["metadata"]["name"]] == ["a", "c"]
    first.object["spec"]["x"].append(2)  # the caller's own copy
    assert cache.list("Workload")[0][0]["spec"] == {"x": [1]}


@pytest.mark.parametrize("text", [
    b'{"a":1,"b":[true,null,"\\u00e9"],"c":1.5}',
    b'{"big":123456789012345678901234567890}',
    b'{"n":-9223372036854775809}',
])
def test_json_is_decoded_as_json_decodes_it(text: bytes) -> None:
    assert jsonio.loads(text) == json.loads(text)


@pytest.mark.parametrize("text", [b'{"a":', b"", b"[1,]"])
def test_what_json_refuses_is_refused(text: bytes) -> None:
    with pytest.raises(ValueError):
        jsonio.loads(text)


def test_nan_reads_as_json_reads_it() -> None:
    assert math.isnan(jsonio.loads(b'{"a":NaN}')["a"])
