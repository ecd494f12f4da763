"""Events on the Kubernetes store: written, never kept in the cache (the API server keeps and
expires them), a repeated one patched on the server with its count, as client-go's recorder."""

from __future__ import annotations

from hub.obs.events import EventRecorder, ObjectRef
from hub.store.kube.requests import Request
from hub.store.kube.store import KubeStore

from .conftest import ApiServer, Names, open_store


def _on_server(store: KubeStore, namespace: str, name: str) -> dict[str, object] | None:
    resp = store.transport.send(Request("GET", f"/api/v1/namespaces/{namespace}/events/{name}"))
    return resp.json() if resp.status == 200 else None


def test_a_repeated_event_is_patched_on_the_server_with_its_count(api: ApiServer, names: Names) -> None:
    with open_store(api.kubeconfig) as store:
        t = [1_000.0]
        recorder = EventRecorder("kueue-admission", clock=lambda: t[0])
        ref = ObjectRef("Workload", names.namespace, names.name("w"), "uid-w", "kueue.x-k8s.io/v1beta2")
        assert recorder.record(ref, "Normal", "Pending", "waiting for quota")
        assert recorder.flush(store) == []  # nothing of ours will come back on a watch: no version to skip
        t[0] += 5
        assert recorder.record(ref, "Normal", "Pending", "waiting for quota")
        recorder.flush(store)
        listed, _ = store.list("Event", names.namespace)
        assert listed == []  # not kept: the hub holds none of the Events it wrote
        name = next(iter(recorder._seen.values())).name
        ev = _on_server(store, names.namespace, name)
        assert ev is not None and ev["count"] == 2 and ev["lastTimestamp"] != ev["firstTimestamp"]
        # Gone from the server (its TTL, a user): written again, it is created afresh.
        assert store.transport.send(Request("DELETE", f"/api/v1/namespaces/{names.namespace}/events/{name}")).ok
        t[0] += 5
        assert recorder.record(ref, "Normal", "Pending", "waiting for quota")
        recorder.flush(store)
        again = _on_server(store, names.namespace, name)
        assert again is not None and again["count"] == 3 and again["metadata"]["uid"] != ev["metadata"]["uid"]  # type: ignore[index]

