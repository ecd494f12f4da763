"""The simulated kubelet writes one pod's step in one store transaction (hub.devcluster.kubelet)."""

from __future__ import annotations

import pytest
from test_devcluster import Clock, cluster, job, pods
from test_h25_round_commit import _count_commits

from hub.devcluster.kubelet import pod_logs
from hub.store import SQLiteStore


def test_binding_and_starting_a_pod_is_one_commit(store: SQLiteStore, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    dc = cluster(store, clock)
    store.create(job("one"))
    commits = _count_commits(store, monkeypatch)
    dc.jobs.reconcile("team-a", "one")  # the Job controller creates the pod (one transaction)
    (pod,) = pods(store)
    name = pod["metadata"]["name"]
    commits.clear()
    dc.kubelet.reconcile("team-a", name)
    assert len(commits) == 1  # bind, PodScheduled, the Scheduled Event, Running, the log: together
    (pod,) = pods(store)
    assert pod["spec"]["nodeName"] == "node-a" and pod["status"]["phase"] == "Running"
    assert "started on node node-a" in (pod_logs(dc.kubelet, "team-a", name) or "")
    events = store.list("Event", "team-a")[0]
    assert [e["reason"] for e in events if e["involvedObject"]["name"] == name] == ["Scheduled"]
