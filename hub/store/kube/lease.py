"""Leader election over a ``coordination.k8s.io/v1`` Lease (our own: the client's
``leaderelection`` package has no Lease lock we can use with plain dicts).

The rules are client-go's:

* a candidate **acquires** the Lease when it does not exist, when it names no
  holder, or when its record has not changed for ``lease_duration`` as measured
  on the candidate's own clock since it first saw that record (never by
  comparing timestamps written by another machine's clock);
* the leader **renews** every ``retry_period`` (a PUT with the Lease's
  resourceVersion, so two candidates can never both win one round);
* a leader that has not renewed successfully for ``renew_deadline`` **stops
  leading at once**: :meth:`Elector.is_leader` turns false, the store's fence
  refuses writes and ``mkhub serve`` exits. ``renew_deadline < lease_duration``
  leaves the old leader time to stop before anyone else may take over.

:class:`Elector` is the state machine (no I/O, clock passed in); :class:`LeaseLock`
does the HTTP; :class:`LeaderElection` runs them on a thread.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from hub.store.interface import StoreError

from . import requests as rq
from .transport import Transport, TransportError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LeaseConfig:
    identity: str
    name: str = "mkhub-hub-leader"
    namespace: str = "default"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("leader election needs an identity")
        if self.lease_duration != int(self.lease_duration):
            # The Lease records leaseDurationSeconds as an integer: a fraction would be cut off
            # there, and others could take over before our renew deadline ends our leadership.
            raise ValueError(
                f"lease duration {self.lease_duration:g}s: must be a whole number of seconds "
                "(a Lease records leaseDurationSeconds as an integer)"
            )
        if not (0 < self.retry_period < self.renew_deadline < self.lease_duration):
            raise ValueError("leader election needs retry_period < renew_deadline < lease_duration")


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    holder: str = ""
    duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    transitions: int = 0

    @classmethod
    def of(cls, lease: dict[str, Any]) -> LeaseRecord:
        spec = lease.get("spec") or {}
        return cls(
            str(spec.get("holderIdentity") or ""),
            int(spec.get("leaseDurationSeconds") or 0),
            spec.get("acquireTime"),
            spec.get("renewTime"),
            int(spec.get("leaseTransitions") or 0),
        )

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration_seconds,
            "leaseTransitions": self.transitions,
        }
        if self.acquire_time:
            out["acquireTime"] = self.acquire_time
        if self.renew_time:
            out["renewTime"] = self.renew_time
        return out


def micro_time(wall: float) -> str:
    """metav1.MicroTime as the API server writes it."""
    return datetime.fromtimestamp(wall, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class Wait:
    """Someone else holds a live lease."""

    holder: str


@dataclass(frozen=True, slots=True)
class Write:
    """Write this record: create the Lease (``create``) or replace it (renew or take over)."""

    record: LeaseRecord
    create: bool


class Elector:
    """The election's state machine. ``now`` is a monotonic clock reading, ``wall`` the time
    of day written into the Lease (informational; nobody compares it)."""

    def __init__(self, config: LeaseConfig) -> None:
        self.config = config
        self.observed: LeaseRecord | None = None
        self.observed_at = 0.0  # when ``observed`` last changed, by our clock
        self.renewed_at: float | None = None  # our last successful write as holder
        self.became_leader = 0

    def decide(self, current: LeaseRecord | None, now: float, wall: float) -> Wait | Write:
        me = self.config.identity
        stamp = micro_time(wall)
        if current is None:
            return Write(LeaseRecord(me, int(self.config.lease_duration), stamp, stamp, 0), create=True)
        if current != self.observed:
            self.observed = current
            self.observed_at = now
        if current.holder == me:
            return Write(replace(current, renew_time=stamp, duration_seconds=int(self.config.lease_duration)), create=False)
        duration = current.duration_seconds or self.config.lease_duration
        if current.holder and now < self.observed_at + duration:
            return Wait(current.holder)
        return Write(
            LeaseRecord(me, int(self.config.lease_duration), stamp, stamp, current.transitions + 1), create=False
        )

    def wrote(self, record: LeaseRecord, now: float) -> bool:
        """Our write landed. Returns True when this made us the leader."""
        was = self.renewed_at is not None
        self.observed = record
        self.observed_at = now
        self.renewed_at = now
        if not was:
            self.became_leader += 1
        return not was

    def is_leader(self, now: float) -> bool:
        return self.renewed_at is not None and now - self.renewed_at < self.config.renew_deadline

    def remaining(self, now: float) -> float:
        """How long we may still act as the leader without another renewal (0 when we may not):
        a write must land within it, since a successor may take over not long after."""
        if self.renewed_at is None:
            return 0.0
        return max(0.0, self.renewed_at + self.config.renew_deadline - now)

    def lost(self, now: float) -> bool:
        """We led and can no longer claim to (the renew deadline passed)."""
        return self.renewed_at is not None and not self.is_leader(now)


class LeaseLock:
    """GET / POST / PUT of one Lease over a transport."""

    def __init__(self, transport: Transport, config: LeaseConfig) -> None:
        self.transport = transport
        self.config = config
        self._lease: dict[str, Any] | None = None

    @property
    def known(self) -> bool:
        """The Lease as last read or written is held (a replace can be sent at its version)."""
        return self._lease is not None

    def read(self, timeout: float | None = None) -> LeaseRecord | None:
        """``timeout``: how long the request may take (the retry period by default)."""
        resp = self.transport.send(rq.get(rq.LEASE, self.config.namespace, self.config.name),
                                   timeout=timeout or self.config.retry_period)
        if resp.status == 404:
            self._lease = None
            return None
        if not resp.ok:
            raise StoreError(f"get Lease {self.config.namespace}/{self.config.name}: HTTP {resp.status}")
        self._lease = resp.json()
        return LeaseRecord.of(self._lease)

    def write(self, record: LeaseRecord, create: bool, timeout: float | None = None) -> bool:
        """True when the write landed; False when someone else wrote first (409)."""
        if create:
            body: dict[str, Any] = {"metadata": {"name": self.config.name, "namespace": self.config.namespace}, "spec": record.spec()}
            req = rq.create(rq.LEASE, body, field_manager=None)
        else:
            assert self._lease is not None
            body = {**self._lease, "spec": record.spec()}
            req = rq.replace(rq.LEASE, body, field_manager=None)
        resp = self.transport.send(req, timeout=timeout or self.config.retry_period)
        if resp.status == 409:
            return False
        if not resp.ok:
            raise StoreError(f"write Lease {self.config.namespace}/{self.config.name}: HTTP {resp.status}: {resp.body[:200]!r}")
        self._lease = json.loads(resp.body)
        return True


class LeaderElection:
    """Runs the election on a thread: ``on_started`` when we become leader, ``on_lost`` once
    when we stop being it. ``is_leader()`` is the fence for the store's writes."""

    def __init__(
        self,
        transport: Transport,
        config: LeaseConfig,
        *,
        on_started: Callable[[], None] | None = None,
        on_lost: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.elector = Elector(config)
        self.lock = LeaseLock(transport, config)
        self.on_started = on_started
        self.on_lost = on_lost
        self.clock = clock
        self.wall = wall
        self.leading = threading.Event()
        self.lost_event = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mkhub-leader-election", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.config.retry_period * 2 + 5)

    def is_leader(self) -> bool:
        return not self.lost_event.is_set() and self.elector.is_leader(self.clock())

    def remaining(self) -> float:
        """Seconds our leadership lasts without another renewal; the store bounds its writes by it."""
        return 0.0 if self.lost_event.is_set() else self.elector.remaining(self.clock())

    def step(self) -> None:
        """One try to acquire or renew. Its requests may take what is left of the renew deadline
        (client-go runs a renewal under a context of RenewDeadline), not just the retry period: an
        API server slower than that under load (0.5 s in the e2e tests) must not cost the Lease."""
        try:
            budget = max(self.config.retry_period, self.elector.remaining(self.clock()) or self.config.renew_deadline)
            started = self.clock()
            if not self._renewed_optimistically(budget):
                self._acquire_or_renew(budget, started)
        except (TransportError, StoreError, ValueError) as exc:
            log.warning("leader election: %s", exc)
        now = self.clock()
        if self.elector.lost(now) and not self.lost_event.is_set():
            log.error("lost the leader Lease (no renewal for %.1fs): stopping", self.config.renew_deadline)
            self.lost_event.set()
            self.leading.clear()
            if self.on_lost is not None:
                self.on_lost()

    def _renewed_optimistically(self, budget: float) -> bool:
        """client-go's fast path: the leader writes its renewal at the version it last wrote, one
        request instead of a read and a write; a 409 (the Lease changed) or an error falls back."""
        mine = self.elector.observed
        if (not self.elector.is_leader(self.clock()) or mine is None or mine.holder != self.config.identity
                or not self.lock.known):
            return False
        renewal = self.elector.decide(mine, self.clock(), self.wall())  # ours as last written: a renewal
        assert isinstance(renewal, Write)
        try:
            landed = self.lock.write(renewal.record, create=False, timeout=budget)
        except (TransportError, StoreError) as exc:
            log.info("leader election: optimistic renewal failed, reading the Lease: %s", exc)
            return False
        if landed:
            self.elector.wrote(renewal.record, self.clock())
        return landed

    def _acquire_or_renew(self, budget: float, started: float) -> None:
        """Read the Lease, then take it over, renew it, or wait, as the elector decides."""
        def left() -> float:
            return max(self.config.retry_period, budget - (self.clock() - started))

        current = self.lock.read(left())
        decision = self.elector.decide(current, self.clock(), self.wall())
        if not isinstance(decision, Write) or not self.lock.write(decision.record, decision.create, left()):
            return
        if self.elector.wrote(decision.record, self.clock()):
            log.info("became the leader (Lease %s/%s)", self.config.namespace, self.config.name)
            self.leading.set()
            if self.on_started is not None:
                self.on_started()

    def _run(self) -> None:
        while not self._stop.is_set() and not self.lost_event.is_set():
            self.step()
            self._stop.wait(self.config.retry_period)

    def release(self) -> None:
        """On a clean shutdown: give the Lease up so a standby takes over at once."""
        if not self.is_leader():
            return
        try:
            current = self.lock.read()
            if current is not None and current.holder == self.config.identity:
                self.lock.write(replace(current, holder="", renew_time=micro_time(self.wall())), create=False)
        except (TransportError, StoreError) as exc:
            log.warning("could not release the Lease: %s", exc)
