"""managedFields of a write with no entry to trim (a create; an update of an object stored without
managedFields): one Update entry of the changed fields, built without the trimming's prefix sets
(hub.kubeapi.managed.record_update); a write that sets managedFields itself is still taken as written."""

from __future__ import annotations

from typing import Any

from hub.kubeapi.managed import decode_fields, record_update


def _event() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "n", "labels": {"a": "b"}},
            "involvedObject": {"kind": "Workload", "name": "w"}, "reason": "Admitted", "count": 1}


def test_a_create_owns_every_field_it_sets() -> None:
    (entry,) = record_update(None, _event(), "mkhub", "v1", "2026-11-28T00:00:00Z")
    assert {k: v for k, v in entry.items() if k != "fieldsV1"} == {
        "manager": "mkhub", "operation": "Update", "apiVersion": "v1", "time": "2026-11-28T00:00:00Z",
        "fieldsType": "FieldsV1"}
    assert decode_fields(entry["fieldsV1"]) == {
        ("metadata", "labels", "a"), ("involvedObject", "kind"), ("involvedObject", "name"), ("reason",), ("count",)}
    assert list(entry["fieldsV1"]) == ["f:count", "f:involvedObject", "f:metadata", "f:reason"]  # sorted, as before


def test_an_update_of_an_object_without_entries_owns_what_it_changed() -> None:
    current = _event()
    new = {**_event(), "reason": "Evicted", "message": "m"}
    (entry,) = record_update(current, new, "kueue", "v1", "t")
    assert entry["manager"] == "kueue" and decode_fields(entry["fieldsV1"]) == {("reason",), ("message",)}
    assert record_update(current, _event(), "kueue", "v1", "t") == []  # nothing changed: no entry


def test_a_create_with_managed_fields_given_keeps_them() -> None:
    given = [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "time": "t", "fieldsType": "FieldsV1",
              "fieldsV1": {"f:reason": {}}}]
    new = {**_event(), "metadata": {**_event()["metadata"], "managedFields": given}}
    out = record_update(None, new, "mkhub", "v1", "t")
    assert [e["manager"] for e in out] == ["mkhub"]  # the changed field is the writer's: kubectl's entry trimmed away
    assert ("reason",) in decode_fields(out[0]["fieldsV1"])
