from __future__ import annotations

import math

import pytest

from hub.api.annotations import duration_annotation
from hub.api.meta import Condition, ObjectMeta
from hub.api.workload import ADMITTED, Workload, WorkloadStatus
from hub.controllers.simrunner import SimRunner


def wl(name: str, duration: str | None = None, admitted_at: float | None = None) -> Workload:
    annotations = {"mkhub.dev/sim-duration": duration} if duration is not None else {}
    status = WorkloadStatus()
    if admitted_at is not None:
        status.conditions.append(Condition(ADMITTED, "True", "Admitted", "", admitted_at))
    return Workload(ObjectMeta(name, "ns", annotations=annotations), (), status=status)


def kinds(reports: list) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(r.key, r.kind) for r in reports]


def test_pods_ready_then_finished_after_the_annotated_duration() -> None:
    runner = SimRunner(ready_delay=0.5)
    runner.start(wl("a", "2s", admitted_at=100.0), 100.0)
    assert runner.poll(100.4) == []
    assert kinds(runner.poll(100.5)) == [("ns/a", "ready")]
    assert runner.next_due() == 102.0
    assert kinds(runner.poll(102.0)) == [("ns/a", "succeeded")]
    assert runner.running == set() and runner.next_due() is None


def test_default_duration_when_not_annotated() -> None:
    runner = SimRunner(default_duration=7.0, ready_delay=0.0)
    runner.start(wl("a", admitted_at=10.0), 10.0)
    assert kinds(runner.poll(16.9)) == [("ns/a", "ready")]
    assert kinds(runner.poll(17.0)) == [("ns/a", "succeeded")]


def test_a_serving_run_is_ready_and_then_runs_until_stopped() -> None:
    runner = SimRunner(lambda _wl: math.inf, ready_delay=0.5)
    runner.start(wl("a", admitted_at=10.0), 10.0)
    assert kinds(runner.poll(10.5)) == [("ns/a", "ready")]
    assert runner.next_due() is None  # no timer: the hub waits for events, not for the end of time
    assert runner.poll(1e12) == [] and runner.running == {"ns/a"}
    runner.stop("ns/a", 20.0)
    assert kinds(runner.poll(20.0)) == [("ns/a", "stopped")]


def test_a_resumed_run_keeps_its_committed_start() -> None:
    """After a restart the run ends at admission + duration, not restart + duration."""
    runner = SimRunner(ready_delay=0.1)
    runner.start(wl("a", "10s", admitted_at=1000.0), now=1006.0)
    assert kinds(runner.poll(1006.0)) == [("ns/a", "ready")]
    assert runner.poll(1009.9) == []
    assert kinds(runner.poll(1010.0)) == [("ns/a", "succeeded")]


def test_overdue_resumed_run_finishes_at_once() -> None:
    runner = SimRunner()
    runner.start(wl("a", "1s", admitted_at=0.0), now=50.0)
    assert kinds(runner.poll(50.0)) == [("ns/a", "ready"), ("ns/a", "succeeded")]


def test_stop_reports_stopped_and_cancels_timers() -> None:
    runner = SimRunner()
    runner.start(wl("a", "1s", admitted_at=0.0), 0.0)
    runner.stop("ns/a", 0.5)
    assert runner.next_due() == float("-inf")
    assert kinds(runner.poll(5.0)) == [("ns/a", "stopped")]
    assert runner.poll(10.0) == []


def test_restarted_run_ignores_the_old_timers() -> None:
    runner = SimRunner(ready_delay=0.0)
    runner.start(wl("a", "1s", admitted_at=0.0), 0.0)
    runner.stop("ns/a", 0.2)
    runner.poll(0.2)
    runner.start(wl("a", "1s", admitted_at=5.0), 5.0)  # admitted again
    assert kinds(runner.poll(1.5)) == []
    assert kinds(runner.poll(6.0)) == [("ns/a", "ready"), ("ns/a", "succeeded")]


def test_discard_forgets_silently() -> None:
    runner = SimRunner()
    runner.start(wl("a", "1s", admitted_at=0.0), 0.0)
    runner.discard("ns/a")
    assert runner.poll(5.0) == [] and runner.next_due() is None


def test_duration_annotation_parsing() -> None:
    assert duration_annotation({}) is None
    assert duration_annotation({"mkhub.dev/sim-duration": "1m30s"}) == 90.0
    assert duration_annotation({"mkhub.dev/sim-duration": "250ms"}) == 0.25
    with pytest.raises(ValueError):
        duration_annotation({"mkhub.dev/sim-duration": "soon"})


@pytest.mark.parametrize("kind", ["RayCluster", "RayService"])
def test_a_kind_that_never_finishes_runs_until_stopped(kind: str) -> None:
    """Kueue never finishes a RayCluster's or a RayService's Workload: it holds quota while it exists."""
    w = wl("c", "2s", admitted_at=100.0)
    w.meta.owner_references = [{"apiVersion": "ray.io/v1", "kind": kind, "name": "c", "uid": "u", "controller": True}]
    runner = SimRunner(ready_delay=0.5)
    runner.start(w, 100.0)
    assert kinds(runner.poll(1e9)) == [("ns/c", "ready")]
    assert runner.running == {"ns/c"} and runner.next_due() is None
    runner.stop("ns/c", 2e9)
    assert kinds(runner.poll(2e9)) == [("ns/c", "stopped")]
