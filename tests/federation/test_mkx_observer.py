"""The hub's MultiKueue observer finds a dispatch's copies by its id: a win, a start or a drop
does not walk every dispatch in flight (issue 26: that walk made a burst of N Jobs cost N² in
the hub), and the start latency is still measured from the winner's copy."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from hub.obs.federation import DispatchObserver


class NoWalk(dict[str, Any]):
    def __iter__(self) -> Any:
        raise AssertionError("walked every dispatch in flight")

    def keys(self) -> Any:
        raise AssertionError("walked every dispatch in flight")


def test_win_start_and_drop_touch_only_their_dispatch() -> None:
    registry = CollectorRegistry()
    obs = DispatchObserver(registry)
    obs._sent = NoWalk()
    for i in range(50):
        for cluster in ("w1", "w2"):
            obs.dispatched(f"ns/j{i}", f"uid-{i}", f"ns/j{i}/1", "cq", cluster)
    obs.won("ns/j3", "uid-3", "ns/j3/1", "cq", "w2")
    obs.started("ns/j3", "uid-3", "ns/j3/1", "w2")
    obs.dropped("ns/j4/1")
    assert "ns/j3/1" not in obs._sent and "ns/j4/1" not in obs._sent and obs._sent["ns/j5/1"].keys() == {"w1", "w2"}
    assert registry.get_sample_value("mkhub_worker_dispatch_to_start_seconds_count", {"cluster": "w2"}) == 1.0
