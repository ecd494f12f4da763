"""KubeStore.modify_gathered: changes of independent objects in one batch in flight at once (a
round's Job starts), each outcome as modify's own, a 409 re-read and retried."""

from __future__ import annotations

from typing import Any

import pytest

from hub.store.interface import InvalidObject

from .conftest import ApiServer, Names, open_store, wait_for
from .harness import count_batches
from .test_kube_store_http import cq


def labelled(value: str) -> Any:
    def change(obj: dict[str, Any]) -> bool:
        labels = obj["metadata"].setdefault("labels", {})
        if labels.get("step") == value:
            return False
        labels["step"] = value
        return True
    return change


def test_changes_go_out_in_one_batch_a_conflict_is_retried_on_a_fresh_read(
        api: ApiServer, names: Names, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_store(api.kubeconfig) as mine, open_store(api.kubeconfig) as theirs:
        a, b, c, d = (names.name(x) for x in "abcd")
        for name in (a, b, c, d):
            mine.create(cq(name))
        wait_for(lambda: theirs.get("ClusterQueue", "", d) is not None, what="the other store to see the queues")
        mine.informers["ClusterQueue"].stop()  # my cache cannot learn of their writes: a 409, a 404 follow
        theirs.modify("ClusterQueue", "", b, labelled("theirs"))
        theirs.delete("ClusterQueue", "", d)
        batches = count_batches(mine, monkeypatch)
        mine.modify("ClusterQueue", "", c, labelled("one"))  # through urllib3, not counted

        def refuse(obj: dict[str, Any]) -> bool:
            raise InvalidObject("not this one")

        out = mine.modify_gathered([
            ("ClusterQueue", "", a, labelled("one"), False),
            ("ClusterQueue", "", b, labelled("one"), False),  # conflicts: read from the server, applied again
            ("ClusterQueue", "", c, labelled("one"), False),  # no change: nothing sent, None
            ("ClusterQueue", "", names.name("gone"), labelled("one"), False),  # gone: None, as modify
            ("ClusterQueue", "", a, refuse, False),  # the change's refusal, in its place
            ("ClusterQueue", "", d, labelled("one"), False),  # deleted on the server: None, as modify
        ])
        assert batches == [3]  # a, b and d together; b's retry went through modify alone
        assert out[2] is None and out[3] is None and isinstance(out[4], InvalidObject) and out[5] is None
        for i, name in ((0, a), (1, b)):
            got = out[i]
            assert isinstance(got, dict) and got["metadata"]["labels"]["step"] == "one"
            assert got["metadata"]["resourceVersion"] == mine.get("ClusterQueue", "", name)["metadata"]["resourceVersion"]  # type: ignore[index]
        wait_for(lambda: (theirs.get("ClusterQueue", "", b) or {}).get("metadata", {}).get("labels", {}).get("step") == "one",
                 what="b's retried change on the server")
