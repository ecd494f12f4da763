"""The dev-cluster's Job controller reads a Job's pods through the index its watch keeps (hub.devcluster.job_pods),
not a label-selected list of the namespace, and counts exactly the pods the selector matches."""

from __future__ import annotations

from typing import Any

import pytest
from test_devcluster import Clock, cluster, job, pods, status

from hub.devcluster.job_pods import CONTROLLER_UID_LABEL, PodIndex, not_newer
from hub.devcluster.jobs import new_pod
from hub.store import SQLiteStore


def _no_selected_pod_lists(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    real = store.list

    def listing(kind: str, namespace: str | None = None, label_selector: Any = None) -> Any:
        assert not (kind == "Pod" and label_selector), "a Job's sync listed the namespace's pods"
        return real(kind, namespace, label_selector)

    monkeypatch.setattr(store, "list", listing)


def test_a_jobs_sync_reads_its_pods_from_the_index_and_writes_as_before(
        store: SQLiteStore, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    dc = cluster(store, clock)
    _no_selected_pod_lists(store, monkeypatch)
    _, since = store.list("Job")
    for i in range(3):
        store.create(job(f"j{i}"))
    dc.step()
    dc.step()
    assert sorted(p["status"]["phase"] for p in pods(store)) == ["Running"] * 3
    assert all((status(store, f"j{i}").get("active"), status(store, f"j{i}").get("ready")) == (1, 1) for i in range(3))
    with store.watch(["Job"], since=since) as w:
        types = []
        while (event := w.next(timeout=0)) is not None:
            types.append(event.type.value)
    # Per Job: its create, then the controller's two status writes (active with startTime, then ready).
    assert sorted(types) == ["ADDED"] * 3 + ["MODIFIED"] * 6
    clock.t += 11
    dc.step()
    dc.step()
    assert all(status(store, f"j{i}").get("succeeded") == 1 for i in range(3))
    assert all(not p["metadata"].get("finalizers") for p in pods(store))  # counted, tracking finalizer released


def test_the_selector_is_applied_to_what_is_read(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    created = store.create(job("j", parallelism=2, completions=2))
    dc.step()
    dc.step()
    assert status(store, "j")["active"] == 2
    one, two = sorted(pods(store), key=lambda p: p["metadata"]["name"])
    # A pod relabelled away from the Job is not its pod any more, even before the index hears of it.
    two["metadata"]["labels"][CONTROLLER_UID_LABEL] = "someone-else"
    store.update(two)
    got = dc.jobs.pods_of("team-a", created["metadata"]["uid"])
    assert [p["metadata"]["name"] for p in got] == [one["metadata"]["name"]]
    # A pod another writer labels for the Job is its pod once the watch shows it.
    extra = new_pod(store.get("Job", "team-a", "j") or {})
    extra["metadata"]["generateName"] = "other-"
    store.create(extra)
    dc.step()
    names = {p["metadata"]["name"] for p in dc.jobs.pods_of("team-a", created["metadata"]["uid"])}
    assert one["metadata"]["name"] in names and any(n.startswith("other-") for n in names)


def test_a_pod_gone_before_its_event_is_not_counted(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    created = store.create(job("j"))
    dc.step()
    (pod,) = pods(store)
    store.update({**pod, "metadata": {**pod["metadata"], "finalizers": []}})
    store.delete("Pod", "team-a", pod["metadata"]["name"])
    assert dc.jobs.pods_of("team-a", created["metadata"]["uid"]) == []


def test_the_index_is_rebuilt_from_a_list_on_start(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    created = store.create(job("j"))
    dc.step()
    dc.close()
    again = cluster(store, clock)  # a restarted dev-cluster: its index from the pods stored
    assert [p["metadata"]["name"] for p in again.jobs.pods_of("team-a", created["metadata"]["uid"])] == [
        p["metadata"]["name"] for p in pods(store)]
    assert dc.pod_index is not again.pod_index


def test_pod_index_follows_label_changes_and_deletes() -> None:
    index = PodIndex()

    def pod(name: str, uid: str | None, namespace: str = "ns") -> dict[str, Any]:
        labels = {} if uid is None else {CONTROLLER_UID_LABEL: uid}
        return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}

    index.reset([pod("b", "u1"), pod("a", "u1"), pod("c", "u2"), pod("d", "u1", "other")])
    assert index.names("ns", "u1") == ["a", "b"] and index.names("other", "u1") == ["d"]
    index.put(pod("a", "u2"))
    index.put(pod("c", None))
    assert index.names("ns", "u1") == ["b"] and index.names("ns", "u2") == ["a"]
    index.drop("ns", "b")
    index.drop("ns", "b")
    assert index.names("ns", "u1") == []


def test_not_newer() -> None:
    assert not_newer("5", 5) and not_newer("4", 5)
    assert not not_newer("6", 5) and not not_newer("5", None) and not not_newer("", 5) and not not_newer("x", 5)


def test_a_job_managed_elsewhere_is_not_read_again_only_to_be_left_alone(
        store: SQLiteStore, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    dc = cluster(store, clock)
    reads: list[tuple[str, str]] = []
    real = store.get

    def get(kind: str, namespace: str, name: str) -> Any:
        reads.append((kind, name))
        return real(kind, namespace, name)

    monkeypatch.setattr(store, "get", get)
    store.create(job("mk", managedBy="kueue.x-k8s.io/multikueue"))
    store.create(job("own", managedBy="kubernetes.io/job-controller"))
    dc.step()
    assert ("Job", "mk") not in reads and ("Job", "own") in reads
    assert [p["metadata"]["labels"]["job-name"] for p in pods(store)] == ["own"]
    assert status(store, "mk") == {}
