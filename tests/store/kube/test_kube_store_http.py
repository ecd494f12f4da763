"""The Kubernetes store over HTTP against an API server (the stand-in, or a real cluster
with MKHUB_TEST_KUBECONFIG): spec vs status, optimistic concurrency, watch resume,
410 re-list, dropped and silent watches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hub.store.interface import Conflict, EventType, NotFound
from hub.store.kube import KubeStore

from .conftest import REAL, ApiServer, Names, open_store, proxied_kubeconfig, start_proxy, wait_for

pytestmark = pytest.mark.timeout(120)


def cq(name: str, cpu: str = "10") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}
            ],
        },
    }


def lq(ns: str, name: str, cq_name: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"namespace": ns, "name": name}, "spec": {"clusterQueue": cq_name}}


def test_status_and_spec_writes_go_where_they_belong(api: ApiServer, names: Names) -> None:
    with open_store(api.kubeconfig) as store:
        name = names.name("cq")
        created = store.create({**cq(name), "status": {"pendingWorkloads": 2}})
        # The status subresource drops status on create: the store wrote it to /status after.
        assert created["status"]["pendingWorkloads"] == 2
        assert created["metadata"]["generation"] == 1
        spec_write = store.update({**cq(name, "20"), "status": {"pendingWorkloads": 99}})
        assert spec_write["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == "20"
        assert spec_write["status"]["pendingWorkloads"] == 2  # a spec write keeps the stored status
        assert spec_write["metadata"]["generation"] == 2
        status_write = store.update_status({**cq(name, "30"), "status": {"pendingWorkloads": 5}})
        assert status_write["status"]["pendingWorkloads"] == 5
        assert status_write["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == "20"
        assert status_write["metadata"]["generation"] == 2  # status writes do not bump generation
        # The cache serves what the server holds.
        with open_store(api.kubeconfig) as other:
            fresh = other.get("ClusterQueue", "", name)
            assert fresh is not None and fresh["status"] == {"pendingWorkloads": 5}
        assert store.update(status_write)["metadata"]["resourceVersion"] == status_write["metadata"]["resourceVersion"]


def test_a_stale_cache_is_re_read_and_retried_on_409(api: ApiServer, names: Names) -> None:
    with open_store(api.kubeconfig) as mine, open_store(api.kubeconfig) as theirs:
        name = names.name("cq")
        mine.create(cq(name))
        wait_for(lambda: theirs.get("ClusterQueue", "", name), what="the other store to see the queue")
        mine.informers["ClusterQueue"].stop()  # from here on my cache cannot learn of their write
        theirs.update_status({**cq(name), "status": {"pendingWorkloads": 7}})
        out = mine.update_status({**cq(name), "status": {"pendingWorkloads": 8}})  # names no resourceVersion
        assert out["status"]["pendingWorkloads"] == 8
        assert mine.retries >= 1  # the first PUT carried the stale resourceVersion and got a 409
        spec = mine.update({**cq(name, "40")})
        assert spec["metadata"]["generation"] == 2
        final = wait_for(lambda: (o := theirs.get("ClusterQueue", "", name)) and o["metadata"]["generation"] == 2 and o)
        assert final["status"]["pendingWorkloads"] == 8


def test_a_conflict_on_a_read_version_is_surfaced(api: ApiServer, names: Names) -> None:
    with open_store(api.kubeconfig) as mine, open_store(api.kubeconfig) as theirs:
        name = names.name("cq")
        read = mine.create(cq(name))
        wait_for(lambda: theirs.get("ClusterQueue", "", name))
        theirs.update(cq(name, "11"))
        wait_for(lambda: mine.get("ClusterQueue", "", name)["metadata"]["resourceVersion"] != read["metadata"]["resourceVersion"])  # type: ignore[index]
        with pytest.raises(Conflict):
            mine.update({**read, "spec": cq(name, "12")["spec"]})
        stale = mine.get("ClusterQueue", "", name)
        assert stale is not None
        mine.informers["ClusterQueue"].stop()
        theirs.update(cq(name, "13"))
        with pytest.raises(Conflict):  # my cache still shows the version I read; the server says 409
            mine.update({**stale, "spec": cq(name, "14")["spec"]})
        assert mine.retries == 0
        with pytest.raises(NotFound):
            mine.update_status({**cq(names.name("missing")), "status": {}})


def test_an_update_naming_no_version_keeps_what_another_writer_added(api: ApiServer, names: Names) -> None:
    """The change the caller made to the version it read is applied to what the server holds now:
    before, the 409's retry wrote the caller's stale whole object and erased the other writer's
    label, annotation and finalizer."""
    with open_store(api.kubeconfig) as mine, open_store(api.kubeconfig) as theirs:
        name = names.name("cq")
        mine.create(cq(name))
        wait_for(lambda: theirs.get("ClusterQueue", "", name), what="the other store to see the queue")
        mine.informers["ClusterQueue"].stop()  # from here on my cache cannot learn of their write
        read = mine.get("ClusterQueue", "", name)
        assert read is not None
        other = theirs.get("ClusterQueue", "", name)
        assert other is not None
        meta = other["metadata"]
        theirs.update({**other, "metadata": {**meta, "labels": {"theirs": "1"}, "annotations": {"a": "theirs"},
                                             "finalizers": [*(meta.get("finalizers") or []), "example.com/theirs"]}})
        changed = {**read, "metadata": {**read["metadata"], "labels": {"mine": "1"}, "resourceVersion": None}}
        out = mine.update(changed)
        assert out["metadata"]["labels"] == {"theirs": "1", "mine": "1"}
        assert out["metadata"]["annotations"] == {"a": "theirs"}
        assert "example.com/theirs" in out["metadata"]["finalizers"]
        final = theirs.modify("ClusterQueue", "", name, _drop_finalizer("example.com/theirs"))
        assert final is not None


def _drop_finalizer(finalizer: str) -> Any:
    def change(obj: dict[str, Any]) -> bool:
        meta = obj["metadata"]
        meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != finalizer]
        return True
    return change


def test_modify_re_applies_its_change_to_a_fresh_read_on_409(api: ApiServer, names: Names) -> None:
    """client-go's RetryOnConflict: the hub's Job and ClusterQueue writes no longer fail (and
    rebuild the engine) when another writer moved the object after the hub's cache saw it."""
    with open_store(api.kubeconfig) as mine, open_store(api.kubeconfig) as theirs:
        name = names.name("cq")
        mine.create(cq(name))
        wait_for(lambda: theirs.get("ClusterQueue", "", name), what="the other store to see the queue")
        mine.informers["ClusterQueue"].stop()
        theirs.update(cq(name, "11"))  # the spec moved on; my cache still shows "10"

        def label(obj: dict[str, Any]) -> bool:
            obj["metadata"]["labels"] = {**(obj["metadata"].get("labels") or {}), "mine": "1"}
            return True

        out = mine.modify("ClusterQueue", "", name, label)
        assert out is not None and out["metadata"]["labels"] == {"mine": "1"}
        assert out["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == "11"
        assert mine.retries >= 1
        mine.update_status({**cq(name), "status": {"pendingWorkloads": 3, "reservingWorkloads": 1}})
        wait_for(lambda: ((theirs.get("ClusterQueue", "", name) or {}).get("status") or {}).get("pendingWorkloads") == 3)

        def clear(obj: dict[str, Any]) -> bool:
            return obj.setdefault("status", {}).pop("pendingWorkloads", None) is not None

        out = theirs.modify("ClusterQueue", "", name, clear, status=True)
        assert out is not None and out["status"] == {"reservingWorkloads": 1}
        assert out["metadata"]["labels"] == {"mine": "1"}  # a status write leaves the rest alone
        assert theirs.modify("ClusterQueue", "", name, clear, status=True) is None  # nothing left to change
        assert theirs.modify("ClusterQueue", "", names.name("missing"), clear) is None


def _events(watch: Any, n: int, wait: float = 20) -> list[tuple[EventType, str]]:
    out = []
    for _ in range(n):
        ev = watch.next(wait)
        assert ev is not None, f"only {out} arrived"
        out.append((ev.type, ev.object["metadata"]["name"]))
    return out


def test_watch_resumes_after_a_dropped_connection(api: ApiServer, names: Names, tmp_path: Path) -> None:
    proxy = start_proxy(api)
    try:
        with open_store(proxied_kubeconfig(api, proxy, tmp_path / "kc")) as store, open_store(api.kubeconfig) as writer:
            informer = store.informers["LocalQueue"]
            _, since = store.list("LocalQueue")
            watch = store.watch(["LocalQueue"], since)
            writer.create(lq(names.namespace, names.name("a"), "x"))
            assert _events(watch, 1) == [(EventType.ADDED, names.name("a"))]
            wait_for(lambda: informer.stats.watches >= 1, what="the informer's watch to be open")
            assert proxy.drop() > 0  # every connection reset mid-stream
            writer.create(lq(names.namespace, names.name("b"), "x"))
            writer.delete("LocalQueue", names.namespace, names.name("a"))
            assert _events(watch, 2) == [(EventType.ADDED, names.name("b")), (EventType.DELETED, names.name("a"))]
            assert informer.stats.dropped >= 1
            assert informer.stats.lists == 1  # resumed from its resourceVersion, no re-list
            assert informer.stats.gone == 0
            assert watch.next(0.5) is None  # nothing twice
    finally:
        proxy.close()


@pytest.mark.parametrize("api", [{"bookmark_interval": 0.5}], indirect=True, ids=["bookmarks-0.5s"])
def test_a_silent_watch_is_replaced(api: ApiServer, names: Names, tmp_path: Path) -> None:
    # The informer's inactivity timeout is longer than the server's bookmark interval, so only
    # a really silent watch trips it: 3 s over the stand-in's 0.5 s bookmarks (over a real
    # cluster, FAST_INFORMER's 15 s).
    proxy = start_proxy(api)
    silence = {} if REAL else {"inactivity_timeout": 3.0}
    try:
        with open_store(proxied_kubeconfig(api, proxy, tmp_path / "kc"), **silence) as store, open_store(api.kubeconfig) as writer:
            informer = store.informers["LocalQueue"]
            _, since = store.list("LocalQueue")
            watch = store.watch(["LocalQueue"], since)
            wait_for(lambda: informer.stats.watches >= 1, timeout=90, what="the informer's watch to be open")
            watches = informer.stats.watches
            assert proxy.freeze() > 0  # open, but not a byte more: no FIN, no RST
            wait_for(lambda: informer.stats.dropped >= 1, timeout=90, what="the silence to be noticed")
            writer.create(lq(names.namespace, names.name("quiet"), "x"))
            assert _events(watch, 1, wait=90) == [(EventType.ADDED, names.name("quiet"))]
            assert informer.stats.watches > watches  # a new watch, resumed where the silent one stopped
            assert informer.stats.lists == 1
    finally:
        proxy.close()


@pytest.mark.skipif(bool(REAL), reason="a real API server's change window (etcd compaction) cannot be forced from a test")
def test_410_gone_lists_again(api_factory: Any, tmp_path: Path) -> None:
    api = api_factory(watch_window=20)  # a dev-cluster that keeps 20 changes
    proxy = start_proxy(api)
    try:
        with open_store(api.kubeconfig) as writer:
            writer.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}})
            for i in range(3):
                writer.create(lq("gone", f"old-{i}", "x"))
            with open_store(proxied_kubeconfig(api, proxy, tmp_path / "kc"), inactivity_timeout=2.0) as store:
                informer = store.informers["LocalQueue"]
                assert len(store.list("LocalQueue")[0]) == 3
                _, since = store.list("LocalQueue")
                watch = store.watch(["LocalQueue"], since)
                wait_for(lambda: informer.stats.watches >= 1, what="the informer's watch to be open")
                proxy.freeze()  # our watch hears nothing while the server's log moves on
                writer.delete("LocalQueue", "gone", "old-0")
                for i in range(30):
                    writer.create(lq("gone", f"new-{i:02d}", "x"))
                got = _events(watch, 31)
                assert (EventType.DELETED, "old-0") in got
                assert sorted(n for t, n in got if t == EventType.ADDED) == [f"new-{i:02d}" for i in range(30)]
                assert informer.stats.gone >= 1 and informer.stats.lists >= 2
                # Re-listed at the most recent state, not at "0" (a lagging watch cache's past).
                assert informer.stats.consistent_lists >= 1
                assert [o["metadata"]["name"] for o in store.list("LocalQueue", "gone")[0]] == (
                    [f"new-{i:02d}" for i in range(30)] + ["old-1", "old-2"]
                )
    finally:
        proxy.close()


def test_writes_are_refused_without_the_lease(api: ApiServer, names: Names) -> None:
    from hub.store.kube import NotLeader

    leading = [True]
    store: KubeStore = open_store(api.kubeconfig)
    store.fence = lambda: leading[0]
    try:
        store.create(cq(names.name("a")))
        leading[0] = False
        with pytest.raises(NotLeader):
            store.create(cq(names.name("b")))
        assert store.get("ClusterQueue", "", names.name("b")) is None
    finally:
        store.close()
