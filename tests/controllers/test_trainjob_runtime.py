"""A TrainJob's Workload comes from its runtime (hub.controllers.jobs' referenced objects): none
while the runtime is missing, as Kueue's reconciler cannot build one, and made once it exists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hub_objects import T0, setup_objects

from hub.api.config import parse_configuration
from hub.controllers.hub import HubReconciler
from hub.store import SQLiteStore

SHAPED = Path(__file__).resolve().parents[2] / "e2e" / "kueue-shaped"
CONFIG = parse_configuration({"integrations": {"frameworks": ["batch/job", "trainer.kubeflow.org/trainjob"]}})


def docs() -> tuple[dict[str, Any], dict[str, Any]]:
    runtime, job = yaml.safe_load_all((SHAPED / "trainjob-cluster-runtime.yaml").read_text())
    job["metadata"].update(namespace="team", labels={"kueue.x-k8s.io/queue-name": "lq"})
    del job["spec"]["trainer"]["resourcesPerNode"]["requests"]["nvidia.com/gpu"]
    job["spec"]["trainer"]["resourcesPerNode"]["requests"] = {"cpu": "1"}
    job["spec"]["suspend"] = True  # as Kueue's webhook (mkhub apply) creates it
    return runtime, job


def test_a_trainjob_waits_for_its_runtime_then_gets_its_workload_and_runs(store: SQLiteStore) -> None:
    runtime, job = docs()
    with store.batch():
        for obj in [*setup_objects(cpu=4), job]:
            store.create(obj)
    rec = HubReconciler(store, CONFIG, T0, ready_delay=0.0)
    rec.load(T0)
    rec.round(T0)
    assert store.list("Workload")[0] == []
    _, rv = store.list("Namespace")
    watch = store.watch(None, since=rv)
    store.create(runtime)
    event = watch.next(timeout=5)
    assert event is not None
    rec.observe(event, T0 + 1)
    rec.round(T0 + 1)
    (wl,) = store.list("Workload")[0]
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("node", 2)]
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    stored = store.get("TrainJob", "team", "pytorch-distributed")
    assert stored is not None and stored["spec"]["suspend"] is False  # admitted: 2 cpu of 4


def test_a_restarted_hub_finds_the_workload_of_a_trainjob_whose_runtime_it_reads_later(store: SQLiteStore) -> None:
    runtime, job = docs()
    with store.batch():
        for obj in [*setup_objects(cpu=4), runtime, job]:
            store.create(obj)
    first = HubReconciler(store, CONFIG, T0, ready_delay=0.0)
    first.load(T0)
    first.round(T0)
    (wl,) = store.list("Workload")[0]
    again = HubReconciler(store, CONFIG, T0 + 5, ready_delay=0.0)
    again.load(T0 + 5)
    again.round(T0 + 5)
    assert [w["metadata"]["uid"] for w in store.list("Workload")[0]] == [wl["metadata"]["uid"]]
