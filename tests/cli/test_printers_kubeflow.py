"""`mkhub get` tables of MPIJobs and TrainJobs: their CRDs' printer columns (Age, and State: the
last condition's type), as kubectl prints them."""

from __future__ import annotations

from hub.ctl.printers import table

CREATED = {"creationTimestamp": "1970-01-01T00:00:00Z"}
CONDITIONS = {"conditions": [{"type": "Created", "status": "True"}, {"type": "Succeeded", "status": "True"}]}


def test_an_mpijob_prints_its_age_then_its_state() -> None:
    done = {"metadata": {"name": "pi", **CREATED}, "status": CONDITIONS}
    fresh = {"metadata": {"name": "new", **CREATED}}
    assert table("MPIJob", [done, fresh], now=120.0).splitlines() == [
        "NAME   AGE   STATE",
        "pi     2m    Succeeded",
        "new    2m",
    ]


def test_a_trainjob_prints_its_state_then_its_age() -> None:
    done = {"metadata": {"name": "train", **CREATED}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    assert table("TrainJob", [done], now=120.0).splitlines() == [
        "NAME    STATE      AGE",
        "train   Complete   2m",
    ]
