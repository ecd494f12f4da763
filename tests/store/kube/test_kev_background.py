"""On an API server the hub's Events go out in the background, as client-go's broadcaster writes
them: the round hands its Events over and goes on (hub.obs.event_sender); the embedded store
keeps them in the round's transaction."""

from __future__ import annotations

import threading

from hub.obs.events import EventRecorder, ObjectRef
from hub.obs.observer import ClusterObserver
from hub.store.kube.ratelimit import TokenBucket
from hub.store.kube.store import KubeStore
from hub.store.sqlite import SQLiteStore

from .conftest import ApiServer, Names, open_store
from .test_kev_records import _on_server


def test_the_round_hands_its_events_over_and_does_not_wait(api: ApiServer, names: Names) -> None:
    with open_store(api.kubeconfig) as store:
        t = [1_000.0]
        recorder = EventRecorder("kueue-admission", clock=lambda: t[0])
        observer = ClusterObserver(recorder=recorder)
        ref = ObjectRef("Workload", names.namespace, names.name("w"), "", "kueue.x-k8s.io/v1beta2")
        release = threading.Event()
        real_send = recorder.send
        sent_on: list[str] = []

        def held_send(target: KubeStore, batch: list) -> list[int]:  # type: ignore[type-arg]
            sent_on.append(threading.current_thread().name)
            release.wait(10)
            return real_send(target, batch)

        recorder.send = held_send  # type: ignore[method-assign]
        assert recorder.record(ref, "Normal", "QuotaReserved", "Quota reserved in ClusterQueue cq")
        # The round's Workload was created in the same round: its uid is filled in when handed over.
        assert observer.flush_events(store, lambda kind, ns, name: ("uid-w", "7")) == []
        name = next(iter(recorder._seen.values())).name
        assert _on_server(store, names.namespace, name) is None  # returned before the write
        t[0] += 5
        assert recorder.record(ref, "Normal", "QuotaReserved", "Quota reserved in ClusterQueue cq")
        assert observer.flush_events(store) == []  # the first batch is still held: counted again
        release.set()
        observer.close(timeout=10)
        assert sent_on and all(n == "mkhub-events" for n in sent_on)
        ev = _on_server(store, names.namespace, name)
        assert ev is not None and ev["count"] == 2
        assert ev["involvedObject"]["uid"] == "uid-w"  # type: ignore[index]


def test_a_failed_event_write_is_dropped_and_the_next_ones_go_out(api: ApiServer, names: Names) -> None:
    with open_store(api.kubeconfig) as store:
        recorder = EventRecorder("kueue-admission")
        observer = ClusterObserver(recorder=recorder)
        bad = ObjectRef("Workload", "no-such-namespace-x", "w", "uid", "kueue.x-k8s.io/v1beta2")
        assert recorder.record(bad, "Normal", "Pending", "waiting")
        observer.flush_events(store)
        good = ObjectRef("Workload", names.namespace, names.name("w"), "uid-g", "kueue.x-k8s.io/v1beta2")
        assert recorder.record(good, "Normal", "Pending", "waiting")
        observer.flush_events(store)
        sender = observer._sender
        assert sender is not None and sender.drain(10)
        assert sender.failed == 1
        name = recorder._seen[next(k for k in recorder._seen if k[1] == names.namespace)].name
        assert _on_server(store, names.namespace, name) is not None
        observer.close()


def test_the_embedded_store_writes_events_in_the_round(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = SQLiteStore(tmp_path / "hub.db")
    try:
        recorder = EventRecorder("kueue-admission")
        observer = ClusterObserver(recorder=recorder)
        assert recorder.record(ObjectRef("Workload", "default", "w", "u"), "Normal", "Pending", "waiting")
        with store.batch():
            written = observer.flush_events(store)
        assert len(written) == 1 and observer._sender is None  # the round's own resourceVersion
        listed, _ = store.list("Event", "default")
        assert [e["reason"] for e in listed] == ["Pending"]
    finally:
        store.close()


def test_events_have_a_rate_limit_of_their_own(api: ApiServer, names: Names) -> None:
    from hub.store.kube.records import records_view

    with open_store(api.kubeconfig) as store:
        store.transport.limiter = TokenBucket(0.001, 3)  # as a hub's --kube-api-qps/--kube-api-burst
        records = records_view(store)
        assert records.transport is not store.transport and records.transport.limiter is not store.transport.limiter
        assert (records.transport.limiter.qps, records.transport.limiter.burst) == (0.001, 3)
        recorder = EventRecorder("kueue-admission")
        observer = ClusterObserver(recorder=recorder)
        observer.events_store = records
        refs = [ObjectRef("Workload", names.namespace, names.name(f"w{i}"), f"uid-{i}") for i in range(3)]
        for ref in refs:
            assert recorder.record(ref, "Normal", "Pending", "waiting")
        observer.flush_events(store)
        assert observer._sender is not None and observer._sender.store is records and observer._sender.drain(10)
        assert records.transport.limiter.waited == 0 and store.transport.limiter._tokens == 3  # the store's untouched
        assert records.transport.limiter._tokens < 1  # the Events took the burst of their own bucket
        for seen in recorder._seen.values():
            assert _on_server(store, names.namespace, seen.name) is not None
        observer.close()
        assert not store._closed  # the view is not the store's owner


def test_past_a_thousand_waiting_events_new_ones_are_dropped(api: ApiServer, names: Names, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from hub.obs import event_sender

    monkeypatch.setattr(event_sender, "MAX_QUEUED", 3)
    with open_store(api.kubeconfig) as store:
        recorder = EventRecorder("kueue-admission")
        release = threading.Event()
        real_send = recorder.send

        def held_send(target: KubeStore, batch: list) -> list[int]:  # type: ignore[type-arg]
            release.wait(10)
            return real_send(target, batch)

        recorder.send = held_send  # type: ignore[method-assign]
        sender = event_sender.EventSender(recorder, store)
        refs = [ObjectRef("Workload", names.namespace, names.name(f"w{i}"), f"uid-{i}") for i in range(5)]
        for ref in refs[:3]:
            assert recorder.record(ref, "Normal", "Pending", "waiting")
        sender.submit(recorder.take())  # 3 waiting: the limit
        for ref in refs[3:]:
            assert recorder.record(ref, "Normal", "Pending", "waiting")
        sender.submit(recorder.take())
        assert sender.dropped == 2
        release.set()
        sender.close(timeout=10)
        names_written = [s.name for k, s in recorder._seen.items() if k[2] in {r.name for r in refs[:3]}]
        assert len(names_written) == 3 and all(_on_server(store, names.namespace, n) is not None for n in names_written)
