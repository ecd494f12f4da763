"""SQLiteStore.update_with_status: spec and status in one write (the dev-cluster's Pod binding)."""

from __future__ import annotations

from typing import Any

import pytest

from hub.store import Conflict, SQLiteStore


def _pod() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "main"}]}, "status": {"phase": "Pending"}}


def test_spec_and_status_in_one_change(store: SQLiteStore) -> None:
    created = store.create(_pod())
    _, since = store.list("Pod")
    bound = store.update_with_status({**created, "spec": {**created["spec"], "nodeName": "n"},
                                      "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}})
    assert bound["spec"]["nodeName"] == "n" and bound["status"]["conditions"][0]["type"] == "PodScheduled"
    assert bound["metadata"]["generation"] == 2 and bound["metadata"]["uid"] == created["metadata"]["uid"]
    with store.watch(["Pod"], since=since) as w:
        (event,) = [e for e in iter(lambda: w.next(timeout=0), None)]
    assert event.object == bound == store.get("Pod", "ns", "p")
    # update keeps the stored status, as the API's update does
    kept = store.update({**bound, "status": {"phase": "Failed"}})
    assert kept["status"] == bound["status"]


def test_a_stale_resource_version_conflicts(store: SQLiteStore) -> None:
    created = store.create(_pod())
    store.update_status({**created, "status": {"phase": "Running"}})
    with pytest.raises(Conflict):
        store.update_with_status({**created, "spec": {**created["spec"], "nodeName": "n"}})
