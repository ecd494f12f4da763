"""managedFields on an update, decoded only where the write touches them: another manager's entry
that owns nothing the write changed is kept as written (as kube-apiserver keeps it), and the
ownership that results is what decoding every entry gave."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.kubeapi import managed
from hub.kubeapi.managed import Path, decode_fields, encode_fields, leaves

from .conftest import Env


def _related(a: Path, b: Path) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _every_entry_decoded(current: dict[str, Any], new: dict[str, Any], manager: str) -> list[dict[str, Any]]:
    """The ownership rule, with every entry decoded and re-encoded (the code before this change)."""
    old, fresh = leaves(current), leaves(new)
    changed = {p for p, v in fresh.items() if p not in old or old[p] != v}
    removed = {p for p in old if p not in fresh}
    if not changed and not removed:
        return list(current["metadata"]["managedFields"])
    out, mine = [], set()
    for entry in current["metadata"]["managedFields"]:
        paths = {p for p in decode_fields(entry["fieldsV1"]) if p not in removed and not any(_related(p, c) for c in changed)}
        if (entry["manager"], entry["operation"], entry.get("subresource", "")) == (manager, "Update", ""):
            mine = paths
        elif paths:
            out.append({**entry, "fieldsV1": encode_fields(paths)})
    if mine | changed:
        out.append({"manager": manager, "paths": mine | changed})
    return out


def _ownership(entries: list[dict[str, Any]]) -> list[tuple[str, frozenset[Path]]]:
    return [(e["manager"], frozenset(e["paths"]) if "paths" in e else frozenset(decode_fields(e["fieldsV1"])))
            for e in entries]


_values = st.recursive(st.integers(0, 2) | st.lists(st.integers(0, 1), max_size=2),
                       lambda inner: st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3), max_leaves=8)
_specs = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), _values, max_size=4)


def _job(spec: dict[str, Any], labels: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "labels": labels}, "spec": spec}


@given(_specs, _specs, _specs, st.dictionaries(st.sampled_from(["x", "y"]), st.sampled_from(["1", "2"])))
def test_ownership_is_what_decoding_every_entry_gives(first: Any, second: Any, third: Any, labels: Any) -> None:
    created = _job(first, labels)
    created["metadata"]["managedFields"] = managed.record_update(None, created, "creator", "batch/v1", "t0")
    updated = _job(second, {})
    updated["metadata"]["managedFields"] = managed.record_update(created, updated, "other", "batch/v1", "t1")
    for manager in ("other", "third"):
        new = _job(third, labels)
        got = managed.record_update(updated, copy.deepcopy(new), manager, "batch/v1", "t2")
        assert _ownership(got) == _ownership(_every_entry_decoded(updated, new, manager))


def test_an_entry_the_write_does_not_touch_is_kept_as_written() -> None:
    """kubectl's client-side apply entries name list members (``k:``); a write elsewhere leaves them be."""
    applied = {"f:metadata": {"f:labels": {"f:app": {}}},
               "f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"main"}': {".": {}, "f:image": {}}}}}}}
    current = _job({"template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}, {"app": "x"})
    current["metadata"]["managedFields"] = [{"manager": "kubectl-client-side-apply", "operation": "Update",
                                             "apiVersion": "batch/v1", "time": "t0", "fieldsType": "FieldsV1",
                                             "fieldsV1": applied}]
    new = copy.deepcopy(current)
    new["spec"]["suspend"] = True
    got = managed.record_update(current, new, "mkhub", "batch/v1", "t1")
    assert got[0]["fieldsV1"] == applied
    assert got[1]["manager"] == "mkhub" and got[1]["fieldsV1"] == {"f:spec": {"f:suspend": {}}}


def test_a_status_write_records_no_entry_the_store_would_drop(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store's update_status takes status alone: the status write's managedFields were computed and
    thrown away (a tenth of a Workload status patch's CPU). Only a dry run's answer shows them."""
    cm = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dcy"}}
    status, _, _ = env.raw("POST", "/api/v1/namespaces", cm)
    assert status == 201
    calls: list[str] = []
    real = managed.record_update

    def counted(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        calls.append(args[5] if len(args) > 5 else kwargs.get("subresource", ""))
        return real(*args, **kwargs)

    monkeypatch.setattr(managed, "record_update", counted)
    patch = {"status": {"phase": "Active", "conditions": [{"type": "T", "status": "True"}]}}
    status, _, out = env.raw("PATCH", "/api/v1/namespaces/dcy/status", patch,
                             content_type="application/merge-patch+json", query=[("fieldManager", "me")])
    assert status == 200 and calls == []
    assert [e["manager"] for e in out["metadata"]["managedFields"]] == [e["manager"] for e in env.store.get(
        "Namespace", "", "dcy")["metadata"]["managedFields"]]
    status, _, dry = env.raw("PATCH", "/api/v1/namespaces/dcy/status", {"status": {"phase": "Active", "conditions": []}},
                             content_type="application/merge-patch+json", query=[("fieldManager", "me"), ("dryRun", "All")])
    assert status == 200 and calls == ["status"]
    assert any(e["manager"] == "me" and e.get("subresource") == "status" for e in dry["metadata"]["managedFields"])
