"""Conflict retries cost nothing until a write conflicts: the first attempt runs without
tenacity's bookkeeping, and a 409 still goes through tenacity's backoff with fresh reads."""

from __future__ import annotations

from typing import Any

import pytest

from hub.store.kube import store as kube_store

from .conftest import ApiServer, Names, open_store, wait_for
from .test_kube_store_http import cq


def test_a_write_that_does_not_conflict_builds_no_retrier(
    api: ApiServer, names: Names, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[Any] = []
    real = kube_store.Retrying

    def counting(*args: Any, **kwargs: Any) -> Any:
        built.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(kube_store, "Retrying", counting)
    with open_store(api.kubeconfig) as mine, open_store(api.kubeconfig) as theirs:
        name = names.name("cq")
        mine.create(cq(name))
        mine.update_status({**cq(name), "status": {"pendingWorkloads": 1}})
        assert built == [] and mine.retries == 0
        # Their cache must hold my status write, or their own write would conflict (and retry) first.
        wait_for(lambda: ((theirs.get("ClusterQueue", "", name) or {}).get("status") or {}).get("pendingWorkloads") == 1,
                 what="the other store to see the queue's status")
        mine.informers["ClusterQueue"].stop()  # my cache cannot learn of their write: a 409 follows
        theirs.update_status({**cq(name), "status": {"pendingWorkloads": 7}})
        out = mine.update_status({**cq(name), "status": {"pendingWorkloads": 8}})
        assert out["status"]["pendingWorkloads"] == 8
        assert mine.retries == 1 and len(built) == 1  # retried once, through tenacity
        assert built[0]["stop"].max_attempt_number == mine.options.conflict_attempts - 1


def test_a_status_write_is_a_merge_patch_of_the_status_at_the_version_it_was_made_against(
    api: ApiServer, names: Names, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(api.kubeconfig) as mine, open_store(api.kubeconfig) as theirs:
        sent: list[Any] = []
        send = mine.transport.send

        def recording(req: Any, **kwargs: Any) -> Any:
            sent.append(req)
            return send(req, **kwargs)

        monkeypatch.setattr(mine.transport, "send", recording)
        name = names.name("cq")
        mine.create(cq(name))
        mine.update_status({**cq(name), "status": {"pendingWorkloads": 1, "reservingWorkloads": 2}})
        out = mine.update_status({**cq(name), "status": {"pendingWorkloads": 3}})
        assert out["status"] == {"pendingWorkloads": 3}  # a key the new status lacks is removed
        patch = sent[-1]
        assert (patch.method, patch.content_type) == ("PATCH", "application/merge-patch+json")
        assert patch.path.endswith(f"/clusterqueues/{name}/status")
        body = patch.json()
        assert body["status"] == {"pendingWorkloads": 3, "reservingWorkloads": None}
        assert set(body) == {"metadata", "status"} and set(body["metadata"]) == {"resourceVersion"}
        # The version is a precondition: a write computed against a stale cache is retried fresh.
        # Their cache must hold my latest status write, or their own write would conflict (and retry) first.
        wait_for(lambda: ((theirs.get("ClusterQueue", "", name) or {}).get("status") or {}).get("pendingWorkloads") == 3,
                 what="the other store to see the queue's status")
        mine.informers["ClusterQueue"].stop()
        theirs.update_status({**cq(name), "status": {"pendingWorkloads": 7, "admittedWorkloads": 1}})
        out = mine.update_status({**cq(name), "status": {"pendingWorkloads": 8}})
        assert out["status"] == {"pendingWorkloads": 8} and mine.retries == 1
