"""The Kubernetes-mode agent writes a won copy's Workload no more at run start when the copy runs
as a worker object (issue 26: one request per MultiKueue Job to the worker's API server): the
object it creates, annotated with the copy's dispatch id, is what tells a restarted agent that
the copy started, so nothing is started twice and nothing is lost."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from hub.controllers.simrunner import SimRunner
from hub.federation.mkwire import DISPATCH_ID_ANNOTATION
from hub.store import SQLiteStore
from worker_agent.kube import mirror as mirror_module
from worker_agent.kube.jobs import KubeJobs
from worker_agent.kube.mirror import Mirror, Wanted
from worker_agent.kube.pods import PREBUILT_WORKLOAD_LABEL

from .mk_harness import job as hub_job
from .test_agent import Worker, dispatch, hub_workload, start
from .test_mkw_mirror import Desires

pytestmark = pytest.mark.timeout(60)


def _dispatch_with_job(name: str, did: str) -> Any:
    item = dispatch(hub_workload(name), did)
    item.dispatch.job_json = json.dumps({**hub_job(name), "metadata": {"name": name, "namespace": "team", "uid": f"job-{name}"}})
    return item


def _won_copy(name: str, did: str) -> tuple[Worker, Mirror, Desires, Wanted]:
    w = Worker(cpu="100")
    writer = Desires()
    m = Mirror(SimpleNamespace(), w.agent, SimpleNamespace(), writer)  # type: ignore[arg-type]
    w.agent.on_change = m.mark
    w.give(_dispatch_with_job(name, did))
    m.sync()
    (_, created), = writer.take()
    assert isinstance(created, Wanted)
    w.give(start(did))
    assert w.agent.copies[f"team/{name}"].started
    return w, m, writer, created


def test_a_copy_running_as_a_job_is_not_written_again_at_run_start() -> None:
    _, m, writer, _ = _won_copy("a", "team/a/0.1")
    m.mark()
    m.sync()
    assert writer.take() == []  # neither its record nor its status changed


def _restore(tmp_path: Path, wanted: Wanted, job_annotations: dict[str, str] | None) -> Any:
    tmp_path.mkdir()
    with SQLiteStore(tmp_path / "worker.db") as store:
        store.create({**mirror_module._with_annotation(wanted.manifest, wanted.record), "status": wanted.status})
        if job_annotations is not None:
            store.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
                "name": "a", "namespace": "team", "labels": {PREBUILT_WORKLOAD_LABEL: "a"}, "annotations": job_annotations},
                "spec": hub_job("a")["spec"]})
        fresh = Worker(cpu="100")
        restored = Mirror(store, fresh.agent, SimpleNamespace(by_job={}), Desires())  # type: ignore[arg-type]
        assert restored.restore(fresh.now) == 1
        return fresh.agent.copies["team/a"]


def test_a_restarted_agent_reads_the_start_from_the_job_of_that_dispatch_alone(tmp_path: Path) -> None:
    _, _, _, wanted = _won_copy("a", "team/a/0.1")
    c = _restore(tmp_path / "ran", wanted, {DISPATCH_ID_ANNOTATION: "team/a/0.1"})
    assert c.started and c.sent_running  # it runs on, followed: never started twice
    # No Job (the agent died between the Start and its creation: the hub sends Start again to a
    # winner holding an admitted copy), or one an earlier dispatch of that name left: not started.
    for i, job_annotations in enumerate([None, {DISPATCH_ID_ANNOTATION: "team/a/0.0"}, {}]):
        c = _restore(tmp_path / str(i), wanted, job_annotations)
        assert not c.started and c.sent_admitted


def test_the_worker_job_carries_the_dispatch_id() -> None:
    w = Worker(cpu="100")
    w.give(_dispatch_with_job("a", "team/a/0.1"))
    wl = w.engine.workloads["team/a"]
    asked = Desires()
    runner = KubeJobs(origin="mk", job_of=lambda key: w.agent.copies[key].job, flavor=lambda name: None,
                      current_job=lambda ref: None, desire=asked.desire, sim=SimRunner(),
                      dispatch_of=lambda key: w.agent.copies[key].did)
    runner.start(wl, w.now)
    (ref, wanted), = asked.take()
    assert ref == "Job:team/a"
    assert wanted.manifest["metadata"]["annotations"][DISPATCH_ID_ANNOTATION] == "team/a/0.1"  # type: ignore[attr-defined]
