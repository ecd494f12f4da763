"""The Kubernetes store notes which answers of a batch's writes were changes it made
(hub.store.journal): a status write that changes nothing, answered with the version of someone
else's change, is not one, or the hub would skip that change as its own echo."""

from __future__ import annotations

from hub.store.journal import committed

from .conftest import ApiServer, Names, open_store, wait_for
from .test_kube_store_http import cq


def _rv(obj: dict[str, object]) -> int:
    return int(obj["metadata"]["resourceVersion"])  # type: ignore[index]


def test_a_no_op_status_write_after_an_unseen_edit_is_not_journaled_as_the_writers(api: ApiServer, names: Names) -> None:
    with open_store(api.kubeconfig) as hub, open_store(api.kubeconfig) as user:
        name = names.name("cq")
        hub.create(cq(name))
        with hub.batch():
            written = hub.update_status({**cq(name), "status": {"pendingWorkloads": 1}})
        assert committed([_rv(written)]) == [_rv(written)]  # a change this batch made
        # Someone else edits the queue; the hub's cache has it, its reconciler not yet.
        wait_for(lambda: ((user.get("ClusterQueue", "", name) or {}).get("status") or {}).get("pendingWorkloads") == 1,
                 what="the other store to see the status")
        edited = user.get("ClusterQueue", "", name)
        assert edited is not None
        edited["metadata"]["labels"] = {"edited": "yes"}
        user.update(edited)
        wait_for(lambda: ((hub.get("ClusterQueue", "", name) or {})["metadata"].get("labels") or {}).get("edited"),
                 what="the hub's cache to hold the edit")
        with hub.batch():
            same = hub.update_status({**cq(name), "status": {"pendingWorkloads": 1}})  # changes nothing
        assert _rv(same) != _rv(written)  # answered at the edit's version
        assert committed([_rv(same)]) == []


def test_writes_the_round_hands_to_its_writer_threads_are_journaled_as_its_own(api: ApiServer, names: Names) -> None:
    """The round's independent writes run on a writer pool; their changes still belong to the round's
    batch (or the hub would take the echoes of its own writes for someone else's changes)."""
    from functools import partial

    from hub.controllers.write_batches import concurrently

    with open_store(api.kubeconfig) as hub:
        queues = [names.name(f"cq{i}") for i in range(4)]
        for name in queues:
            hub.create(cq(name))
        assert hub.write_concurrency > 1
        with hub.batch():
            out = concurrently(hub, [partial(hub.update_status, {**cq(n), "status": {"pendingWorkloads": 2}}) for n in queues])
            rvs = [_rv(o) for o in out if isinstance(o, dict)]
            assert len(rvs) == len(queues) and committed(rvs) == rvs


def test_a_gathered_batch_journals_its_changes_and_not_its_no_ops(api: ApiServer, names: Names) -> None:
    with open_store(api.kubeconfig) as hub:
        queues = [names.name(f"cq{i}") for i in range(3)]
        for name in queues:
            hub.create(cq(name))
        for attempt in range(2):  # the second batch writes the same statuses again: no change
            with hub.batch():
                out = hub.write_concurrently([(False, {**cq(n), "status": {"pendingWorkloads": 5}}) for n in queues])
                rvs = [_rv(o) for o in out if isinstance(o, dict)]
                assert len(rvs) == len(queues)
                assert committed(rvs) == (rvs if attempt == 0 else [])
