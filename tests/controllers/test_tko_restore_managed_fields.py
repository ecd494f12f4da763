"""A take-over's restore drops ``metadata.managedFields`` from the listed manifests before parsing
them (nothing reads them; on a real cluster they are often the bulk of a Workload), without
touching the Kubernetes store's cache, which hands out its own objects' metadata as copies."""

from __future__ import annotations

from typing import Any

from hub.controllers.kind_order import restore_list
from hub.store.interface import ObjectKey
from hub.store.kube.cache import Cache

MANAGED = [{"manager": "kueue", "operation": "Update", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {"f:conditions": {}, "f:admission": {}}}}]


def manifest(kind: str, name: str, rv: int) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"u-{name}", "resourceVersion": str(rv), "managedFields": MANAGED}
    if kind == "Workload":
        meta["namespace"] = "ns"
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": meta, "spec": {}}


class CacheStore:
    """The Kubernetes store's reads (list, list_shared) over a bare cache."""

    def __init__(self) -> None:
        self.cache = Cache()

    def list(self, kind: str) -> tuple[list[dict[str, Any]], int]:
        return self.cache.list(kind)

    def list_shared(self, kind: str) -> tuple[list[dict[str, Any]], int]:
        return self.cache.list(kind, shared=True)


def test_restore_lists_carry_no_managed_fields_and_the_cache_keeps_them() -> None:
    store = CacheStore()
    store.cache.replace("Workload", [manifest("Workload", f"w{i}", 10 + i) for i in range(3)], 20)
    store.cache.replace("ClusterQueue", [manifest("ClusterQueue", "cq", 30)], 30)
    for kind in ("Workload", "ClusterQueue"):  # shared (Workloads) and deep-copied lists alike
        objects, _ = restore_list(store, kind)  # type: ignore[arg-type]
        assert objects and all("managedFields" not in o["metadata"] for o in objects)
    for key in (ObjectKey("Workload", "ns", "w0"), ObjectKey("ClusterQueue", "", "cq")):
        cached = store.cache.get(key)
        assert cached is not None and cached["metadata"]["managedFields"] == MANAGED
