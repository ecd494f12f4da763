"""status.fleet's lastHeartbeat (hub.federation.fleet): never dated before the connection it
belongs to, and not forgotten when the agent disconnects or the hub restarts."""

from __future__ import annotations

from hub.api.meta import ObjectMeta, parse_time
from hub.api.others import MultiKueueCluster
from hub.federation.fleet import refresh_cluster_status
from hub.federation.mkrecords import Worker

T = parse_time("2026-01-01T12:42:39.600000Z")


def _cluster(fleet: dict[str, object] | None = None) -> MultiKueueCluster:
    return MultiKueueCluster(meta=ObjectMeta(name="worker-1"), fleet=fleet)


def test_a_heartbeat_is_never_dated_before_the_connection() -> None:
    cluster = _cluster()
    worker = Worker("worker-1", connected=True, ever_connected=True, since=T)
    # The Hello was heard a little before the hub recorded the connection.
    refresh_cluster_status(cluster, worker, lambda _: 0.5, None, 0, T + 0.2)
    assert cluster.fleet is not None
    assert cluster.fleet["since"] == "2026-01-01T12:42:39Z"
    assert cluster.fleet["lastHeartbeat"] == "2026-01-01T12:42:39Z"
    # Later beats still move in 10-second steps.
    refresh_cluster_status(cluster, worker, lambda _: 1.0, None, 0, T + 12.0)
    assert cluster.fleet["lastHeartbeat"] == "2026-01-01T12:42:50Z"


def test_the_last_heartbeat_outlives_the_connection() -> None:
    cluster = _cluster()
    worker = Worker("worker-1", connected=True, ever_connected=True, since=T)
    refresh_cluster_status(cluster, worker, lambda _: 2.0, None, 0, T + 25.0)
    assert cluster.fleet is not None and cluster.fleet["lastHeartbeat"] == "2026-01-01T12:43:00Z"
    worker.connected, worker.since = False, T + 26.0
    refresh_cluster_status(cluster, worker, lambda _: 10.0, None, 0, T + 35.0)
    assert cluster.fleet["connected"] is False
    assert cluster.fleet["lastHeartbeat"] == "2026-01-01T12:43:00Z"


def test_a_disconnection_does_not_date_the_heartbeat_before_its_connection() -> None:
    cluster = _cluster()
    worker = Worker("worker-1", connected=True, ever_connected=True, since=T)
    refresh_cluster_status(cluster, worker, lambda _: 0.0, None, 0, T + 0.1)
    worker.connected, worker.since = False, T + 1.0
    refresh_cluster_status(cluster, worker, lambda _: 1.0, None, 0, T + 1.1)
    assert cluster.fleet is not None and cluster.fleet["lastHeartbeat"] == "2026-01-01T12:42:39Z"


def test_a_restarted_hub_keeps_the_stored_heartbeat_until_it_hears_the_agent() -> None:
    stored = {"connected": True, "since": "2026-01-01T12:00:00Z", "lastHeartbeat": "2026-01-01T12:40:00Z"}
    cluster = _cluster(dict(stored))
    refresh_cluster_status(cluster, None, lambda _: None, None, 0, T)
    assert cluster.fleet is not None and cluster.fleet["connected"] is False
    assert cluster.fleet["lastHeartbeat"] == "2026-01-01T12:40:00Z"
    worker = Worker("worker-1", connected=True, ever_connected=True, since=T + 60.0)
    refresh_cluster_status(cluster, worker, lambda _: 0.0, None, 0, T + 60.0)
    assert cluster.fleet["lastHeartbeat"] == "2026-01-01T12:43:39Z"  # heard now: the connection's own second


def test_a_stored_heartbeat_from_the_future_or_not_a_time_is_replaced() -> None:
    for stored in ("2026-01-01T13:00:00Z", "yesterday"):
        cluster = _cluster({"connected": False, "lastHeartbeat": stored})
        worker = Worker("worker-1", connected=True, ever_connected=True, since=T - 100.0)
        refresh_cluster_status(cluster, worker, lambda _: 1.0, None, 0, T)
        assert cluster.fleet is not None and cluster.fleet["lastHeartbeat"] == "2026-01-01T12:42:30Z", stored
