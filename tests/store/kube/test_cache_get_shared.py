"""``Cache.get(shared=True)`` (the webhook's lookups): no deep copy, the store's resourceVersion shown,
and the cached entry untouched by what the reader sees at the top level."""

from __future__ import annotations

from hub.store.interface import ObjectKey
from hub.store.kube.cache import Cache


def test_a_shared_get_shows_the_stores_version_and_shares_nested_maps() -> None:
    c = Cache()
    c.apply("ADDED", {"kind": "ClusterQueue", "metadata": {"name": "cq", "resourceVersion": "90"},
                      "spec": {"admissionChecks": ["multikueue"]}})
    key = ObjectKey("ClusterQueue", "", "cq")
    shared, copied = c.get(key, shared=True), c.get(key)
    assert shared is not None and copied is not None
    assert shared == copied and shared["metadata"]["resourceVersion"] == "1"
    assert shared["spec"] is c.entry(key).obj["spec"]  # type: ignore[union-attr]
    assert copied["spec"] is not c.entry(key).obj["spec"]  # type: ignore[union-attr]
    shared["metadata"]["resourceVersion"] = "changed by a careless reader"
    assert c.get(key)["metadata"]["resourceVersion"] == "1"  # type: ignore[index]
    assert c.get(ObjectKey("ClusterQueue", "", "other"), shared=True) is None
