"""The kubelet's and the Job controller's work of one round is one transaction (hub.devcluster.runtime):
one commit per round, each object's step still undone alone when it fails."""

from __future__ import annotations

from typing import Any

import pytest
from test_devcluster import Clock, cluster, job, pods, status

from hub.devcluster import runtime
from hub.devcluster.kubelet import Kubelet
from hub.store import SQLiteStore


def _count_commits(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    commits: list[int] = []
    real = store._commit

    def counting() -> None:
        commits.append(store._rv)
        real()

    monkeypatch.setattr(store, "_commit", counting)
    return commits


def test_a_rounds_pod_starts_and_job_syncs_commit_once(
        store: SQLiteStore, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    dc = cluster(store, clock)
    with store.batch():
        for i in range(4):
            store.create(job(f"j{i}"))
    commits = _count_commits(store, monkeypatch)
    dc.step()
    # Round 1: four Jobs synced (four pods created, four statuses); round 2: four pods bound and started
    # (with their Scheduled Events); round 3: four Jobs synced again (ready). One commit each, not one per object.
    assert len(commits) == 3
    assert sorted(p["status"]["phase"] for p in pods(store)) == ["Running"] * 4
    assert all(status(store, f"j{i}").get("ready") == 1 for i in range(4))
    assert len(store.list("Event", "team-a")[0]) == 4


def test_one_pods_failure_undoes_only_its_own_step(
        store: SQLiteStore, clock: Clock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    dc = cluster(store, clock)
    with store.batch():
        for i in range(3):
            store.create(job(f"j{i}"))
    real = Kubelet._start

    def failing(self: Kubelet, pod: dict[str, Any], node: str, now: float) -> dict[str, Any]:
        if pod["metadata"]["name"].startswith("j1-"):
            raise RuntimeError("boom")
        return real(self, pod, node, now)

    monkeypatch.setattr(Kubelet, "_start", failing)
    dc.step()
    by_job = {p["metadata"]["labels"]["job-name"]: p for p in pods(store)}
    assert by_job["j0"]["status"]["phase"] == by_job["j2"]["status"]["phase"] == "Running"
    # j1's binding was undone with its failed start: not bound, no Scheduled Event.
    assert by_job["j1"]["status"]["phase"] == "Pending" and not by_job["j1"]["spec"].get("nodeName")
    assert sorted(e["involvedObject"]["name"] for e in store.list("Event", "team-a")[0]) == sorted(
        by_job[j]["metadata"]["name"] for j in ("j0", "j2"))
    assert "failed on team-a/j1-" in caplog.text
    monkeypatch.setattr(Kubelet, "_start", real)
    dc.kubelet.reconcile("team-a", by_job["j1"]["metadata"]["name"])
    assert pods(store)[1]["status"]["phase"] == "Running"


def test_a_failed_round_commit_forgets_what_it_wrote(
        store: SQLiteStore, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    dc = cluster(store, clock)
    with store.batch():
        for i in range(2):
            store.create(job(f"j{i}"))
    dc.step()
    assert dc.jobs.seen and dc.kubelet.written
    store.create(job("j2"))
    store.create(job("j3"))
    real = store._commit

    def failing() -> None:
        raise OSError("disk full")

    dc._drain()
    monkeypatch.setattr(store, "_commit", failing)
    with pytest.raises(OSError):
        dc._pods_and_jobs()
    monkeypatch.setattr(store, "_commit", real)
    store._abort()
    # Its versions may be given again: nothing it wrote may be taken for an echo.
    assert not dc.jobs.seen and not dc.kubelet.written
    dc.step()
    assert sorted(p["status"]["phase"] for p in pods(store)) == ["Running"] * 4


def test_a_large_round_commits_in_bounded_transactions(
        store: SQLiteStore, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "ROUND_WRITES", 3)
    dc = cluster(store, clock)
    with store.batch():
        for i in range(4):
            store.create(job(f"j{i}"))
    commits = _count_commits(store, monkeypatch)
    dc.step()
    assert len(commits) == 6  # each of the three rounds: three objects, then one
    assert sorted(p["status"]["phase"] for p in pods(store)) == ["Running"] * 4
    assert all(status(store, f"j{i}").get("ready") == 1 for i in range(4))
