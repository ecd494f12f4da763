"""Leader election's bounds on the store: writes limited to what is left of the lease, and
Lease renewals outside the writers' rate limit."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hub.store.kube import ApiClientTransport, KubeStore, KubeStoreOptions, NotLeader
from hub.store.kube import requests as rq
from hub.store.kube.transport import REQUEST_TIMEOUT, Response


class Recording:
    """A transport that answers every write with the object sent, and records the timeouts."""

    def __init__(self) -> None:
        self.sent: list[tuple[rq.Request, float]] = []

    def send(self, req: rq.Request, *, timeout: float = REQUEST_TIMEOUT) -> Response:
        self.sent.append((req, timeout))
        body: dict[str, Any] = json.loads(req.body or b"{}")
        body.setdefault("metadata", {})["resourceVersion"] = "7"
        return Response(201, json.dumps(body).encode())

    def stream(self, req: rq.Request, *, read_timeout: float) -> Any:
        raise AssertionError("no watches without kinds")

    def close(self) -> None:
        pass


def flavor(name: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name}}


def test_a_write_is_bounded_by_the_lease_left() -> None:
    left = [4.5]
    transport = Recording()
    store = KubeStore(transport, KubeStoreOptions(kinds=()), fence=lambda: True, lease_remaining=lambda: left[0])
    store.create(flavor("a"))
    assert transport.sent[-1][1] == 4.5  # not the 30 s request timeout: a successor may lead by then
    left[0] = 0.0
    with pytest.raises(NotLeader):
        store.create(flavor("b"))
    assert len(transport.sent) == 1


def _transport(qps: float = 0.0, burst: int = 1) -> ApiClientTransport:
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host = "http://127.0.0.1:9"
    return ApiClientTransport(cfg, qps=qps, burst=burst)


def test_a_short_write_tells_the_server_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    transport = _transport()
    opened: list[rq.Request] = []

    class _Resp:
        status = 200

        def read(self) -> bytes:
            return b"{}"

        def release_conn(self) -> None:
            pass

    monkeypatch.setattr(transport, "_open", lambda req, timeout: opened.append(req) or _Resp())
    transport.send(rq.create(rq.resource_for("ResourceFlavor"), flavor("a")), timeout=2.5)
    transport.send(rq.list_(rq.resource_for("ResourceFlavor")), timeout=2.5)
    transport.send(rq.create(rq.resource_for("ResourceFlavor"), flavor("b")))
    assert ("timeout", "2500ms") in opened[0].query  # kube-apiserver abandons it after that
    assert all(k != "timeout" for k, _ in opened[1].query + opened[2].query)
    transport.close()


def test_lease_renewals_have_their_own_rate_limit() -> None:
    transport = _transport(qps=1.0, burst=1)
    leases = transport.for_leases()
    assert transport.limiter.reserve() == 0.0
    assert transport.limiter.reserve() > 0  # the writers must wait now...
    assert leases.limiter.reserve() == 0.0  # ...a renewal need not
    assert leases.api is transport.api  # one client, one connection pool
    closed: list[bool] = []
    real_close = transport.api.close
    transport.api.close = lambda: closed.append(True)  # type: ignore[method-assign]
    leases.close()
    assert closed == []  # the owner closes the shared client, not the election
    transport.close()
    assert closed == [True]
    real_close()


class SlowLeases:
    """One Lease, served in ``delay`` seconds of a fake clock; a request given less than that times out."""

    def __init__(self, clock: list[float], delay: float) -> None:
        self.clock = clock
        self.delay = delay
        self.lease: dict[str, Any] | None = None
        self.timeouts: list[float] = []

    def send(self, req: rq.Request, *, timeout: float = REQUEST_TIMEOUT) -> Response:
        from hub.store.kube.transport import TransportError

        self.timeouts.append(timeout)
        self.clock[0] += min(timeout, self.delay)
        if timeout < self.delay:
            raise TransportError(f"{req.method} {req.path}: timed out after {timeout}s")
        if req.method == "GET":
            return Response(404, b"") if self.lease is None else Response(200, json.dumps(self.lease).encode())
        sent = json.loads(req.body or b"{}")
        if req.method == "PUT" and self.lease is not None and (
                sent["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]):
            return Response(409, b"{}")
        self.lease = sent
        self.lease.setdefault("metadata", {})["resourceVersion"] = str(len(self.timeouts))
        return Response(201 if req.method == "POST" else 200, json.dumps(self.lease).encode())

    def stream(self, req: rq.Request, *, read_timeout: float) -> Any:
        raise AssertionError("no watches")

    def close(self) -> None:
        pass


def test_a_leader_keeps_the_lease_through_renewals_slower_than_the_retry_period() -> None:
    from hub.store.kube.lease import LeaderElection, LeaseConfig

    clock = [100.0]
    leases = SlowLeases(clock, delay=0.8)  # kube-apiserver under load; each renewal takes 1.6 s
    config = LeaseConfig("me", lease_duration=3, renew_deadline=2, retry_period=0.5)
    election = LeaderElection(leases, config, clock=lambda: clock[0], wall=lambda: clock[0])  # type: ignore[arg-type]
    for _ in range(10):
        election.step()
        assert election.is_leader(), leases.timeouts
        clock[0] += config.retry_period
    assert max(leases.timeouts) <= config.renew_deadline  # within what is left of the renew deadline
    assert len(leases.timeouts) == 2 + 9  # a read and a create, then client-go's one-request renewals


def test_a_renewal_that_finds_the_lease_changed_reads_it_and_never_overwrites_another_holder() -> None:
    from hub.store.kube.lease import LeaderElection, LeaseConfig

    clock = [100.0]
    leases = SlowLeases(clock, delay=0.0)
    config = LeaseConfig("me", lease_duration=3, renew_deadline=2, retry_period=0.5)
    election = LeaderElection(leases, config, clock=lambda: clock[0], wall=lambda: clock[0])  # type: ignore[arg-type]
    election.step()
    assert election.is_leader()
    assert leases.lease is not None
    leases.lease["spec"]["holderIdentity"] = "other"  # e.g. an operator's edit
    leases.lease["metadata"]["resourceVersion"] = "taken"
    for _ in range(6):
        clock[0] += config.retry_period
        election.step()
    assert not election.is_leader() and election.lost_event.is_set()
    assert leases.lease["spec"]["holderIdentity"] == "other"
