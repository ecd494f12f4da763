"""The Kubernetes-mode agent's writes of one turn go out gathered (issue 26: one round trip through
urllib3 each was a seventh of an agent's CPU): the copies' Workload creates, status writes and
deletes and the runs' Job creates in one batch of ``KubeStore.write_gathered``, the statuses the
server dropped from the creates in a second, and each lands as its own write did (the cache, the
copy's record, an existing object taken over, a refusal reported for its key alone)."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace
from typing import Any

import pytest

from hub.store.interface import AlreadyExists, NotFound
from hub.store.kube import KubeStore
from hub.store.kube.requests import Request
from tests.federation.mk_harness import job as hub_job
from tests.federation.test_agent import Worker, dispatch, hub_workload
from tests.federation.test_mkw_mirror import Desires
from worker_agent.kube.jobs import JobWanted
from worker_agent.kube.mirror import COLLECT, COPY_ANNOTATION, Mirror, Wanted
from worker_agent.kube.mode import KubeMode
from worker_agent.kube.pods import PREBUILT_WORKLOAD_LABEL

from .conftest import ApiServer, open_store

pytestmark = pytest.mark.timeout(90)


def _counted(store: KubeStore, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The methods of each gathered batch the store sends."""
    batches: list[list[str]] = []
    send_many = store.transport.send_many  # type: ignore[attr-defined]

    def counting(reqs: list[Request], **kwargs: Any) -> Any:
        batches.append([r.method for r in reqs])
        return send_many(reqs, **kwargs)

    monkeypatch.setattr(store.transport, "send_many", counting)
    return batches


def _mode(store: KubeStore, w: Worker) -> tuple[KubeMode, Mirror, Desires]:
    """A KubeMode's writing half on ``store`` (the agent's engine is ``w``'s)."""
    mode = KubeMode.__new__(KubeMode)
    mode.store = store
    writer = Desires()
    mode.mirror = Mirror(store, w.agent, SimpleNamespace(by_job={}), writer)  # type: ignore[arg-type]
    w.agent.on_change = mode.mirror.mark
    return mode, mode.mirror, writer


def _job(name: str, copy: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "team",
            "labels": {PREBUILT_WORKLOAD_LABEL: copy}}, "spec": hub_job(name)["spec"]}


def test_a_turns_writes_go_out_gathered_and_land_as_each_alone_would(api: ApiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_store(api.kubeconfig) as store:
        with contextlib.suppress(AlreadyExists):
            store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
        w = Worker(cpu="100")
        mode, mirror, writer = _mode(store, w)
        w.give(*(dispatch(hub_workload(n), f"team/{n}/0.1") for n in ("a", "b", "c")))
        mirror.sync()
        created = writer.take()
        batches = _counted(store, monkeypatch)
        watch = store.watch(["Workload"], since=store.cache.seq)
        assert mode._apply_many(created) == [None, None, None]
        # The batch's answers wake a watch once, at its end (the cache held meanwhile), with every change.
        seen = []
        while (event := watch.next(timeout=0.5)) is not None:
            seen.append((event.type.value, event.object["metadata"]["name"]))
        watch.close()
        assert sorted(set(seen)) == [("ADDED", n) for n in "abc"] + [("MODIFIED", n) for n in "abc"]
        # The creates together, then the statuses the server dropped from them, together.
        assert batches == [["POST"] * 3, ["PATCH"] * 3]
        for n in ("a", "b", "c"):
            stored = store.get("Workload", "team", n)
            assert stored is not None and stored["status"]["admission"]["clusterQueue"] == "cq"
            assert stored["metadata"]["annotations"][COPY_ANNOTATION] == mirror.live[f"team/{n}"][1]
            assert mirror.live[f"team/{n}"][0] == stored["metadata"]["uid"]

        (_, a), = (item for item in created if item[0] == "Workload:team/a")
        assert isinstance(a, Wanted)
        status = {**a.status, "conditions": [c for c in a.status["conditions"] if c["type"] != "Admitted"]}
        changed = Wanted(a.manifest, a.record, status, a.status_json + " ")
        batches.clear()
        errors = mode._apply_many([
            ("Workload:team/a", changed),  # a status write
            ("Workload:team/b", None),  # withdrawn: deleted
            ("Job:team/ja", JobWanted(_job("ja", "a"))),  # a run's Job
            ("Workload:team/never", None),  # withdrawn before it was written: nothing to send
            ("Workload:team/gone", COLLECT),  # garbage collection of one not there
        ])
        assert errors == [None] * 5
        assert batches == [["PATCH", "DELETE", "POST", "DELETE"]]
        stored_a = store.get("Workload", "team", "a")
        assert stored_a is not None and [c["type"] for c in stored_a["status"]["conditions"]] == \
            [c["type"] for c in status["conditions"]]
        assert mirror.live["team/a"][2] == changed.status_json
        assert store.get("Workload", "team", "b") is None and "team/b" not in mirror.live  # the cache knows at once
        job = store.get("Job", "team", "ja")
        assert job is not None

        # This copy's Job made already (by an earlier process): no error. A copy's Workload left by
        # an earlier process is taken over (its record and status made this copy's).
        fresh = Worker(cpu="100")
        again, again_mirror, _ = _mode(store, fresh)
        c_item = next(item for item in created if item[0] == "Workload:team/c")
        assert again._apply_many([("Job:team/ja", JobWanted(_job("ja", "a"))), c_item]) == [None, None]
        assert again_mirror.live["team/c"][0] == store.get("Workload", "team", "c")["metadata"]["uid"]  # type: ignore[index]

        # A refusal is its key's alone.
        bad = Wanted({**a.manifest, "metadata": {**a.manifest["metadata"], "name": "Not_A_Name"}}, a.record, a.status, "x")
        errors = again._apply_many([("Workload:team/Not_A_Name", bad), ("Workload:team/c", None)])
        assert errors[0] is not None and errors[1] is None
        assert store.get("Workload", "team", "c") is None
        with contextlib.suppress(NotFound):
            store.delete("Job", "team", "ja")


def test_garbage_collection_reads_the_cache_without_copying_it(api: ApiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector reads metadata only: the cache's objects shared, not a deep copy of every
    copy, Job and Pod the worker holds each time it runs (issue 26); it still finds the orphans."""
    from hub.store.kube import cache as cache_module

    with open_store(api.kubeconfig) as store:
        with contextlib.suppress(AlreadyExists):
            store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
        w = Worker(cpu="100")
        mode, mirror, writer = _mode(store, w)
        w.give(*(dispatch(hub_workload(n), f"team/{n}/0.1") for n in ("gc-kept", "gc-orphan")))
        mirror.sync()
        assert mode._apply_many(writer.take()) == [None, None]
        del w.agent.copies["team/gc-orphan"]  # as if withdrawn while the agent was down
        mirror.written.pop("team/gc-orphan")

        def copied(*args: object, **kwargs: object) -> object:
            raise AssertionError("deep-copied the cache")

        monkeypatch.setattr(cache_module, "with_seq", copied)
        assert mirror.collect() >= 1  # (and whatever this module's other tests left in the namespace)
        monkeypatch.undo()
        taken = writer.take()
        assert ("Workload:team/gc-orphan", COLLECT) in taken and not any("gc-kept" in key for key, _ in taken)
        for n in ("gc-kept", "gc-orphan"):
            with contextlib.suppress(NotFound):
                store.delete("Workload", "team", n)
