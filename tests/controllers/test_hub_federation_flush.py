"""On a store without transactions (the Kubernetes store: ``atomic_batches = False``) the round's
messages to agents leave once the Workload statuses they act on have landed, before the Jobs' and
the rest's writes (hub.controllers.hub, rule 2 without transactions); on a transactional store, only
after the commit."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from hub_objects import is_true
from test_hub_federation import FailingStore, Hub

from hub.store.interface import Object, Refused


class Recorded(FailingStore):
    """The real store, logging each write's kind in order (the Hub harness's store)."""

    def __init__(self, log: list[str], atomic: bool) -> None:
        super().__init__()
        self.log = log
        self.atomic_batches = atomic

    def create(self, obj: Mapping[str, Any]) -> Object:
        self.log.append(f"create {obj['kind']}")
        return super().create(obj)

    def update(self, obj: Mapping[str, Any]) -> Object:
        self.log.append(f"update {obj['kind']}")
        return super().update(obj)

    def update_status(self, obj: Mapping[str, Any]) -> Object:
        self.log.append(f"status {obj['kind']}")
        return super().update_status(obj)

    def create_many(self, objs: Sequence[Mapping[str, Any]]) -> list[Object | Refused]:
        self.log.extend(f"create {o['kind']}" for o in objs)
        return super().create_many(objs)

    def update_status_many(self, objs: Sequence[Mapping[str, Any]], *, brief: bool = False) -> list[Object | Refused]:
        self.log.extend(f"status {o['kind']}" for o in objs)
        return super().update_status_many(objs, brief=brief)


def _hub(atomic: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Hub, list[str]]:
    log: list[str] = []
    monkeypatch.setattr("test_hub_federation.FailingStore", lambda: Recorded(log, atomic))
    hub = Hub()
    flush = hub.mk.flush

    def logged_flush() -> None:
        log.append("flush")
        flush()

    monkeypatch.setattr(hub.mk, "flush", logged_flush)
    hub.rec = hub.build()  # with the logging flush
    return hub, log


@pytest.fixture(params=[False, True], ids=["kubernetes-store", "transactional"])
def wired(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Hub, list[str], bool]]:
    hub, log = _hub(request.param, monkeypatch)
    yield hub, log, request.param
    hub.store.close()


def test_the_start_leaves_after_the_admission_landed_and_before_the_jobs_writes(wired: tuple[Hub, list[str], bool]) -> None:
    hub, log, atomic = wired
    hub.round()
    hub.net.connect("worker-1")
    hub.exchange()
    hub.round()  # reserved, dispatched
    hub.exchange()  # the worker admits its copy and says so
    log.clear()
    hub.round()  # the winner: the Workload admitted, the Job unsuspended, the Start to the agent
    assert is_true(hub.workload(), "Admitted")
    job_write = next(i for i, line in enumerate(log) if line.endswith(" Job"))
    assert "status Workload" in log and log.count("flush") == (1 if atomic else 2)
    first = log.index("flush")
    if atomic:
        assert first == len(log) - 1  # after the commit: the round's last step
    else:
        assert log.index("status Workload") < first < job_write
    hub.exchange()
    key = f"team/{hub.workload()['metadata']['name']}"
    assert hub.agent.copies[key].started
