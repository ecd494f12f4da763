"""The dev-cluster's simulated Spark operator against a real SQLite store driven by a fake clock:
driver first, then executors, COMPLETED when the driver ends; suspend deletes the pods."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from test_devcluster import Clock, advance, cluster

from hub.devcluster.nodes import Node
from hub.store import SQLiteStore

NS = "default"
SAMPLE = Path(__file__).resolve().parents[2] / "e2e" / "kueue-examples" / "sample-sparkapplication.yaml"


def app(*, suspend: bool) -> dict[str, Any]:
    m = yaml.safe_load(SAMPLE.read_text())
    m["metadata"]["namespace"] = NS
    m["spec"]["suspend"] = suspend
    return m  # type: ignore[no-any-return]


def status(store: SQLiteStore) -> dict[str, Any]:
    obj = store.get("SparkApplication", NS, "spark-pi")
    assert obj is not None
    return dict(obj.get("status") or {})


def pods(store: SQLiteStore) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in store.list("Pod", NS)[0]}


def test_the_driver_then_its_executors_run_and_the_application_completes(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock, (Node("node-a", {"pool": "cpu"}),))
    store.create(app(suspend=True))
    dc.step()
    assert not pods(store) and status(store)["applicationState"] == {"state": "SUSPENDED"}
    obj = store.get("SparkApplication", NS, "spark-pi")
    assert obj is not None
    obj["spec"].update(suspend=False)
    obj["spec"]["driver"]["nodeSelector"] = {"pool": "cpu"}  # as Kueue's admission leaves it
    store.update(obj)
    dc.step()
    driver = pods(store)["spark-pi-driver"]
    assert driver["metadata"]["labels"]["spark-role"] == "driver"
    assert driver["metadata"]["ownerReferences"][0]["kind"] == "SparkApplication"
    assert driver["spec"]["nodeSelector"] == {"pool": "cpu"}
    assert driver["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1", "memory": "1Gi"}}
    advance(dc, clock, 1)
    assert sorted(pods(store)) == ["spark-pi-driver", "spark-pi-exec-1", "spark-pi-exec-2"]
    st = status(store)
    assert st["applicationState"] == {"state": "RUNNING"} and st["submissionAttempts"] == 1
    assert st["executorState"] == {"spark-pi-exec-1": "RUNNING", "spark-pi-exec-2": "RUNNING"}
    advance(dc, clock, 11)  # the simulated pods' default duration
    st = status(store)
    assert st["applicationState"] == {"state": "COMPLETED"} and st["terminationTime"]
    assert set(st["executorState"].values()) == {"COMPLETED"}


def test_suspending_a_running_application_deletes_its_pods(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(app(suspend=False))
    dc.step()
    advance(dc, clock, 1)
    assert len(pods(store)) == 3
    obj = store.get("SparkApplication", NS, "spark-pi")
    assert obj is not None
    obj["spec"]["suspend"] = True
    store.update(obj)
    dc.step()
    advance(dc, clock, 1)
    assert not [p for p in pods(store).values() if not p["metadata"].get("deletionTimestamp")]
    assert status(store)["applicationState"] == {"state": "SUSPENDED"}
