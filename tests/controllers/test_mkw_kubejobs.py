"""A Job created unsuspended (no webhook) and not yet admitted is stopped by one write: its
template is the original and it never started, so Kueue's staged stop (suspend with the stopping
annotation, clear startTime, restore) has nothing after the suspend (issue 26: three Job writes
per MultiKueue Job in `bench kube --workers 2`, two of them for this stop)."""

from __future__ import annotations

from hub_objects import T0, cluster_queue, job, local_queue, namespace, seed
from test_kubejobs import StrictStore, feed, hub, tainted_flavor, the_job

from hub.controllers.kubejobs import STOPPING_ANNOTATION


def test_a_job_created_unsuspended_is_stopped_in_one_write_then_started_in_one() -> None:
    store = StrictStore(":memory:")
    running = job("j2")
    running["spec"]["suspend"] = False
    seed(store, [namespace(), tainted_flavor(), cluster_queue(0), local_queue(), running])
    rec = hub(store)
    _, since = store.list("ClusterQueue")
    rec.round(T0)
    stopped = the_job(store, "j2")
    assert store.job_writes == ["spec"]  # before: suspend with the stopping annotation, then a write dropping it
    assert stopped["spec"]["suspend"] is True
    assert STOPPING_ANNOTATION not in (stopped["metadata"].get("annotations") or {})
    assert stopped["spec"]["template"] == running["spec"]["template"]
    rec.round(T0 + 1)
    assert store.job_writes == ["spec"]  # stopped: nothing left to do
    cq = store.get("ClusterQueue", "", "cq")
    assert cq is not None
    seed_quota = cluster_queue(2)
    store.update({**cq, "spec": seed_quota["spec"]})
    feed(rec, store, since, T0 + 2)
    store.job_writes.clear()
    rec.round(T0 + 2)
    started = the_job(store, "j2")
    assert store.job_writes == ["spec"] and started["spec"]["suspend"] is False
    assert started["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "spot"}
    store.close()
