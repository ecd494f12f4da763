"""The agent's status write of a copy reads the copy's Workload from the cache without a deep copy
(issue 26: the whole Workload, managedFields included, was copied for each status write, and only
read): the write still lands, and the cache's object is left as it was."""

from __future__ import annotations

import contextlib
import copy

import pytest

from hub.store.interface import AlreadyExists, NotFound, ObjectKey
from tests.federation.test_agent import Worker, dispatch, hub_workload
from worker_agent.kube.mirror import Wanted

from .conftest import ApiServer, open_store
from .test_h20_agent_writes import _mode

pytestmark = pytest.mark.timeout(90)


def test_a_copys_status_write_reads_the_cache_without_copying_it(api: ApiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from hub.store.kube import cache as cache_module

    with open_store(api.kubeconfig) as store:
        with contextlib.suppress(AlreadyExists):
            store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
        w = Worker(cpu="100")
        mode, mirror, writer = _mode(store, w)
        w.give(dispatch(hub_workload("h26-a"), "team/h26-a/0.1"))
        mirror.sync()
        (item,) = writer.take()
        assert mode._apply_many([item]) == [None]
        a = item[1]
        assert isinstance(a, Wanted)
        status = {**a.status, "conditions": [c for c in a.status["conditions"] if c["type"] != "Admitted"]}
        changed = Wanted(a.manifest, a.record, status, a.status_json + " ")
        entry = store.cache.entry(ObjectKey("Workload", "team", "h26-a"))
        assert entry is not None
        cached = copy.deepcopy(entry.obj)

        def copied(*args: object, **kwargs: object) -> object:
            raise AssertionError("deep-copied the cache")

        monkeypatch.setattr(cache_module, "with_seq", copied)
        planned = mirror.plan("team/h26-a", changed)
        monkeypatch.undo()
        assert planned is not None and planned[1]["status"] == status
        assert entry.obj == cached  # the plan changed nothing it shares with the cache
        assert mode._apply_many([("Workload:team/h26-a", changed)]) == [None]
        stored = store.get("Workload", "team", "h26-a")
        assert stored is not None and [c["type"] for c in stored["status"]["conditions"]] == \
            [c["type"] for c in status["conditions"]]
        with contextlib.suppress(NotFound):
            store.delete("Workload", "team", "h26-a")
