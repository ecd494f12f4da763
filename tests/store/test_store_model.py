"""Random operation sequences against a dict model: list(), get() and a watch replay
must always agree with it."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from hypothesis_budget import examples

from hub.store import AlreadyExists, EventType, NotFound, SQLiteStore, selector_matches

Key = tuple[str, str, str]

KINDS = ["Workload", "ClusterQueue"]
keys = st.tuples(st.sampled_from(KINDS), st.sampled_from(["", "a", "b"]), st.sampled_from(["x", "y", "z"]))
labels = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["web", "gpu"]), max_size=2)
specs = st.dictionaries(st.sampled_from(["queue", "n"]), st.integers(0, 3), max_size=2)
statuses = st.none() | st.dictionaries(st.just("phase"), st.sampled_from(["Pending", "Admitted"]), max_size=1)
selectors = st.sampled_from(["", "app=web", "app!=web", "tier in (gpu)", "tier notin (gpu)", "app", "!tier"])


def manifest(key: Key, lbls: dict[str, str], spec: dict[str, int], status: Any = None) -> dict[str, Any]:
    kind, ns, name = key
    meta: dict[str, Any] = {"name": name, "labels": lbls}
    if ns:
        meta["namespace"] = ns
    obj: dict[str, Any] = {"kind": kind, "metadata": meta, "spec": spec}
    if status is not None:
        obj["status"] = status
    return obj


class Boom(Exception):
    pass


class StoreModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = SQLiteStore(":memory:")
        self.model: dict[Key, dict[str, Any]] = {}  # key -> {labels, spec, status, generation}
        self.watch = self.store.watch()
        self.replay: dict[Key, dict[str, Any]] = {}
        self.last_rv = 0

    def teardown(self) -> None:
        self.store.close()

    def _apply(self, op: str, key: Key, lbls: dict[str, str], spec: dict[str, int], status: Any) -> None:
        """One store call, and the same change on the model when the store accepts it."""
        exists = key in self.model
        if op == "create":
            if exists:
                try:
                    self.store.create(manifest(key, lbls, spec, status))
                    raise AssertionError("duplicate create succeeded")
                except AlreadyExists:
                    return
            self.store.create(manifest(key, lbls, spec, status))
            self.model[key] = {"labels": lbls, "spec": spec, "status": status, "generation": 1}
            return
        if not exists:
            try:
                if op == "delete":
                    self.store.delete(*key)
                elif op == "update":
                    self.store.update(manifest(key, lbls, spec))
                else:
                    self.store.update_status(manifest(key, {}, {}, status))
                raise AssertionError(f"{op} of a missing object succeeded")
            except NotFound:
                return
        entry = self.model[key]
        if op == "delete":
            self.store.delete(*key)
            del self.model[key]
        elif op == "update":
            self.store.update(manifest(key, lbls, spec))
            if spec != entry["spec"]:
                entry["generation"] += 1
            entry.update(labels=lbls, spec=spec)
        else:
            self.store.update_status(manifest(key, {}, {}, status))
            entry["status"] = status

    ops = st.sampled_from(["create", "update", "update_status", "delete"])

    @rule(op=ops, key=keys, lbls=labels, spec=specs, status=statuses)
    def single(self, op: str, key: Key, lbls: dict[str, str], spec: dict[str, int], status: Any) -> None:
        self._apply(op, key, lbls, spec, status)

    @rule(
        steps=st.lists(st.tuples(ops, keys, labels, specs, statuses), min_size=1, max_size=5),
        fail=st.booleans(),
    )
    def batch(self, steps: list[tuple[str, Key, dict[str, str], dict[str, int], Any]], fail: bool) -> None:
        saved = {k: dict(v) for k, v in self.model.items()}
        try:
            with self.store.batch():
                for step in steps:
                    self._apply(*step)
                if fail:
                    raise Boom
        except Boom:
            self.model = saved

    @invariant()
    def list_matches_model(self) -> None:
        for kind in KINDS:
            items, rv = self.store.list(kind)
            expected = sorted((ns, name) for (k, ns, name) in self.model if k == kind)
            assert [(o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in items] == expected
            assert rv >= self.last_rv
            self.last_rv = rv
            for o in items:
                m = o["metadata"]
                entry = self.model[(kind, m.get("namespace", ""), m["name"])]
                assert m["labels"] == entry["labels"]
                assert o["spec"] == entry["spec"]
                assert o.get("status") == entry["status"]
                assert m["generation"] == entry["generation"]
                assert int(m["resourceVersion"]) <= rv

    @rule(kind=st.sampled_from(KINDS), ns=st.sampled_from([None, "", "a"]), selector=selectors)
    def filtered_list(self, kind: str, ns: str | None, selector: str) -> None:
        items, _ = self.store.list(kind, namespace=ns, label_selector=selector)
        expected = sorted(
            (kns, name)
            for (k, kns, name), entry in self.model.items()
            if k == kind and (ns is None or kns == ns) and selector_matches(selector, entry["labels"])
        )
        assert [(o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in items] == expected

    @invariant()
    def watch_replay_matches_store(self) -> None:
        while (ev := self.watch.next(0)) is not None:
            m = ev.object["metadata"]
            key = (ev.object["kind"], m.get("namespace", ""), m["name"])
            if ev.type is EventType.DELETED:
                del self.replay[key]
            else:
                assert (ev.type is EventType.ADDED) == (key not in self.replay)
                self.replay[key] = ev.object
        current = {}
        for kind in KINDS:
            for o in self.store.list(kind)[0]:
                current[(kind, o["metadata"].get("namespace", ""), o["metadata"]["name"])] = o
        assert self.replay == current


StoreModel.TestCase.settings = settings(
    max_examples=examples(60), stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_store_model = StoreModel.TestCase
