"""The leader election state machine with an injected clock (no I/O)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hub.store.kube.lease import Elector, LeaseConfig, LeaseRecord, Wait, Write

CFG = LeaseConfig("a", lease_duration=15, renew_deadline=10, retry_period=2)


def test_creates_a_missing_lease() -> None:
    e = Elector(CFG)
    d = e.decide(None, now=0.0, wall=0.0)
    assert isinstance(d, Write) and d.create
    assert (d.record.holder, d.record.duration_seconds, d.record.transitions) == ("a", 15, 0)
    assert d.record.renew_time == "1970-01-01T00:00:00.000000Z"
    assert not e.is_leader(0.0)
    assert e.wrote(d.record, 0.0) is True
    assert e.is_leader(0.0)


def test_waits_while_another_holder_renews() -> None:
    e = Elector(CFG)
    theirs = LeaseRecord("b", 15, "t0", "t0", 3)
    assert e.decide(theirs, now=0.0, wall=0.0) == Wait("b")
    # The holder renews (the record changes): the 15 s count starts again from our observation.
    renewed = replace(theirs, renew_time="t1")
    assert e.decide(renewed, now=14.0, wall=0.0) == Wait("b")
    assert e.decide(renewed, now=28.9, wall=0.0) == Wait("b")
    take = e.decide(renewed, now=29.0, wall=0.0)
    assert isinstance(take, Write) and not take.create
    assert (take.record.holder, take.record.transitions) == ("a", 4)


def test_an_empty_holder_is_taken_at_once() -> None:
    e = Elector(CFG)
    released = LeaseRecord("", 15, "t0", "t0", 2)
    d = e.decide(released, now=0.0, wall=0.0)
    assert isinstance(d, Write) and d.record.holder == "a" and d.record.transitions == 3


def test_the_holder_renews_and_keeps_its_transitions() -> None:
    e = Elector(CFG)
    mine = LeaseRecord("a", 15, "t0", "t0", 5)
    d = e.decide(mine, now=1.0, wall=10.0)
    assert isinstance(d, Write) and d.record.holder == "a" and d.record.transitions == 5 and d.record.acquire_time == "t0"
    assert d.record.renew_time != "t0"


def test_leadership_ends_at_the_renew_deadline() -> None:
    e = Elector(CFG)
    d = e.decide(None, now=0.0, wall=0.0)
    assert isinstance(d, Write)
    e.wrote(d.record, 0.0)
    assert e.is_leader(9.99)
    assert not e.lost(9.99)
    assert not e.is_leader(10.0)  # no renewal for renew_deadline: stop writing
    assert e.lost(10.0)
    e.wrote(d.record, 10.5)
    assert e.is_leader(10.5)


def test_a_follower_never_claims_leadership() -> None:
    e = Elector(CFG)
    e.decide(LeaseRecord("b", 15, "t", "t", 0), now=0.0, wall=0.0)
    assert not e.is_leader(0.0) and not e.lost(100.0)


def test_config_checks_the_timing_order() -> None:
    with pytest.raises(ValueError):
        LeaseConfig("a", lease_duration=10, renew_deadline=10, retry_period=2)
    with pytest.raises(ValueError):
        LeaseConfig("")


def test_a_fractional_lease_duration_is_refused_not_truncated() -> None:
    # The Lease holds whole seconds: 10.5 would be written as 10, under the 10.2 s renew deadline,
    # and a standby could take over while we still write.
    with pytest.raises(ValueError, match=r"lease duration 10.5s: must be a whole number of seconds"):
        LeaseConfig("a", lease_duration=10.5, renew_deadline=10.2, retry_period=2)


def test_remaining_is_what_is_left_of_the_renew_deadline() -> None:
    e = Elector(CFG)
    assert e.remaining(0.0) == 0.0  # not leading
    d = e.decide(None, now=0.0, wall=0.0)
    assert isinstance(d, Write)
    e.wrote(d.record, 1.0)
    assert e.remaining(4.0) == CFG.renew_deadline - 3.0
    assert e.remaining(100.0) == 0.0
