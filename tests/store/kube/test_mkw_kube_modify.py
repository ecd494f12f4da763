"""KubeStore.modify writes its change as a merge patch at the version it read, not the whole
object back (issue 26: the hub's unsuspend of a MultiKueue Job was a PUT of the whole Job)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hub.store.interface import ObjectKey
from hub.store.kube import requests as rq

from .conftest import ApiServer, Names, open_store

pytestmark = pytest.mark.timeout(120)


def suspended_job(ns: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
            "spec": {"suspend": True, "managedBy": "kueue.x-k8s.io/multikueue", "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}


def test_modify_sends_its_change_alone_at_the_version_it_read(api: ApiServer, names: Names) -> None:
    with open_store(api.kubeconfig) as store:
        name = names.name("job")
        created = store.create(suspended_job(names.namespace, name))
        entry = store.cache.entry(ObjectKey("Job", names.namespace, name))
        assert entry is not None
        read_at = str(entry.srv)  # the API server's resourceVersion of the cached copy
        sent: list[rq.Request] = []
        send = store.transport.send

        def spy(req: rq.Request, **kwargs: Any) -> Any:
            sent.append(req)
            return send(req, **kwargs)

        store.transport.send = spy  # type: ignore[method-assign]

        def start(obj: dict[str, Any]) -> bool:
            obj["spec"]["suspend"] = False
            obj["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "spot"}
            return True

        out = store.modify("Job", names.namespace, name, start)
        assert out is not None and out["spec"]["suspend"] is False
        assert out["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "spot"}
        assert out["spec"]["template"]["spec"]["containers"] == created["spec"]["template"]["spec"]["containers"]
        (req,) = sent
        assert (req.method, req.content_type) == ("PATCH", rq.MERGE_PATCH)
        assert json.loads(req.body or b"") == {
            "metadata": {"resourceVersion": read_at},
            "spec": {"suspend": False, "template": {"spec": {"nodeSelector": {"pool": "spot"}}}},
        }
        sent.clear()

        def progress(obj: dict[str, Any]) -> bool:
            obj.setdefault("status", {})["active"] = 1
            return True

        out = store.modify("Job", names.namespace, name, progress, status=True)
        assert out is not None and out["status"]["active"] == 1 and out["spec"]["suspend"] is False
        (req,) = sent
        assert req.method == "PATCH" and req.path.endswith("/status")
        assert json.loads(req.body or b"")["status"] == {"active": 1}
